// Scene items of the graph canvas: geometry and painting.
#include "studio/canvas/graph_items.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

#include "studio/common/canvas_style.h"

namespace tessera::studio {

namespace {

constexpr double kPad = 10;          // inner horizontal padding of boxes
constexpr double kRadius = 5;        // corner radius of node boxes
constexpr double kTitleHeight = 24;  // node header band: op and node name
constexpr double kRowHeight = 15;    // one param row
constexpr double kRowsPad = 4;       // above and below the param rows
constexpr double kNameGap = 8;       // between the op and the node name in the header
constexpr double kMinNodeWidth = 90;
constexpr double kMaxNodeWidth = 320;  // longer names and types are elided (full text in tooltips)
constexpr double kPortRadius = 4;
constexpr double kPortSpacing = 18;  // minimum distance between two ports of a box
constexpr double kTerminalHeight = 24;
constexpr double kArrowLength = 8;
constexpr double kLabelOffset = 6;  // edge label: distance right of the source port
constexpr double kStem = 18;        // a bending edge first runs straight down past its label

double rows_height(size_t rows) {
  return rows == 0 ? 0 : 2 * kRowsPad + kRowHeight * static_cast<double>(rows);
}

}  // namespace

// ---- BoxItem ----

BoxItem::BoxItem(int num_inputs, int num_outputs)
    : num_inputs_(num_inputs), num_outputs_(num_outputs) {
  setZValue(1);  // above edges
}

QRectF BoxItem::boundingRect() const {
  // Ports stick out of the box by their radius; a failed node's outline is thicker.
  const double m = kPortRadius + 2;
  return QRectF(-m, -m, size_.width() + 2 * m, size_.height() + 2 * m);
}

double BoxItem::port_x(int slot, int count) const {
  return size_.width() * (slot + 1) / (count + 1);
}

QPointF BoxItem::input_port(int slot) const {
  return mapToScene(QPointF(port_x(slot, num_inputs_), 0));
}

QPointF BoxItem::output_port(int slot) const {
  return mapToScene(QPointF(port_x(slot, num_outputs_), size_.height()));
}

void BoxItem::paint_ports(QPainter* painter) const {
  painter->setPen(QPen(style::colours().box_border, 1.2));
  painter->setBrush(style::colours().box_fill);
  for (int i = 0; i < num_inputs_; ++i)
    painter->drawEllipse(QPointF(port_x(i, num_inputs_), 0), kPortRadius, kPortRadius);
  for (int i = 0; i < num_outputs_; ++i)
    painter->drawEllipse(QPointF(port_x(i, num_outputs_), size_.height()), kPortRadius,
                         kPortRadius);
}

// ---- NodeItem ----

NodeItem::NodeItem(ir::NodeId id, NodeContent content)
    : BoxItem(content.data_inputs, content.outputs), id_(id), content_(std::move(content)) {
  const QFontMetricsF title(style::canvas_font(style::kTitlePx, true));
  const QFontMetricsF name(style::canvas_font(style::kNamePx));
  const QFontMetricsF port(style::canvas_font(style::kDetailPx));
  const QFontMetricsF type(style::type_font(style::kDetailPx));
  double width = title.horizontalAdvance(content_.op);
  if (!content_.name.isEmpty()) width += kNameGap + name.horizontalAdvance(content_.name);
  port_column_ = 0;
  for (const NodeContent::Row& row : content_.params)
    port_column_ = std::max(port_column_, port.horizontalAdvance(row.port));
  for (const NodeContent::Row& row : content_.params)
    width = std::max(width, port_column_ + kNameGap + type.horizontalAdvance(row.type));
  if (!content_.cost.isEmpty()) width = std::max(width, port.horizontalAdvance(content_.cost));
  width = std::clamp(width + 2 * kPad, kMinNodeWidth, kMaxNodeWidth);
  width = std::max(width, kPortSpacing * (std::max(content_.data_inputs, content_.outputs) + 1));
  const size_t rows = content_.params.size() + (content_.cost.isEmpty() ? 0 : 1);
  size_ = QSizeF(std::ceil(width), kTitleHeight + rows_height(rows));
  setToolTip(content_.tooltip);
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  const QRectF box(QPointF(0, 0), size_);
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(Qt::NoPen);
  painter->setBrush(style::colours().box_fill);
  painter->drawRoundedRect(box, kRadius, kRadius);
  // Header: the top of the same rounded rectangle, in the category colour.
  painter->save();
  painter->setClipRect(QRectF(0, 0, size_.width(), kTitleHeight));
  painter->setBrush(content_.colour);
  painter->drawRoundedRect(box, kRadius, kRadius);
  painter->restore();

  painter->setBrush(Qt::NoBrush);
  if (content_.failed)
    painter->setPen(QPen(style::colours().error, 3));
  else
    painter->setPen(QPen(content_.colour.darker(125), 1));
  painter->drawRoundedRect(box, kRadius, kRadius);

  // Header: "Conv  conv1", the op in bold, the node name lighter; the name is elided to fit.
  const QFont title_font = style::canvas_font(style::kTitlePx, true);
  const QFont name_font = style::canvas_font(style::kNamePx);
  const double text_width = size_.width() - 2 * kPad;
  const double op_width =
      std::min(QFontMetricsF(title_font).horizontalAdvance(content_.op), text_width);
  painter->setPen(Qt::white);
  painter->setFont(title_font);
  painter->drawText(QRectF(kPad, 0, op_width, kTitleHeight), Qt::AlignLeft | Qt::AlignVCenter,
                    content_.op);
  const double name_width = text_width - op_width - kNameGap;
  if (!content_.name.isEmpty() && name_width > 0) {
    painter->setPen(QColor(255, 255, 255, 215));
    painter->setFont(name_font);
    const QString name =
        QFontMetricsF(name_font).elidedText(content_.name, Qt::ElideMiddle, name_width);
    painter->drawText(QRectF(kPad + op_width + kNameGap, 0, name_width, kTitleHeight),
                      Qt::AlignLeft | Qt::AlignVCenter, name);
  }

  const QFont port_font = style::canvas_font(style::kDetailPx);
  const QFont type_font = style::type_font(style::kDetailPx);
  const double type_x = kPad + port_column_ + kNameGap;
  const double type_width = size_.width() - kPad - type_x;
  double y = kTitleHeight + kRowsPad;
  for (const NodeContent::Row& row : content_.params) {
    painter->setPen(style::colours().muted_text);
    painter->setFont(port_font);
    painter->drawText(QRectF(kPad, y, port_column_, kRowHeight), Qt::AlignLeft | Qt::AlignVCenter,
                      row.port);
    painter->setPen(style::colours().text);
    painter->setFont(type_font);
    painter->drawText(QRectF(type_x, y, type_width, kRowHeight), Qt::AlignLeft | Qt::AlignVCenter,
                      QFontMetricsF(type_font).elidedText(row.type, Qt::ElideRight, type_width));
    y += kRowHeight;
  }
  if (!content_.cost.isEmpty()) {
    painter->setPen(style::colours().muted_text);
    painter->setFont(port_font);
    painter->drawText(QRectF(kPad, y, size_.width() - 2 * kPad, kRowHeight),
                      Qt::AlignLeft | Qt::AlignVCenter,
                      QFontMetricsF(port_font).elidedText(content_.cost, Qt::ElideRight,
                                                          size_.width() - 2 * kPad));
  }
  paint_ports(painter);
}

// ---- TerminalItem ----

TerminalItem::TerminalItem(Kind kind, int index, QString name, QString tooltip)
    : BoxItem(kind == Kind::kOutput ? 1 : 0, kind == Kind::kInput ? 1 : 0),
      kind_(kind),
      index_(index),
      name_(std::move(name)),
      caption_(kind == Kind::kInput ? QStringLiteral("input") : QStringLiteral("output")) {
  const QFontMetricsF name_metrics(style::canvas_font(style::kNamePx, true));
  const QFontMetricsF caption_metrics(style::canvas_font(style::kDetailPx));
  const double width = caption_metrics.horizontalAdvance(caption_) + 6 +
                       name_metrics.horizontalAdvance(name_) + 2 * 14;
  size_ = QSizeF(std::ceil(std::max(width, 70.0)), kTerminalHeight);
  setToolTip(tooltip);
}

void TerminalItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  const QRectF box(QPointF(0, 0), size_);
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(QPen(style::colours().terminal_border, 1.2));
  painter->setBrush(style::colours().terminal_fill);
  painter->drawRoundedRect(box, kTerminalHeight / 2, kTerminalHeight / 2);

  const QFont caption_font = style::canvas_font(style::kDetailPx);
  const QFont name_font = style::canvas_font(style::kNamePx, true);
  const double caption_width = QFontMetricsF(caption_font).horizontalAdvance(caption_);
  const double total = caption_width + 6 + QFontMetricsF(name_font).horizontalAdvance(name_);
  const double x = (size_.width() - total) / 2;
  painter->setPen(style::colours().muted_text);
  painter->setFont(caption_font);
  painter->drawText(QRectF(x, 0, caption_width, size_.height()), Qt::AlignLeft | Qt::AlignVCenter,
                    caption_);
  painter->setPen(style::colours().text);
  painter->setFont(name_font);
  painter->drawText(QRectF(x + caption_width + 6, 0, size_.width(), size_.height()),
                    Qt::AlignLeft | Qt::AlignVCenter, name_);
  paint_ports(painter);
}

// ---- GroupFrameItem, GroupBoxItem ----

GroupFrameItem::GroupFrameItem(QString name, QRectF rect) : name_(std::move(name)), rect_(rect) {
  setZValue(-1);  // behind edges and boxes
  setToolTip(QStringLiteral("group <b>%1</b>").arg(name_.toHtmlEscaped()));
}

QRectF GroupFrameItem::boundingRect() const {
  return rect_.adjusted(-2, -2 - style::kNamePx * 1.6, 2, 2);
}

void GroupFrameItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->setRenderHint(QPainter::Antialiasing);
  QColor fill = style::colours().accent;
  fill.setAlpha(18);
  painter->setBrush(fill);
  painter->setPen(QPen(style::colours().accent, 1.2, Qt::DashLine));
  painter->drawRoundedRect(rect_, 10, 10);
  painter->setPen(style::colours().accent);
  painter->setFont(style::canvas_font(style::kNamePx, true));
  painter->drawText(QRectF(rect_.left() + 8, rect_.top() - style::kNamePx * 1.6, rect_.width(),
                           style::kNamePx * 1.5),
                    Qt::AlignLeft | Qt::AlignBottom, name_);
}

GroupBoxItem::GroupBoxItem(QString name, int nodes, int num_inputs, int num_outputs, QString caption)
    : BoxItem(num_inputs, num_outputs), name_(std::move(name)), caption_(std::move(caption)), nodes_(nodes) {
  if (caption_.isEmpty())
    caption_ = nodes == 1 ? QStringLiteral("group of 1 node")
                          : QStringLiteral("group of %1 nodes").arg(nodes);
  const QFontMetricsF name_metrics(style::canvas_font(style::kTitlePx, true));
  const QFontMetricsF caption_metrics(style::canvas_font(style::kDetailPx));
  const double width = std::max(name_metrics.horizontalAdvance(name_),
                                caption_metrics.horizontalAdvance(caption_)) + 28;
  const double ports = 22.0 * (std::max(num_inputs, num_outputs) + 1);
  size_ = QSizeF(std::ceil(std::max({width, ports, 120.0})), 52);
  setFlag(QGraphicsItem::ItemIsSelectable);
  setToolTip(QStringLiteral("collapsed group <b>%1</b> (%2): Ctrl+E or double-click expands it")
                 .arg(name_.toHtmlEscaped(), caption_));
}

void GroupBoxItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  const QRectF box(QPointF(0, 0), size_);
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(QPen(isSelected() ? style::colours().accent : style::colours().box_border,
                       isSelected() ? 2.5 : 1.2, Qt::DashLine));
  painter->setBrush(style::colours().box_fill);
  painter->drawRoundedRect(box, 6, 6);
  painter->setPen(style::colours().text);
  painter->setFont(style::canvas_font(style::kTitlePx, true));
  painter->drawText(QRectF(0, 6, size_.width(), 22), Qt::AlignCenter, name_);
  painter->setPen(style::colours().muted_text);
  painter->setFont(style::canvas_font(style::kDetailPx));
  painter->drawText(QRectF(0, 28, size_.width(), 18), Qt::AlignCenter, caption_);
  paint_ports(painter);
}

ScopeBoxItem::ScopeBoxItem(QString scope, int nodes, int num_inputs, int num_outputs)
    : GroupBoxItem(std::move(scope), nodes, num_inputs, num_outputs,
                   nodes == 1 ? QStringLiteral("1 node") : QStringLiteral("%1 nodes").arg(nodes)) {
  setToolTip(QStringLiteral("scope <b>%1</b> (%2): double-click expands it")
                 .arg(name().toHtmlEscaped(), nodes == 1 ? QStringLiteral("1 node")
                                                         : QStringLiteral("%1 nodes").arg(nodes)));
}

// ---- EdgeLabelItem ----

EdgeLabelItem::EdgeLabelItem(QString text) : text_(std::move(text)) {
  const QFontMetricsF metrics(style::type_font(style::kDetailPx));
  size_ = QSizeF(std::ceil(metrics.horizontalAdvance(text_)) + 8, std::ceil(metrics.height()) + 2);
  setZValue(2);  // above boxes: a label never hides behind a node
}

QRectF EdgeLabelItem::boundingRect() const {
  return QRectF(0, -size_.height() / 2, size_.width(), size_.height());  // pos = left middle
}

void EdgeLabelItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(Qt::NoPen);
  painter->setBrush(style::colours().label_plate);
  painter->drawRoundedRect(boundingRect(), 3, 3);
  painter->setPen(style::colours().text);
  painter->setFont(style::type_font(style::kDetailPx));
  painter->drawText(boundingRect(), Qt::AlignCenter, text_);
}

// ---- EdgeItem ----

EdgeItem::EdgeItem(ir::ValueId value, const BoxItem* from, int from_slot, const BoxItem* to,
                   int to_slot, std::vector<QPointF> route, bool typed)
    : value_(value),
      from_(from),
      from_slot_(from_slot),
      to_(to),
      to_slot_(to_slot),
      route_(std::move(route)) {
  QPen pen(typed ? style::colours().edge : style::colours().untyped_edge, 1.5);
  if (!typed) pen.setStyle(Qt::DashLine);
  setPen(pen);
  setZValue(0);
  update_geometry();
}

void EdgeItem::set_label(EdgeLabelItem* label) {
  label_ = label;
  update_geometry();
}

void EdgeItem::update_geometry() {
  const QPointF start = from_->output_port(from_slot_) + QPointF(0, kPortRadius);
  const QPointF tip = to_->input_port(to_slot_) - QPointF(0, kPortRadius);
  const QPointF end = tip - QPointF(0, kArrowLength);
  // Straight where two points share x (a lane through a row), else an S-curve leaving and
  // entering vertically. A bending edge leaves its port on a short straight stem, so that the
  // label beside the port stays clear of the curve and the edges of one value fan out below it.
  std::vector<QPointF> points{start};
  points.insert(points.end(), route_.begin(), route_.end());
  points.push_back(end);
  if (std::abs(points[1].x() - start.x()) >= 0.5 && points[1].y() - start.y() > 2 * kStem)
    points.insert(points.begin() + 1, start + QPointF(0, kStem));
  QPainterPath path(start);
  for (size_t i = 1; i < points.size(); ++i) {
    const QPointF& a = points[i - 1];
    const QPointF& b = points[i];
    if (std::abs(a.x() - b.x()) < 0.5) {
      path.lineTo(b);
      continue;
    }
    const double bend = std::max(std::abs(b.y() - a.y()) / 2, 12.0);
    path.cubicTo(a + QPointF(0, bend), b - QPointF(0, bend), b);
  }
  arrow_ = QPolygonF({tip, end + QPointF(-4, 0), end + QPointF(4, 0)});
  setPath(path);  // after arrow_: setPath announces the geometry change
  if (label_) {
    const double half_height = label_->boundingRect().height() / 2;
    label_->setPos(start + QPointF(kLabelOffset, half_height + 1));
  }
}

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(8);
  return stroker.createStroke(path());
}

QRectF EdgeItem::boundingRect() const {
  return QGraphicsPathItem::boundingRect().united(arrow_.boundingRect()).adjusted(-1, -1, 1, 1);
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(pen());
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(path());
  painter->setPen(Qt::NoPen);
  painter->setBrush(pen().color());
  painter->drawPolygon(arrow_);
}

}  // namespace tessera::studio
