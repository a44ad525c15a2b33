// Scene items of the graph canvas: a box per node, a small box per graph input and output, and a
// curve per edge with its type label. Items are views: they keep the ids they stand for and the
// text they show, built by GraphScene from the Document, and no graph data of their own.
//
//   +-----------o------------+   input ports on the top edge, one per data input
//   | Conv  conv1            |   header in the op category's colour: op and node name
//   | W   f32[6, 1, 5, 5]    |   one row per weight (param) input, which has no edge
//   | B   f32[6]             |
//   +-----------o------------+   output ports on the bottom edge
#pragma once

#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <QString>
#include <vector>

#include "engine/ir/graph.h"

namespace tessera::studio {

// QGraphicsItem::type() values, so that scenes and tests can tell the items apart.
enum class CanvasItemType : int {
  kNode = QGraphicsItem::UserType + 1,
  kTerminal,
  kEdge,
  kEdgeLabel,
  kGroupFrame,
  kGroupBox,
  kScopeBox,
};

// Whether the item is a box (a BoxItem: node, graph input or output, collapsed group or scope).
inline bool is_box_item(const QGraphicsItem* item) {
  const int t = item->type();
  return t == static_cast<int>(CanvasItemType::kNode) || t == static_cast<int>(CanvasItemType::kTerminal) ||
         t == static_cast<int>(CanvasItemType::kGroupBox) || t == static_cast<int>(CanvasItemType::kScopeBox);
}

// Anything an edge attaches to: a rounded box with input ports spread along its top edge and
// output ports along its bottom edge.
class BoxItem : public QGraphicsItem {
 public:
  BoxItem(int num_inputs, int num_outputs);
  QRectF boundingRect() const override;
  QSizeF size() const { return size_; }
  int num_input_ports() const { return num_inputs_; }
  int num_output_ports() const { return num_outputs_; }
  // Port centres in scene coordinates (slot in [0, ports)).
  QPointF input_port(int slot) const;
  QPointF output_port(int slot) const;

 protected:
  void paint_ports(QPainter* painter) const;
  QSizeF size_;

 private:
  double port_x(int slot, int count) const;
  int num_inputs_;
  int num_outputs_;
};

// What a node box shows; GraphScene fills it from the Document.
struct NodeContent {
  QString op;     // "Conv"
  QString name;   // "conv1"; may be empty
  QColor colour;  // header colour, by op category
  struct Row {
    QString port;  // "W"
    QString type;  // "f32[6, 1, 5, 5]"
  };
  std::vector<Row> params;  // weight inputs, shown inside the box
  int data_inputs = 0;      // ports on the top edge
  // By top port (slot): the node input index it stands for. A port is drawn for every data input
  // that is connected and for every required input that is absent (so it can be connected).
  std::vector<int> port_inputs;
  int outputs = 0;          // ports on the bottom edge
  QString cost;             // "61.7k params · 0.4M FLOPs": a last, muted row; empty: none
  bool failed = false;      // inference failed here: red outline
  QString tooltip;          // rich text
};

class NodeItem : public BoxItem {
 public:
  NodeItem(ir::NodeId id, NodeContent content);
  int type() const override { return static_cast<int>(CanvasItemType::kNode); }
  ir::NodeId node_id() const { return id_; }
  const NodeContent& content() const { return content_; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  ir::NodeId id_;
  NodeContent content_;
  double port_column_ = 0;  // width of the widest param port name
};

// A graph input (one output port) or a graph output (one input port).
class TerminalItem : public BoxItem {
 public:
  enum class Kind { kInput, kOutput };
  // `index` is the position in the graph's inputs or outputs.
  TerminalItem(Kind kind, int index, QString name, QString tooltip);
  int type() const override { return static_cast<int>(CanvasItemType::kTerminal); }
  Kind kind() const { return kind_; }
  int index() const { return index_; }
  const QString& name() const { return name_; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  Kind kind_;
  int index_;
  QString name_;
  QString caption_;
};

// An expanded group: a dashed frame around its nodes' boxes with its name on top; behind them.
class GroupFrameItem : public QGraphicsItem {
 public:
  // `rect` in scene coordinates: the members' boxes with a margin, the name above.
  GroupFrameItem(QString name, QRectF rect);
  int type() const override { return static_cast<int>(CanvasItemType::kGroupFrame); }
  const QString& name() const { return name_; }
  QRectF frame() const { return rect_; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QString name_;
  QRectF rect_;
};

// A collapsed group: one box in place of its nodes, with an input port per edge that enters the
// group and an output port per value that leaves it. Selectable (Ctrl+E or a double-click
// expands it).
class GroupBoxItem : public BoxItem {
 public:
  // `caption` empty: "group of N nodes".
  GroupBoxItem(QString name, int nodes, int num_inputs, int num_outputs, QString caption = {});
  int type() const override { return static_cast<int>(CanvasItemType::kGroupBox); }
  const QString& name() const { return name_; }
  int nodes() const { return nodes_; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QString name_;
  QString caption_;  // "group of 3 nodes"
  int nodes_;
};

// A collapsed name scope ("/layer1/layer1.0", as ONNX exporters name nodes): one box, laid out
// like a node, in place of every node of the scope; its ports are the values crossing its border.
// A view state of the canvas, not an edit of the document.
class ScopeBoxItem : public GroupBoxItem {
 public:
  ScopeBoxItem(QString scope, int nodes, int num_inputs, int num_outputs);
  int type() const override { return static_cast<int>(CanvasItemType::kScopeBox); }
};

// The type of the value an edge carries, on a light plate so that lines behind it do not hurt.
class EdgeLabelItem : public QGraphicsItem {
 public:
  explicit EdgeLabelItem(QString text);
  int type() const override { return static_cast<int>(CanvasItemType::kEdgeLabel); }
  const QString& text() const { return text_; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QString text_;
  QSizeF size_;
};

// A curve from an output port of one box to an input port of another, through the route points
// the layout gave it (scene coordinates), ending in an arrow head. The label, when there is one,
// is a separate scene item (drawn above the boxes) that the edge places just below its source
// port, where the value leaves its producer; the scene owns both.
class EdgeItem : public QGraphicsPathItem {
 public:
  EdgeItem(ir::ValueId value, const BoxItem* from, int from_slot, const BoxItem* to, int to_slot,
           std::vector<QPointF> route, bool typed);
  int type() const override { return static_cast<int>(CanvasItemType::kEdge); }
  ir::ValueId value_id() const { return value_; }
  const BoxItem* target_box() const { return to_; }
  int target_slot() const { return to_slot_; }
  // A band along the curve (not the area it encloses), for clicks and hover.
  QPainterPath shape() const override;
  void set_label(EdgeLabelItem* label);  // not owned
  EdgeLabelItem* label() const { return label_; }
  // Recomputes the curve (and moves the label) from the boxes' current ports.
  void update_geometry();
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  ir::ValueId value_;
  const BoxItem* from_;
  int from_slot_;
  const BoxItem* to_;
  int to_slot_;
  std::vector<QPointF> route_;
  EdgeLabelItem* label_ = nullptr;
  QPolygonF arrow_;
};

}  // namespace tessera::studio
