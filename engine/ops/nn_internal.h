// Pieces shared by the nn family's files (nn.cpp, nn_conv.cpp, nn_norm.cpp, nn_more_conv.cpp) and
// the backward ops (grad_ops.cpp). Internal to engine/ops; register_nn_ops (op_def.h) is the only
// public entry point of the family.
#pragma once

#include <string>
#include <vector>

#include "engine/ops/helpers.h"

namespace tessera::ops {

// Conv, MaxPool, AveragePool, GlobalAveragePool (nn_conv.cpp).
void register_conv_ops(OpRegistry& registry);
// BatchNormalization, LayerNormalization, Dropout (nn_norm.cpp).
void register_norm_ops(OpRegistry& registry);

// Conv's and MatMul's reference kernels and shapes, shared with the quantized ops (quantize.cpp).
// The kernels read X, W (A, B) and Conv's attributes through ctx (node and def); any float dtype.
Status conv_reference(KernelContext& ctx);
Status matmul_reference(KernelContext& ctx);
Expected<std::vector<Dim>> conv_output_dims(const ir::Node& node, const AttrReader& attrs, const std::vector<Dim>& x,
                                            const std::vector<Dim>& w);
Expected<std::vector<Dim>> matmul_output_dims(const ir::Node& node, const std::vector<Dim>& a, const std::vector<Dim>& b);
// Conv's window attributes (dilations, group, kernel_shape, auto_pad, pads, strides) on `def`.
void conv_window_attrs(OpDef& def);

// "[N, 3, 4]"
std::string dims_to_string(const std::vector<Dim>& dims);

// A per-axis integer attribute (strides, dilations, pads, kernel_shape...): `count` values, `dflt`
// each when absent, every value >= `min_value`; errors name the node and the attribute.
Expected<std::vector<int64_t>> per_axis(const ir::Node& node, const AttrReader& attrs, const std::string& name,
                                        size_t count, int64_t dflt, int64_t min_value);

// Window iteration shared by the convolution and pooling kernels and their gradients (nn_conv.cpp):
// the spatial extents of input and output, strides, pads and the kernel taps (dilated offsets).
struct Spatial {
  size_t nsp = 0;
  std::vector<int64_t> in, out, stride, pad_begin, pad_end;
  std::vector<int64_t> taps;  // per tap (row-major over the kernel), per axis: offset (dilated)
  int64_t in_size = 1, out_size = 1, num_taps = 1;

  Spatial(std::vector<int64_t> in_sp, std::vector<int64_t> out_sp, const std::vector<int64_t>& kernel,
          std::vector<int64_t> strides, const std::vector<int64_t>& dilations, std::vector<int64_t> pads_begin,
          std::vector<int64_t> pads_end);
  // First input coordinate of the window at output position o, per axis, into `base`.
  void window_base(int64_t o, std::vector<int64_t>& base) const;
  // Row-major spatial offset of tap t of the window at `base`; -1 when it falls in the padding.
  // `in_padded` (optional) says whether it lies inside the explicitly padded input.
  int64_t tap(const std::vector<int64_t>& base, int64_t t, bool* in_padded = nullptr) const;
};

// Checks that `from` broadcasts one way onto `to` (ONNX unidirectional broadcasting: `from` is
// right-aligned, each of its known sizes is 1 or the known size of `to`). `what` names the operand
// in the error ("input 'C'").
Status check_unidirectional(const ir::Node& node, const std::vector<Dim>& from,
                            const std::vector<Dim>& to, const std::string& what);

}  // namespace tessera::ops
