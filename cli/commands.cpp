// The `tessera` subcommands: info, run, convert, print.
#include "cli/commands.h"
#include "insight/recorder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <new>
#include <random>
#include <set>
#include <thread>

#include <unistd.h>

#include "engine/core/cpu_load.h"
#include "engine/core/strings.h"
#include "engine/observe/sinks.h"
#include "engine/train/checkpoint.h"
#include "engine/ir/text.h"
#include "engine/ops/cost.h"
#include "engine/ops/infer.h"
#include "engine/passes/passes.h"
#include "engine/runtime/interpreter.h"
#include "engine/stages/session.h"
#include "formats/document.h"
#include "formats/file_io.h"
#include "formats/graph_file.h"
#include "formats/json_graph.h"
#include "formats/npy.h"
#include "formats/onnx_export.h"
#include "formats/tsr.h"

namespace tessera::cli {

void print_json(const nlohmann::json& j, int indent) {
  std::cout << j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return out;
}

namespace {
std::string g_last_error;
}  // namespace

int fail(const Error& e) {
  g_last_error = printable(e.to_string());
  std::cerr << "tessera: error: " << g_last_error << "\n";
  return 1;
}

const std::string& last_error() { return g_last_error; }

int default_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

LoadProbe::LoadProbe() : start_(read_cpu_times()) {}

double LoadProbe::others_cores() const { return tessera::others_cores(start_, read_cpu_times()); }

std::string LoadProbe::describe() const {
  const double others = others_cores();
  if (others < 0) return "other load unknown";
  char buf[128];
  std::snprintf(buf, sizeof buf, "other processes kept %.2f of %d cores busy", others, hardware_threads());
  return buf;
}

// Loads, checks and infers: every command works on a typed graph.
Expected<ir::Graph> load_typed(const std::string& path, const ops::OpRegistry& reg) {
  TRY(formats::GraphDocument doc, formats::load_typed_document(path, reg));
  return std::move(doc.graph);
}

namespace {

std::string human(double v) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (std::fabs(v) >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f" : "%.2f%s", v, units[u]);
  return buf;
}

// Splits "NAME=VALUE"; error names the flag.
Expected<std::pair<std::string, std::string>> split_assignment(const std::string& s, const std::string& flag) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    return make_error(flag + " '" + s + "' must have the form NAME=VALUE");
  return std::make_pair(s.substr(0, eq), s.substr(eq + 1));
}

// Deterministic random tensor: floats uniform in [-1, 1), integers in [0, 10), bools 0/1.
// Built from raw mt19937_64 output so every platform gives the same values for a seed.
Tensor random_tensor(DType dt, const Shape& shape, std::mt19937_64& rng) {
  Tensor t(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint64_t bits = rng();
    if (is_float(dt)) t.set(i, static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0);
    else if (dt == DType::kBool) t.set(i, static_cast<double>(bits >> 63));
    else if (dt == DType::kString) t.data<uint64_t>()[i] = intern_string("s" + std::to_string(bits % 10));
    else t.set(i, static_cast<double>(bits % 10));
  }
  return t;
}

std::string file_name_for(const std::string& value_name, size_t index) {
  if (value_name.empty()) return "output" + std::to_string(index);
  std::string s = value_name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return s;
}

}  // namespace

// --dim SYMBOL=SIZE specs as a map; a symbol no input of `g` has is a mistake, named with those it has.
static Expected<std::map<std::string, int64_t>> parse_dims(const ir::Graph& g, const std::vector<std::string>& specs) {
  std::map<std::string, int64_t> dims;
  for (const std::string& d : specs) {
    auto kv = split_assignment(d, "--dim");
    if (!kv) return kv.error();
    char* end = nullptr;
    const long long n = std::strtoll(kv->second.c_str(), &end, 10);
    if (*end != '\0' || n < 0 || n > (int64_t{1} << 31))
      return (make_error("--dim " + d + ": size must be a non-negative integer"));
    dims[kv->first] = n;
  }
  std::set<std::string> symbols;
  for (ir::ValueId v : g.inputs())
    for (const ir::Dim& d : g.value(v).type.dims)
      if (d.is_symbolic()) symbols.insert(d.symbol);
  for (const auto& [symbol, size] : dims)
    if (!symbols.count(symbol)) {
      std::string known;
      for (const std::string& k : symbols) known += (known.empty() ? "" : ", ") + k;
      return make_error("--dim " + symbol + "=" + std::to_string(size) + ": the graph's inputs have no symbolic dimension '" + symbol +
                        "' (" + (known.empty() ? std::string("they have none") : "they have: " + known) + ")");
    }
  return dims;
}

Expected<std::map<std::string, Tensor>> make_feeds(const ir::Graph& g, const std::vector<std::string>& inputs,
                                                   const std::vector<std::string>& dims_specs, uint64_t seed,
                                                   std::map<std::string, std::string>* source) {
  std::map<std::string, std::string> ignored;
  if (!source) source = &ignored;
  TRY(auto dims, parse_dims(g, dims_specs));
  runtime::Feeds feeds;
  for (const std::string& spec : inputs) {
    auto kv = split_assignment(spec, "--input");
    if (!kv) return kv.error();
    auto t = formats::read_npy(kv->second);
    if (!t) return t.error();
    if (!feeds.emplace(kv->first, std::move(*t)).second)
      return (make_error("--input " + kv->first + " is given twice"));
    (*source)[kv->first] = kv->second;
  }
  std::mt19937_64 rng(seed);
  for (ir::ValueId v : g.inputs()) {
    const ir::Value& in = g.value(v);
    if (auto fed = feeds.find(in.name); fed != feeds.end()) {
      if (!in.type.is_tensor())
        return make_error("--input " + in.name + ": the input is " + in.type.to_string() +
                          ", and a .npy file holds one tensor (leave it out to draw two random tensors)");
      // Checked here, where the file is known, so that the message names it.
      const Tensor& t = fed->second;
      if (!in.type.accepts(t.dtype(), t.shape()))
        return make_error("input '" + in.name + "' expects " + in.type.to_string() + " but the file holds " +
                              std::string(dtype_name(t.dtype())) + shape_to_string(t.shape()),
                          (*source)[in.name]);
      continue;
    }
    if (!in.type.rank_known && in.type.is_tensor())
      return (make_error("input '" + in.name + "' has unknown rank: give it with --input"));
    Shape shape;
    for (const ir::Dim& d : in.type.dims) {
      if (d.is_known()) shape.push_back(d.size);
      else shape.push_back(dims.count(d.symbol) ? dims[d.symbol] : 1);
    }
    auto ok = checked_numel(shape, in.type.dtype);
    if (!ok) return make_error("input '" + in.name + "' (random, of shape " + shape_to_string(shape) + "): " + ok.error().message);
    const double bytes = static_cast<double>(*ok) * dtype_size(in.type.dtype);
    const double physical = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
    if (physical > 0 && bytes > physical)
      return make_error("input '" + in.name + "' of shape " + shape_to_string(shape) + " would need " +
                        std::to_string(static_cast<int64_t>(bytes)) + " bytes, more than this machine's memory (" +
                        std::to_string(static_cast<int64_t>(physical)) + " bytes)");
    try {
      Tensor value = random_tensor(in.type.dtype, shape, rng);
      // A sequence gets two random tensors of its element type (scalars when their rank is
      // unknown); an optional holds its value.
      if (in.type.kind == TypeKind::kSequence || in.type.kind == TypeKind::kOptionalSequence)
        value = Tensor::sequence(in.type.dtype, {value, random_tensor(in.type.dtype, shape, rng)});
      if (in.type.kind == TypeKind::kOptional || in.type.kind == TypeKind::kOptionalSequence)
        value = Tensor::optional(in.type.dtype, {value});
      feeds.emplace(in.name, std::move(value));
    } catch (const std::bad_alloc&) {
      return make_error("input '" + in.name + "' of shape " + shape_to_string(shape) + ": cannot allocate " +
                        std::to_string(static_cast<int64_t>(bytes)) + " bytes for random values");
    }
    (*source)[in.name] = "random (seed " + std::to_string(seed) + ")";
  }
  return feeds;
}

int run_info(const InfoOptions& o) {
  if (o.devices) {
    const backend::DeviceSet set = backend::DeviceSet::discover(false);
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& d : set.all()) {
      if (o.json) arr.push_back({{"name", d->name()}, {"description", d->description()}});
      else std::cout << d->name() << "  " << d->description() << "\n";
    }
    if (o.json) print_json({{"devices", arr}, {"cuda_unavailable", set.cuda_unavailable()}});
    else if (!set.cuda_unavailable().empty()) std::cout << "no CUDA device: " << set.cuda_unavailable() << "\n";
    if (o.file.empty()) return 0;
  }
  if (o.file.empty()) return fail(make_error("info needs a graph FILE (or --devices)"));
  const ops::OpRegistry reg = ops::make_default_registry();
  auto doc = formats::load_typed_document(o.file, reg);
  if (!doc) return fail(doc.error());
  const ir::Graph* g = &doc->graph;
  const formats::Metadata& meta = doc->metadata;
  auto parsed = parse_dims(*g, o.dims);
  if (!parsed) return fail(parsed.error());
  std::map<std::string, int64_t> sizes = *parsed;
  // The sizes assumed for the inputs' symbolic dimensions, said beside the FLOPs.
  std::map<std::string, int64_t> assumed;
  bool unnamed = false;
  for (ir::ValueId v : g->inputs())
    for (const ir::Dim& d : g->value(v).type.dims) {
      if (d.is_symbolic()) assumed[d.symbol] = sizes.count(d.symbol) ? sizes[d.symbol] : 1;
      else if (!d.is_known()) unnamed = true;
    }
  std::string assumption;
  for (const auto& [symbol, size] : assumed) assumption += (assumption.empty() ? "" : ", ") + symbol + "=" + std::to_string(size);
  if (unnamed) assumption += std::string(assumption.empty() ? "" : ", ") + "unnamed dimensions=1";
  auto cost = passes::folded_graph_cost(*g, reg, sizes, 1);
  // FLOPs need sizes: a valid model may refuse 1 for every symbolic dimension (an audio front end
  // whose window is longer than one sample). Then the FLOPs are unknown, with the reason, and
  // the rest is still told.
  std::string flops_unknown;
  if (!cost) {
    flops_unknown = cost.error().message;
    ops::GraphCost counted;
    counted.params = ops::weight_elements(*g);
    for (ir::NodeId id : g->node_ids()) ++counted.op_counts[g->node(id).op];
    cost = std::move(counted);
  }
  int64_t weight_bytes = 0;
  for (ir::ValueId v : g->params())
    if (const Tensor* t = g->param_data(v)) weight_bytes += static_cast<int64_t>(t->nbytes());
  auto io = [&](const std::vector<ir::ValueId>& ids) {
    nlohmann::json arr = nlohmann::json::array();
    for (ir::ValueId v : ids) arr.push_back({{"name", g->value(v).name}, {"type", g->value(v).type.to_string()}});
    return arr;
  };
  if (o.json) {
    nlohmann::json j;
    j["file"] = o.file;
    j["name"] = g->name();
    j["inputs"] = io(g->inputs());
    j["outputs"] = io(g->outputs());
    j["nodes"] = g->num_nodes();
    j["op_counts"] = cost->op_counts;
    j["parameters"] = cost->params;
    j["flops_per_sample"] = flops_unknown.empty() ? nlohmann::json(cost->flops) : nlohmann::json(nullptr);
    if (!flops_unknown.empty()) j["flops_unknown"] = flops_unknown;
    j["dims_assumed"] = assumed;
    j["weight_bytes"] = weight_bytes;
    j["content_hash"] = formats::graph_content_hash(*g);
    nlohmann::json m = nlohmann::json::object();
    if (!meta.producer.empty()) m["producer"] = meta.producer;
    if (!meta.engine_version.empty()) m["engine_version"] = meta.engine_version;
    if (meta.created_unix_ms != 0) m["created_unix_ms"] = meta.created_unix_ms;
    if (!meta.properties.empty()) m["properties"] = meta.properties;
    j["metadata"] = std::move(m);
    j["layout"] = {{"positions", doc->layout.positions.size()}, {"groups", doc->layout.groups.size()}};
    print_json(j, 2);
    return 0;
  }
  std::cout << "graph '" << printable(g->name()) << "' (" << printable(o.file) << ")\n";
  std::cout << "inputs:\n";
  for (ir::ValueId v : g->inputs()) std::cout << "  " << printable(g->value(v).name) << "  " << g->value(v).type.to_string() << "\n";
  std::cout << "outputs:\n";
  for (ir::ValueId v : g->outputs()) {
    const std::string& n = g->value(v).name;
    std::cout << "  " << (n.empty() ? "%" + std::to_string(v) : printable(n)) << "  " << g->value(v).type.to_string() << "\n";
  }
  std::cout << "nodes: " << g->num_nodes() << "\n";
  for (const auto& [op, count] : cost->op_counts) std::cout << "  " << printable(op) << " x" << count << "\n";
  std::cout << "parameters: " << cost->params << " (" << human(static_cast<double>(cost->params)) << ")\n";
  if (flops_unknown.empty())
    std::cout << "FLOPs per sample" << (assumption.empty() ? "" : " (" + printable(assumption) + ")") << ": " << human(cost->flops)
              << " (" << static_cast<int64_t>(cost->flops) << ")\n";
  else
    std::cout << "FLOPs per sample: unknown (with " << (assumption.empty() ? "these shapes" : printable(assumption)) << ": "
              << printable(flops_unknown) << "; --dim SYMBOL=SIZE sets a size)\n";
  std::cout << "weights: " << human(static_cast<double>(weight_bytes)) << "B\n";
  std::cout << "content hash: " << formats::graph_content_hash(*g) << "\n";
  if (!meta.producer.empty() || !meta.engine_version.empty() || meta.created_unix_ms != 0) {
    std::cout << "written by: " << (meta.producer.empty() ? "?" : meta.producer) << ", tessera "
              << (meta.engine_version.empty() ? "?" : meta.engine_version);
    if (meta.created_unix_ms != 0) {
      const std::time_t t = static_cast<std::time_t>(meta.created_unix_ms / 1000);
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
      std::cout << ", " << buf;
    }
    std::cout << "\n";
  }
  for (const auto& [k, v] : meta.properties) std::cout << "  " << printable(k) << ": " << printable(v) << "\n";
  if (!doc->layout.empty())
    std::cout << "layout: " << doc->layout.positions.size() << " positions, " << doc->layout.groups.size() << " groups\n";
  return 0;
}

int run_run(const RunOptions& o) {
  const ops::OpRegistry reg = ops::make_default_registry();
  auto g = load_typed(o.file, reg);
  if (!g) return fail(g.error());
  if (!o.checkpoint.empty()) {
    Status st = train::apply_checkpoint(*g, o.checkpoint);
    if (!st.is_ok()) return fail(st.error());
  }

  const int threads = o.threads > 0 ? o.threads : default_threads();
  RunRecording rec = start_recording(o.record, "run", insight::run_name(g->name(), o.file), o.seed,
                                     {{"file", o.file}, {"threads", std::to_string(threads)},
                                      {"executor", o.reference ? "reference" : "stages"}, {"checkpoint", o.checkpoint},
                                      {"device", o.device}, {"precision", o.precision}});
  rec.log_graph(*g);
  std::map<std::string, std::string> source;  // input name -> where its value came from
  auto fed = make_feeds(*g, o.inputs, o.dims, o.seed, &source);
  if (!fed) return rec.fail(fed.error());
  runtime::Feeds feeds = std::move(*fed);
  Expected<std::vector<Tensor>> outs = make_error("not run");
  if (o.reference) {
    outs = runtime::run_reference(*g, reg, feeds);
  } else {
    stages::SessionOptions so;
    so.threads = threads;
    so.inter_op_threads = o.inter_op;
    so.device = o.device;
    so.tf32 = o.precision == "tf32";
    so.bf16 = o.precision == "bf16";
    so.trace = rec.trace();
    so.snapshots = rec.snapshots();  // every stage and pass, weights elided (the studio steps through them)
    stages::Session session(*g, reg, so);
    outs = session.run(feeds);
    if (outs && session.last_program()) record_device_memory(rec, session.last_program()->plan());
  }
  if (!outs) return rec.fail(outs.error().within(o.file));

  if (!o.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.output_dir, ec);
    if (ec) return rec.fail(make_error("cannot create the output directory: " + ec.message(), o.output_dir));
  }
  nlohmann::json jout = nlohmann::json::array();
  if (!o.json) {
    std::cout << "ran '" << printable(g->name()) << "' (" << printable(o.file) << ") "
              << (o.reference ? std::string("with the reference kernels") : "through the six stages on " + std::to_string(threads) + " thread(s)") << "\n";
    for (ir::ValueId v : g->inputs()) {
      const Tensor& t = feeds.at(g->value(v).name);
      std::cout << "  input  " << printable(g->value(v).name) << "  " << runtime::describe_value(t)
                << "  from " << printable(source[g->value(v).name]) << "\n";
    }
  }
  for (size_t i = 0; i < outs->size(); ++i) {
    const Tensor& t = (*outs)[i];
    const std::string name = file_name_for(g->value(g->outputs()[i]).name, i);
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    const bool numeric = t.is_tensor() && t.dtype() != DType::kString;  // statistics of numbers only
    for (int64_t k = 0; numeric && k < t.numel(); ++k) {
      const double x = t.get(k);
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      sum += x;
    }
    const double mean = t.numel() ? sum / static_cast<double>(t.numel()) : 0;
    std::string written;
    if (!o.output_dir.empty()) {
      // A sequence's tensors go to NAME_0.npy, NAME_1.npy, ...; an optional's value (if any) to NAME.npy.
      std::vector<std::pair<std::string, Tensor>> files;
      if (t.is_tensor()) files.emplace_back(name, t);
      else if (t.kind() == TypeKind::kSequence)
        for (size_t k = 0; k < t.items().size(); ++k) files.emplace_back(name + "_" + std::to_string(k), t.items()[k]);
      else if (!t.items().empty() && t.items()[0].is_tensor()) files.emplace_back(name, t.items()[0]);
      else if (!t.items().empty())
        for (size_t k = 0; k < t.items()[0].items().size(); ++k)
          files.emplace_back(name + "_" + std::to_string(k), t.items()[0].items()[k]);
      for (const auto& [file, value] : files) {
        const std::string path = (std::filesystem::path(o.output_dir) / (file + ".npy")).string();
        Status st = formats::write_npy(path, value);
        if (!st.is_ok()) return rec.fail(st.error());
        written += (written.empty() ? "" : ", ") + path;
      }
    }
    if (o.json) {
      jout.push_back({{"name", name}, {"dtype", std::string(dtype_name(t.dtype()))}, {"shape", t.shape()},
                      {"min", lo}, {"max", hi}, {"mean", mean}, {"file", written}});
      continue;
    }
    std::cout << "  output " << name << "  " << t.summary(6) << "\n";
    if (numeric && t.numel() > 0) std::printf("         min %.6g  max %.6g  mean %.6g\n", lo, hi, mean);
    if (!written.empty()) std::cout << "         written to " << written << "\n";
  }
  if (o.json) print_json(nlohmann::json{{"outputs", jout}});
  return rec.finish();
}

int run_convert(const ConvertOptions& o) {
  const ops::OpRegistry reg = ops::make_default_registry();
  std::string format = o.to;
  if (format.empty()) {
    const size_t dot = o.out.find_last_of('.');
    format = dot == std::string::npos ? "" : o.out.substr(dot + 1);
  }
  if (format != "tsr" && format != "json" && format != "tir" && format != "onnx")
    return fail(make_error("cannot tell the output format from '" + o.out +
                           "': use the extension .tsr, .json, .tir or .onnx, or --to tsr|json|tir|onnx"));
  if (o.opset != 0 && format != "onnx") return fail(make_error("--opset applies to ONNX output only"));
  if (o.external_data && format != "tsr") return fail(make_error("--external-data applies to .tsr output only"));
  auto doc = formats::load_typed_document(o.in, reg);
  if (!doc) return fail(doc.error());
  if (doc->metadata.properties.count("source") == 0) doc->metadata.properties["source"] = formats::base_name(o.in);
  Status st = Status::ok();
  if (format == "tsr") {
    formats::TsrSaveOptions to;
    to.producer = "tessera convert";
    to.force_external = o.external_data;
    st = formats::write_tsr(*doc, o.out, to);
  } else if (format == "json") {
    st = formats::save_json_document(*doc, o.out);
  } else if (format == "tir") {
    st = formats::write_file_atomic(o.out, ir::print_graph(doc->graph));
  } else {
    formats::OnnxExportOptions eo;
    if (o.opset != 0) eo.opset = o.opset;
    eo.producer_version = TESSERA_VERSION;
    st = formats::export_onnx_file(doc->graph, o.out, reg, eo);
  }
  if (!st.is_ok()) return fail(st.error());
  std::cout << "wrote " << o.out << " (" << format << ", " << doc->graph.num_nodes() << " nodes)\n";
  return 0;
}

int run_print(const std::string& file) {
  const ops::OpRegistry reg = ops::make_default_registry();
  auto g = load_typed(file, reg);
  if (!g) return fail(g.error());
  std::cout << ir::print_graph(*g);
  return 0;
}

}  // namespace tessera::cli
