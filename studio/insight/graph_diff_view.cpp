// GraphDiffView: the two-sided diff scene, its boxes, edges and provenance lines (see
// graph_diff_view.h).
#include "studio/insight/graph_diff_view.h"

#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsView>
#include <QLabel>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <cmath>
#include <functional>
#include <set>

#include "studio/canvas/graph_layout.h"
#include "studio/document/attribute_text.h"

namespace tessera::studio {
namespace {

constexpr double kBoxWidth = 150, kBoxHeight = 40, kSideGap = 220, kTitleHeight = 40;

QString qs(const std::string& s) { return QString::fromStdString(s); }

// One node's box: fill by diff status, op in bold, name below, an optional badge top-right.
class DiffBoxItem : public QGraphicsItem {
 public:
  DiffBoxItem(QRectF rect, QColor fill, QString op, QString name, const NodeMark* mark, ir::NodeId id, bool after)
      : rect_(rect), fill_(fill), op_(std::move(op)), name_(std::move(name)), id_(id), after_(after) {
    if (mark) mark_ = *mark, has_mark_ = true;
  }
  QRectF boundingRect() const override { return rect_.adjusted(-2, -8, 2, 2); }
  void paint(QPainter* p, const QStyleOptionGraphicsItem* option, QWidget*) override {
    const double lod = option->levelOfDetailFromTransform(p->worldTransform());
    p->setPen(QPen(QColor(90, 90, 90), has_mark_ ? 2.0 : 1.0));
    if (has_mark_ && mark_.colour.isValid()) p->setPen(QPen(mark_.colour.darker(130), 2.0));
    p->setBrush(fill_);
    if (lod < 0.25) {  // far out: a plain rectangle
      p->drawRect(rect_);
      return;
    }
    p->drawRoundedRect(rect_, 5, 5);
    p->setPen(Qt::black);
    QFont f = p->font();
    f.setPointSizeF(9);
    f.setBold(true);
    p->setFont(f);
    const QRectF inner = rect_.adjusted(6, 2, -6, -2);
    p->drawText(QRectF(inner.left(), inner.top(), inner.width(), inner.height() / 2), Qt::AlignLeft | Qt::AlignVCenter,
                p->fontMetrics().elidedText(op_, Qt::ElideRight, static_cast<int>(inner.width())));
    f.setBold(false);
    f.setPointSizeF(8);
    p->setFont(f);
    p->setPen(QColor(60, 60, 60));
    p->drawText(QRectF(inner.left(), inner.center().y(), inner.width(), inner.height() / 2),
                Qt::AlignLeft | Qt::AlignVCenter,
                p->fontMetrics().elidedText(name_, Qt::ElideMiddle, static_cast<int>(inner.width())));
    if (has_mark_ && !mark_.badge.isEmpty()) {
      const double w = p->fontMetrics().horizontalAdvance(mark_.badge) + 8;
      const QRectF badge(rect_.right() - w - 2, rect_.top() - 7, w, 14);
      p->setPen(Qt::NoPen);
      p->setBrush(mark_.colour.isValid() ? mark_.colour : QColor(120, 120, 120));
      p->drawRoundedRect(badge, 6, 6);
      p->setPen(Qt::white);
      p->drawText(badge, Qt::AlignCenter, mark_.badge);
    }
  }
  ir::NodeId id() const { return id_; }
  bool after() const { return after_; }

 private:
  QRectF rect_;
  QColor fill_;
  QString op_, name_;
  NodeMark mark_;
  bool has_mark_ = false;
  ir::NodeId id_;
  bool after_;
};

// Wheel zoom around the cursor, drag to pan, double-click on a box to activate it.
class DiffGraphicsView : public QGraphicsView {
 public:
  explicit DiffGraphicsView(QGraphicsScene* scene) : QGraphicsView(scene) {
    setDragMode(QGraphicsView::ScrollHandDrag);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setRenderHint(QPainter::Antialiasing);
    setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  }
  std::function<void(ir::NodeId, bool)> on_activate;
  bool user_placed = false;  // zoomed or panned by the user: kept across snapshots

 protected:
  void wheelEvent(QWheelEvent* e) override {
    const double factor = std::pow(1.0008, e->angleDelta().y());  // 1.1x a notch: 1.2x jumped from unreadable to huge
    const double zoom = transform().m11() * factor;
    if (zoom < 0.02 || zoom > 6) return;
    user_placed = true;
    scale(factor, factor);
  }
  void mousePressEvent(QMouseEvent* e) override {
    user_placed = true;  // a drag pans
    QGraphicsView::mousePressEvent(e);
  }
  void mouseDoubleClickEvent(QMouseEvent* e) override {
    for (QGraphicsItem* item : items(e->pos()))
      if (auto* box = dynamic_cast<DiffBoxItem*>(item)) {
        if (on_activate) on_activate(box->id(), box->after());
        return;
      }
    QGraphicsView::mouseDoubleClickEvent(e);
  }
};

}  // namespace

QColor GraphDiffView::status_colour(GraphDiff::Status s) {
  switch (s) {
    case GraphDiff::Status::kAdded: return QColor(170, 222, 160);
    case GraphDiff::Status::kRemoved: return QColor(240, 165, 165);
    case GraphDiff::Status::kChanged: return QColor(250, 205, 110);
    case GraphDiff::Status::kSame: break;
  }
  return QColor(236, 236, 236);
}

GraphDiffView::GraphDiffView(QWidget* parent)
    : QWidget(parent), scene_(new QGraphicsScene(this)), legend_(new QLabel(this)) {
  auto* v = new DiffGraphicsView(scene_);
  v->on_activate = [this](ir::NodeId id, bool after) { Q_EMIT node_activated(id, after); };
  view_ = v;
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  legend_->setTextFormat(Qt::RichText);
  legend_->setWordWrap(true);  // a narrow pane (1280x720 with both docks) wraps it
  layout->addWidget(legend_);
  layout->addWidget(view_, 1);
  rebuild();
}

void GraphDiffView::set_side_titles(const QString& before, const QString& after) {
  before_title_ = before;
  after_title_ = after;
}

void GraphDiffView::set_graphs(formats::GraphDocument before, formats::GraphDocument after,
                               std::vector<std::pair<int32_t, std::vector<int32_t>>> provenance, DiffMatch match) {
  before_ = std::move(before);
  after_ = std::move(after);
  provenance_ = std::move(provenance);
  diff_ = diff_graphs(before_.graph, after_.graph, provenance_, match);
  // Stepping through snapshots keeps the user's zoom and place; until the user moves, each
  // snapshot opens at its overview.
  auto* v = static_cast<DiffGraphicsView*>(view_);
  const QTransform t = view_->transform();
  const QPointF centre = view_->mapToScene(view_->viewport()->rect().center());
  rebuild();
  if (v->user_placed) {
    view_->setTransform(t);
    view_->centerOn(centre);
  } else {
    overview();
  }
}

void GraphDiffView::reset_view() {
  static_cast<DiffGraphicsView*>(view_)->user_placed = false;
  overview();
}

void GraphDiffView::overview() {
  // Both graphs whole when their labels stay readable (half size or more); else their tops at
  // that size, as the canvas opens a tall graph.
  constexpr double kReadable = 0.5;
  const QRectF r = scene_->itemsBoundingRect().adjusted(-20, -20, 20, 20);
  const QSize port = view_->viewport()->size();
  if (r.isEmpty() || port.isEmpty()) return;
  const double fit_zoom = std::min(port.width() / r.width(), port.height() / r.height());
  if (fit_zoom >= kReadable) {
    fit();
    return;
  }
  const double zoom = std::max(kReadable, port.width() / r.width());
  view_->setTransform(QTransform::fromScale(std::min(zoom, 1.0), std::min(zoom, 1.0)));
  // Centred on the first node the step added, else changed, else removed: in a training step of
  // 170 nodes the split stage's all-reduce buckets sit far from the top (which shows otherwise).
  auto first_box = [this](const std::vector<ir::NodeId>& ids, Side side) {
    for (ir::NodeId id : ids)
      if (QRectF r = node_rect(side, id); !r.isNull()) return r;
    return QRectF();
  };
  QRectF focus = first_box(diff_.added, Side::kAfter);
  if (focus.isNull()) focus = first_box(diff_.changed, Side::kAfter);
  if (focus.isNull()) focus = first_box(diff_.removed, Side::kBefore);
  if (!focus.isNull()) {
    // Both columns in view when they fit across (centring on the after box cut the before
    // column's names off at the left edge).
    const bool fits_across = r.width() * view_->transform().m11() <= port.width() + 1;
    view_->centerOn(fits_across ? r.center().x() : focus.center().x(), focus.center().y());
    return;
  }
  const double visible_height = port.height() / view_->transform().m11();
  view_->centerOn(r.center().x(), r.top() + visible_height / 2);
}

void GraphDiffView::set_after_marks(std::map<ir::NodeId, NodeMark> marks, bool redraw) {
  marks_ = std::move(marks);
  if (!redraw) return;
  const QTransform t = view_->transform();
  const QPointF centre = view_->mapToScene(view_->viewport()->rect().center());
  rebuild();
  view_->setTransform(t);
  view_->centerOn(centre);
}

void GraphDiffView::clear() {
  before_ = formats::GraphDocument{ir::Graph(), {}, {}};
  after_ = formats::GraphDocument{ir::Graph(), {}, {}};
  provenance_.clear();
  diff_ = {};
  rebuild();
}

bool GraphDiffView::focus_node(Side side, ir::NodeId id) {
  if (focus_) {
    scene_->removeItem(focus_);
    delete focus_;
    focus_ = nullptr;
  }
  const QRectF r = node_rect(side, id);
  if (r.isNull()) return false;
  focus_ = scene_->addRect(r.adjusted(-5, -5, 5, 5), QPen(QColor(0x1e, 0x88, 0xe5), 3, Qt::DashLine));
  focus_->setZValue(10);
  view_->centerOn(r.center());
  return true;
}

QRectF GraphDiffView::node_rect(Side side, ir::NodeId id) const {
  const auto& m = rects_[static_cast<int>(side)];
  auto it = m.find(id);
  return it == m.end() ? QRectF() : it->second;
}

QColor GraphDiffView::node_fill(Side side, ir::NodeId id) const {
  const auto& m = fills_[static_cast<int>(side)];
  auto it = m.find(id);
  return it == m.end() ? QColor() : it->second;
}

QString GraphDiffView::change_text(Side side, ir::NodeId id) const {
  // The node on each side: `id` is on `side`; its match on the other (diff_.matched: after -> before).
  ir::NodeId a = ir::kNoNode, b = ir::kNoNode;
  if (side == Side::kAfter) {
    a = id;
    if (auto it = diff_.matched.find(id); it != diff_.matched.end()) b = it->second;
  } else {
    b = id;
    for (const auto& [after_id, before_id] : diff_.matched)
      if (before_id == id) a = after_id;
  }
  if (!after_.graph.has_node(a) || !before_.graph.has_node(b)) return tr("(op, attributes or inputs)");
  const ir::Node& was = before_.graph.node(b);
  const ir::Node& now = after_.graph.node(a);
  QStringList lines;
  if (was.op != now.op) lines << tr("op %1 \u2192 %2").arg(qs(was.op), qs(now.op));
  std::set<std::string> keys;
  for (const auto& [k, v] : was.attrs) keys.insert(k);
  for (const auto& [k, v] : now.attrs) keys.insert(k);
  auto shown = [](const ir::Attribute* v) {
    if (!v) return QStringLiteral("unset");
    QString t = format_attribute(*v);
    return t.size() > 40 ? t.left(37) + "..." : t;
  };
  for (const std::string& k : keys) {
    const QString x = shown(was.attr(k)), y = shown(now.attr(k));
    if (x != y) lines << QStringLiteral("%1: %2 \u2192 %3").arg(qs(k), x, y);
  }
  auto input_name = [](const ir::Graph& g, ir::ValueId v) {
    if (v == ir::kNoValue || !g.has_value(v)) return QStringLiteral("none");
    const ir::Value& value = g.value(v);
    if (!value.name.empty()) return qs(value.name);
    if (value.producer != ir::kNoNode && g.has_node(value.producer)) return qs(g.node(value.producer).name) + QStringLiteral(" out");
    return QStringLiteral("%") + QString::number(v);
  };
  if (was.inputs.size() != now.inputs.size())
    lines << tr("%1 inputs \u2192 %2").arg(was.inputs.size()).arg(now.inputs.size());
  else
    for (size_t i = 0; i < was.inputs.size(); ++i) {
      const QString x = input_name(before_.graph, was.inputs[i]), y = input_name(after_.graph, now.inputs[i]);
      if (x != y) lines << tr("input %1: %2 \u2192 %3").arg(i).arg(x, y);
    }
  return lines.isEmpty() ? tr("(the types of its inputs)") : lines.join(QStringLiteral("\n  "));
}

QString GraphDiffView::node_tooltip(Side side, ir::NodeId id) const {
  const auto& m = tooltips_[static_cast<int>(side)];
  auto it = m.find(id);
  return it == m.end() ? QString() : it->second;
}

void GraphDiffView::fit() {
  const QRectF r = scene_->itemsBoundingRect();
  if (r.isEmpty()) return;
  view_->fitInView(r.adjusted(-20, -20, 20, 20), Qt::KeepAspectRatio);
  if (view_->transform().m11() > 1.0) view_->setTransform(QTransform());  // never magnify
}

double GraphDiffView::draw_graph(Side side, double left) {
  const bool after = side == Side::kAfter;
  const ir::Graph& g = after ? after_.graph : before_.graph;
  const int s = static_cast<int>(side);
  rects_[s].clear();
  fills_[s].clear();
  tooltips_[s].clear();
  std::vector<ir::NodeId> ids = g.node_ids();
  std::map<ir::NodeId, int> index;
  for (size_t i = 0; i < ids.size(); ++i) index[ids[i]] = static_cast<int>(i);
  std::vector<LayoutBox> boxes(ids.size(), LayoutBox{kBoxWidth, kBoxHeight});
  std::vector<LayoutEdge> edges;
  for (size_t i = 0; i < ids.size(); ++i)
    for (ir::ValueId v : g.node(ids[i]).inputs) {
      if (!g.has_value(v) || g.value(v).kind != ir::ValueKind::kNodeOutput) continue;
      auto it = index.find(g.value(v).producer);
      if (it != index.end()) edges.push_back({it->second, static_cast<int>(i)});
    }
  const Layout layout = LayeredLayout().compute(boxes, edges);
  const double top = kTitleHeight;
  // The after side is stretched down to the before side's height (at most 4x): a pass that
  // removes nodes leaves a shorter graph, and its boxes then sit level with the ones they came
  // from instead of the whole column being half as tall.
  double stretch = 1;
  if (!after) before_height_ = layout.height;
  else if (layout.height > 0 && before_height_ > layout.height)
    stretch = std::min(4.0, (before_height_ - kBoxHeight) / std::max(1.0, layout.height - kBoxHeight));
  stretch = std::max(1.0, stretch);

  auto* title = scene_->addSimpleText(
      tr("%1: %2 nodes").arg(after ? after_title_ : before_title_).arg(ids.size()));
  QFont f = title->font();
  f.setPointSize(12);
  f.setBold(true);
  title->setFont(f);
  title->setPos(left, 4);

  // Edges: one path per side (hundreds of edges stay one item).
  QPainterPath path;
  auto box_at = [&](int i) {
    return QRectF(left + layout.positions[static_cast<size_t>(i)].x,
                  top + layout.positions[static_cast<size_t>(i)].y * stretch, kBoxWidth, kBoxHeight);
  };
  for (size_t e = 0; e < edges.size(); ++e) {
    const QRectF a = box_at(edges[e].from), b = box_at(edges[e].to);
    path.moveTo(a.center().x(), a.bottom());
    if (e < layout.routes.size())
      for (const LayoutPoint& p : layout.routes[e]) path.lineTo(left + p.x, top + p.y * stretch);
    path.lineTo(b.center().x(), b.top());
  }
  auto* edge_item = scene_->addPath(path, QPen(QColor(130, 130, 130), 1.2));
  edge_item->setZValue(-1);

  for (size_t i = 0; i < ids.size(); ++i) {
    const ir::NodeId id = ids[i];
    const ir::Node& n = g.node(id);
    const GraphDiff::Status st = after ? diff_.after_status(id) : diff_.before_status(id);
    const QRectF r = box_at(static_cast<int>(i));
    const QColor fill = status_colour(st);
    const NodeMark* mark = nullptr;
    if (after)
      if (auto it = marks_.find(id); it != marks_.end()) mark = &it->second;
    QString tip = QString("#%1 %2: %3").arg(id).arg(qs(n.name), qs(n.op));
    switch (st) {
      case GraphDiff::Status::kAdded: tip += tr("\nadded"); break;
      case GraphDiff::Status::kRemoved: tip += tr("\nremoved"); break;
      case GraphDiff::Status::kChanged: tip += tr("\nchanged: ") + change_text(side, id); break;
      case GraphDiff::Status::kSame: break;
    }
    if (!n.provenance.from.empty()) {
      QStringList from;
      for (ir::NodeId f2 : n.provenance.from)  // by name in the graph before, as the boxes are
        from << (before_.graph.has_node(f2) && !before_.graph.node(f2).name.empty()
                     ? QStringLiteral("%1 (%2)").arg(qs(before_.graph.node(f2).name), qs(before_.graph.node(f2).op))
                     : QString("#%1").arg(f2));
      tip += tr("\nfrom %1").arg(from.join(", "));
    }
    // The attributes (a gradient bucket's bytes, a node's layout), long values cut.
    for (const auto& [key, value] : n.attrs) {
      if (value.kind() == ir::AttrKind::kGraph || value.kind() == ir::AttrKind::kTensor) continue;
      QString text = format_attribute(value);
      if (text.size() > 60) text = text.left(57) + "...";
      tip += QString("\n%1 = %2").arg(qs(key), text);
    }
    if (mark && !mark->tooltip.isEmpty()) tip += "\n" + mark->tooltip;
    auto* item = new DiffBoxItem(r, fill, qs(n.op), qs(n.name.empty() ? "#" + std::to_string(id) : n.name), mark, id,
                                 after);
    item->setToolTip(tip);
    scene_->addItem(item);
    rects_[s][id] = r;
    fills_[s][id] = fill;
    tooltips_[s][id] = tip;
  }
  return std::max(layout.width, kBoxWidth);
}

void GraphDiffView::rebuild() {
  scene_->clear();
  focus_ = nullptr;  // deleted with the scene's items
  link_count_ = 0;
  const double before_width = draw_graph(Side::kBefore, 0);
  draw_graph(Side::kAfter, before_width + kSideGap);
  // Provenance: from the left edge of each added/changed after box to the right edge of each
  // before box it came from.
  QPainterPath links;
  for (const auto& [node, from] : diff_.links) {
    const QRectF a = node_rect(Side::kAfter, node);
    if (a.isEmpty()) continue;
    for (ir::NodeId f : from) {
      const QRectF b = node_rect(Side::kBefore, f);
      if (b.isEmpty()) continue;
      const QPointF p0(a.left(), a.center().y()), p1(b.right(), b.center().y());
      const double dx = std::max(60.0, (p0.x() - p1.x()) / 2);
      links.moveTo(p0);
      links.cubicTo(p0 - QPointF(dx, 0), p1 + QPointF(dx, 0), p1);
      ++link_count_;
    }
  }
  auto* link_item = scene_->addPath(links, QPen(QColor(120, 60, 200, 170), 1.6, Qt::DashLine));
  link_item->setZValue(2);

  auto swatch = [](GraphDiff::Status s) {
    return QString("<span style='background-color:%1'>&nbsp;&nbsp;&nbsp;&nbsp;</span>").arg(status_colour(s).name());
  };
  // Each swatch stays with its label when a narrow pane wraps the legend (non-breaking spaces).
  // The scene's rect set now: left to grow by itself it followed only on the next event-loop turn,
  // so centring on a change far down the graph right after this was clamped to the old rect.
  scene_->setSceneRect(scene_->itemsBoundingRect().adjusted(-40, -40, 40, 40));
  legend_->setText(tr("<b>%1</b> &nbsp; %2&nbsp;added&nbsp;(%3) &nbsp; %4&nbsp;removed&nbsp;(%5) &nbsp; "
                      "%6&nbsp;changed&nbsp;(%7) &nbsp; "
                      "<span style='color:#7840c8'>-&nbsp;-&nbsp;-</span>&nbsp;came&nbsp;from&nbsp;(%8)")
                       .arg(counts_text().toHtmlEscaped())
                       .arg(swatch(GraphDiff::Status::kAdded))
                       .arg(diff_.added.size())
                       .arg(swatch(GraphDiff::Status::kRemoved))
                       .arg(diff_.removed.size())
                       .arg(swatch(GraphDiff::Status::kChanged))
                       .arg(diff_.changed.size())
                       .arg(link_count_));
}

}  // namespace tessera::studio
