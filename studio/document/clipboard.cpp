// Copy and paste payloads: a selection as a small graph, written as IR text with positions.
#include "studio/document/clipboard.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "engine/ir/text.h"

namespace tessera::studio {

namespace {

constexpr char kPositionPrefix[] = "// position #";

}  // namespace

Expected<ClipboardPayload> copy_selection(const DocumentState& state,
                                          const std::vector<ir::NodeId>& ids) {
  const ir::Graph& g = state.graph();
  if (ids.empty()) return make_error("nothing to copy: no node is selected");
  std::set<ir::NodeId> selected;
  for (ir::NodeId id : ids) {
    if (!g.has_node(id))
      return make_error("cannot copy node #" + std::to_string(id) + ": there is no such node");
    selected.insert(id);
  }
  // Producers before consumers, so each node's inputs exist when it is added.
  TRY(std::vector<ir::NodeId> order, g.topological_order());
  ClipboardPayload out{ir::Graph("clipboard"), {}};
  std::map<ir::ValueId, ir::ValueId> mapped;  // document value -> payload value
  for (ir::NodeId id : order) {
    if (!selected.count(id)) continue;
    const ir::Node& n = g.node(id);
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId v : n.inputs) {
      if (v != ir::kNoValue && !mapped.count(v) && g.has_value(v) &&
          g.value(v).kind == ir::ValueKind::kParam)
        mapped[v] = out.graph.add_param(g.value(v).name, *g.param_data(v));
      auto it = mapped.find(v);
      inputs.push_back(it == mapped.end() ? ir::kNoValue : it->second);  // from outside: absent
    }
    while (!inputs.empty() && inputs.back() == ir::kNoValue) inputs.pop_back();
    const ir::NodeId copy =
        out.graph.add_node(n.op, inputs, static_cast<int>(n.outputs.size()), n.name, n.attrs);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const ir::ValueId to = out.graph.node(copy).outputs[i];
      out.graph.set_value_name(to, g.value(n.outputs[i]).name);
      out.graph.value(to).type = g.value(n.outputs[i]).type;
      mapped[n.outputs[i]] = to;
    }
    auto pos = state.layout().positions.find(id);
    if (pos != state.layout().positions.end()) out.positions[copy] = pos->second;
  }
  return out;
}

std::string clipboard_text(const ClipboardPayload& payload) {
  std::ostringstream os;
  os << ir::print_graph(payload.graph);
  os.precision(17);
  for (const auto& [id, pos] : payload.positions)
    os << kPositionPrefix << id << ' ' << pos.x << ' ' << pos.y << '\n';
  return os.str();
}

Expected<ClipboardPayload> parse_clipboard(const std::string& text) {
  TRY(ir::Graph graph, ir::parse_graph(text, "clipboard"));
  ClipboardPayload out{std::move(graph), {}};
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.rfind(kPositionPrefix, 0) != 0) continue;
    std::istringstream fields(line.substr(sizeof(kPositionPrefix) - 1));
    ir::NodeId id = ir::kNoNode;
    NodePosition pos;
    if (!(fields >> id >> pos.x >> pos.y) || !out.graph.has_node(id))
      return make_error("bad position line: " + line, "clipboard:" + std::to_string(number));
    out.positions[id] = pos;
  }
  return out;
}

}  // namespace tessera::studio
