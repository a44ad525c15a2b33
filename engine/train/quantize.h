// Static post-training quantization: calibrates a float graph on data, then writes it in ONNX's
// QDQ form (QuantizeLinear / DequantizeLinear pairs around every Conv, Gemm and MatMul with
// constant weights), which ONNX Runtime runs and Tessera's qdq-fuse pass turns into int8 kernels.
//
//   quant::QuantizeOptions o;                 // min-max, per-channel weights
//   TRY(quant::QuantizeReport r, quant::quantize_static(graph, registry, loader, o));
//   // graph now holds the QDQ form; r says what was quantized and each activation's range
//
// Activations: u8, asymmetric, per tensor, from the calibrated range (always including 0):
// scale = (max - min) / 255, zero point round(-min / scale). Calibration ranges: "minmax" (the
// extremes seen) or "percentile" (the p-th percentile of each tail, from a 2048-bin histogram of a
// second pass). The output of a Conv / Gemm / MatMul read only by a Relu or a Clip (ReLU6) is
// calibrated after it, so qdq-fuse absorbs it. Weights: s8, symmetric (zero point 0, range +-127), per output
// channel (or per tensor); biases: i32 in the accumulator's scale (x_scale * w_scale), as
// ONNX Runtime's quantizer writes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::data {
class DataLoader;
}

namespace tessera::quant {

struct QuantizeOptions {
  std::string method = "minmax";  // or "percentile"
  double percentile = 99.99;      // for "percentile": the share of each tail kept, in percent
  bool per_channel = true;        // weights: one scale per output channel
  int64_t max_examples = 512;     // calibration examples (0: the whole data set)
  int threads = 1;
};

struct ActivationRange {
  std::string value;  // the calibrated value's name
  double min = 0, max = 0, scale = 1;
  int zero_point = 0;
};

struct QuantizeReport {
  int quantized_ops = 0;        // Conv / Gemm / MatMul given QDQ weights and activations
  int64_t examples = 0;         // calibration examples seen
  std::vector<ActivationRange> activations;
  std::vector<std::string> skipped;  // "node 'fc' (Gemm): transA"
};

// Calibrates `graph` on the batches of `loader` (one epoch, in order; a batch's "x" feeds the
// graph's only input, other fields feed inputs of their name) and rewrites it in place.
Expected<QuantizeReport> quantize_static(ir::Graph& graph, const ops::OpRegistry& registry, data::DataLoader& loader,
                                         const QuantizeOptions& options);

}  // namespace tessera::quant
