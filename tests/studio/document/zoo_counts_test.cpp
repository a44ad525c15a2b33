// The counts the studio shows are the engine's (issue 40, item 2): for every model of both zoos
// (build/zoo, build/zoo/wild: other exporters, fp16, dynamic quantization, If-wrapped, weights as
// Constant nodes), the document's parameter count and FLOPs per sample equal what
// `tessera info --json` prints, no node's FLOPs are unknown once the graph types, and the nodes'
// FLOPs add up to the total. Skipped without build/zoo.
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTest>
#include <cmath>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"

using tessera::studio::Document;

class ZooCountsTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

 private Q_SLOTS:
  void counts_equal_tessera_info_on_every_zoo_model() {
    const QString root = QString::fromStdString(tessera::test::source_dir() + "/build/zoo");
    QStringList models;
    for (const QString& folder : {root, root + QStringLiteral("/wild")})
      for (const QString& f : QDir(folder).entryList({QStringLiteral("*.onnx")}, QDir::Files, QDir::Name))
        models << folder + QLatin1Char('/') + f;
    if (models.size() < 10) QSKIP("build/zoo is absent (tests/zoo/make_zoo.py makes it)");
    const QString cli = QString::fromStdString(tessera::test::output_dir() + "/../cli/tessera");
    QVERIFY2(QFileInfo(cli).isExecutable(), qPrintable(cli));
    int checked = 0;
    for (const QString& model : models) {
      QProcess info;
      info.start(cli, {QStringLiteral("info"), QStringLiteral("--json"), model});
      QVERIFY(info.waitForFinished(120000));
      QCOMPARE(info.exitCode(), 0);
      const QJsonObject o = QJsonDocument::fromJson(info.readAllStandardOutput()).object();
      Document doc(registry_);
      QVERIFY2(doc.load(model.toStdString()).is_ok(), qPrintable(model));
      const double params = o.value(QStringLiteral("parameters")).toDouble();
      QVERIFY2(static_cast<double>(doc.parameter_count()) == params,
               qPrintable(QStringLiteral("%1: %2 parameters, tessera info %3").arg(model).arg(doc.parameter_count()).arg(params)));
      QVERIFY2(params > 0, qPrintable(model));
      const QJsonValue flops = o.value(QStringLiteral("flops_per_sample"));
      const tessera::ops::GraphCost* cost = doc.cost();
      QVERIFY2(cost, qPrintable(model));
      if (!doc.inference_error()) {
        QVERIFY2(std::abs(cost->flops - flops.toDouble()) <= 1e-9 * flops.toDouble(),
                 qPrintable(QStringLiteral("%1: %2 FLOPs, tessera info %3").arg(model).arg(cost->flops, 0, 'f', 0)
                                .arg(flops.toDouble(), 0, 'f', 0)));
        QVERIFY2(cost->flops_by_node.size() == doc.graph().num_nodes(),  // none unknown
                 qPrintable(QStringLiteral("%1: FLOPs of %2 of %3 nodes").arg(model).arg(cost->flops_by_node.size())
                                .arg(doc.graph().num_nodes())));
      }
      // Swin-T computes its attention's shapes (Shape -> Gather -> Concat -> Reshape): with its
      // static input every value the canvas labels has a known shape (it showed f32[?, ?, ?]).
      if (model.endsWith(QLatin1String("/swin_t.onnx"))) {
        int unknown = 0;
        for (tessera::ir::NodeId id : doc.graph().node_ids())
          for (tessera::ir::ValueId v : doc.graph().node(id).outputs)
            if (doc.is_typed(v) && !doc.graph().value(v).type.is_static()) ++unknown;
        QCOMPARE(unknown, 0);
      }
      double sum = 0;
      for (const auto& [id, f] : cost->flops_by_node) sum += f;
      QVERIFY(std::abs(sum - cost->flops) <= 1e-9 * std::max(1.0, cost->flops));
      ++checked;
    }
    qInfo("%d models: parameters and FLOPs as tessera info prints them", checked);
  }
};

TESSERA_QTEST(ZooCountsTest)
#include "zoo_counts_test.moc"
