// Tests of studio/run_panel.cpp: LeNet run with a random input and with a .npy file (shape
// [1, 10], values equal to stages::Session's on the same input), the random stream against
// mt19937_64's published first output, .npy files refused with the reason (rank, dim, dtype), an
// input file gone by run time shown as an error, a graph with an inference error not runnable,
// saving an output, and the window's Run menu (F5).
// engine/stages/session.h first: Qt's `slots` macro would break engine/stages/compile.h.
#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/stages/session.h"

#include <QAction>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <cstdio>
#include <string>

#include "formats/npy.h"
#include "insight/database.h"
#include "insight/query.h"
#include "studio/document/document.h"
#include "studio/app/main_window.h"
#include "studio/panels/run_panel.h"

using tessera::DType;
using tessera::Shape;
using tessera::Status;
using tessera::Tensor;
using tessera::studio::Document;
using tessera::studio::MainWindow;
using tessera::studio::RunPanel;

namespace {

const std::string kLenet = tessera::test::source_dir() + "/samples/lenet.json";

const char kBadShapeTir[] = R"(graph "bad" {
  input %0 "x" : f32[N, 16]
  input %1 "y" : f32[N, 8]
  #0 "mix" = Add(%0, %1) -> (%2 "m" : f32[N, 16])
  output %2
}
)";

bool contains(const QString& s, const QString& part) {
  return s.contains(part);
}
bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The Session's outputs for LeNet on `x`, the reference the panel must equal.
std::vector<Tensor> reference(const Document& doc, const Tensor& x) {
  tessera::stages::Session session(doc.graph(), doc.registry(), tessera::stages::SessionOptions{});
  auto r = session.run({{"x", x}});
  if (!r) qFatal("reference run failed: %s", r.error().to_string().c_str());
  return *r;
}

bool wait_finished(QSignalSpy& spy) {
  return spy.count() > 0 || spy.wait(60000);
}

}  // namespace

class RunPanelTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();
  QTemporaryDir dir_;

  QString temp(const QString& name) const { return dir_.filePath(name); }

 private Q_SLOTS:
  void random_stream_is_tessera_runs() {
    // mt19937_64 with its default seed 5489 first yields 14514284786278117030 (the C++
    // standard's check value is the 10000th, 9981545732273789042); floats take the top 53 bits
    // scaled to [0, 1), shifted to [-1, 1); integers the draw modulo 10.
    const Tensor t = tessera::studio::random_input(DType::kF32, {2}, 5489);
    const double expected = static_cast<double>(14514284786278117030ull >> 11) * 0x1.0p-52 - 1.0;
    QCOMPARE(t.get(0), static_cast<double>(static_cast<float>(expected)));
    const Tensor i = tessera::studio::random_input(DType::kI64, {1}, 5489);
    QCOMPARE(i.get(0), static_cast<double>(14514284786278117030ull % 10));
  }

  void runs_lenet_with_random_input() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    RunPanel panel(doc);
    QVERIFY(panel.can_run());
    QSignalSpy spy(&panel, &RunPanel::finished);
    panel.set_input_random("x", 7);
    QVERIFY(panel.run());
    QVERIFY(panel.is_running());
    QVERIFY(wait_finished(spy));
    QVERIFY2(panel.error_text().isEmpty(), qPrintable(panel.error_text()));
    QCOMPARE(panel.outputs().size(), size_t{1});
    QCOMPARE(panel.outputs()[0].shape(), (Shape{1, 10}));
    const Tensor x = tessera::studio::random_input(DType::kF32, {1, 1, 28, 28}, 7);
    const Tensor want = reference(doc, x)[0];
    for (int64_t k = 0; k < 10; ++k) QCOMPARE(panel.outputs()[0].get(k), want.get(k));
    // The table: one row, name, type, shape, and the first value as shown.
    QTableWidget* table = panel.outputs_table();
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("[1, 10]"));
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("f32"));
    QVERIFY(table->item(0, 6)->text().startsWith(QString::number(want.get(0), 'g', 6)));
    // Issue 40, item 8: Save .npy is on screen in a 320 px panel (it was past the right edge).
    panel.resize(320, 600);
    panel.show();
    QCoreApplication::processEvents();
    QWidget* save = table->cellWidget(0, 7);
    QVERIFY(save);
    QVERIFY2(table->columnViewportPosition(7) + save->width() / 2 < table->viewport()->width(),
             qPrintable(QStringLiteral("at %1 of %2").arg(table->columnViewportPosition(7)).arg(table->viewport()->width())));
    // An edit: the outputs shown are the graph's before it, and the status line says so.
    QVERIFY(!panel.status_text().contains(QStringLiteral("before the last edit")));
    QVERIFY(doc.rename_node(doc.graph().node_ids().front(), "first").is_ok());
    QVERIFY2(panel.status_text().contains(QStringLiteral("before the last edit")), qPrintable(panel.status_text()));
    // Issue 17, item 8: another graph opened: LeNet's outputs are not its outputs.
    QVERIFY(doc.load(tessera::test::source_dir() + "/samples/mlp.json").is_ok());
    QVERIFY(panel.outputs().empty());
    QCOMPARE(table->rowCount(), 0);
    QCOMPARE(panel.status_text(), QStringLiteral("Ready"));
  }

  void records_the_run_in_insight() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("insight.db"));
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    RunPanel panel(doc);
    panel.set_database_path(db);
    QSignalSpy spy(&panel, &RunPanel::finished);
    QVERIFY(panel.run());
    QVERIFY(wait_finished(spy));
    QVERIFY2(panel.error_text().isEmpty(), qPrintable(panel.error_text()));
    QVERIFY2(panel.recorded_run() > 0, qPrintable(panel.recording_note()));
    QVERIFY2(panel.status_text().contains(QStringLiteral("Recorded as run %1").arg(panel.recorded_run())),
             qPrintable(panel.status_text()));
    auto opened = tessera::insight::Database::open(db.toStdString());
    QVERIFY(opened.has_value());
    auto details = tessera::insight::run_details(*opened, panel.recorded_run());
    QVERIFY(details.has_value());
    QCOMPARE(QString::fromStdString(details->run.kind), QStringLiteral("run"));
    QCOMPARE(QString::fromStdString(details->run.status), QStringLiteral("finished"));
    QCOMPARE(QString::fromStdString(details->run.graph_name), QStringLiteral("lenet"));
    QVERIFY(details->spans > 0);      // every kernel of the run
    QVERIFY(details->snapshots > 0);  // every stage and pass
    QCOMPARE(details->graphs.size(), size_t{1});

    // An unusable database: the run goes on, the panel says why it was not recorded.
    QFile blocker(dir.filePath(QStringLiteral("blocker")));  // a file where a folder should be
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    RunPanel other(doc);
    other.set_database_path(dir.filePath(QStringLiteral("blocker/insight.db")));
    QSignalSpy other_spy(&other, &RunPanel::finished);
    QVERIFY(other.run());
    QVERIFY(wait_finished(other_spy));
    QVERIFY(other.error_text().isEmpty());
    QCOMPARE(other.recorded_run(), int64_t{0});
    QVERIFY2(other.recording_note().startsWith(QStringLiteral("Not recorded")),
             qPrintable(other.recording_note()));
    QVERIFY2(other.status_text().contains(QStringLiteral("blocker")), qPrintable(other.status_text()));
  }

  void runs_lenet_with_a_npy_file_and_a_batch_dim() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    Tensor x(DType::kF32, {2, 1, 28, 28});
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>((i * 37) % 101) / 101.0);
    const QString path = temp("x.npy");
    QVERIFY(tessera::formats::write_npy(path.toStdString(), x).is_ok());
    RunPanel panel(doc);
    QSignalSpy spy(&panel, &RunPanel::finished);
    const Status st = panel.set_input_file("x", path);
    QVERIFY2(st.is_ok(), st.to_string().c_str());
    QVERIFY(panel.run());
    QVERIFY(wait_finished(spy));
    QVERIFY2(panel.error_text().isEmpty(), qPrintable(panel.error_text()));
    QCOMPARE(panel.outputs()[0].shape(), (Shape{2, 10}));
    const Tensor want = reference(doc, x)[0];
    for (int64_t k = 0; k < 20; ++k) QCOMPARE(panel.outputs()[0].get(k), want.get(k));
    // Save as .npy: the file reads back equal.
    const QString out = temp("out.npy");
    QVERIFY(panel.save_output(0, out).is_ok());
    auto back = tessera::formats::read_npy(out.toStdString());
    QVERIFY(back.has_value());
    QCOMPARE(back->shape(), (Shape{2, 10}));
    QCOMPARE(back->get(19), want.get(19));
  }

  void refuses_a_npy_of_the_wrong_type_with_the_reason() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    RunPanel panel(doc);
    const QString rank = temp("rank.npy"), dim = temp("dim.npy"), dtype = temp("dtype.npy");
    QVERIFY(tessera::formats::write_npy(rank.toStdString(), Tensor(DType::kF32, {2, 3})).is_ok());
    QVERIFY(tessera::formats::write_npy(dim.toStdString(), Tensor(DType::kF32, {1, 1, 28, 27}))
                .is_ok());
    QVERIFY(tessera::formats::write_npy(dtype.toStdString(), Tensor(DType::kI64, {1, 1, 28, 28}))
                .is_ok());
    Status st = panel.set_input_file("x", rank);
    QVERIFY(!st.is_ok());
    QVERIFY2(contains(st.error().message, "the file has f32[2, 3]: rank 2, not 4"),
             st.to_string().c_str());
    st = panel.set_input_file("x", dim);
    QVERIFY(!st.is_ok());
    QVERIFY2(contains(st.error().message, "dim 3 is 27, not 28"), st.to_string().c_str());
    st = panel.set_input_file("x", dtype);
    QVERIFY(!st.is_ok());
    QVERIFY2(contains(st.error().message, "dtype i64, not f32"), st.to_string().c_str());
    st = panel.set_input_file("x", temp("missing.npy"));
    QVERIFY(!st.is_ok());
    QVERIFY(contains(st.to_string(), "missing.npy"));
    // The refusal is shown in the panel.
    bool shown = false;
    for (QLabel* label : panel.findChildren<QLabel*>())
      shown |= contains(label->text(), "refused") && contains(label->text(), "missing.npy");
    QVERIFY(shown);
    // Refused files leave the input random: the run still works.
    QSignalSpy spy(&panel, &RunPanel::finished);
    QVERIFY(panel.run());
    QVERIFY(wait_finished(spy));
    QVERIFY(panel.error_text().isEmpty());
  }

  void a_feed_gone_at_run_time_is_an_error_in_the_panel() {
    Document doc(registry_);
    QVERIFY(doc.load(kLenet).is_ok());
    RunPanel panel(doc);
    const QString path = temp("gone.npy");
    QVERIFY(tessera::formats::write_npy(path.toStdString(), Tensor(DType::kF32, {1, 1, 28, 28}))
                .is_ok());
    QVERIFY(panel.set_input_file("x", path).is_ok());
    QVERIFY(QFile::remove(path));
    QSignalSpy spy(&panel, &RunPanel::finished);
    QVERIFY(panel.run());
    QVERIFY(wait_finished(spy));
    QVERIFY(panel.outputs().empty());
    QVERIFY2(contains(panel.error_text(), "gone.npy"), qPrintable(panel.error_text()));
    QVERIFY(contains(panel.status_text(), "Error"));
  }

  void an_inference_error_disables_run_with_the_reason() {
    Document doc(registry_);
    const QString path = temp("bad.tir");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(kBadShapeTir);
    }
    QVERIFY(doc.load(path.toStdString()).is_ok());
    QVERIFY(doc.inference_error().has_value());
    RunPanel panel(doc);
    QVERIFY(!panel.can_run());
    QVERIFY(!panel.run_button()->isEnabled());
    QVERIFY(!panel.run());
    QVERIFY2(contains(panel.status_text(), "Cannot run: "), qPrintable(panel.status_text()));
    QVERIFY(contains(panel.status_text(), "mix"));
    // Fixing the document enables it.
    QVERIFY(doc.load(kLenet).is_ok());
    QVERIFY(panel.run_button()->isEnabled());
  }

  void window_run_menu_runs_with_f5() {
    Document doc(registry_);
    MainWindow window(doc);
    QVERIFY(window.open_file(QString::fromStdString(kLenet)).is_ok());
    QAction* run = window.findChild<QAction*>(QStringLiteral("run_action"));
    QVERIFY(run);
    QCOMPARE(run->shortcut(), QKeySequence(Qt::Key_F5));
    QSignalSpy spy(window.run_panel(), &RunPanel::finished);
    run->trigger();
    QVERIFY(!window.run_dock()->isHidden());
    QVERIFY(wait_finished(spy));
    QCOMPARE(window.run_panel()->outputs().size(), size_t{1});
    QVERIFY(window.train_dock() != nullptr);
  }
};

TESSERA_QTEST(RunPanelTest)
#include "run_panel_test.moc"
