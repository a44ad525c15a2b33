// The GUI end to end, on a real X server (ctest runs it under xvfb-run with the xcb platform):
// LeNet-5 built in the real MainWindow from nothing, only through the widgets a person uses.
// Ops come from the palette (search box, then the op's drag data dropped on the canvas with real
// drag-and-drop events); edges are mouse drags from output ports to input ports; attributes are
// typed into the inspector's fields; the graph input, the weights and the graph output come from
// the canvas's right-click menu on a node ("Add Input to X...", "Add Weight to W...", "Make ... a
// Graph Output"), whose questions are answered through the view's text prompt hook. Then: every
// edge shows its type, the output is f32[N, 10], 61,706 parameters; a screenshot of the built
// graph goes into the build folder; File > Save As (its dialog hook) writes a .tsr, File > New
// empties the window and File > Open (its dialog hook) reads it back: the same graph, the same
// places.
#include <QAction>
#include <QApplication>
#include <QContextMenuEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMimeData>
#include <QMouseEvent>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeWidget>
#include <QTest>
#include <cmath>
#include <memory>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ir/text.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/panels/inspector.h"
#include "studio/app/main_window.h"
#include "studio/panels/palette.h"
#include "studio/panels/run_panel.h"

using tessera::ir::NodeId;
using tessera::ir::ValueId;
using tessera::studio::CanvasItemType;
using tessera::studio::Document;
using tessera::studio::EdgeItem;
using tessera::studio::GraphScene;
using tessera::studio::GraphView;
using tessera::studio::MainWindow;
using tessera::studio::Palette;

namespace {

// A move with the left button held (QTest's mouseMove does not say which buttons are down).
void move_to(QWidget* w, QPoint to) {
  QMouseEvent ev(QEvent::MouseMove, QPointF(to), QPointF(w->mapToGlobal(to)), Qt::NoButton,
                 Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(w, &ev);
}

void drag(QWidget* w, QPoint from, QPoint to) {
  QTest::mousePress(w, Qt::LeftButton, {}, from);
  for (int i = 1; i <= 5; ++i) move_to(w, from + (to - from) * i / 5);
  QTest::mouseRelease(w, Qt::LeftButton, {}, to);
}

QAction* action(const MainWindow& w, const char* name) {
  return w.findChild<QAction*>(QLatin1String(name));
}

// The order the ops are dropped in, and where (scene y; x is 0).
constexpr double kRowHeight = 130;

}  // namespace

class BuildLenetGuiTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();
  std::unique_ptr<Document> doc_;
  std::unique_ptr<MainWindow> window_;
  QStringList answers_;  // for the text prompt, in order

  GraphView* view() { return window_->view(); }
  GraphScene* scene() { return window_->scene(); }
  QWidget* port() { return window_->view()->viewport(); }

  // Lets the scene rebuild after an edit, on the event loop as in the app.
  bool settle() {
    for (int waited = 0; scene()->update_pending(); waited += 10) {
      if (waited > 5000) return false;
      QTest::qWait(10);
    }
    return true;
  }

  // Shows scene point `p` at 100 % and returns where it is in the viewport.
  QPoint show(QPointF p) {
    view()->reset_zoom();
    view()->centerOn(p);
    return view()->mapFromScene(p);
  }

  // Searches the palette for `op`, then drags it from there onto the canvas at `at`.
  NodeId drop_from_palette(const QString& op, QPointF at) {
    Palette* palette = window_->palette();
    palette->search_box()->clear();
    QTest::keyClicks(palette->search_box(), op);
    if (!palette->visible_ops().contains(op)) return -1;
    QAbstractItemModel* model = palette->tree()->model();
    QModelIndex found;
    for (int c = 0; c < model->rowCount() && !found.isValid(); ++c) {
      const QModelIndex category = model->index(c, 0);
      for (int r = 0; r < model->rowCount(category); ++r) {
        const QModelIndex item = model->index(r, 0, category);
        if (item.data().toString() == op) found = item;
      }
    }
    if (!found.isValid()) return -1;
    std::unique_ptr<QMimeData> data(model->mimeData({found}));
    const QPoint p = show(at + QPointF(0, 200)) - QPoint(0, 200);
    const int before = doc_->graph().num_nodes();
    QDragEnterEvent enter(p, Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(port(), &enter);
    QDragMoveEvent move(p, Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(port(), &move);
    QDropEvent drop(QPointF(p), Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(port(), &drop);
    if (doc_->graph().num_nodes() != before + 1 || !settle()) return -1;
    return doc_->graph().node_ids().back();
  }

  // Drags from `from`'s first output port to input `input` of `to`.
  bool wire(NodeId from, NodeId to, int input) {
    if (!settle()) return false;
    const QPointF out = scene()->node_item(from)->output_port(0);
    const QPointF in = scene()->input_port_position(to, input);
    if (in.isNull()) return false;
    show((out + in) / 2);
    drag(port(), view()->mapFromScene(out), view()->mapFromScene(in));
    const auto& inputs = doc_->graph().node(to).inputs;
    return settle() && static_cast<int>(inputs.size()) > input &&
           inputs[input] == doc_->graph().node(from).outputs[0];
  }

  // Where to click on a node: the left of its header (away from the ports).
  QPoint on_header(NodeId id) { return show(scene()->node_item(id)->pos() + QPointF(14, 16)); }

  // Right-clicks the node and picks the menu entry whose text starts with `entry`.
  bool menu_entry(NodeId id, const QString& entry) {
    if (!settle()) return false;
    const QPoint at = on_header(id);
    bool picked = false;
    // The menu runs its own event loop: a timer picks the entry once it is up.
    QTimer poll;
    connect(&poll, &QTimer::timeout, this, [&] {
      auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
      if (!menu) return;
      poll.stop();
      for (QAction* a : menu->actions()) {
        if (!a->text().startsWith(entry)) continue;
        picked = true;
        menu->close();
        a->trigger();
        return;
      }
      menu->close();
    });
    poll.start(20);
    QContextMenuEvent ev(QContextMenuEvent::Mouse, at, port()->mapToGlobal(at));
    QCoreApplication::sendEvent(port(), &ev);
    poll.stop();
    return picked && settle();
  }

  // Selects the node by clicking it, then types `text` into attribute `key`'s field + Enter.
  bool type_attribute(NodeId id, const QString& key, const QString& text) {
    if (!settle()) return false;
    QTest::mouseClick(port(), Qt::LeftButton, {}, on_header(id));
    if (window_->inspector()->node() != id) return false;
    QLineEdit* field = window_->inspector()->attribute_field(key);
    if (!field) return false;
    field->setFocus();
    field->clear();
    QTest::keyClicks(field, text);
    QTest::keyClick(field, Qt::Key_Return);
    return settle() && doc_->graph().node(id).attrs.count(key.toStdString()) == 1;
  }

  bool add_weight(NodeId id, const QString& port_name, const QString& shape) {
    answers_ = {shape};
    return menu_entry(id, QStringLiteral("Add Weight to %1").arg(port_name)) && answers_.isEmpty();
  }

  std::map<std::string, QPointF> places() const {
    std::map<std::string, QPointF> out;
    for (const auto& [id, p] : window_->scene()->node_positions())
      out[doc_->graph().node(id).name] = p;
    return out;
  }

 private Q_SLOTS:
  void init() {
    doc_ = std::make_unique<Document>(registry_);
    window_ = std::make_unique<MainWindow>(*doc_);
    window_->resize(1280, 800);
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
    view()->set_text_prompt([this](const QString&, const QString&, const QString&) {
      return answers_.isEmpty() ? QString() : answers_.takeFirst();
    });
  }

  void cleanup() {
    window_->set_save_prompt([](const QString&) { return tessera::studio::SaveChoice::kDiscard; });
    window_.reset();
    doc_.reset();
  }

  void builds_lenet_with_mouse_and_keyboard() {
    const QStringList ops = {"Conv",    "Relu", "MaxPool", "Conv", "Relu", "MaxPool",
                             "Flatten", "Gemm", "Relu",    "Gemm", "Relu", "Gemm"};
    std::vector<NodeId> n;
    for (int i = 0; i < ops.size(); ++i) {
      const NodeId id = drop_from_palette(ops[i], QPointF(0, kRowHeight * i));
      QVERIFY2(id >= 0, qPrintable(ops[i]));
      QCOMPARE(QString::fromStdString(doc_->graph().node(id).op), ops[i]);
      n.push_back(id);
    }
    QCOMPARE(doc_->graph().node(n[0]).name, std::string("conv1"));
    QCOMPARE(doc_->graph().node(n[11]).name, std::string("gemm3"));
    for (size_t i = 1; i < n.size(); ++i) QVERIFY2(wire(n[i - 1], n[i], 0), qPrintable(ops[i]));

    // The graph input, from conv1's menu: name, then shape.
    answers_ = {QStringLiteral("x"), QStringLiteral("N, 1, 28, 28")};
    QVERIFY(menu_entry(n[0], QStringLiteral("Add Input to X")));
    QVERIFY(answers_.isEmpty());

    // Attributes through the inspector, then the weights (Gemm needs transB before its W).
    QVERIFY(type_attribute(n[0], "kernel_shape", "5, 5"));
    QVERIFY(type_attribute(n[0], "pads", "2, 2, 2, 2"));
    QVERIFY(add_weight(n[0], "W", "6, 1, 5, 5"));
    QVERIFY(add_weight(n[0], "B", "6"));
    for (int pool : {2, 5}) {
      QVERIFY(type_attribute(n[pool], "kernel_shape", "2, 2"));
      QVERIFY(type_attribute(n[pool], "strides", "2, 2"));
    }
    QVERIFY(type_attribute(n[3], "kernel_shape", "5, 5"));
    QVERIFY(add_weight(n[3], "W", "16, 6, 5, 5"));
    QVERIFY(add_weight(n[3], "B", "16"));
    const std::vector<std::pair<int, std::pair<QString, QString>>> gemms = {
        {7, {"120, 400", "120"}}, {9, {"84, 120", "84"}}, {11, {"10, 84", "10"}}};
    for (const auto& [i, shapes] : gemms) {
      QVERIFY(type_attribute(n[i], "transB", "1"));
      QVERIFY(add_weight(n[i], "B", shapes.first));
      QVERIFY(add_weight(n[i], "C", shapes.second));
    }
    QVERIFY(menu_entry(n[11], QStringLiteral("Make ")));

    // What the window shows: every value typed, every edge labelled with its type.
    const auto& g = doc_->graph();
    QVERIFY2(!doc_->inference_error(),
             doc_->inference_error() ? doc_->inference_error()->to_string().c_str() : "");
    QCOMPARE(g.num_nodes(), 12);
    QCOMPARE(g.inputs().size(), size_t{1});
    QCOMPARE(g.params().size(), size_t{10});
    QCOMPARE(g.outputs().size(), size_t{1});
    QCOMPARE(QString::fromStdString(g.value(g.outputs()[0]).type.to_string()),
             QStringLiteral("f32[N, 10]"));
    QCOMPARE(doc_->parameter_count(), int64_t{61706});
    int edges = 0;
    for (QGraphicsItem* item : scene()->items()) {
      if (item->type() != static_cast<int>(CanvasItemType::kEdge)) continue;
      auto* edge = static_cast<EdgeItem*>(item);
      ++edges;
      QVERIFY(edge->label());
      QCOMPARE(edge->label()->text(),
               QString::fromStdString(g.value(edge->value_id()).type.to_string()));
    }
    QCOMPARE(edges, 13);  // x -> conv1, eleven between the nodes, gemm3 -> the output
    bool shown = false;
    for (QLabel* label : window_->statusBar()->findChildren<QLabel*>())
      shown |= label->text() == QStringLiteral("61,706 parameters");
    QVERIFY(shown);

    // A picture of it, in the build folder.
    view()->fit();
    QCoreApplication::processEvents();
    QVERIFY(window_->grab().save(QString::fromStdString(tessera::test::output_dir() + "/build_lenet_gui.png")));

    // Save As .tsr, New, Open: the same graph and the same places.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("lenet.tsr"));
    window_->set_save_as_dialog([&] { return path; });
    action(*window_, "action_save_as")->trigger();
    QVERIFY(!doc_->is_modified());
    const std::string text = tessera::ir::print_graph(doc_->graph());
    const auto before = places();
    QCOMPARE(before.size(), size_t{12});
    action(*window_, "action_new")->trigger();
    QVERIFY(doc_->is_empty());
    window_->set_open_dialog([&] { return path; });
    action(*window_, "action_open")->trigger();
    QTRY_COMPARE(QString::fromStdString(doc_->path()), path);  // read on a worker thread
    QVERIFY(settle());
    QCOMPARE(tessera::ir::print_graph(doc_->graph()), text);
    QCOMPARE(doc_->parameter_count(), int64_t{61706});
    const auto after = places();
    QCOMPARE(after.size(), before.size());
    for (const auto& [name, p] : before) {
      QVERIFY2(after.count(name), name.c_str());
      QCOMPARE(after.at(name), p);
    }

    // Run it: Run > Run (F5) runs the reopened graph on a random input (N = 1) through the six
    // stages. The menu action, as a click on it would (a shortcut needs the window to be active,
    // which a bare X server without a window manager does not promise).
    tessera::studio::RunPanel* run = window_->run_panel();
    QVERIFY(run != nullptr);
    QVERIFY2(run->can_run(), qPrintable(run->status_text()));
    QSignalSpy ran(run, &tessera::studio::RunPanel::finished);
    action(*window_, "run_action")->trigger();
    QVERIFY(ran.count() > 0 || ran.wait(60000));
    QVERIFY2(run->error_text().isEmpty(), qPrintable(run->error_text()));
    QCOMPARE(run->outputs().size(), size_t{1});
    QCOMPARE(run->outputs()[0].shape(), (tessera::Shape{1, 10}));
    for (int i = 0; i < 10; ++i) QVERIFY(std::isfinite(run->outputs()[0].get(i)));
  }
};

TESSERA_QTEST(BuildLenetGuiTest)
#include "build_lenet_gui_test.moc"
