// `tessera quantize MODEL OUT --calibrate DATA`: static post-training quantization
// (engine/train/quantize.h) of a float graph, written in ONNX's QDQ form (by OUT's extension;
// .onnx files run in ONNX Runtime too).
#include <iostream>

#include "cli/commands.h"
#include "engine/data/loader.h"
#include "engine/train/checkpoint.h"
#include "engine/train/quantize.h"
#include "formats/dataset_path.h"
#include "formats/graph_file.h"
#include "formats/onnx_export.h"

namespace tessera::cli {

int run_quantize(const QuantizeOptions& o) {
  const ops::OpRegistry reg = ops::make_default_registry();
  auto graph = formats::load_graph_file(o.in);
  if (!graph) return fail(graph.error());
  if (!o.checkpoint.empty()) {
    Status st = train::apply_checkpoint(*graph, o.checkpoint);
    if (!st.is_ok()) return fail(st.error());
  }
  const int channels = formats::image_channels(*graph);
  int64_t batch = o.batch;
  // A graph exported with a fixed batch size takes batches of that size.
  if (!graph->inputs().empty()) {
    const ir::TensorType& t = graph->value(graph->inputs()[0]).type;
    if (t.rank() >= 1 && t.dims[0].is_known()) batch = t.dims[0].size;
  }
  auto source = formats::open_dataset_split(o.data, o.split, channels);
  if (!source) return fail(source.error().within("--calibrate"));
  if (!*source) return fail(make_error("--calibrate " + o.data + ": the data set has no '" + o.split + "' split"));
  data::LoaderOptions lo;
  lo.batch_size = batch;
  lo.drop_last = batch != o.batch;
  data::DataLoader loader(*source, {}, lo);
  quant::QuantizeOptions qo;
  qo.method = o.method;
  qo.percentile = o.percentile;
  qo.per_channel = !o.per_tensor;
  qo.max_examples = o.samples;
  qo.threads = o.threads > 0 ? o.threads : default_threads();
  auto report = quant::quantize_static(*graph, reg, loader, qo);
  if (!report) return fail(report.error().within(o.in + " calibrated on " + o.data));
  Status st = Status::ok();
  if (o.out.size() > 5 && o.out.substr(o.out.size() - 5) == ".onnx") {
    formats::OnnxExportOptions eo;
    if (o.opset != 0) eo.opset = o.opset;
    eo.producer_version = TESSERA_VERSION;
    st = formats::export_onnx_file(*graph, o.out, reg, eo);
  } else {
    if (o.opset != 0) return fail(make_error("--opset applies to ONNX output only"));
    st = formats::save_graph_file(*graph, o.out);
  }
  if (!st.is_ok()) return fail(st.error());
  std::cout << "quantized " << report->quantized_ops << " ops of '" << graph->name() << "' (" << o.method
            << (o.method == "percentile" ? " " + std::to_string(o.percentile).substr(0, 6) : std::string()) << ", "
            << (o.per_tensor ? "per-tensor" : "per-channel") << " weights) on " << report->examples << " examples of "
            << o.data << "; wrote " << o.out << "\n";
  for (const std::string& s : report->skipped) std::cout << "  left in float: " << printable(s) << "\n";
  return 0;
}

}  // namespace tessera::cli
