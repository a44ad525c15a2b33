// Structural hashing of graphs with XXH3 (header-only use of libxxhash).
#include "engine/ir/hash.h"

#include <cstring>
#include <string>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tessera::ir {

// Streaming XXH3 state with typed feeders; the memo of `hasher` (may be null) serves params.
class HashState {
 public:
  explicit HashState(GraphHasher* hasher, bool provenance = true) : hasher_(hasher), provenance_(provenance) {
    XXH3_64bits_reset(&st_);
  }
  uint64_t digest() const { return XXH3_64bits_digest(&st_); }

  void bytes(const void* p, size_t n) { XXH3_64bits_update(&st_, p, n); }
  void u64(uint64_t v) { bytes(&v, sizeof v); }
  void i64(int64_t v) { bytes(&v, sizeof v); }
  void f64(double v) { bytes(&v, sizeof v); }
  void str(const std::string& s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  void type(const TensorType& t) {
    u64(static_cast<uint64_t>(t.dtype));
    // Hashed only when not a tensor, so every hash written before kinds existed stays valid.
    if (!t.is_tensor()) u64(0x6b696e64u + static_cast<uint64_t>(t.kind));
    u64(t.rank_known ? 1 : 0);
    u64(t.dims.size());
    for (const Dim& d : t.dims) {
      i64(d.size);
      str(d.symbol);
    }
  }
  void tensor(const Tensor& t) { u64(hasher_ ? hasher_->param_hash(t) : tensor_hash(t)); }
  void value(const Graph& g, ValueId v) {
    i64(v);
    if (!g.has_value(v)) return;  // a dangling reference still hashes by id
    str(g.value(v).name);
    type(g.value(v).type);
  }
  void attribute(const Attribute& a) {
    u64(static_cast<uint64_t>(a.kind()));
    switch (a.kind()) {
      case AttrKind::kInt: i64(a.i()); break;
      case AttrKind::kFloat: f64(a.f()); break;
      case AttrKind::kString: str(a.s()); break;
      case AttrKind::kTensor: u64(tensor_hash(a.t())); break;
      case AttrKind::kGraph: u64(HashState::graph_hash(a.g(), hasher_, provenance_)); break;
      case AttrKind::kInts:
        u64(a.ints().size());
        for (int64_t v : a.ints()) i64(v);
        break;
      case AttrKind::kFloats:
        u64(a.floats().size());
        for (double v : a.floats()) f64(v);
        break;
      case AttrKind::kStrings:
        u64(a.strings().size());
        for (const std::string& s : a.strings()) str(s);
        break;
    }
  }

  static uint64_t graph_hash(const Graph& g, GraphHasher* hasher, bool provenance = true) {
    HashState h(hasher, provenance);
    h.str(g.name());
    h.u64(g.inputs().size());
    for (ValueId v : g.inputs()) h.value(g, v);
    h.u64(g.params().size());
    for (ValueId v : g.params()) {
      h.value(g, v);
      const Tensor* data = g.param_data(v);
      h.u64(data ? 1 : 0);
      if (data) h.tensor(*data);
    }
    h.u64(g.captures().size());
    for (ValueId v : g.captures()) h.value(g, v);
    for (NodeId id : g.node_ids()) {
      const Node& n = g.node(id);
      h.i64(n.id);
      h.str(n.op);
      h.str(n.name);
      h.u64(n.inputs.size());
      for (ValueId v : n.inputs) h.i64(v);
      h.u64(n.outputs.size());
      for (ValueId v : n.outputs) h.value(g, v);
      h.u64(n.attrs.size());
      for (const auto& [key, a] : n.attrs) {
        h.str(key);
        h.attribute(a);
      }
      if (provenance) {
        h.u64(n.provenance.from.size());
        for (NodeId f : n.provenance.from) h.i64(f);
        h.str(n.provenance.origin);
      }
    }
    h.u64(g.outputs().size());
    for (ValueId v : g.outputs()) h.i64(v);
    return h.digest();
  }

 private:
  XXH3_state_t st_;
  GraphHasher* hasher_;
  bool provenance_;
};

uint64_t tensor_hash(const Tensor& any) {
  const Tensor t = any.contiguous();
  HashState h(nullptr);
  h.u64(static_cast<uint64_t>(t.dtype()));
  h.u64(t.shape().size());
  for (int64_t d : t.shape()) h.i64(d);
  if (t.dtype() == DType::kString) {  // the text, not the ids (those differ between processes)
    for (int64_t i = 0; i < t.numel(); ++i) h.str(t.string_at(i));
    return h.digest();
  }
  h.bytes(t.raw_data(), t.nbytes());
  return h.digest();
}

uint64_t attribute_hash(const Attribute& attr) {
  HashState h(nullptr);
  h.attribute(attr);
  return h.digest();
}

uint64_t structural_hash(const Graph& graph) { return HashState::graph_hash(graph, nullptr); }

uint64_t signature_hash(const Graph& graph) { return HashState::graph_hash(graph, nullptr, false); }

uint64_t GraphHasher::hash(const Graph& graph) { return HashState::graph_hash(graph, this); }

uint64_t GraphHasher::param_hash(const Tensor& t) {
  if (t.nbytes() < kMemoBytes || !t.is_contiguous()) return tensor_hash(t);
  auto it = memo_.find(t.raw_data());
  if (it != memo_.end() && it->second.keep_alive.dtype() == t.dtype() &&
      it->second.keep_alive.shape() == t.shape())
    return it->second.hash;
  const uint64_t h = tensor_hash(t);
  memo_.insert_or_assign(t.raw_data(), Memo{t, h});
  return h;
}

}  // namespace tessera::ir
