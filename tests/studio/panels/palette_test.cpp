// Tests of studio/palette.cpp and the drop path of studio/graph_view.cpp: every registered op
// listed once by category, the search filter, drag data, activation, and dropping an op on the
// canvas (the node added where it lands, refusals reported), plus the window's docks.
#include <QAction>
#include <QDockWidget>
#include <QDropEvent>
#include <QLineEdit>
#include <QMimeData>
#include <QSignalSpy>
#include <QTreeWidget>
#include <QTest>
#include <set>
#include <string>

#include "tests/studio/qtest_main.h"
#include "engine/ir/text.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/panels/inspector.h"
#include "studio/app/main_window.h"
#include "studio/panels/palette.h"
#include "studio/document/clipboard.h"

using tessera::Expected;
using tessera::ir::NodeId;
using tessera::studio::Document;
using tessera::studio::GraphScene;
using tessera::studio::GraphView;
using tessera::studio::kOpMimeType;
using tessera::studio::MainWindow;
using tessera::studio::Palette;

namespace {

QTreeWidgetItem* find_op_item(const Palette& palette, const QString& op) {
  const QList<QTreeWidgetItem*> found =
      palette.tree()->findItems(op, Qt::MatchExactly | Qt::MatchRecursive);
  for (QTreeWidgetItem* item : found)
    if (item->parent()) return item;
  return nullptr;
}

QMimeData* op_mime(const QString& op) {
  auto* data = new QMimeData;
  data->setData(QString::fromLatin1(kOpMimeType), op.toUtf8());
  return data;
}

}  // namespace

class PaletteTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

 private Q_SLOTS:
  void lists_every_op_once() {
    Palette palette(registry_);
    const QStringList ops = palette.all_ops();
    const auto defs = registry_.all();
    QCOMPARE(ops.size(), static_cast<int>(defs.size()));
    QCOMPARE(static_cast<int>(std::set<QString>(ops.begin(), ops.end()).size()), ops.size());
    for (const auto* def : defs) QVERIFY2(ops.contains(QString::fromStdString(def->name)), def->name.c_str());
    QCOMPARE(palette.visible_ops().size(), ops.size());
  }

  void grouped_by_category_with_doc_tooltips() {
    Palette palette(registry_);
    QTreeWidgetItem* conv = find_op_item(palette, QStringLiteral("Conv"));
    QVERIFY(conv);
    QCOMPARE(conv->parent()->text(0), QString::fromStdString(registry_.find("Conv")->category));
    QVERIFY(conv->toolTip(0).contains(
        QString::fromStdString(registry_.find("Conv")->doc).toHtmlEscaped().left(20)));
    QTreeWidgetItem* relu = find_op_item(palette, QStringLiteral("Relu"));
    QVERIFY(relu);
    QCOMPARE(relu->parent()->text(0), QStringLiteral("activation"));
    // Every category is one top-level row, every op one child row.
    int children = 0;
    for (int c = 0; c < palette.tree()->topLevelItemCount(); ++c)
      children += palette.tree()->topLevelItem(c)->childCount();
    QCOMPARE(children, static_cast<int>(registry_.all().size()));
    // Categories of ops the engine makes itself come after every other one.
    bool seen_internal = false;
    int internal_rows = 0;
    for (int c = 0; c < palette.tree()->topLevelItemCount(); ++c) {
      const QString category = palette.tree()->topLevelItem(c)->text(0);
      if (tessera::studio::is_internal_category(category)) {
        seen_internal = true;
        ++internal_rows;
      } else {
        QVERIFY2(!seen_internal, qPrintable(category + " after an internal category"));
      }
    }
    QVERIFY(internal_rows >= 3);  // fused, grad, runtime, training
    QCOMPARE(find_op_item(palette, QStringLiteral("Copy"))->parent()->text(0), QStringLiteral("runtime"));
  }

  void search_filters_case_insensitively() {
    Palette palette(registry_);
    palette.search_box()->setText(QStringLiteral("conv"));  // textChanged -> set_filter
    const QStringList shown = palette.visible_ops();
    QVERIFY2(shown.contains(QStringLiteral("Conv")), qPrintable(shown.join(',')));
    QVERIFY(shown.contains(QStringLiteral("ConvTranspose")));
    QVERIFY(!shown.contains(QStringLiteral("Relu")));
    for (const QString& op : shown) QVERIFY(op.contains(QStringLiteral("conv"), Qt::CaseInsensitive));
    const QString conv_category = QString::fromStdString(registry_.find("Conv")->category);
    QVERIFY(palette.is_expanded(conv_category));
    QVERIFY(!palette.is_expanded(QStringLiteral("activation")));  // no match there: hidden
    palette.search_box()->setText(QStringLiteral("RELU"));
    QVERIFY(palette.visible_ops().contains(QStringLiteral("Relu")));
    QVERIFY(!palette.visible_ops().contains(QStringLiteral("Conv")));
    palette.search_box()->clear();
    QCOMPARE(palette.visible_ops().size(), palette.all_ops().size());
    QVERIFY(!palette.is_expanded(conv_category));
    palette.set_filter(QStringLiteral("no such op at all"));
    QVERIFY(palette.visible_ops().isEmpty());
  }

  void drag_data_holds_the_op_name() {
    Palette palette(registry_);
    QTreeWidgetItem* item = find_op_item(palette, QStringLiteral("MaxPool"));
    QVERIFY(item);
    QVERIFY(item->flags() & Qt::ItemIsDragEnabled);
    QVERIFY(!(item->parent()->flags() & Qt::ItemIsDragEnabled));
    const QModelIndex index = palette.tree()->indexFromItem(item);
    std::unique_ptr<QMimeData> data(palette.tree()->model()->mimeData({index}));
    QVERIFY(data);
    QCOMPARE(data->data(QString::fromLatin1(kOpMimeType)), QByteArray("MaxPool"));
  }

  void enter_activates_an_op() {
    Palette palette(registry_);
    QSignalSpy spy(&palette, &Palette::op_activated);
    QTreeWidgetItem* item = find_op_item(palette, QStringLiteral("Relu"));
    palette.tree()->setCurrentItem(item);
    QTest::keyClick(palette.tree(), Qt::Key_Return);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("Relu"));
    palette.tree()->setCurrentItem(item->parent());  // a category row adds nothing
    QTest::keyClick(palette.tree(), Qt::Key_Return);
    QCOMPARE(spy.count(), 1);
  }

  void drop_adds_a_node_where_it_lands() {
    Document doc(registry_);
    GraphScene scene(doc);
    GraphView view(&scene);
    view.set_document(&doc);
    std::unique_ptr<QMimeData> data(op_mime(QStringLiteral("Relu")));
    Expected<NodeId> id = view.drop_op(data.get(), QPointF(120, 340));
    QVERIFY2(id.has_value(), id ? "" : id.error().to_string().c_str());
    QCOMPARE(doc.graph().num_nodes(), 1);
    QCOMPARE(doc.graph().node(*id).op, std::string("Relu"));
    QCOMPARE(doc.graph().node(*id).name, std::string("relu1"));
    QCOMPARE(doc.position(*id)->x, 120.0);
    QCOMPARE(doc.position(*id)->y, 340.0);
    // The scene shows it at that place once the queued update ran.
    QVERIFY(scene.update_pending());
    QTRY_VERIFY(scene.node_item(*id) != nullptr);
    QCOMPARE(scene.node_item(*id)->pos(), QPointF(120, 340));
    // A second one gets the next name; undo removes it again.
    Expected<NodeId> second = view.drop_op(data.get(), QPointF(120, 500));
    QVERIFY(second.has_value());
    QCOMPARE(doc.graph().node(*second).name, std::string("relu2"));
    scene.flush_update();
    QCOMPARE(scene.node_item_count(), 2);
    QCOMPARE(scene.node_item(*id)->pos(), QPointF(120, 340));  // nothing jumped
    doc.undo_stack().undo();
    scene.flush_update();
    QCOMPARE(doc.graph().num_nodes(), 1);
    QCOMPARE(scene.node_item_count(), 1);
  }

  void drop_refusals_are_reported() {
    Document doc(registry_);
    GraphScene scene(doc);
    GraphView view(&scene);
    QSignalSpy refused(&view, &GraphView::edit_refused);
    std::unique_ptr<QMimeData> data(op_mime(QStringLiteral("Relu")));
    QVERIFY(!view.drop_op(data.get(), {}).has_value());  // no document yet
    view.set_document(&doc);
    std::unique_ptr<QMimeData> unknown(op_mime(QStringLiteral("NoSuchOp")));
    Expected<NodeId> id = view.drop_op(unknown.get(), {});
    QVERIFY(!id.has_value());
    QCOMPARE(refused.count(), 1);  // without a document there is nothing to report to
    QVERIFY2(refused.last().at(0).toString().contains(QStringLiteral("NoSuchOp")),
             qPrintable(refused.last().at(0).toString()));
    QMimeData text;
    text.setText(QStringLiteral("Relu"));
    QVERIFY(!view.drop_op(&text, {}).has_value());  // not our mime type
    QCOMPARE(doc.graph().num_nodes(), 0);
    QCOMPARE(doc.undo_stack().count(), 0);
  }

  void a_real_drop_event_goes_through_the_view() {
    Document doc(registry_);
    GraphScene scene(doc);
    GraphView view(&scene);
    view.set_document(&doc);
    view.resize(400, 300);
    std::unique_ptr<QMimeData> data(op_mime(QStringLiteral("Sigmoid")));
    const QPointF at(50, 60);
    QDragEnterEvent enter(at.toPoint(), Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view.viewport(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(at, Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view.viewport(), &drop);
    QCOMPARE(doc.graph().num_nodes(), 1);
    const NodeId id = doc.graph().node_ids().front();
    QCOMPARE(doc.graph().node(id).op, std::string("Sigmoid"));
    const QPointF expected = view.mapToScene(at.toPoint());
    QCOMPARE(doc.position(id)->x, expected.x());
    QCOMPARE(doc.position(id)->y, expected.y());
  }

  void window_has_docks_and_activation_adds_at_the_centre() {
    Document doc(registry_);
    MainWindow window(doc);
    QVERIFY(window.palette_dock()->widget() == window.palette());
    QVERIFY(window.inspector_dock()->widget() == window.inspector());
    bool palette_toggle = false, inspector_toggle = false;
    for (const QAction* a : window.findChildren<QAction*>()) {
      palette_toggle |= a->text() == QStringLiteral("&Palette") && a->isCheckable();
      inspector_toggle |= a->text() == QStringLiteral("&Inspector") && a->isCheckable();
    }
    QVERIFY(palette_toggle && inspector_toggle);
    Q_EMIT window.palette()->op_activated(QStringLiteral("Relu"));
    QCOMPARE(doc.graph().num_nodes(), 1);
    Q_EMIT window.palette()->op_activated(QStringLiteral("NoSuchOp"));
    QCOMPARE(doc.graph().num_nodes(), 1);
  }
};

TESSERA_QTEST(PaletteTest)
#include "palette_test.moc"
