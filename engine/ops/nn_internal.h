// Pieces shared by the nn family's files (nn.cpp, nn_conv.cpp, nn_norm.cpp). Internal to
// engine/ops; register_nn_ops (op_def.h) is the only public entry point of the family.
#pragma once

#include <string>
#include <vector>

#include "engine/ops/helpers.h"

namespace tessera::ops {

// Conv, MaxPool, AveragePool, GlobalAveragePool (nn_conv.cpp).
void register_conv_ops(OpRegistry& registry);
// BatchNormalization, LayerNormalization, Dropout (nn_norm.cpp).
void register_norm_ops(OpRegistry& registry);

// "[N, 3, 4]"
std::string dims_to_string(const std::vector<Dim>& dims);

// Checks that `from` broadcasts one way onto `to` (ONNX unidirectional broadcasting: `from` is
// right-aligned, each of its known sizes is 1 or the known size of `to`). `what` names the operand
// in the error ("input 'C'").
Status check_unidirectional(const ir::Node& node, const std::vector<Dim>& from,
                            const std::vector<Dim>& to, const std::string& what);

}  // namespace tessera::ops
