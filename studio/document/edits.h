// The studio's edits, checked and planned: each function validates its arguments against the
// document state, performs the edit on a trial copy, runs type inference there when the edit can
// change types, and returns the Edit (before/after patches) for an undo command to apply, or the
// reason it is refused. Nothing here changes the document: Document pushes the Edit as an
// EditCommand (studio/edit_commands.h), so a refused edit leaves no trace.
//
// Refusals name the node (Error::node) and the port or attribute:
//   "MatMul 'fc' (#3) input 1 ('B'): cannot take %5 'w' : f32[10, 3]: ..." (the inference message)
//
// Usage:
//   EditContext ctx{state, registry, analysis};
//   Expected<Edit> e = plan_connect(ctx, value, node, 1);
//   if (!e) return e.error();   // else push EditCommand(document, std::move(*e))
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"
#include "studio/document/clipboard.h"
#include "studio/document/document_state.h"
#include "studio/document/type_analysis.h"

namespace tessera::studio {

struct EditContext {
  const DocumentState& state;
  const ops::OpRegistry& registry;
  const TypeAnalysis& analysis;  // of state's graph, as it is now
  const ops::Scope& outer;        // the enclosing graphs' named values (Document::outer_scope)
};

// What kind of edit, for QUndoCommand::id() (merging) and for tests.
enum class EditKind {
  kAddNode,
  kAddInput,
  kAddParam,
  kRemoveValue,
  kSetOutputs,
  kRemoveNodes,
  kConnect,
  kDisconnect,
  kSetAttribute,
  kRenameNode,
  kRenameValue,
  kMoveNodes,
  kSetPositions,
  kGroup,
  kUngroup,
  kSetGroupCollapsed,
  kPaste,
};

struct Edit {
  EditKind kind = EditKind::kAddNode;
  std::string text;  // for the Edit menu: "Connect 'w' to MatMul 'fc' input 1"
  StateChange change;
  std::vector<ir::NodeId> nodes;     // the selection a move applies to; the nodes add/paste made
  ir::ValueId value = ir::kNoValue;  // the value add_input/add_param made
  bool no_op = false;                // the edit would change nothing: push no command
};

// The node `op` with the schema's required outputs (named "<node>.<port>", made unique) and one
// input slot per declared input, all absent; `attrs` as given (the rest take their defaults). An
// empty name picks "<op in lower case><n>". Refused: unknown op, a name in use, an attribute the
// schema does not have or of the wrong kind.
Expected<Edit> plan_add_node(const EditContext& ctx, const std::string& op, const std::string& name,
                             NodePosition position, const ir::Attributes& attrs);
// A graph input / a param. Refused: empty name, a value name in use.
Expected<Edit> plan_add_input(const EditContext& ctx, const std::string& name,
                              const ir::TensorType& type, NodePosition position);
Expected<Edit> plan_add_param(const EditContext& ctx, const std::string& name, const Tensor& data,
                              NodePosition position);
// Removes a graph input or param; its uses become absent inputs and it leaves the graph outputs.
Expected<Edit> plan_remove_value(const EditContext& ctx, ir::ValueId id);
// The graph outputs, in order. Refused: a value that is not live, a value listed twice.
Expected<Edit> plan_set_outputs(const EditContext& ctx, const std::vector<ir::ValueId>& outputs);
// Removes the nodes, their outputs' uses (inputs become absent, graph outputs dropped), their
// positions and group entries (a group left empty goes), and the params no remaining node uses.
Expected<Edit> plan_remove_nodes(const EditContext& ctx, const std::vector<ir::NodeId>& ids);
// Makes `value` input `index` of `node`. Refused when the port does not exist, when the edge would
// close a cycle, or when the node's inference fails with it and did not fail before.
Expected<Edit> plan_connect(const EditContext& ctx, ir::ValueId value, ir::NodeId node, int index);
// Makes input `index` absent. Refused when nothing is connected there.
Expected<Edit> plan_disconnect(const EditContext& ctx, ir::NodeId node, int index);
// Sets (or with nullopt clears, so the default applies) an attribute. Refused when the schema has
// no such attribute, the kind differs, or the node's inference fails with it and did not before.
Expected<Edit> plan_set_attribute(const EditContext& ctx, ir::NodeId node, const std::string& key,
                                  const std::optional<ir::Attribute>& value);
// Renames; names are non-empty and unique among live nodes / live values.
Expected<Edit> plan_rename_node(const EditContext& ctx, ir::NodeId node, const std::string& name);
Expected<Edit> plan_rename_value(const EditContext& ctx, ir::ValueId value,
                                 const std::string& name);
// Moves nodes that have positions by (dx, dy) scene pixels. Refused: a node without a position.
Expected<Edit> plan_move_nodes(const EditContext& ctx, const std::vector<ir::NodeId>& ids,
                               double dx, double dy);
// Sets positions (pins nodes the automatic layout placed, places input terminals).
// Every saved place of a node, graph input or param forgotten ("Arrange": the canvas lays the
// graph out again); refused when nothing is placed.
Expected<Edit> plan_clear_positions(const EditContext& ctx);
Expected<Edit> plan_set_positions(const EditContext& ctx,
                                  const std::map<ir::NodeId, NodePosition>& positions);
Expected<Edit> plan_set_value_position(const EditContext& ctx, ir::ValueId id,
                                       NodePosition position);
// Layout groups: a name is unique, a node belongs to at most one group.
Expected<Edit> plan_group(const EditContext& ctx, const std::vector<ir::NodeId>& ids,
                          const std::string& name);
Expected<Edit> plan_ungroup(const EditContext& ctx, const std::string& name);
Expected<Edit> plan_set_group_collapsed(const EditContext& ctx, const std::string& name,
                                        bool collapsed);
// Adds the payload's params and nodes under fresh ids, names made unique, positions moved by
// (dx, dy). Refused: an op the registry does not know.
Expected<Edit> plan_paste(const EditContext& ctx, const ClipboardPayload& payload, double dx,
                          double dy);

// `base` if no name in `taken` equals it, else "base_2", "base_3", ...
std::string unique_name(const std::string& base, const std::vector<std::string>& taken);

}  // namespace tessera::studio
