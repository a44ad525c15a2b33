// The textual form of the IR: printable, parseable, and identical after a round trip
// (print(parse(print(g))) == print(g), with the same value and node ids). Golden tests and the
// studio's diffs use it.
//
// Grammar (one item per line; '//' comments are skipped by the parser):
//   graph      := 'graph' STRING '{' item* '}'
//   item       := 'input'   value ':' type
//               | 'param'   value ':' type '=' tensor
//               | 'capture' value ':' type                 (an enclosing graph's value, by name)
//               | NODE STRING? '=' OP '(' operand,* ')' '->' '(' (value ':' type),* ')'
//                     attrs? ('from' '[' NODE,* ']')? ('origin' STRING)?
//               | 'output' VALUE,*
//   value      := VALUE STRING?                            %3 "conv1.out"
//   operand    := VALUE | '_'                              '_' is an absent optional input
//   type       := DTYPE '[' (dim,*)? ']' | DTYPE '[' '*' ']'     dim := INT | IDENT | '?'
//   attrs      := '{' (IDENT '=' attr),* '}'
//   attr       := INT | FLOAT | STRING | tensor | graph
//               | '[' INT,* ']' | '[' FLOAT,* ']' | '[' STRING,* ']' | 'ints[]' | 'floats[]' | 'strings[]'
//   tensor     := 'tensor' '<' type '>' '[' number,* ']'     (row-major elements)
//   VALUE := '%' INT    NODE := '#' INT    floats always carry '.', 'e', 'inf' or 'nan'.
//
// Example:
//   graph "mlp" {
//     input %0 "x" : f32[N, 784]
//     param %1 "w" : f32[784, 10] = tensor<f32[784, 10]> [0.1, ...]
//     #0 "fc" = MatMul(%0, %1) -> (%2 "logits" : f32[N, 10]) origin "samples/mlp.json:/nodes/0"
//     output %2
//   }
#pragma once

#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/ir/graph.h"

namespace tessera::ir {

struct PrintOptions {
  // false: params are printed without their values, as `param %1 "w" : f32[6, 1, 5, 5] = elided`
  // (pass snapshots, where ResNet-50's weights would make each snapshot 370 MB of text). Such
  // text describes the graph's structure; parse_graph refuses it (no weights to run with).
  bool param_data = true;
};

std::string print_graph(const Graph& graph);
std::string print_graph(const Graph& graph, const PrintOptions& options);
// `where` names the source in errors ("file.tir" -> "file.tir:3:17: ..."). Hostile text is
// bounded: graphs nest at most 32 levels below the top graph, all graphs of one text share
// max(65536, 4 x text size) id slots (ids are dense), and a tensor literal must hold as many
// elements as its type declares before anything is allocated.
Expected<Graph> parse_graph(std::string_view text, const std::string& where = "<text>");

}  // namespace tessera::ir
