// libFuzzer target: a native .tsr file through formats::parse_tsr (protobuf parsing, ids, nested
// graphs, tensors and checksums, metadata, layout). Whatever parses must encode again to a file
// that parses to the same graph (the round trip is checked, not assumed), pass infer_types, and,
// when small, compile through the six stages and run once (tests/fuzz/engine_run.h).
//
// Structure-aware: a custom mutator parses the input as a tsr::File and changes one to three
// fields (dims, dtypes, ranks, value kinds and ids, node inputs and outputs, op names, attribute
// values, tensor shapes and bytes with the checksum recomputed so that the reader's later checks
// are reached, node order, graph outputs, nested graphs, the format version); inputs that do not
// parse fall back to byte mutations. A crash, a sanitizer report, a leak, a timeout or a failed
// round trip is a finding.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/ir/text.h"
#include "engine/ops/infer.h"
#include "engine/ops/op_def.h"
#include "formats/tsr.h"
#include "formats/tsr.pb.h"
#include "tests/fuzz/engine_run.h"

namespace {

namespace pb = tessera::tsr;
using Rng = std::mt19937_64;

constexpr int64_t kExtreme[] = {0, -1, 1, 2, 3, 64, 65, int64_t{1} << 31, int64_t{1} << 48, int64_t{1} << 62, INT64_MAX, INT64_MIN};
const char* const kOps[] = {"Relu", "Conv", "Gemm", "MatMul", "Add", "Reshape", "Transpose", "Concat", "Slice", "Gather",
                            "MaxPool", "Softmax", "BatchNormalization", "If", "Loop", "Copy", "Reorder", "NoSuchOp"};

int64_t extreme(Rng& rng) { return kExtreme[rng() % (sizeof kExtreme / sizeof kExtreme[0])]; }

void graphs_of(pb::Graph* g, std::vector<pb::Graph*>& out, int depth = 0) {
  out.push_back(g);
  if (depth > 8) return;
  for (auto& n : *g->mutable_nodes())
    for (auto& a : *n.mutable_attributes())
      if (a.has_g()) graphs_of(a.mutable_g(), out, depth + 1);
}

void rechecksum(pb::Tensor* t) { t->set_xxh3(XXH3_64bits(t->data().data(), t->data().size())); }

void mutate(pb::File& f, Rng& rng) {
  std::vector<pb::Graph*> graphs;
  graphs_of(f.mutable_graph(), graphs);
  pb::Graph* g = graphs[rng() % graphs.size()];
  const int nv = g->values_size(), nn = g->nodes_size();
  switch (rng() % 9) {
    case 0:  // a dim or the rank of a value's type
      if (nv) {
        auto* type = g->mutable_values(static_cast<int>(rng() % nv))->mutable_type();
        if (type->dims_size() && rng() % 3) type->mutable_dims(static_cast<int>(rng() % type->dims_size()))->set_size(extreme(rng));
        else if (rng() % 2) for (int i = 0, k = (rng() % 2) ? 13 : 70; i < k; ++i) type->add_dims()->set_size(1);
        else type->set_rank_known(!type->rank_known());
      }
      break;
    case 1:  // a dtype
      if (nv) g->mutable_values(static_cast<int>(rng() % nv))->mutable_type()->set_dtype(static_cast<pb::DType>(rng() % 12));
      break;
    case 2:  // a value's kind or id
      if (nv) {
        auto* v = g->mutable_values(static_cast<int>(rng() % nv));
        if (rng() % 2) v->set_kind(static_cast<pb::ValueKind>(rng() % 5));
        else v->set_id(static_cast<int32_t>(rng() % 2 ? rng() % 64 : extreme(rng)));
      }
      break;
    case 3:  // a node's inputs
      if (nn) {
        auto* n = g->mutable_nodes(static_cast<int>(rng() % nn));
        const int32_t id = static_cast<int32_t>(rng() % 4 == 0 ? extreme(rng) : static_cast<int64_t>(rng() % 64) - 1);
        if (n->inputs_size() && rng() % 2) n->set_inputs(static_cast<int>(rng() % n->inputs_size()), id);
        else n->add_inputs(id);
      }
      break;
    case 4:  // an op name, node order, a deleted or duplicated node
      if (nn) {
        const int i = static_cast<int>(rng() % nn), j = static_cast<int>(rng() % nn);
        switch (rng() % 4) {
          case 0: g->mutable_nodes(i)->set_op(kOps[rng() % (sizeof kOps / sizeof kOps[0])]); break;
          case 1: g->mutable_nodes()->SwapElements(i, j); break;
          case 2: g->mutable_nodes()->DeleteSubrange(i, 1); break;
          default: *g->add_nodes() = g->nodes(i);
        }
      }
      break;
    case 5: {  // an attribute value
      std::vector<pb::Attribute*> attrs;
      for (auto& n : *g->mutable_nodes())
        for (auto& a : *n.mutable_attributes()) attrs.push_back(&a);
      if (attrs.empty()) break;
      pb::Attribute* a = attrs[rng() % attrs.size()];
      if (a->has_ints() && a->ints().values_size()) a->mutable_ints()->set_values(static_cast<int>(rng() % a->ints().values_size()), extreme(rng));
      else if (a->has_i() || rng() % 2) a->set_i(extreme(rng));
      else a->set_f(NAN);
      break;
    }
    case 6: {  // a tensor's shape or bytes, with a valid checksum
      std::vector<pb::Tensor*> tensors;
      for (auto& v : *g->mutable_values())
        if (v.has_data()) tensors.push_back(v.mutable_data());
      if (tensors.empty()) break;
      pb::Tensor* t = tensors[rng() % tensors.size()];
      if (t->shape_size() && rng() % 2) t->set_shape(static_cast<int>(rng() % t->shape_size()), extreme(rng));
      else if (rng() % 2) t->mutable_data()->resize(rng() % (t->data().size() + 8));
      else t->set_dtype(static_cast<pb::DType>(rng() % 12));
      if (rng() % 4) rechecksum(t);
      break;
    }
    case 7:  // the graph's outputs
      if (g->outputs_size() && rng() % 2) g->set_outputs(static_cast<int>(rng() % g->outputs_size()), static_cast<int32_t>(extreme(rng)));
      else g->add_outputs(static_cast<int32_t>(rng() % 64));
      break;
    default:  // the format version, the side file
      if (rng() % 2) f.set_format_version(static_cast<uint32_t>(rng() % 4));
      else f.set_external_data((rng() % 2) ? "../../etc/passwd" : "missing.data");
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return tessera::fuzz::mutate_message<pb::File>(data, size, max_size, seed, mutate);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  static const ops::OpRegistry registry = ops::make_default_registry();
  static fuzz::Reach reach("tsr_fuzz");
  ++reach.inputs;
  // Side files are looked up in a folder that does not exist: no input reads real files.
  auto doc = formats::parse_tsr(data, size, "fuzz.tsr", "/nonexistent/tessera-fuzz");
  if (!doc) return 0;
  ++reach.imported;
  auto bytes = formats::encode_tsr(*doc);
  if (!bytes) return 0;  // e.g. over protobuf's 2 GiB: refused with an Error, fine
  auto again = formats::parse_tsr(bytes->data(), bytes->size(), "again.tsr", "");
  if (!again || ir::print_graph(again->graph) != ir::print_graph(doc->graph)) std::abort();
  if (!ops::infer_types(doc->graph, registry).is_ok()) return 0;
  fuzz::compile_and_run(std::move(doc->graph), registry, reach);
  return 0;
}
