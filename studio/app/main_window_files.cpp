// The studio's main window, files: New/Open/Save/Save As, recent files, the "Save changes?"
// prompt, autosave and restore, and the settings that persist (geometry, docks, recent files,
// the last folder).
#include <QAction>
#include <QCloseEvent>
#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QPointer>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTimer>
#include <map>

#include "studio/document/document.h"
#include "studio/canvas/graph_scene.h"
#include "studio/common/guard.h"
#include "studio/app/main_window.h"
#include "studio/common/theme.h"

namespace tessera::studio {

namespace {

const QString kFilters =
    QObject::tr("Tessera (*.tsr);;JSON graph (*.json);;ONNX (*.onnx);;IR text (*.tir)");

QString qstr(const std::string& s) {
  return QString::fromStdString(s);
}

}  // namespace

MainWindowOptions MainWindowOptions::persistent() {
  MainWindowOptions o;
  o.settings_file = QSettings(QSettings::IniFormat, QSettings::UserScope, QStringLiteral("Tessera"),
                              QStringLiteral("tessera-studio"))
                        .fileName();
  const QString data = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  if (!data.isEmpty()) o.autosave_dir = QDir(data).filePath(QStringLiteral("autosave"));
  return o;
}

// ---- opening ----

Status MainWindow::open_file(const QString& path) {
  last_dir_ = QFileInfo(path).absolutePath();
  Status st = document_.load(path.toStdString());
  if (st) add_recent(path);
  return st;
}

void MainWindow::open_interactive(const QString& path) {
  if (!maybe_save()) return;
  remove_autosave(qstr(document_.path()));
  open_in_background(path);
}

void MainWindow::open_in_background(const QString& path) {
  last_dir_ = QFileInfo(path).absolutePath();
  // In the status bar's first label, which stays while menus are browsed (a temporary message is
  // replaced by their entries' tips).
  opening_ = QFileInfo(path).fileName();
  refresh();
  // (The document may outlive this window: the answer then goes nowhere.)
  document_.load_in_background(path.toStdString(), [window = QPointer<MainWindow>(this), path](const Status& st) {
    if (!window) return;
    MainWindow* self = window.data();
    guarded(self, tr("Opening %1").arg(path), [&] {
      self->opening_.clear();
      self->refresh();
      if (!st) {
        self->show_open_error(path, st.error());
        return;
      }
      self->add_recent(path);
      (void)self->offer_restore();
    });
  });
}

void MainWindow::open_with_dialog() {
  const QString path = open_dialog_ ? open_dialog_() : QFileDialog::getOpenFileName(
      this, tr("Open graph"), last_dir_,
      tr("Tessera graphs (*.tsr *.json *.tir *.onnx);;Tessera (*.tsr);;JSON graphs (*.json);;"
         "IR text (*.tir);;ONNX (*.onnx);;All files (*)"));
  if (path.isEmpty()) return;
  open_interactive(path);
}

bool MainWindow::new_document() {
  if (!maybe_save()) return false;
  remove_autosave(qstr(document_.path()));
  document_.reset();
  return true;
}

// ---- saving ----

bool MainWindow::maybe_save() {
  if (!document_.is_modified()) return true;
  SaveChoice choice = SaveChoice::kCancel;
  if (save_prompt_) {
    choice = save_prompt_(document_.file_name());
  } else {
    const auto answer = QMessageBox::question(
        this, tr("Unsaved changes"), tr("Save changes to %1?").arg(document_.file_name()),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    choice = answer == QMessageBox::Save      ? SaveChoice::kSave
             : answer == QMessageBox::Discard ? SaveChoice::kDiscard
                                              : SaveChoice::kCancel;
  }
  switch (choice) {
    case SaveChoice::kSave:
      return save();
    case SaveChoice::kDiscard:
      return true;
    case SaveChoice::kCancel:
      return false;
  }
  return false;
}

bool MainWindow::save() {
  if (document_.path().empty()) return save_as();
  const QString path = qstr(document_.path());
  if (Status st = save_to(path); !st) {
    QMessageBox::warning(this, tr("Cannot save"), qstr(st.error().to_string()));
    return false;
  }
  return true;
}

bool MainWindow::save_as() {
  QString path;
  if (save_as_dialog_) {
    path = save_as_dialog_();
  } else {
    QString selected = tr("Tessera (*.tsr)");
    QString start = last_dir_;
    if (!document_.path().empty()) start = qstr(document_.path());
    path = QFileDialog::getSaveFileName(this, tr("Save graph as"), start, kFilters, &selected);
    // No extension typed: the one of the chosen filter.
    if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty()) {
      const int dot = selected.indexOf(QLatin1String("*."));
      if (dot >= 0) path += selected.mid(dot + 1, selected.size() - dot - 2);
    }
  }
  if (path.isEmpty()) return false;
  if (Status st = save_to(path); !st) {
    QMessageBox::warning(this, tr("Cannot save"), qstr(st.error().to_string()));
    return false;
  }
  return true;
}

void MainWindow::sync_positions() {
  std::map<ir::NodeId, NodePosition> changed;
  for (const auto& [id, p] : scene_->node_positions()) {
    const std::optional<NodePosition> known = document_.position(id);
    if (!known || known->x != p.x() || known->y != p.y()) changed[id] = NodePosition{p.x(), p.y()};
  }
  if (!changed.empty()) (void)document_.set_positions(changed);
}

Status MainWindow::save_to(const QString& path) {
  scene_->flush_update();
  sync_positions();
  const QString old_path = qstr(document_.path());
  RETURN_IF_ERROR(document_.save(path.toStdString()));
  remove_autosave(old_path);
  remove_autosave(path);
  last_dir_ = QFileInfo(path).absolutePath();
  add_recent(path);
  statusBar()->showMessage(tr("Saved %1").arg(QFileInfo(path).fileName()), 5000);
  return Status::ok();
}

// ---- recent files ----

void MainWindow::add_recent(const QString& path) {
  const QString full = QFileInfo(path).absoluteFilePath();
  recent_.removeAll(full);
  recent_.prepend(full);
  while (recent_.size() > kMaxRecentFiles) recent_.removeLast();
  rebuild_recent_menu();
  if (!options_.settings_file.isEmpty()) {
    QSettings settings(options_.settings_file, QSettings::IniFormat);
    settings.setValue(QStringLiteral("recent_files"), recent_);
    settings.setValue(QStringLiteral("last_dir"), last_dir_);
  }
}

void MainWindow::rebuild_recent_menu() {
  if (!recent_menu_) return;
  recent_menu_->clear();
  for (const QString& path : recent_) {
    QAction* a = recent_menu_->addAction(QFileInfo(path).fileName());
    a->setToolTip(path);
    a->setData(path);
    connect(a, &QAction::triggered, this, [this, path] {
      guarded(this, tr("Opening a recent file"), [&] {
        if (!QFileInfo::exists(path)) {
          recent_.removeAll(path);
          if (!options_.settings_file.isEmpty())
            QSettings(options_.settings_file, QSettings::IniFormat)
                .setValue(QStringLiteral("recent_files"), recent_);
          show_refusal(tr("%1 no longer exists: removed from the recent files").arg(path));
          // Not from inside the menu's own signal: it deletes this action.
          QTimer::singleShot(0, this, [this] { rebuild_recent_menu(); });
          return;
        }
        open_interactive(path);
      });
    });
  }
  recent_menu_->setEnabled(!recent_.isEmpty());
}

// ---- autosave ----

QString MainWindow::autosave_path_for(const QString& file) const {
  if (options_.autosave_dir.isEmpty()) return QString();
  const QString full = file.isEmpty() ? QString() : QFileInfo(file).absoluteFilePath();
  const QString name =
      file.isEmpty() ? QStringLiteral("Untitled") : QFileInfo(file).completeBaseName();
  const QByteArray hash =
      QCryptographicHash::hash(full.toUtf8(), QCryptographicHash::Sha1).toHex().left(12);
  return QDir(options_.autosave_dir)
      .filePath(QStringLiteral("%1-%2.tsr").arg(name, QString::fromLatin1(hash)));
}

QString MainWindow::autosave_path() const {
  return autosave_path_for(qstr(document_.path()));
}

Status MainWindow::autosave_now() {
  const QString path = autosave_path();
  if (path.isEmpty()) return make_error("no autosave folder");
  if (!QDir().mkpath(options_.autosave_dir))
    return make_error("cannot create the autosave folder " + options_.autosave_dir.toStdString());
  scene_->flush_update();
  return document_.save_copy(path.toStdString());
}

void MainWindow::remove_autosave(const QString& file) {
  const QString path = autosave_path_for(file);
  if (!path.isEmpty()) QFile::remove(path);
}

bool MainWindow::offer_restore() {
  if (document_.path().empty()) return false;
  const QString file = qstr(document_.path());
  const QString autosave = autosave_path_for(file);
  if (autosave.isEmpty() || !QFileInfo::exists(autosave)) return false;
  if (QFileInfo(autosave).lastModified() <= QFileInfo(file).lastModified()) return false;
  const QString name = QFileInfo(file).fileName();
  const bool yes =
      restore_prompt_
          ? restore_prompt_(name)
          : QMessageBox::question(
                this, tr("Restore autosave"),
                tr("An autosave of %1 newer than the file exists. Restore it?").arg(name)) ==
                QMessageBox::Yes;
  if (!yes) return false;
  if (Status st = document_.recover(autosave.toStdString(), file.toStdString()); !st) {
    show_refusal(tr("Cannot restore the autosave: %1").arg(qstr(st.error().to_string())));
    return false;
  }
  return true;
}

// ---- settings and closing ----

void MainWindow::load_settings() {
  if (options_.settings_file.isEmpty()) return;
  QSettings settings(options_.settings_file, QSettings::IniFormat);
  if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray()))
    resize(first_size());  // the first start
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  recent_ = settings.value(QStringLiteral("recent_files")).toStringList();
  while (recent_.size() > kMaxRecentFiles) recent_.removeLast();
  last_dir_ = settings.value(QStringLiteral("last_dir")).toString();
  rebuild_recent_menu();
  if (settings.contains(QStringLiteral("view/theme")))
    set_theme(theme_from_name(settings.value(QStringLiteral("view/theme")).toString()));
}

void MainWindow::save_settings() {
  if (options_.settings_file.isEmpty()) return;
  restore_editor_docks();  // docks hidden for an insight tab are the user's shown ones
  QSettings settings(options_.settings_file, QSettings::IniFormat);
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  settings.setValue(QStringLiteral("recent_files"), recent_);
  settings.setValue(QStringLiteral("last_dir"), last_dir_);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  bool ok = false;
  guarded(this, tr("Closing"), [&] {
    ok = maybe_save();
    if (!ok) return;
    remove_autosave(qstr(document_.path()));
    save_settings();
  });
  if (ok) {
    event->accept();
  } else {
    event->ignore();
  }
}

}  // namespace tessera::studio
