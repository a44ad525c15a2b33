// The profiler panel: run list, trace opening, loading off the UI thread, the ImGui timeline.
#include "studio/insight/profiler_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QAbstractItemView>
#include <QLabel>
#include <QTimer>
#include <QPushButton>
#include <QVBoxLayout>
#include <exception>
#include <string>
#include <utility>

#include "insight/database.h"
#include "insight/query.h"
#include "insight/timeline/loaders.h"
#include "insight/timeline/view.h"
#include "studio/common/guard.h"
#include "studio/insight/imgui_widget.h"

namespace tessera::studio {

namespace tl = insight::timeline;

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

constexpr char kNothingOpen[] =
    "No run open. Pick a recorded run above (Run > Run and the Train panel record them), or open "
    "a Chrome trace file.";

}  // namespace

ProfilerPanel::ProfilerPanel(QWidget* parent) : QWidget(parent) {
  view_ = std::make_shared<tl::TimelineView>(nullptr);
  view_->set_message(kNothingOpen, /*error=*/false);
  message_ = QString::fromLatin1(kNothingOpen);

  runs_ = new QComboBox(this);
  runs_->setObjectName(QStringLiteral("profiler_runs"));
  runs_->setMinimumContentsLength(28);
  runs_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  runs_->setPlaceholderText(tr("Recorded runs"));
  open_trace_ = new QPushButton(tr("Open Trace..."), this);
  auto* refresh = new QPushButton(tr("Refresh"), this);
  header_ = new QLabel(this);
  header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  header_->setWordWrap(true);

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Run:"), this));
  bar->addWidget(runs_, 1);
  bar->addWidget(refresh);
  bar->addWidget(open_trace_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(bar);
  layout->addWidget(header_);
  body_ = layout;

  connect(runs_, qOverload<int>(&QComboBox::activated), this, [this](int index) {
    guarded(this, tr("Opening the run"), [&] {
      const QVariant id = runs_->itemData(index);
      if (id.isValid()) open_run(id.toLongLong());
    });
  });
  connect(refresh, &QPushButton::clicked, this, [this] { guarded(this, tr("Refresh"), [&] { refresh_runs(); }); });
  connect(open_trace_, &QPushButton::clicked, this, [this] {
    guarded(this, tr("Opening a trace"), [&] {
      const QString path = QFileDialog::getOpenFileName(this, tr("Open Chrome Trace"), QString(),
                                                        tr("Chrome traces (*.json);;All files (*)"));
      if (!path.isEmpty()) open_trace(path);
    });
  });
}

ProfilerPanel::~ProfilerPanel() { join(); }

// The GL widget is made when the panel is first shown: a QOpenGLWidget anywhere in a window turns
// the whole window into an OpenGL-composited one, which the `offscreen` platform (headless tests,
// screenshots) cannot draw.
void ProfilerPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  // Runs recorded since the list was read (by the Run panel, or `tessera` in a terminal) are
  // there when the tab is shown, and every few seconds while it is (it was stale until Refresh).
  guarded(this, tr("Listing runs"), [&] {
    refresh_runs();
    // Nothing open yet: the newest recorded run opens by itself (the tab said "No run open").
    if (!loading_ && title_.isEmpty() && runs_->count() > 0) {
      runs_->setCurrentIndex(0);
      open_run(runs_->itemData(0).toLongLong());
    }
  });
  if (!poll_) {
    poll_ = new QTimer(this);
    poll_->setInterval(3000);
    connect(poll_, &QTimer::timeout, this, [this] {
      if (isVisible() && !runs_->view()->isVisible())  // not while the list is open
        guarded(this, tr("Listing runs"), [&] { refresh_runs(); });
    });
  }
  poll_->start();
  if (widget_ || no_gl_) return;
  if (QGuiApplication::platformName() == QLatin1String("offscreen")) {
    no_gl_ = new QLabel(tr("The profiler's timeline needs an OpenGL display; the offscreen platform "
                           "has none (run the studio on X11 or Wayland, or use tessera-insight)."),
                        this);
    no_gl_->setWordWrap(true);
    body_->addWidget(no_gl_, 1);
    return;
  }
  // The draw callback runs inside paintGL: clicks are forwarded after the frame (queued).
  widget_ = new ImGuiWidget(
      [this] {
        view_->draw("Timeline");
        if (auto s = view_->take_clicked()) {
          QMetaObject::invokeMethod(
              this,
              [this, node = s->node, name = qs(s->name), op = qs(s->op)] {
                Q_EMIT span_clicked(node, name, op);
              },
              Qt::QueuedConnection);
        }
      },
      this);
  body_->addWidget(widget_, 1);
}

QString ProfilerPanel::header_text() const { return header_->text(); }

void ProfilerPanel::join() {
  if (worker_.joinable()) worker_.join();
}

void ProfilerPanel::set_database_path(const QString& path) {
  db_path_ = path;
  refresh_runs();
}

void ProfilerPanel::refresh_runs() {
  const QVariant current = runs_->currentData();
  runs_->clear();
  if (db_path_.isEmpty()) return;
  // Listing never creates the database: a missing file only says so.
  if (!QFileInfo::exists(db_path_)) {
    header_about_database_ = true;
    header_->setText(tr("No runs yet: %1 does not exist. Run or train a graph to record one.").arg(db_path_));
    return;
  }
  insight::OpenOptions options;
  options.mark_crashed = false;  // a reader: the recorder's own open marks crashes
  auto db = insight::Database::open(db_path_.toStdString(), options);
  if (!db) {
    header_about_database_ = true;
    header_->setText(qs(db.error().to_string()));
    return;
  }
  auto runs = insight::list_runs(*db, 500);
  if (!runs) {
    header_about_database_ = true;
    header_->setText(qs(runs.error().to_string()));
    return;
  }
  // The file exists now: a header still saying it does not (or an old error) gives way.
  if (header_about_database_ || header_->text().isEmpty()) {  // no timeline's title to keep
    header_about_database_ = true;  // and the count follows later refreshes
    header_->setText(runs->empty() ? tr("No runs yet in %1. Run or train a graph to record one.").arg(db_path_)
                                   : tr("%n run(s) in %1: choose one to open its timeline.", nullptr,
                                        static_cast<int>(runs->size()))
                                         .arg(db_path_));
  }
  for (const insight::RunRecord& r : *runs)
    runs_->addItem(QStringLiteral("#%1 %2 (%3, %4)").arg(r.id).arg(qs(r.name), qs(r.kind), qs(r.status)),
                   QVariant::fromValue<qlonglong>(r.id));
  if (current.isValid()) runs_->setCurrentIndex(runs_->findData(current));
}

void ProfilerPanel::start_load(std::function<Expected<tl::Loaded>()> load) {
  join();
  loading_ = true;
  header_about_database_ = false;
  header_->setText(tr("Loading..."));
  worker_ = std::thread([this, load = std::move(load)] {
    auto loaded = std::make_shared<Expected<tl::Loaded>>(make_error("not loaded"));
    try {
      *loaded = load();
    } catch (const std::exception& e) {
      *loaded = make_error(std::string("unexpected exception: ") + e.what());
    } catch (...) {
      *loaded = make_error("unexpected exception");
    }
    // Delivered on the UI thread; the destructor joins this thread first, so `this` is alive.
    QMetaObject::invokeMethod(this, [this, loaded] { finish_load(std::move(*loaded)); }, Qt::QueuedConnection);
  });
}

void ProfilerPanel::finish_load(Expected<tl::Loaded> result) {
  join();
  loading_ = false;
  if (result) {
    view_ = std::make_shared<tl::TimelineView>(result->model);
    std::string warnings;
    for (const std::string& w : result->warnings) warnings += (warnings.empty() ? "" : "\n") + w;
    view_->set_message(warnings);
    title_ = qs(result->title);
    message_ = qs(warnings);
  } else {
    view_ = std::make_shared<tl::TimelineView>(nullptr);
    message_ = qs(result.error().to_string());
    view_->set_message(message_.toStdString());
    title_.clear();
  }
  header_->setText(title_.isEmpty() ? message_ : message_.isEmpty() ? title_ : title_ + QLatin1Char('\n') + message_);
  if (widget_) widget_->update();
  Q_EMIT loaded();
}

void ProfilerPanel::open_run(int64_t run) {
  if (loading_) return;
  if (int index = runs_->findData(QVariant::fromValue<qlonglong>(run)); index >= 0) runs_->setCurrentIndex(index);
  const std::string db = db_path_.toStdString();
  start_load([db, run]() -> Expected<tl::Loaded> {
    if (db.empty()) return make_error("no insight database is set");
    return tl::load_run(db, std::to_string(run));
  });
}

void ProfilerPanel::open_trace(const QString& path) {
  if (loading_) return;
  start_load([file = path.toStdString()] { return tl::load_chrome_trace(file); });
}

void ProfilerPanel::select_node(int32_t node) {
  view_->select_node(node);
  if (widget_) widget_->update();
}

}  // namespace tessera::studio
