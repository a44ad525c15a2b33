// Tests of studio/main_window.cpp (and the view's zoom): title and status bar after opening,
// errors returned rather than shown, the menu shortcuts the brief asks for, and the Edit menu:
// Undo/Redo following the stack, Delete (by action and by key), Select All, Copy/Cut/Paste
// through the clipboard. (Files, autosave and settings: main_window_files_test.cpp.)
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QMimeData>
#include <QUndoStack>
#include <QStatusBar>
#include <QTest>
#include <memory>
#include <string>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ops/op_def.h"
#include "studio/document/clipboard.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/app/main_window.h"
#include "studio/panels/inspector.h"

using tessera::Status;
using tessera::ir::NodeId;
using tessera::studio::Document;
using tessera::studio::GraphView;
using tessera::studio::MainWindow;

namespace {

const QString kLenet = QString::fromStdString(tessera::test::source_dir() + "/samples/lenet.json");
const QString kBroken = QString::fromStdString(tessera::test::source_dir() + "/tests/studio/data/broken.json");

QStringList label_texts(const QWidget& w) {
  QStringList out;
  for (const QLabel* l : w.findChildren<QLabel*>()) out << l->text();
  return out;
}

const QAction* find_action(const QWidget& w, const QString& text) {
  for (const QAction* a : w.findChildren<QAction*>())
    if (a->text() == text) return a;
  return nullptr;
}

QAction* action(const MainWindow& w, const char* name) {
  return w.findChild<QAction*>(QLatin1String(name));
}

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

  // Two Relu boxes, a above b, in a shown window.
  struct Fixture {
    Document doc;
    MainWindow window;
    NodeId a = -1, b = -1;
    explicit Fixture(const tessera::ops::OpRegistry& r) : doc(r), window(doc) {}
  };

  std::unique_ptr<Fixture> two_relus() {
    auto f = std::make_unique<Fixture>(registry_);
    f->window.resize(1000, 700);
    f->window.show();
    if (!QTest::qWaitForWindowExposed(&f->window)) return nullptr;
    f->a = f->doc.add_node("Relu", "a", {0, 0}).value();
    f->b = f->doc.add_node("Relu", "b", {0, 200}).value();
    f->window.scene()->flush_update();
    return f;
  }

 private Q_SLOTS:
  void empty_window() {
    Document doc(registry_);
    MainWindow window(doc);
    QCOMPARE(window.windowTitle(), QStringLiteral("Tessera Studio"));
    QVERIFY(label_texts(window).contains(QStringLiteral("No graph open")));
  }

  void title_and_status_bar_after_open() {
    Document doc(registry_);
    MainWindow window(doc);
    const Status st = window.open_file(kLenet);
    QVERIFY2(st.is_ok(), st.to_string().c_str());
    QCOMPARE(window.windowTitle(), QStringLiteral("lenet.json \u2014 Tessera Studio"));
    const QStringList labels = label_texts(window);
    QVERIFY2(labels.contains(QStringLiteral("lenet.json")), qPrintable(labels.join('|')));
    QVERIFY(labels.contains(QStringLiteral("12 nodes")));
    QVERIFY(labels.contains(QStringLiteral("61,706 parameters")));
    QVERIFY(labels.contains(QStringLiteral("types inferred")));
  }

  // Issue 17, item 8: refusals name nodes and values by name, and are never cut in the status bar.
  void refusals_are_readable_and_whole() {
    Document doc(registry_);
    MainWindow window(doc);
    window.resize(800, 500);
    QVERIFY(window.open_file(kLenet).is_ok());
    const std::string x_name = doc.graph().value(doc.graph().inputs()[0]).name;
    const QString message = QStringLiteral("Cannot connect: Conv 'conv1' (#0): connecting %%1 would close a cycle")
                                .arg(doc.graph().inputs()[0]);
    QCOMPARE(window.readable_message(message),
             QStringLiteral("Cannot connect: Conv 'conv1': connecting '%1' would close a cycle")
                 .arg(QString::fromStdString(x_name)));
    const QString long_text = QStringLiteral("Cannot set kernel_shape: ") + QString(300, QLatin1Char('x'));
    window.show();
    window.show_refusal(long_text);
    QCOMPARE(window.last_refusal(), long_text);
    QCOMPARE(window.statusBar()->toolTip(), long_text);  // the whole of it, where it does not fit
    QLabel* nodes = nullptr;
    for (QLabel* l : window.findChildren<QLabel*>())
      if (l->text() == QStringLiteral("12 nodes")) nodes = l;
    QVERIFY(nodes);
    QVERIFY(nodes->isHidden());  // room for the message
    window.statusBar()->clearMessage();
    QVERIFY(window.statusBar()->toolTip().isEmpty());
    QVERIFY(!nodes->isHidden());
  }

  void open_error_is_returned_not_shown() {
    Document doc(registry_);
    MainWindow window(doc);
    QVERIFY(window.open_file(kLenet).is_ok());
    const Status st = window.open_file(kBroken);  // a modal box here would hang the test
    QVERIFY(!st.is_ok());
    QVERIFY(QString::fromStdString(st.to_string()).contains(kBroken));
    QCOMPARE(window.windowTitle(), QStringLiteral("lenet.json \u2014 Tessera Studio"));
  }

  void menu_shortcuts() {
    Document doc(registry_);
    MainWindow window(doc);
    const QAction* open = find_action(window, QStringLiteral("&Open\u2026"));
    const QAction* quit = find_action(window, QStringLiteral("&Quit"));
    const QAction* fit = find_action(window, QStringLiteral("&Fit"));
    QVERIFY(open && quit && fit);
    QCOMPARE(open->shortcut(), QKeySequence(QStringLiteral("Ctrl+O")));
    QCOMPARE(quit->shortcut(), QKeySequence(QStringLiteral("Ctrl+Q")));
    QCOMPARE(fit->shortcut(), QKeySequence(QStringLiteral("F")));
  }

  void zoom_and_fit() {
    Document doc(registry_);
    MainWindow window(doc);
    window.resize(1000, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.open_file(kLenet).is_ok());
    GraphView* view = window.view();
    view->reset_zoom();
    QCOMPARE(view->zoom(), 1.0);
    view->zoom_in();
    QCOMPARE(view->zoom(), 1.25);
    view->zoom_out();
    QCOMPARE(view->zoom(), 1.0);
    // LeNet is a tall chain: fitting it shrinks it, and the whole graph is then in view.
    view->fit();
    QVERIFY(view->zoom() < 1.0);
    const QRectF visible = view->mapToScene(view->viewport()->rect()).boundingRect();
    QVERIFY2(visible.contains(view->scene()->sceneRect()), qPrintable(QStringLiteral("visible %1,%2 %3x%4 scene %5,%6 %7x%8").arg(visible.x()).arg(visible.y()).arg(visible.width()).arg(visible.height()).arg(view->scene()->sceneRect().x()).arg(view->scene()->sceneRect().y()).arg(view->scene()->sceneRect().width()).arg(view->scene()->sceneRect().height())));
  }

  void undo_and_redo_actions_follow_the_stack() {
    Document doc(registry_);
    MainWindow window(doc);
    QAction* undo = action(window, "action_undo");
    QAction* redo = action(window, "action_redo");
    QVERIFY(undo && redo);
    QCOMPARE(undo->shortcut(), QKeySequence(QKeySequence::Undo));
    QVERIFY(redo->shortcuts().contains(QKeySequence(QStringLiteral("Ctrl+Shift+Z"))));
    QVERIFY(redo->shortcuts().contains(QKeySequence(QStringLiteral("Ctrl+Y"))));
    QVERIFY(!undo->isEnabled());
    QVERIFY(!redo->isEnabled());
    QVERIFY(doc.add_node("Relu", "r", {0, 0}));
    QVERIFY(undo->isEnabled());
    QVERIFY2(undo->text().startsWith(QStringLiteral("&Undo ")), qPrintable(undo->text()));
    undo->trigger();
    QCOMPARE(doc.graph().num_nodes(), 0);
    QVERIFY(!undo->isEnabled());
    QVERIFY(redo->isEnabled());
    redo->trigger();
    QCOMPARE(doc.graph().num_nodes(), 1);
  }

  void delete_removes_the_selection_and_undo_restores_it() {
    auto f = two_relus();
    QVERIFY(f);
    QAction* del = action(f->window, "action_delete");
    QVERIFY(del->shortcuts().contains(QKeySequence(Qt::Key_Delete)));
    QVERIFY(del->shortcuts().contains(QKeySequence(Qt::Key_Backspace)));
    f->window.scene()->select_nodes({f->a});
    del->trigger();
    QVERIFY(!f->doc.graph().has_node(f->a));
    QVERIFY(f->doc.graph().has_node(f->b));
    f->doc.undo_stack().undo();
    QVERIFY(f->doc.graph().has_node(f->a));
    // Select All, then Delete: both go in one step.
    action(f->window, "action_select_all")->trigger();
    QCOMPARE(f->window.scene()->selected_node_ids().size(), 2);
    del->trigger();
    QCOMPARE(f->doc.graph().num_nodes(), 0);
    f->doc.undo_stack().undo();
    QCOMPARE(f->doc.graph().num_nodes(), 2);
    // The keys themselves, on the canvas.
    f->window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&f->window));
    f->window.view()->setFocus();
    QTest::keyClick(f->window.view(), Qt::Key_A, Qt::ControlModifier);
    QCOMPARE(f->window.scene()->selected_node_ids().size(), 2);
    f->window.scene()->select_nodes({f->b});
    QTest::keyClick(f->window.view(), Qt::Key_Delete);
    QVERIFY(!f->doc.graph().has_node(f->b));
    QTest::keyClick(f->window.view(), Qt::Key_Z, Qt::ControlModifier);
    QVERIFY(f->doc.graph().has_node(f->b));
    QTest::keyClick(f->window.view(), Qt::Key_Y, Qt::ControlModifier);
    QVERIFY(!f->doc.graph().has_node(f->b));
  }

  void copy_paste_and_cut_through_the_clipboard() {
    auto f = two_relus();
    QVERIFY(f);
    f->window.scene()->select_nodes({f->a});
    action(f->window, "action_copy")->trigger();
    const QMimeData* mime = QApplication::clipboard()->mimeData();
    QVERIFY(mime && mime->hasFormat(QString::fromLatin1(tessera::studio::kClipboardMimeType)));
    action(f->window, "action_paste")->trigger();
    QCOMPARE(f->doc.graph().num_nodes(), 3);
    const QList<NodeId> pasted = f->window.scene()->selected_node_ids();
    QCOMPARE(pasted.size(), 1);
    QCOMPARE(f->doc.graph().node(pasted[0]).op, std::string("Relu"));
    QCOMPARE(f->doc.position(pasted[0])->x, 40.0);  // at an offset from the copy
    QCOMPARE(f->doc.position(pasted[0])->y, 40.0);
    action(f->window, "action_cut")->trigger();
    QCOMPARE(f->doc.graph().num_nodes(), 2);
    action(f->window, "action_paste")->trigger();
    QCOMPARE(f->doc.graph().num_nodes(), 3);
  }

  // Issue 40, items 2 and 5: Add Weight changes only values and edges; the status bar's counts and
  // the inspector's ports follow it (they stayed at 112,896 FLOPs and "(not connected)" before),
  // and the prompt is pre-filled with the bias's shape, the weight's output channels.
  void counts_and_ports_follow_add_weight() {
    Document doc(registry_);
    MainWindow w(doc, tessera::studio::MainWindowOptions{});
    w.show();
    QVERIFY(doc.add_input("x", tessera::ir::TensorType(tessera::DType::kF32,
                                                        {tessera::ir::Dim::named("N"), tessera::ir::Dim::known(1),
                                                         tessera::ir::Dim::known(28), tessera::ir::Dim::known(28)}),
                          {0, 0}).has_value());
    const NodeId conv = doc.add_node("Conv", "conv1", {0, 100}).value();
    QVERIFY(doc.connect(doc.graph().inputs()[0], conv, 0).is_ok());
    QVERIFY(doc.set_attribute(conv, "kernel_shape", tessera::ir::Attribute(std::vector<int64_t>{5, 5})).is_ok());
    QStringList offered;
    QStringList answers = {"8, 1, 5, 5", ""};
    w.view()->set_text_prompt([&](const QString&, const QString&, const QString& initial) {
      offered << initial;
      if (answers.isEmpty()) return QString();
      const QString a = answers.takeFirst();
      return a.isEmpty() ? initial : a;  // "" accepts what is offered
    });
    QVERIFY(w.view()->add_weight(conv, 1).has_value());
    QCOMPARE(offered.value(0), QStringLiteral("16, 1, 5, 5"));  // the input's channel, the kernel
    w.scene()->flush_update();
    w.scene()->select_nodes({conv});
    QCoreApplication::processEvents();
    auto flops_text = [&] {
      for (QLabel* l : w.statusBar()->findChildren<QLabel*>())
        if (l->text().contains(QStringLiteral("FLOPs"))) return l->text();
      return QString();
    };
    // 8 * 24 * 24 outputs of 25 multiply-adds each: 230,400 FLOPs per sample (no bias yet).
    QCOMPARE(flops_text(), QStringLiteral("230,400 FLOPs per sample"));
    auto* inspector = w.findChild<tessera::studio::Inspector*>();
    QVERIFY(inspector);
    QCOMPARE(inspector->node(), conv);
    QVERIFY(w.view()->add_weight(conv, 2).has_value());  // accepts the offered shape
    QCoreApplication::processEvents();
    QCOMPARE(inspector->node(), conv);
    QCOMPARE(offered.value(1), QStringLiteral("8"));
    QCOMPARE(doc.graph().value(doc.graph().node(conv).inputs[2]).type.to_string(), std::string("f32[8]"));
    QCOMPARE(flops_text(), QStringLiteral("235,008 FLOPs per sample"));  // + one bias add per output
    QVERIFY2(inspector->port_lines().join('|').contains(QStringLiteral("conv1.B")),
             qPrintable(inspector->port_lines().join('|')));
    QVERIFY2(inspector->cost_text().startsWith(QStringLiteral("208 parameters")), qPrintable(inspector->cost_text()));
    doc.undo_stack().undo();
    QCOMPARE(flops_text(), QStringLiteral("230,400 FLOPs per sample"));
    QVERIFY(!inspector->port_lines().join('|').contains(QStringLiteral("conv1.B")));
  }

  // While File › Open reads a file on its worker the status bar says so in a label that menus do
  // not replace; then it names the file.
  void status_bar_says_opening_until_the_file_is_read() {
    Document doc(registry_);
    MainWindow w(doc, tessera::studio::MainWindowOptions{});
    w.show();
    auto status_labels = [&] {
      QStringList out;
      for (QLabel* l : w.statusBar()->findChildren<QLabel*>()) out << l->text();
      return out.join('|');
    };
    w.open_in_background(kLenet);
    QVERIFY2(status_labels().contains(QStringLiteral("Opening lenet.json")), qPrintable(status_labels()));
    QTRY_COMPARE(QString::fromStdString(doc.path()), kLenet);
    QTRY_VERIFY(!status_labels().contains(QStringLiteral("Opening")));
    QVERIFY(status_labels().contains(QStringLiteral("lenet.json")));
  }
};

TESSERA_QTEST(MainWindowTest)
#include "main_window_test.moc"
