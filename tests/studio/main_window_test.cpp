// Tests of studio/main_window.cpp (and the view's zoom): title and status bar after opening,
// errors returned rather than shown, the menu shortcuts the brief asks for.
#include <QAction>
#include <QLabel>
#include <QtTest>
#include <string>

#include "engine/ops/op_def.h"
#include "studio/document.h"
#include "studio/graph_view.h"
#include "studio/main_window.h"

using tessera::Status;
using tessera::studio::Document;
using tessera::studio::GraphView;
using tessera::studio::MainWindow;

namespace {

const QString kLenet = QStringLiteral(TESSERA_SOURCE_DIR "/samples/lenet.json");
const QString kBroken = QStringLiteral(TESSERA_SOURCE_DIR "/tests/studio/data/broken.json");

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

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

 private slots:
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
    QVERIFY(visible.contains(view->sceneRect()));
  }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
