// What the studio's document holds (the graph file's content plus where graph inputs are drawn)
// and the one way it changes: a StatePatch, a set of items written into the state by id. Every
// edit command is a pair of patches (before, after) over the same items, so undo and redo restore
// exactly what was there: the same ids, values, edges, positions and groups. A patch names items
// by id; writing "absent" makes a tombstone, and ids are never reused because the graph's
// capacity never shrinks.
//
// Usage (the edit functions in studio/edits.h do this):
//   Trial trial(state);                          // a copy to edit and check
//   ir::NodeId id = trial.add_node("Relu", {x}, 1, "act");
//   StateChange change = trial.finish();         // before/after of what the trial touched
//   apply_patch(state, change.after);            // redo; apply_patch(state, change.before): undo
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "formats/document.h"

namespace tessera::studio {

using formats::NodeGroup;
using formats::NodePosition;

struct DocumentState {
  formats::GraphDocument file;  // graph + metadata + layout (node positions, groups)
  // Where graph inputs and params are drawn when they have their own box, by value id. Saved in
  // the metadata property kTerminalPositionsProperty, by value name (the JSON form renumbers
  // values, never renames them).
  std::map<ir::ValueId, NodePosition> value_positions;

  ir::Graph& graph() { return file.graph; }
  const ir::Graph& graph() const { return file.graph; }
  formats::Layout& layout() { return file.layout; }
  const formats::Layout& layout() const { return file.layout; }
};

inline constexpr char kValuePositionsProperty[] = "tessera-studio.value_positions";

// One value as a patch writes it: the Value and, for a param, its data.
struct ValueState {
  ir::Value value;
  std::optional<Tensor> data;
};

// Items to write into a state. nullopt means "absent": a tombstone for nodes and values, no entry
// for positions. Lists and groups are written whole when present.
struct StatePatch {
  std::map<ir::NodeId, std::optional<ir::Node>> nodes;
  std::map<ir::ValueId, std::optional<ValueState>> values;
  std::optional<std::vector<ir::ValueId>> inputs, params, outputs;
  std::map<ir::NodeId, std::optional<NodePosition>> positions;
  std::map<ir::ValueId, std::optional<NodePosition>> value_positions;
  std::optional<std::vector<NodeGroup>> groups;
};

struct StateChange {
  StatePatch before, after;  // the same items on both sides
};

// Which items an edit touched; capture() reads them from a state.
struct Touched {
  std::set<ir::NodeId> nodes;
  std::set<ir::ValueId> values;
  bool lists = false;    // graph inputs and params
  bool outputs = false;  // graph outputs
  std::set<ir::NodeId> positions;
  std::set<ir::ValueId> value_positions;
  bool groups = false;
};

StatePatch capture(const DocumentState& state, const Touched& touched);

// Writes the patch into the state. Cannot fail for a patch captured from a state of the same
// document (ids in range, kinds consistent).
void apply_patch(DocumentState& state, const StatePatch& patch);

// A copy of `graph` with the same ids (live and tombstoned), whose input and param lists are the
// given ones, in that order. Values listed must be live inputs / params of `graph`.
ir::Graph with_lists(const ir::Graph& graph, const std::vector<ir::ValueId>& inputs,
                     const std::vector<ir::ValueId>& params);

// A copy of the state to edit; records what it touches and gives the change back.
class Trial {
 public:
  explicit Trial(const DocumentState& base) : base_(base), state_(base) {}

  DocumentState& state() { return state_; }
  ir::Graph& graph() { return state_.graph(); }
  const DocumentState& base() const { return base_; }

  // Building, recorded: a node with fresh outputs (named, origin "studio"), an input, a param.
  ir::NodeId add_node(const std::string& op, std::vector<ir::ValueId> inputs,
                      const std::vector<std::string>& output_names, const std::string& name,
                      ir::Attributes attrs);
  ir::ValueId add_input(const std::string& name, ir::TensorType type);
  ir::ValueId add_param(const std::string& name, Tensor data);
  // Tombstones the node, its outputs and their position and group entries; uses of its outputs
  // become absent inputs (trailing absent inputs dropped) and leave the graph outputs.
  void remove_node(ir::NodeId id);
  // Tombstones graph inputs and params; their uses become absent inputs, they leave the outputs.
  void remove_values(const std::vector<ir::ValueId>& ids);
  // Mutable access that records the item as touched.
  ir::Node& node(ir::NodeId id);
  ir::Value& value(ir::ValueId id);  // not for renames: set_value_name
  void set_value_name(ir::ValueId id, std::string name);
  void set_outputs(std::vector<ir::ValueId> outputs);
  void set_position(ir::NodeId id, std::optional<NodePosition> pos);
  void set_value_position(ir::ValueId id, std::optional<NodePosition> pos);
  std::vector<NodeGroup>& groups();

  StateChange finish() const { return {capture(base_, touched_), capture(state_, touched_)}; }

 private:
  void drop_uses(ir::ValueId v);

  const DocumentState& base_;
  DocumentState state_;
  Touched touched_;
};

// Drops trailing absent inputs: a node's input list ends with its last connected input.
void trim_inputs(ir::Node& node);

}  // namespace tessera::studio
