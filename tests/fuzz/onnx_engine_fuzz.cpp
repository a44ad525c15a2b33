// libFuzzer target with a structure-aware mutator: the input is an ONNX model. The mutator parses
// it, changes one to three fields the way a hostile or broken exporter would (dims, element types,
// ranks, attribute values, names and duplicated outputs, node order, op types, opsets, initializer
// data, nested graphs), and serialises it again; inputs that do not parse fall back to libFuzzer's
// byte mutations. Each input then goes where a user's model goes: import (with type inference and
// the checker rules), the .tsr round trip `tessera convert` does, and, for small graphs, the six
// stages and one execution on zero-filled inputs (symbolic dims 2). Any Error is fine; a crash, a
// sanitizer report, a leak, a timeout or an allocation past the RSS limit is a finding.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/ops/op_def.h"
#include "formats/onnx_import.h"
#include "formats/tsr.h"
#include "tests/fuzz/engine_run.h"

namespace {

constexpr int64_t kExtreme[] = {0, -1, 1, 2, 3, 7, 13, 64, 65, int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 62,
                                -(int64_t{1} << 62), INT64_MAX, INT64_MIN};
const char* const kOps[] = {"Relu", "Conv", "Gemm", "MatMul", "Add", "Reshape", "Transpose", "Concat", "Slice", "Gather",
                            "Pad", "MaxPool", "Softmax", "BatchNormalization", "ConvTranspose", "Resize", "Split",
                            "Expand", "If", "Loop", "NonZero", "TopK", "Einsum", "Where", "Tile", "Range", "Cast", "NoSuchOp"};
const char* const kNames[] = {"", "x", "y", "undefined_value", "\xff\xfe", "new\nline", "%1"};

using Rng = std::mt19937_64;

template <class T>
const T& pick(Rng& rng, const std::vector<T>& v) { return v[rng() % v.size()]; }
int64_t extreme(Rng& rng) { return kExtreme[rng() % (sizeof kExtreme / sizeof kExtreme[0])]; }

void graphs_of(onnx::GraphProto* g, std::vector<onnx::GraphProto*>& out, int depth = 0) {
  out.push_back(g);
  if (depth > 8) return;
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) graphs_of(a.mutable_g(), out, depth + 1);
      for (auto& sub : *a.mutable_graphs()) graphs_of(&sub, out, depth + 1);
    }
}

bool mutate(onnx::ModelProto& m, Rng& rng) {
  std::vector<onnx::GraphProto*> graphs;
  graphs_of(m.mutable_graph(), graphs);
  onnx::GraphProto* g = pick(rng, graphs);
  std::vector<onnx::ValueInfoProto*> vis;
  for (auto& v : *g->mutable_input()) vis.push_back(&v);
  for (auto& v : *g->mutable_output()) vis.push_back(&v);
  for (auto& v : *g->mutable_value_info()) vis.push_back(&v);
  switch (rng() % 9) {
    case 0: {  // a dimension, the rank
      if (vis.empty()) return false;
      auto* shape = pick(rng, vis)->mutable_type()->mutable_tensor_type()->mutable_shape();
      const int what = static_cast<int>(rng() % 4);
      if (what == 0 || shape->dim_size() == 0)
        for (int i = 0, n = (rng() % 2) ? 13 : 70; i < n; ++i) shape->add_dim()->set_dim_value(1);
      else if (what == 1) shape->mutable_dim()->RemoveLast();
      else if (what == 2) shape->mutable_dim(static_cast<int>(rng() % shape->dim_size()))->set_dim_param((rng() % 2) ? "N" : "");
      else shape->mutable_dim(static_cast<int>(rng() % shape->dim_size()))->set_dim_value(extreme(rng));
      return true;
    }
    case 1:  // an element type
      if (!g->initializer().empty() && rng() % 2) {
        g->mutable_initializer(static_cast<int>(rng() % g->initializer_size()))->set_data_type(static_cast<int>(rng() % 20));
        return true;
      }
      if (vis.empty()) return false;
      pick(rng, vis)->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int>(rng() % 20));
      return true;
    case 2: {  // initializer dims and data
      if (g->initializer().empty()) return false;
      auto* t = g->mutable_initializer(static_cast<int>(rng() % g->initializer_size()));
      const int what = static_cast<int>(rng() % 4);
      if (what == 0) t->add_dims(extreme(rng));
      else if (what == 1 && t->dims_size()) t->set_dims(static_cast<int>(rng() % t->dims_size()), extreme(rng));
      else if (what == 2 && t->has_raw_data()) t->mutable_raw_data()->resize(rng() % (t->raw_data().size() + 1));
      else t->add_float_data(1.f);
      return true;
    }
    case 3: {  // an attribute
      std::vector<onnx::NodeProto*> nodes;
      for (auto& n : *g->mutable_node())
        if (n.attribute_size()) nodes.push_back(&n);
      if (nodes.empty()) return false;
      onnx::NodeProto* n = pick(rng, nodes);
      auto* a = n->mutable_attribute(static_cast<int>(rng() % n->attribute_size()));
      if (rng() % 8 == 0) a->set_type(static_cast<onnx::AttributeProto_AttributeType>(rng() % 15));
      else if (a->type() == onnx::AttributeProto::INT) a->set_i(extreme(rng));
      else if (a->type() == onnx::AttributeProto::INTS && a->ints_size() && rng() % 2)
        a->set_ints(static_cast<int>(rng() % a->ints_size()), extreme(rng));
      else if (a->type() == onnx::AttributeProto::INTS) a->add_ints(extreme(rng));
      else if (a->type() == onnx::AttributeProto::FLOAT) a->set_f((rng() % 2) ? NAN : 1e30f);
      else if (a->type() == onnx::AttributeProto::STRING) a->set_s((rng() % 2) ? "\xff" : "nonsense");
      else n->mutable_attribute()->DeleteSubrange(0, 1);
      return true;
    }
    case 4: {  // names: a duplicated definition, an undefined input
      if (g->node().empty()) return false;
      auto* n = g->mutable_node(static_cast<int>(rng() % g->node_size()));
      const auto& other = g->node(static_cast<int>(rng() % g->node_size()));
      if (rng() % 2 && n->output_size() && other.output_size())
        n->set_output(static_cast<int>(rng() % n->output_size()), other.output(0));
      else if (n->input_size())
        n->set_input(static_cast<int>(rng() % n->input_size()), kNames[rng() % (sizeof kNames / sizeof kNames[0])]);
      else
        n->add_input(kNames[rng() % (sizeof kNames / sizeof kNames[0])]);
      return true;
    }
    case 5: {  // node order, deletion, duplication
      if (g->node().empty()) return false;
      const int i = static_cast<int>(rng() % g->node_size()), j = static_cast<int>(rng() % g->node_size());
      const int what = static_cast<int>(rng() % 3);
      if (what == 0) g->mutable_node()->SwapElements(i, j);
      else if (what == 1) g->mutable_node()->DeleteSubrange(i, 1);
      else *g->add_node() = g->node(i);
      return true;
    }
    case 6:  // an op type
      if (g->node().empty()) return false;
      g->mutable_node(static_cast<int>(rng() % g->node_size()))->set_op_type(kOps[rng() % (sizeof kOps / sizeof kOps[0])]);
      return true;
    case 7:  // the opset, the IR version
      if (m.opset_import().empty()) m.add_opset_import()->set_version(13);
      m.mutable_opset_import(0)->set_version(static_cast<int64_t>(rng() % 20));
      if (rng() % 4 == 0) m.set_ir_version(static_cast<int64_t>(rng() % 10));
      return true;
    default: {  // nesting: the first node moves into both branches of an If
      if (g != m.mutable_graph() || g->node().empty()) return false;
      onnx::NodeProto inner = g->node(0);
      onnx::NodeProto* cond = g->add_node();
      cond->set_op_type("Constant");
      cond->add_output("__cond");
      auto* value = cond->add_attribute();
      value->set_name("value");
      value->set_type(onnx::AttributeProto::TENSOR);
      value->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
      value->mutable_t()->add_int32_data(1);
      onnx::NodeProto wrap;
      wrap.set_op_type("If");
      wrap.add_input("__cond");
      for (const auto& o : inner.output()) wrap.add_output(o);
      for (const char* name : {"then_branch", "else_branch"}) {
        auto* a = wrap.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::GRAPH);
        *a->mutable_g()->add_node() = inner;
        for (const auto& o : inner.output()) a->mutable_g()->add_output()->set_name(o);
      }
      *g->mutable_node(0) = wrap;
      g->mutable_node()->SwapElements(0, g->node_size() - 1);  // the Constant first
      return true;
    }
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return tessera::fuzz::mutate_message<onnx::ModelProto>(data, size, max_size, seed, mutate);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  static fuzz::Reach reach("onnx_engine_fuzz");
  ++reach.inputs;
  static const ops::OpRegistry registry = ops::make_default_registry();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  // External data is looked up in a folder that does not exist: no input reads real files.
  auto graph = formats::import_onnx_bytes(bytes, "fuzz.onnx", "/nonexistent/tessera-fuzz", registry);
  if (!graph) return 0;
  ++reach.imported;

  // What `tessera convert M M.tsr` writes must read back (issue 15, item 9).
  formats::GraphDocument doc;
  doc.graph = *graph;
  if (auto tsr = formats::encode_tsr(doc)) {
    if (!formats::parse_tsr(tsr->data(), tsr->size(), "fuzz.tsr", "/nonexistent/tessera-fuzz")) std::abort();
  }

  // The six stages and one run, on small inputs only.
  fuzz::compile_and_run(std::move(*graph), registry, reach);
  return 0;
}
