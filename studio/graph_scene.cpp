// The graph canvas's scene: building items from the document and placing them.
#include "studio/graph_scene.h"

#include <set>
#include <vector>

#include "engine/ir/verifier.h"
#include "studio/canvas_style.h"
#include "studio/document.h"
#include "studio/graph_items.h"
#include "studio/graph_layout.h"
#include "studio/guard.h"

namespace tessera::studio {

namespace {

QString qstr(const std::string& s) {
  return QString::fromStdString(s);
}
QString html(const std::string& s) {
  return qstr(s).toHtmlEscaped();
}

// A node input drawn as a port with an edge; weights (params) are rows inside the box instead,
// and absent optional inputs are not drawn at all.
bool is_data_input(const ir::Graph& graph, ir::ValueId v) {
  if (v == ir::kNoValue) return false;
  return !graph.has_value(v) || graph.value(v).kind != ir::ValueKind::kParam;
}

std::string type_text(const Document& doc, ir::ValueId v) {
  if (!doc.graph().has_value(v)) return "(missing value)";
  return doc.is_typed(v) ? doc.graph().value(v).type.to_string() : "?";
}

std::string value_name(const ir::Graph& graph, ir::ValueId v) {
  if (graph.has_value(v) && !graph.value(v).name.empty()) return graph.value(v).name;
  return "%" + std::to_string(v);
}

// The schema's name for port i ("X", "W"); variadic ports are numbered ("inputs1").
std::string port_name(const std::vector<ops::PortSpec>& ports, size_t i, const char* fallback) {
  if (ports.empty()) return fallback + std::to_string(i);
  const size_t last = ports.size() - 1;
  const ops::PortSpec& spec = ports[std::min(i, last)];
  if (spec.variadic) return spec.name + std::to_string(i - std::min(i, last));
  if (i > last) return fallback + std::to_string(i);
  return spec.name;
}

QString node_tooltip(const Document& doc, const ir::Node& n, const ops::OpDef* def) {
  const ir::Graph& g = doc.graph();
  QString t = QStringLiteral("<b>%1</b> %2").arg(html(n.op), html(ir::describe_node(n)));
  if (def) {
    t += QStringLiteral("<br><i>%1</i>").arg(html(def->category));
    if (!def->doc.empty()) t += QStringLiteral(": %1").arg(html(def->doc));
  } else {
    t += QStringLiteral("<br><i>op not in the registry</i>");
  }
  auto list = [&](const char* title, const std::vector<ir::ValueId>& values,
                  const std::vector<ops::PortSpec>* ports, const char* fallback) {
    t += QStringLiteral("<br><b>%1</b>").arg(QLatin1String(title));
    for (size_t i = 0; i < values.size(); ++i) {
      const std::string port =
          ports ? port_name(*ports, i, fallback) : fallback + std::to_string(i);
      if (values[i] == ir::kNoValue) {
        t += QStringLiteral("<br>&nbsp;&nbsp;%1: (absent)").arg(html(port));
        continue;
      }
      t += QStringLiteral("<br>&nbsp;&nbsp;%1: %2 <tt>%3</tt>")
               .arg(html(port), html(value_name(g, values[i])), html(type_text(doc, values[i])));
    }
  };
  list("inputs", n.inputs, def ? &def->inputs : nullptr, "in");
  list("outputs", n.outputs, def ? &def->outputs : nullptr, "out");
  if (const Error* e = doc.node_error(n.id))
    t += QStringLiteral("<br><span style='color:#d02121'><b>error:</b> %1</span>")
             .arg(html(e->message));
  return t;
}

NodeContent node_content(const Document& doc, const ir::Node& n) {
  const ir::Graph& g = doc.graph();
  const ops::OpDef* def = doc.registry().find(n.op);
  NodeContent c;
  c.op = qstr(n.op);
  c.name = qstr(n.name);
  c.colour = def ? style::category_colour(def->category) : style::unknown_op_colour();
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ir::ValueId v = n.inputs[i];
    if (is_data_input(g, v)) {
      ++c.data_inputs;
    } else if (v != ir::kNoValue) {
      const std::string port = def ? port_name(def->inputs, i, "in") : "in" + std::to_string(i);
      c.params.push_back({qstr(port), qstr(type_text(doc, v))});
    }
  }
  c.outputs = static_cast<int>(n.outputs.size());
  c.failed = doc.node_error(n.id) != nullptr;
  c.tooltip = node_tooltip(doc, n, def);
  return c;
}

QString terminal_tooltip(const Document& doc, const char* what, ir::ValueId v) {
  return QStringLiteral("graph %1 <b>%2</b>: <tt>%3</tt>")
      .arg(QLatin1String(what), html(value_name(doc.graph(), v)), html(type_text(doc, v)));
}

constexpr double kMargin = 24;  // scene space around the graph (room to pan a little)

struct PendingEdge {
  ir::ValueId value;
  int from_box, from_slot, to_box, to_slot;
};

}  // namespace

GraphScene::GraphScene(const Document& document, QObject* parent)
    : QGraphicsScene(parent), document_(document) {
  setBackgroundBrush(style::kCanvasBackground);
  connect(&document_, &Document::graph_reset, this, [this] {
    guarded(nullptr, tr("Drawing the graph"), [&] {
      try {
        rebuild();
      } catch (...) {
        clear();  // never leave a half-built scene behind
        node_items_.clear();
        throw;
      }
    });
  });
  rebuild();
}

NodeItem* GraphScene::node_item(ir::NodeId id) const {
  auto it = node_items_.find(id);
  return it == node_items_.end() ? nullptr : it->second;
}

void GraphScene::rebuild() {
  clear();
  node_items_.clear();
  graph_rect_ = QRectF();
  if (document_.is_empty()) {
    setSceneRect(QRectF());
    emit rebuilt();
    return;
  }
  const ir::Graph& g = document_.graph();
  // Every item goes into the scene as soon as it exists: the scene owns it from then on.
  auto add = [this](auto* item) {
    addItem(item);
    return item;
  };

  // Boxes: graph inputs, nodes (id order), graph outputs. `source` maps each drawn value to the
  // box and output port that define it.
  std::vector<BoxItem*> boxes;
  struct Source {
    int box, slot;
  };
  std::map<ir::ValueId, Source> source;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::ValueId v = g.inputs()[i];
    source[v] = {static_cast<int>(boxes.size()), 0};
    boxes.push_back(
        add(new TerminalItem(TerminalItem::Kind::kInput, static_cast<int>(i),
                             qstr(value_name(g, v)), terminal_tooltip(document_, "input", v))));
  }
  std::vector<PendingEdge> edges;
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    const int box = static_cast<int>(boxes.size());
    auto* item = add(new NodeItem(id, node_content(document_, n)));
    node_items_[id] = item;
    boxes.push_back(item);
    for (size_t k = 0; k < n.outputs.size(); ++k) source[n.outputs[k]] = {box, static_cast<int>(k)};
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::ValueId v = g.outputs()[i];
    boxes.push_back(
        add(new TerminalItem(TerminalItem::Kind::kOutput, static_cast<int>(i),
                             qstr(value_name(g, v)), terminal_tooltip(document_, "output", v))));
  }

  // Edges, now that every producer is known (node ids need not follow data order).
  for (size_t b = 0; b < boxes.size(); ++b) {
    const int to_box = static_cast<int>(b);
    if (boxes[b]->type() == static_cast<int>(CanvasItemType::kNode)) {
      const ir::Node& n = g.node(static_cast<NodeItem*>(boxes[b])->node_id());
      int slot = 0;
      for (ir::ValueId v : n.inputs) {
        if (!is_data_input(g, v)) continue;
        auto it = source.find(v);
        if (it != source.end()) edges.push_back({v, it->second.box, it->second.slot, to_box, slot});
        ++slot;
      }
    } else {
      auto* terminal = static_cast<TerminalItem*>(boxes[b]);
      if (terminal->kind() != TerminalItem::Kind::kOutput) continue;
      const ir::ValueId v = g.outputs()[static_cast<size_t>(terminal->index())];
      auto it = source.find(v);
      if (it != source.end()) edges.push_back({v, it->second.box, it->second.slot, to_box, 0});
    }
  }

  std::vector<LayoutBox> layout_boxes;
  for (const BoxItem* box : boxes)
    layout_boxes.push_back({box->size().width(), box->size().height()});
  std::vector<LayoutEdge> layout_edges;
  for (const PendingEdge& e : edges) layout_edges.push_back({e.from_box, e.to_box});
  const Layout layout = LayeredLayout().compute(layout_boxes, layout_edges);
  for (size_t b = 0; b < boxes.size(); ++b)
    boxes[b]->setPos(layout.positions[b].x, layout.positions[b].y);

  // One type label per value (at its source port, shared by all its uses).
  std::set<ir::ValueId> labelled;
  for (size_t k = 0; k < edges.size(); ++k) {
    const PendingEdge& e = edges[k];
    const bool typed = document_.is_typed(e.value);
    std::vector<QPointF> route;
    for (const LayoutPoint& p : layout.routes[k]) route.emplace_back(p.x, p.y);
    auto* edge = add(new EdgeItem(e.value, boxes[e.from_box], e.from_slot, boxes[e.to_box],
                                  e.to_slot, std::move(route), typed));
    if (typed && labelled.insert(e.value).second)
      edge->set_label(add(new EdgeLabelItem(qstr(g.value(e.value).type.to_string()))));
  }
  graph_rect_ = itemsBoundingRect();
  setSceneRect(graph_rect_.adjusted(-kMargin, -kMargin, kMargin, kMargin));
  emit rebuilt();
}

}  // namespace tessera::studio
