// Layout helpers shared by the layout pass (cpu::assign_layouts in cpu_backend.h) and the stages
// that build KernelInit: which blocked tag a value would take, and which layout a value's buffer
// has in a laid-out graph.
//
//   backend::LayoutTag in = cpu::value_layout(graph, node.inputs[0]);   // "" or "nChw16c" ...
#pragma once

#include "engine/backend/kernel.h"
#include "engine/ir/graph.h"

namespace tessera::cpu {

// "nChw16c" for a static 4-D f32 type with C % 16 == 0, "nChw8c" when C % 8 == 0, else "".
backend::LayoutTag blocked_tag_for(const ir::TensorType& type);

// The layout of value v's buffer: a Reorder producer's `to`, else the producer's "layout"
// attribute, else "" (graph inputs, params, captures and unmarked nodes are plain).
backend::LayoutTag value_layout(const ir::Graph& graph, ir::ValueId v);

// The out_layout of a node: its "layout" attribute ("" when absent); a Reorder's `to`.
backend::LayoutTag node_layout(const ir::Node& node);

}  // namespace tessera::cpu
