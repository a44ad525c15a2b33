// The studio's main window: menus (the Edit menu here, files in main_window_files.cpp), canvas,
// status bar.
#include "studio/app/main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QKeySequence>
#include <QLabel>
#include <QLocale>
#include <QScreen>
#include <QGuiApplication>
#include <QResizeEvent>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QRegularExpression>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTimer>
#include <QUndoStack>
#include <set>
#include <vector>

#include "engine/ops/cost.h"

#include "studio/document/clipboard.h"
#include "formats/document.h"
#include "engine/ir/graph.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_scene.h"
#include "studio/canvas/graph_view.h"
#include "studio/common/guard.h"
#include "studio/panels/inspector.h"
#include "studio/panels/palette.h"

namespace tessera::studio {

namespace {

QString qstr(const std::string& s) {
  return QString::fromStdString(s);
}

constexpr double kPasteStep = 40;  // each paste lands this far right and down of the last

}  // namespace

MainWindow::MainWindow(Document& document, QWidget* parent)
    : MainWindow(document, MainWindowOptions{}, parent) {}

MainWindow::MainWindow(Document& document, MainWindowOptions options, QWidget* parent)
    : QMainWindow(parent), document_(document), options_(std::move(options)) {
  scene_ = new GraphScene(document_, this);
  view_ = new GraphView(scene_, this);
  // The canvas and the insight views (runs, passes, profile) share the centre as tabs.
  tabs_ = new QTabWidget(this);
  tabs_->setObjectName(QStringLiteral("central_tabs"));
  tabs_->setDocumentMode(true);
  tabs_->addTab(view_, tr("Graph"));
  setCentralWidget(tabs_);
  connect(tabs_, &QTabWidget::currentChanged, this,
          [this] { guarded(this, tr("Showing the tab"), [&] { on_tab_changed(); }); });

  file_label_ = new QLabel(this);
  nodes_label_ = new QLabel(this);
  params_label_ = new QLabel(this);
  flops_label_ = new QLabel(this);
  types_label_ = new QLabel(this);
  layout_label_ = new QLabel(this);
  statusBar()->addWidget(file_label_, 1);
  for (QLabel* label : {layout_label_, types_label_, nodes_label_, params_label_, flops_label_}) {
    label->setContentsMargins(10, 0, 10, 0);
    auto* separator = new QFrame(this);
    separator->setFrameShape(QFrame::VLine);
    separator->setFrameShadow(QFrame::Sunken);
    statusBar()->addPermanentWidget(separator);
    statusBar()->addPermanentWidget(label);
    graph_status_ << separator << label;
  }
  file_label_->setContentsMargins(6, 0, 6, 0);
  // A refusal's message gone: the labels come back.
  connect(statusBar(), &QStatusBar::messageChanged, this, [this](const QString& text) {
    if (!text.isEmpty()) return;
    statusBar()->setToolTip(QString());
    if (!document_.is_empty())
      for (QWidget* w : graph_status_) w->show();
  });

  // Which layout is shown: "Graphviz layout", or the layered one and why.
  connect(scene_, &GraphScene::layout_note_changed, layout_label_, &QLabel::setText);
  layout_label_->setText(scene_->layout_note());

  create_docks();
  create_menus();
  create_run_and_train();
  create_insight_views();
  auto update = [this] { guarded(this, tr("Updating the window"), [&] { refresh(); }); };
  connect(&document_, &Document::graph_reset, this, update);
  // A graph just opened: the canvas takes the keyboard, so F (fit), Ctrl+F and the arrows act on
  // it at once instead of typing into the palette's search field.
  connect(&document_, &Document::graph_reset, view_, [this] { view_->setFocus(Qt::OtherFocusReason); });
  connect(&document_, &Document::modified_changed, this, update);
  connect(&document_, &Document::path_changed, this, update);
  connect(&document_, &Document::changed, this, update);  // every edit, undo and redo

  autosave_timer_ = new QTimer(this);
  autosave_timer_->setInterval(options_.autosave_interval_ms);
  connect(autosave_timer_, &QTimer::timeout, this, [this] {
    guarded(this, tr("Autosaving"), [&] {
      if (!document_.is_modified() || document_.is_empty()) return;
      if (Status st = autosave_now(); !st)
        show_refusal(tr("Autosave failed: %1").arg(qstr(st.error().to_string())));
    });
  });
  if (!options_.autosave_dir.isEmpty()) autosave_timer_->start();
  load_settings();
  if (options_.nested_view) {  // the graph only: running and the insight tabs are the model's
    for (QAction* a : menuBar()->actions())
      if (a->menu() && (a->menu()->objectName() == QLatin1String("run_menu") ||
                        a->menu()->objectName() == QLatin1String("insight_menu")))
        a->setVisible(false);
    tabs_->tabBar()->hide();
    tabs_->setCurrentWidget(view_);
    for (QDockWidget* d : {run_dock_, train_dock_, value_dock_}) d->hide();
  }
  refresh();
}

MainWindow::~MainWindow() = default;

QSize MainWindow::first_size() const {
  QSize size(1200, 760);
  if (const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen()) {
    // The frame (title bar, borders) is outside the widget's size: leave room for it.
    const QSize room = screen->availableGeometry().size() - QSize(16, 48);
    size = size.boundedTo(room.expandedTo(QSize(400, 300)));
  }
  return size;
}

void MainWindow::on_tab_changed() {
  if (options_.nested_view) return;
  if (tabs_->currentWidget() == view_) {
    restore_editor_docks();
    fit_docks();
    return;
  }
  for (QDockWidget* d : {palette_dock_, inspector_dock_, run_dock_, train_dock_, value_dock_})
    if (d && !d->isHidden() && !d->isFloating() && !hidden_for_tab_.contains(d)) {
      hidden_for_tab_ << d;
      d->hide();
    }
}

void MainWindow::restore_editor_docks() {
  const QList<QDockWidget*> docks = hidden_for_tab_;
  hidden_for_tab_.clear();
  for (QDockWidget* d : docks) d->show();
}

void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  // After the layout has placed the docks for the new size (resizeDocks before that is undone).
  if (fit_docks_pending_) return;
  fit_docks_pending_ = true;
  QTimer::singleShot(0, this, [this] {
    fit_docks_pending_ = false;
    guarded(this, tr("Resizing"), [&] { fit_docks(); });
  });
}

void MainWindow::fit_docks() {
  // Docks side by side with the canvas give up room in a small window: together at most 45 % of
  // the width (900x600: the canvas keeps 495 px; it had 130).
  QList<QDockWidget*> side;
  int total = 0;
  for (QDockWidget* d : {palette_dock_, inspector_dock_})
    if (d && d->isVisible() && !d->isFloating()) {
      side << d;
      total += d->width();
    }
  const int budget = width() * 45 / 100;
  if (side.isEmpty() || total <= budget) return;
  QList<int> sizes;
  for (QDockWidget* d : side) sizes << std::max(d->minimumSizeHint().width(), d->width() * budget / total);
  resizeDocks(side, sizes, Qt::Horizontal);
}

void MainWindow::create_docks() {
  view_->set_document(&document_);
  connect(view_, &GraphView::edit_refused, this, &MainWindow::show_refusal);
  connect(view_, &GraphView::open_subgraph_requested, this, [this](ir::NodeId node, const QString& attribute) {
    guarded(this, tr("Opening the nested graph"), [&] {
      if (!open_subgraph(node, attribute)) show_refusal(tr("Node #%1 holds no graph '%2'").arg(node).arg(attribute));
    });
  });

  palette_ = new Palette(document_.registry(), this);
  palette_dock_ = new QDockWidget(tr("Palette"), this);
  palette_dock_->setObjectName(QStringLiteral("palette_dock"));
  palette_dock_->setWidget(palette_);
  addDockWidget(Qt::LeftDockWidgetArea, palette_dock_);
  connect(palette_, &Palette::op_activated, this, [this](const QString& op) {
    guarded(this, tr("Adding an op"), [&] { (void)view_->add_op_at_centre(op); });
  });

  inspector_ = new Inspector(document_, this);
  inspector_dock_ = new QDockWidget(tr("Inspector"), this);
  inspector_dock_->setObjectName(QStringLiteral("inspector_dock"));
  inspector_dock_->setWidget(inspector_);
  addDockWidget(Qt::RightDockWidgetArea, inspector_dock_);
  connect(scene_, &GraphScene::node_selection_changed, inspector_,
          [this](const QList<ir::NodeId>& ids) {
            guarded(this, tr("Showing the node"), [&] { inspector_->show_selection(ids); });
          });
  connect(inspector_, &Inspector::edit_refused, this, &MainWindow::show_refusal);
  resizeDocks({palette_dock_, inspector_dock_}, {220, 320}, Qt::Horizontal);
}

QString MainWindow::readable_message(const QString& message) const {
  // The engine names nodes "Conv 'conv1' (#3)" and values "%12": a person knows them by name.
  QString text = message;
  text.replace(QRegularExpression(QStringLiteral("('[^']+') \\(#\\d+\\)")), QStringLiteral("\\1"));
  if (!document_.is_empty()) {
    const ir::Graph& g = document_.graph();
    QRegularExpression value_ref(QStringLiteral("%(\\d+)\\b"));
    QString out;
    qsizetype last = 0;
    for (auto it = value_ref.globalMatch(text); it.hasNext();) {
      const QRegularExpressionMatch m = it.next();
      const ir::ValueId v = m.captured(1).toInt();
      out += text.mid(last, m.capturedStart() - last);
      out += g.has_value(v) && !g.value(v).name.empty()
                 ? QStringLiteral("'%1'").arg(QString::fromStdString(g.value(v).name))
                 : m.captured(0);
      last = m.capturedEnd();
    }
    text = out + text.mid(last);
  }
  return text;
}

QString MainWindow::display_name() const {
  return document_.path().empty() && !title_hint_.isEmpty() ? title_hint_ : document_.file_name();
}

MainWindow* MainWindow::open_subgraph(int32_t node, const QString& attribute) {
  if (document_.is_empty() || !document_.graph().has_node(node)) return nullptr;
  const ir::Node& n = document_.graph().node(node);
  const ir::Attribute* attr = n.attr(attribute.toStdString());
  if (!attr || attr->kind() != ir::AttrKind::kGraph) return nullptr;
  // Its own document and window, deleted together when the window closes (the document is the
  // window's last child: every item that reads it is gone first).
  auto* doc = new Document(document_.registry());
  doc->set_outer_scope(document_.scope_for_nested(node));  // its captures typed as in the model
  formats::GraphDocument sub{attr->g(), {}, {}};
  // Weights the graph captures from the model (an If branch's Conv weights are the model's
  // initializers) become its params here, so its boxes show them and count them.
  const ir::Graph& outer = document_.graph();
  for (ir::ValueId c : std::vector<ir::ValueId>(sub.graph.captures()))
    for (ir::ValueId p : outer.params())
      if (outer.value(p).name == sub.graph.value(c).name)
        if (const Tensor* t = outer.param_data(p)) sub.graph.capture_to_param(c, *t);
  doc->open(std::move(sub));
  MainWindowOptions options;
  options.nested_view = true;
  auto* window = new MainWindow(*doc, options);
  doc->setParent(window);
  window->setAttribute(Qt::WA_DeleteOnClose);
  const QString here = display_name();
  window->set_title_hint(QStringLiteral("%1 \u203a %2%3 \u203a %4")
                             .arg(here, QString::fromStdString(n.op),
                                  n.name.empty() ? QString() : QStringLiteral(" '%1'").arg(QString::fromStdString(n.name)),
                                  attribute));
  window->resize(size());
  window->show();
  window->statusBar()->showMessage(tr("A view of a nested graph: edits here are not written back to %1").arg(here), 15000);
  return window;
}

void MainWindow::show_refusal(const QString& message) {
  // The whole message, never cut: the permanent labels (file, counts) make room while it shows,
  // and what still does not fit is elided with the full text in the tooltip.
  const QString text = readable_message(message);
  for (QWidget* w : graph_status_) w->hide();
  const int room = statusBar()->width() - 24;
  const QFontMetrics metrics(statusBar()->font());
  const bool cut = statusBar()->isVisible() && metrics.horizontalAdvance(text) > room;
  statusBar()->setToolTip(cut ? text : QString());
  statusBar()->showMessage(cut ? metrics.elidedText(text, Qt::ElideMiddle, room) : text, 10000);
  last_refusal_ = text;
}

void MainWindow::create_menus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* new_file = file->addAction(tr("&New"));
  new_file->setObjectName(QStringLiteral("action_new"));
  new_file->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_N));
  connect(new_file, &QAction::triggered, this,
          [this] { guarded(this, tr("New graph"), [&] { (void)new_document(); }); });
  QAction* open = file->addAction(tr("&Open\u2026"));
  open->setObjectName(QStringLiteral("action_open"));
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this,
          [this] { guarded(this, tr("Opening a file"), [&] { open_with_dialog(); }); });
  recent_menu_ = file->addMenu(tr("Recent &Files"));
  recent_menu_->setObjectName(QStringLiteral("menu_recent"));
  rebuild_recent_menu();
  file->addSeparator();
  QAction* save_action = file->addAction(tr("&Save"));
  save_action->setObjectName(QStringLiteral("action_save"));
  save_action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_S));
  connect(save_action, &QAction::triggered, this,
          [this] { guarded(this, tr("Saving"), [&] { (void)save(); }); });
  QAction* save_as_action = file->addAction(tr("Save &As\u2026"));
  save_as_action->setObjectName(QStringLiteral("action_save_as"));
  save_as_action->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
  connect(save_as_action, &QAction::triggered, this,
          [this] { guarded(this, tr("Saving"), [&] { (void)save_as(); }); });
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"));
  quit->setObjectName(QStringLiteral("action_quit"));
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
  connect(quit, &QAction::triggered, this, &QWidget::close);

  create_edit_menu();

  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* fit = view->addAction(tr("&Fit"));
  fit->setShortcut(QKeySequence(Qt::Key_F));
  connect(fit, &QAction::triggered, this,
          [this] { guarded(this, tr("Fit"), [&] { view_->fit(); }); });
  QAction* zoom_in = view->addAction(tr("&Zoom In"));
  zoom_in->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)});
  connect(zoom_in, &QAction::triggered, this,
          [this] { guarded(this, tr("Zoom in"), [&] { view_->zoom_in(); }); });
  QAction* zoom_out = view->addAction(tr("Zoom &Out"));
  zoom_out->setShortcut(QKeySequence::ZoomOut);
  connect(zoom_out, &QAction::triggered, this,
          [this] { guarded(this, tr("Zoom out"), [&] { view_->zoom_out(); }); });
  QAction* actual = view->addAction(tr("&Actual Size"));
  actual->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  connect(actual, &QAction::triggered, this,
          [this] { guarded(this, tr("Actual size"), [&] { view_->reset_zoom(); }); });
  view->addSeparator();
  QAction* show_palette = palette_dock_->toggleViewAction();
  show_palette->setText(tr("&Palette"));
  view->addAction(show_palette);
  QAction* show_inspector = inspector_dock_->toggleViewAction();
  show_inspector->setText(tr("&Inspector"));
  view->addAction(show_inspector);
  create_canvas_actions(file, view);
}

void MainWindow::show_open_error(const QString& path, const Error& error) {
  if (file_error_dialog_) {
    file_error_dialog_(path, error);
    return;
  }
  QMessageBox box(QMessageBox::Warning, tr("Cannot open %1").arg(QFileInfo(path).fileName()),
                  tr("Could not open the graph file\n%1").arg(path), QMessageBox::Ok, this);
  box.setInformativeText(QString::fromStdString(error.to_string()));
  // Paths and parser messages are long: a wider box than Qt's default keeps them on few lines.
  // (The object names are QMessageBox's own, stable since Qt 4.)
  box.setStyleSheet(QStringLiteral(
      "QLabel#qt_msgbox_label, QLabel#qt_msgbox_informativelabel { min-width: 480px; }"));
  box.exec();
}

void MainWindow::create_edit_menu() {
  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  QUndoStack& stack = document_.undo_stack();
  // The stack's own actions: enabled when there is something to undo, text "Undo Move node".
  QAction* undo = stack.createUndoAction(this, tr("&Undo"));
  undo->setObjectName(QStringLiteral("action_undo"));
  undo->setShortcuts(QKeySequence::Undo);
  edit->addAction(undo);
  QAction* redo = stack.createRedoAction(this, tr("&Redo"));
  redo->setObjectName(QStringLiteral("action_redo"));
  redo->setShortcuts(
      {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)});
  edit->addAction(redo);
  edit->addSeparator();
  auto add = [&](const QString& text, const char* name, QList<QKeySequence> keys,
                 void (MainWindow::*slot)()) {
    QAction* a = edit->addAction(text);
    a->setObjectName(QLatin1String(name));
    a->setShortcuts(keys);
    connect(a, &QAction::triggered, this,
            [this, text, slot] { guarded(this, text, [&] { (this->*slot)(); }); });
    return a;
  };
  add(tr("Cu&t"), "action_cut", {QKeySequence::Cut}, &MainWindow::cut_selection);
  add(tr("&Copy"), "action_copy", {QKeySequence::Copy}, &MainWindow::copy_selection);
  add(tr("&Paste"), "action_paste", {QKeySequence::Paste}, &MainWindow::paste);
  add(tr("&Delete"), "action_delete",
      {QKeySequence(Qt::Key_Delete), QKeySequence(Qt::Key_Backspace)},
      &MainWindow::delete_selection);
  edit->addSeparator();
  QAction* all = edit->addAction(tr("Select &All"));
  all->setObjectName(QStringLiteral("action_select_all"));
  all->setShortcut(QKeySequence::SelectAll);
  connect(all, &QAction::triggered, this, [this] {
    guarded(this, tr("Select all"), [&] {
      QList<ir::NodeId> ids;
      for (ir::NodeId id : document_.graph().node_ids()) ids << id;
      scene_->select_nodes(ids);
    });
  });
}

void MainWindow::delete_selection() {
  const QList<ir::NodeId> ids = scene_->selected_node_ids();
  if (ids.isEmpty()) return;
  if (Status st = document_.remove_nodes({ids.begin(), ids.end()}); !st)
    show_refusal(tr("Cannot delete: %1").arg(qstr(st.error().message)));
}

void MainWindow::copy_selection() {
  const QList<ir::NodeId> ids = scene_->selected_node_ids();
  if (ids.isEmpty()) return;
  // Boxes the document does not place yet are copied where the canvas shows them.
  std::vector<ir::NodeId> list(ids.begin(), ids.end());
  Expected<ClipboardPayload> payload = document_.copy(list);
  if (!payload) {
    show_refusal(tr("Cannot copy: %1").arg(qstr(payload.error().message)));
    return;
  }
  const std::map<ir::NodeId, QPointF> shown = scene_->node_positions();
  // The payload's nodes are the selection in topological order (clipboard.cpp): fill in the
  // places of those the document does not place.
  std::vector<ir::NodeId> order;
  if (Expected<std::vector<ir::NodeId>> all = document_.graph().topological_order(); all) {
    const std::set<ir::NodeId> selected(list.begin(), list.end());
    for (ir::NodeId id : all.value())
      if (selected.count(id)) order.push_back(id);
  }
  const std::vector<ir::NodeId> payload_ids = payload.value().graph.node_ids();
  auto& positions = payload.value().positions;
  for (size_t i = 0; i < payload_ids.size() && i < order.size(); ++i) {
    if (positions.count(payload_ids[i])) continue;
    auto it = shown.find(order[i]);
    if (it != shown.end()) positions[payload_ids[i]] = NodePosition{it->second.x(), it->second.y()};
  }
  const QByteArray text = QByteArray::fromStdString(clipboard_text(payload.value()));
  auto* mime = new QMimeData;
  mime->setData(QString::fromLatin1(kClipboardMimeType), text);
  mime->setText(QString::fromUtf8(text));
  QApplication::clipboard()->setMimeData(mime);
  paste_count_ = 0;
}

void MainWindow::cut_selection() {
  if (scene_->selected_node_ids().isEmpty()) return;
  copy_selection();
  delete_selection();
}

void MainWindow::paste() {
  const QMimeData* mime = QApplication::clipboard()->mimeData();
  if (!mime) return;
  const QString type = QString::fromLatin1(kClipboardMimeType);
  const std::string text =
      mime->hasFormat(type) ? mime->data(type).toStdString() : mime->text().toStdString();
  if (text.empty()) return;
  Expected<ClipboardPayload> payload = parse_clipboard(text);
  if (!payload) {
    show_refusal(tr("Cannot paste: %1").arg(qstr(payload.error().message)));
    return;
  }
  const double step = kPasteStep * ++paste_count_;
  Expected<std::vector<ir::NodeId>> ids = document_.paste(payload.value(), step, step);
  if (!ids) {
    show_refusal(tr("Cannot paste: %1").arg(qstr(ids.error().message)));
    return;
  }
  scene_->flush_update();
  scene_->select_nodes({ids.value().begin(), ids.value().end()});
}

void MainWindow::refresh() {
  const QString app = tr("Tessera Studio");
  // While a file is read in the background the first label says so (not "No graph open").
  const QString opening = opening_.isEmpty() ? QString() : tr("Opening %1\u2026").arg(opening_);
  if (document_.is_empty() && !document_.is_modified()) {
    setWindowTitle(app);
    file_label_->setText(opening.isEmpty() ? tr("No graph open") : opening);
    for (QWidget* w : graph_status_) w->hide();
    if (!opening.isEmpty()) file_label_->show();
    return;
  }
  for (QWidget* w : graph_status_) w->show();
  const QString star = document_.is_modified() ? QStringLiteral("*") : QString();
  setWindowTitle(QStringLiteral("%1%2 \u2014 %3").arg(display_name(), star, app));
  file_label_->setText(opening.isEmpty() ? document_.file_name() : opening);
  file_label_->setToolTip(QString::fromStdString(document_.path()));
  const QLocale numbers(QLocale::English);  // digit grouping: "61,706"
  const int nodes = document_.graph().num_nodes();
  nodes_label_->setText(nodes == 1 ? tr("1 node") : tr("%1 nodes").arg(numbers.toString(nodes)));
  params_label_->setText(
      tr("%1 parameters")
          .arg(numbers.toString(static_cast<qlonglong>(document_.parameter_count()))));
  // FLOPs of one execution with every symbolic dimension (the batch) bound to 1, as `tessera info`
  // prints them; the tooltip splits them by op. Unknown while inference fails.
  flops_label_->clear();
  flops_label_->setToolTip(QString());
  if (const ops::GraphCost* cost = document_.cost()) {  // computed once per edit by the document
    const int unknown = document_.graph().num_nodes() - static_cast<int>(cost->flops_by_node.size());
    flops_label_->setText(
        unknown > 0 ? tr("%1 FLOPs per sample (%2 of %3 nodes unknown)")
                          .arg(numbers.toString(static_cast<qlonglong>(cost->flops)), numbers.toString(unknown),
                               numbers.toString(document_.graph().num_nodes()))
                    : tr("%1 FLOPs per sample").arg(numbers.toString(static_cast<qlonglong>(cost->flops))));
    QStringList by_op;
    for (const auto& [op, flops] : cost->flops_by_op)
      if (flops > 0) by_op << QStringLiteral("%1: %2").arg(qstr(op), numbers.toString(static_cast<qlonglong>(flops)));
    flops_label_->setToolTip(by_op.join(QLatin1Char('\n')));
  }
  if (const auto& error = document_.inference_error()) {
    // A node just dropped, still without its inputs, is not a failure: say what it needs.
    types_label_->setText(error->node >= 0 && document_.is_incomplete(error->node)
                              ? tr("the red node needs its inputs or attributes")
                          : error->node >= 0 ? tr("type inference failed at the red node")
                                             : tr("type inference failed"));
    types_label_->setStyleSheet(QStringLiteral("color: #d02121;"));
    types_label_->setToolTip(QString::fromStdString(error->to_string()));
  } else {
    types_label_->setText(tr("types inferred"));
    types_label_->setStyleSheet(QString());
    types_label_->setToolTip(QString());
  }
}

}  // namespace tessera::studio
