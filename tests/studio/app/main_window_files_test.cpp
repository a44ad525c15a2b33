// Tests of the main window's files (studio/main_window_files.cpp): New/Save/Save As through
// their hooks, positions kept by a .tsr round trip, the "Save changes?" prompt (answered by a test
// hook), the modified "*" in the title, autosave writing and restoring, recent files and the
// settings that persist (geometry, docks, recent files).
#include <QAction>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "engine/ops/op_def.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_scene.h"
#include "studio/app/main_window.h"

using tessera::ir::NodeId;
using tessera::studio::Document;
using tessera::studio::MainWindow;
using tessera::studio::MainWindowOptions;
using tessera::studio::SaveChoice;

namespace {

const QString kLenet = QString::fromStdString(tessera::test::source_dir() + "/samples/lenet.json");
const QString kMlp = QString::fromStdString(tessera::test::source_dir() + "/samples/mlp.json");

// A copy of LeNet in `dir`, so that tests may write next to it (with its weights file, which
// the JSON names: lenet.npz).
QString lenet_copy(const QTemporaryDir& dir, const QString& name = QStringLiteral("lenet.json")) {
  const QString weights = dir.filePath(QStringLiteral("lenet.npz"));
  if (!QFileInfo::exists(weights) &&
      !QFile::copy(QString::fromStdString(tessera::test::source_dir() + "/samples/lenet.npz"), weights))
    return QString();
  const QString path = dir.filePath(name);
  QFile::remove(path);
  return QFile::copy(kLenet, path) ? path : QString();
}

}  // namespace

class MainWindowFilesTest : public QObject {
  Q_OBJECT

 private:
  tessera::ops::OpRegistry registry_ = tessera::ops::make_default_registry();

 private Q_SLOTS:
  void file_menu_shortcuts() {
    Document doc(registry_);
    MainWindow window(doc);
    auto key = [&](const char* name) {
      QAction* a = window.findChild<QAction*>(QLatin1String(name));
      return a ? a->shortcut() : QKeySequence();
    };
    QCOMPARE(key("action_new"), QKeySequence(QStringLiteral("Ctrl+N")));
    QCOMPARE(key("action_open"), QKeySequence(QStringLiteral("Ctrl+O")));
    QCOMPARE(key("action_save"), QKeySequence(QStringLiteral("Ctrl+S")));
    QCOMPARE(key("action_save_as"), QKeySequence(QStringLiteral("Ctrl+Shift+S")));
    QVERIFY(window.recent_menu());
  }

  void save_to_tsr_and_reopen_keeps_positions() {
    QTemporaryDir dir;
    Document doc(registry_);
    MainWindow window(doc);
    QVERIFY(window.open_file(kLenet).is_ok());
    QVERIFY(doc.layout().positions.empty());
    // Move one box away from where the layout put it; the rest stay where the canvas has them.
    const NodeId first = doc.graph().node_ids().front();
    QVERIFY(doc.set_positions({{first, {500, -80}}}).is_ok());
    window.scene()->flush_update();
    const std::map<NodeId, QPointF> shown = window.scene()->node_positions();
    QCOMPARE(shown.at(first), QPointF(500, -80));
    const QString path = dir.filePath(QStringLiteral("lenet.tsr"));
    const tessera::Status st = window.save_to(path);
    QVERIFY2(st.is_ok(), st.to_string().c_str());
    QVERIFY(!doc.is_modified());
    QCOMPARE(QString::fromStdString(doc.path()), path);

    Document again(registry_);
    MainWindow reopened(again);
    QVERIFY(reopened.open_file(path).is_ok());
    QCOMPARE(again.layout().positions.size(), shown.size());
    QCOMPARE(reopened.scene()->node_positions(), shown);
  }

  void title_shows_modified() {
    Document doc(registry_);
    MainWindow window(doc);
    QVERIFY(window.open_file(kLenet).is_ok());
    QCOMPARE(window.windowTitle(), QStringLiteral("lenet.json \u2014 Tessera Studio"));
    QVERIFY(doc.add_node("Relu", "extra", {0, 0}));
    QCOMPARE(window.windowTitle(), QStringLiteral("lenet.json* \u2014 Tessera Studio"));
    doc.undo_stack().undo();
    QCOMPARE(window.windowTitle(), QStringLiteral("lenet.json \u2014 Tessera Studio"));
  }

  void save_changes_prompt() {
    QTemporaryDir dir;
    const QString path = lenet_copy(dir);
    QVERIFY(!path.isEmpty());
    Document doc(registry_);
    MainWindow window(doc);
    QStringList asked;
    SaveChoice answer = SaveChoice::kCancel;
    window.set_save_prompt([&](const QString& name) {
      asked << name;
      return answer;
    });
    QVERIFY(window.open_file(path).is_ok());
    // Nothing modified: no question.
    QVERIFY(window.maybe_save());
    QVERIFY(asked.isEmpty());
    QVERIFY(doc.add_node("Relu", "extra", {0, 0}));
    // Cancel: New does nothing.
    QVERIFY(!window.new_document());
    QCOMPARE(asked, QStringList{QStringLiteral("lenet.json")});
    QCOMPARE(doc.graph().num_nodes(), 13);
    // Closing is refused too.
    window.show();
    QVERIFY(!window.close());
    QVERIFY(window.isVisible());
    // Save: written to the file, then New goes on.
    answer = SaveChoice::kSave;
    QVERIFY(window.new_document());
    QVERIFY(doc.is_empty());
    Document check(registry_);
    QVERIFY(check.load(path.toStdString()).is_ok());
    QCOMPARE(check.graph().num_nodes(), 13);
    // Discard: the edit is dropped.
    QVERIFY(window.open_file(path).is_ok());
    QVERIFY(doc.add_node("Relu", "another", {0, 0}));
    answer = SaveChoice::kDiscard;
    QVERIFY(window.close());
    QVERIFY(check.load(path.toStdString()).is_ok());
    QCOMPARE(check.graph().num_nodes(), 13);
  }

  void save_as_an_untitled_document() {
    QTemporaryDir dir;
    Document doc(registry_);
    MainWindow window(doc);
    QVERIFY(doc.add_node("Relu", "r", {10, 20}));
    QCOMPARE(window.windowTitle(), QStringLiteral("Untitled* \u2014 Tessera Studio"));
    const QString path = dir.filePath(QStringLiteral("new.json"));
    window.set_save_as_dialog([&] { return path; });
    window.set_save_prompt([](const QString&) { return SaveChoice::kSave; });
    QVERIFY(window.maybe_save());  // Save of an untitled document asks for a path
    QVERIFY(QFileInfo::exists(path));
    QCOMPARE(window.windowTitle(), QStringLiteral("new.json \u2014 Tessera Studio"));
  }

  void autosave_writes_and_restores() {
    QTemporaryDir dir;
    const QString path = lenet_copy(dir);
    MainWindowOptions options;
    options.autosave_dir = dir.filePath(QStringLiteral("autosave"));
    options.autosave_interval_ms = 50;
    {
      Document doc(registry_);
      MainWindow window(doc, options);
      QVERIFY(window.open_file(path).is_ok());
      const QString autosave = window.autosave_path();
      QVERIFY2(QFileInfo(autosave).fileName().startsWith(QStringLiteral("lenet-")),
               qPrintable(autosave));
      QVERIFY(autosave.endsWith(QStringLiteral(".tsr")));
      QTest::qWait(150);
      QVERIFY(!QFileInfo::exists(autosave));  // not modified: nothing written
      QVERIFY(doc.add_node("Relu", "extra", {0, 0}));
      QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(autosave), 3000);
      QVERIFY(doc.is_modified());  // an autosave is not a save
      QCOMPARE(QString::fromStdString(doc.path()), path);
      // The window goes away without closing (a crash): the autosave stays.
    }
    // The file is older than its autosave.
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadWrite));
    QVERIFY(file.setFileTime(QDateTime::currentDateTime().addSecs(-3600),
                             QFileDevice::FileModificationTime));
    file.close();
    {
      Document doc(registry_);
      MainWindow window(doc, options);
      int asked = 0;
      window.set_restore_prompt([&](const QString& name) {
        ++asked;
        return name == QStringLiteral("lenet.json");
      });
      QVERIFY(window.open_file(path).is_ok());
      QVERIFY(window.offer_restore());
      QCOMPARE(asked, 1);
      QCOMPARE(doc.graph().num_nodes(), 13);
      QVERIFY(doc.is_modified());
      QCOMPARE(QString::fromStdString(doc.path()), path);
      // A clean save removes the autosave.
      QVERIFY(window.save_to(path).is_ok());
      QVERIFY(!QFileInfo::exists(window.autosave_path()));
      QVERIFY(!window.offer_restore());
    }
  }

  void autosave_declined_and_removed_on_close() {
    QTemporaryDir dir;
    const QString path = lenet_copy(dir);
    MainWindowOptions options;
    options.autosave_dir = dir.filePath(QStringLiteral("autosave"));
    Document doc(registry_);
    MainWindow window(doc, options);
    QVERIFY(window.open_file(path).is_ok());
    QVERIFY(doc.add_node("Relu", "extra", {0, 0}));
    QVERIFY(window.autosave_now().is_ok());
    QVERIFY(QFileInfo::exists(window.autosave_path()));
    window.set_restore_prompt([](const QString&) { return false; });
    QVERIFY(window.open_file(path).is_ok());
    QVERIFY(!window.offer_restore());  // declined (and the autosave is newer than the file)
    QCOMPARE(doc.graph().num_nodes(), 12);
    window.show();
    QVERIFY(window.close());  // not modified: no prompt
    QVERIFY(!QFileInfo::exists(window.autosave_path()));
  }

  void recent_files_persist_and_drop_missing_ones() {
    QTemporaryDir dir;
    const QString a = lenet_copy(dir, QStringLiteral("a.json"));
    const QString b = lenet_copy(dir, QStringLiteral("b.json"));
    MainWindowOptions options;
    options.settings_file = dir.filePath(QStringLiteral("settings.ini"));
    {
      Document doc(registry_);
      MainWindow window(doc, options);
      QVERIFY(window.recent_files().isEmpty());
      QVERIFY(window.open_file(a).is_ok());
      QVERIFY(window.open_file(b).is_ok());
      QVERIFY(window.open_file(a).is_ok());
      QCOMPARE(window.recent_files(), (QStringList{a, b}));  // most recent first, no duplicates
      QCOMPARE(window.recent_menu()->actions().size(), 2);
      QCOMPARE(window.recent_menu()->actions().front()->text(), QStringLiteral("a.json"));
    }
    {
      Document doc(registry_);
      MainWindow window(doc, options);
      QCOMPARE(window.recent_files(), (QStringList{a, b}));
      // b is gone: choosing it removes it from the list with a message.
      QVERIFY(QFile::remove(b));
      QAction* gone = window.recent_menu()->actions().at(1);
      QCOMPARE(gone->data().toString(), b);
      gone->trigger();
      QCOMPARE(window.recent_files(), QStringList{a});
      QVERIFY(window.statusBar()->currentMessage().contains(QStringLiteral("no longer exists")));
      QTRY_COMPARE(window.recent_menu()->actions().size(), 1);
      // Choosing a (not modified: no prompt) opens it.
      QVERIFY(doc.is_empty());
      window.recent_menu()->actions().front()->trigger();  // read on a worker thread
      QTRY_COMPARE(QString::fromStdString(doc.path()), a);
    }
    QSettings settings(options.settings_file, QSettings::IniFormat);
    QCOMPARE(settings.value(QStringLiteral("recent_files")).toStringList(), QStringList{a});
    QCOMPARE(settings.value(QStringLiteral("last_dir")).toString(), QFileInfo(a).absolutePath());
  }

  void recent_files_keep_eight() {
    QTemporaryDir dir;
    Document doc(registry_);
    MainWindow window(doc);
    for (int i = 0; i < 10; ++i)
      QVERIFY(window.open_file(lenet_copy(dir, QStringLiteral("g%1.json").arg(i))).is_ok());
    QCOMPARE(window.recent_files().size(), MainWindow::kMaxRecentFiles);
    QCOMPARE(QFileInfo(window.recent_files().front()).fileName(), QStringLiteral("g9.json"));
    QCOMPARE(QFileInfo(window.recent_files().back()).fileName(), QStringLiteral("g2.json"));
  }

  void geometry_and_docks_are_restored() {
    QTemporaryDir dir;
    MainWindowOptions options;
    options.settings_file = dir.filePath(QStringLiteral("settings.ini"));
    {
      Document doc(registry_);
      MainWindow window(doc, options);
      window.resize(900, 640);
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      window.palette_dock()->hide();
      QVERIFY(window.close());
    }
    Document doc(registry_);
    MainWindow window(doc, options);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCOMPARE(window.size(), QSize(900, 640));
    QVERIFY(!window.palette_dock()->isVisible());
    QVERIFY(window.inspector_dock()->isVisible());
  }
};

TESSERA_QTEST(MainWindowFilesTest)
#include "main_window_files_test.moc"
