// Stage 4, compile (see compile.h).
#include "engine/stages/compile.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "engine/cpu/cpu_backend.h"
#include "engine/ir/verifier.h"
#include "engine/ops/cost.h"
#include "engine/ops/infer.h"
#include "engine/runtime/interpreter.h"

namespace tessera::stages {
namespace {

bool has_graph_attr(const ir::Node& n) {
  for (const auto& [k, a] : n.attrs)
    if (a.kind() == ir::AttrKind::kGraph) return true;
  return false;
}

std::string string_attr(const ir::Node& n, const char* key) {
  const ir::Attribute* a = n.attr(key);
  return a && a->kind() == ir::AttrKind::kString ? a->s() : std::string();
}

// Physical layout of a value: set by its producer's "layout" attribute, a Reorder's target, or
// carried through a Copy.
backend::LayoutTag layout_of(const ir::Graph& g, ir::ValueId v) {
  for (int guard = 0; guard < 1000; ++guard) {
    const ir::Value& val = g.value(v);
    if (val.kind != ir::ValueKind::kNodeOutput) return "";
    const ir::Node& p = g.node(val.producer);
    if (p.op == "Reorder") return string_attr(p, "to");
    if (p.op != "Copy") return string_attr(p, backend::kLayoutAttr);
    v = p.inputs[0];
  }
  return "";
}

// A gradient bucket laid out as views into one buffer: the inputs of an AllReduce or
// AllReduceStart node, each at the next 64-byte boundary after the previous one (PyTorch DDP's
// gradient_as_bucket_view), so that the collective sums them in place instead of packing them into
// a buffer of its own and back (for ResNet-18, 44.7 MB copied twice a step and held twice).
struct BucketGroup {
  std::vector<ir::ValueId> members;  // the buffers of the node's inputs, in order
  std::vector<size_t> within;        // each member's offset in the buffer
  std::vector<int> writers;          // the steps writing the members
  int reducer = -1;                  // the step writing the sums (AllReduce or AllReduceWait)
  size_t bytes = 0;
  int request = -1;                  // the buffer's memory request (set while requesting)
};

// The buckets that can be views: every gradient a plain f32 arena buffer (or a view of one, such
// as a bias gradient's Reshape: then that buffer) in host memory, not a graph output, read by the
// bucket's own steps alone (the blocking AllReduce, or AllReduceStart and its AllReduceWait, which
// may then write over it) and by views of it. Marks those steps bucket_view.
std::vector<BucketGroup> bucket_groups(const ir::Graph& g, ExecutionPlan& plan, const std::vector<int>& step_of,
                                       const std::vector<std::vector<int>>& users,
                                       const std::vector<ir::ValueId>& alias_root,
                                       const std::set<ir::ValueId>& graph_outputs,
                                       const std::vector<backend::Device*>& devs) {
  std::map<ir::ValueId, std::vector<ir::ValueId>> views;  // buffer -> the values viewing it
  for (size_t v = 0; v < alias_root.size(); ++v)
    if (alias_root[v] != ir::kNoValue) views[alias_root[v]].push_back(static_cast<ir::ValueId>(v));
  std::set<ir::ValueId> taken;
  std::vector<BucketGroup> groups;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const ir::Node& n = g.node(plan.steps[s].node);
    if ((n.op != "AllReduce" && n.op != "AllReduceStart") || plan.steps[s].kind != Step::Kind::kKernel || n.inputs.empty() ||
        n.inputs[0] == ir::kNoValue)
      continue;
    std::set<int> own = {static_cast<int>(s)};
    BucketGroup bg;
    bg.reducer = static_cast<int>(s);
    if (n.op == "AllReduceStart") {
      const std::vector<int>& waits = users[static_cast<size_t>(n.outputs[0])];
      if (waits.size() != 1 || plan.steps[static_cast<size_t>(waits[0])].kind != Step::Kind::kKernel) continue;
      own.insert(waits[0]);
      bg.reducer = waits[0];
    }
    // Read by the bucket's steps, or by a view (whose own readers are checked with it).
    auto bucket_only = [&](ir::ValueId v) {
      for (int u : users[static_cast<size_t>(v)])
        if (!own.count(u) && plan.steps[static_cast<size_t>(u)].kind != Step::Kind::kAlias) return false;
      return true;
    };
    const int device = plan.slots[static_cast<size_t>(n.inputs[0])].device;
    bool ok = devs[static_cast<size_t>(device)]->host_accessible();
    for (ir::ValueId v : n.inputs) {
      if (!ok || v == ir::kNoValue) {
        ok = false;
        break;
      }
      const ir::ValueId root = alias_root[static_cast<size_t>(v)] != ir::kNoValue ? alias_root[static_cast<size_t>(v)] : v;
      const ValueSlot& sl = plan.slots[static_cast<size_t>(root)];
      const ir::Value& val = g.value(root);
      ok = val.kind == ir::ValueKind::kNodeOutput && g.value(v).type.dtype == DType::kF32 && g.value(v).type.is_static() &&
           sl.kind == ValueSlot::Kind::kArena && sl.device == device && sl.layout.empty() &&
           sl.bytes == backend::plain_bytes(g.value(v).type) && !graph_outputs.count(root) && !taken.count(root) &&
           bucket_only(root);
      if (auto it = views.find(root); ok && it != views.end())
        for (ir::ValueId w : it->second) ok = ok && !graph_outputs.count(w) && bucket_only(w);
      if (!ok) break;
      bg.members.push_back(root);
      bg.within.push_back(bg.bytes);
      bg.writers.push_back(step_of[val.producer]);
      bg.bytes += (sl.bytes + backend::kBucketViewAlignment - 1) / backend::kBucketViewAlignment * backend::kBucketViewAlignment;
      taken.insert(root);
    }
    if (!ok) {
      for (ir::ValueId v : bg.members) taken.erase(v);
      continue;
    }
    for (int u : own) plan.steps[static_cast<size_t>(u)].bucket_view = true;
    groups.push_back(std::move(bg));
  }
  return groups;
}

}  // namespace

size_t ExecutionPlan::peak_bytes() const {
  size_t s = 0;
  for (const auto& m : memory) s += m.arena_bytes;
  return s;
}

size_t ExecutionPlan::lower_bound_bytes() const {
  size_t s = 0;
  for (const auto& m : memory) s += m.lower_bound_bytes;
  return s;
}

std::string ExecutionPlan::print() const {
  std::ostringstream os;
  os << "execution plan: " << steps.size() << " steps, " << threads << " threads, " << total_flops << " FLOPs\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    const ir::Node& n = graph.node(s.node);
    os << "  step " << i << " #" << n.id << " " << n.op;
    if (!n.name.empty()) os << " '" << n.name << "'";
    os << " on " << devices[static_cast<size_t>(s.device)] << " [" << s.impl;
    if (!s.detail.empty()) os << " " << s.detail;
    os << "]";
    os << " out";
    for (ir::ValueId v : n.outputs) {
      const ValueSlot& sl = slots[static_cast<size_t>(v)];
      os << " %" << v;
      if (sl.kind == ValueSlot::Kind::kArena)
        os << "@" << sl.offset << "+" << sl.bytes << (sl.layout.empty() ? "" : " " + sl.layout);
      else if (sl.kind == ValueSlot::Kind::kDynamic)
        os << "@dynamic";
    }
    if (!s.succs.empty()) {
      os << " -> steps";
      for (int t : s.succs) os << " " << t;
    }
    os << "\n";
  }
  for (size_t d = 0; d < memory.size(); ++d) os << "memory on " << devices[d] << ": " << memory[d].print(requests[d]);
  return os.str();
}

Expected<ExecutionPlan> compile(PlacedGraph placed, const backend::DeviceSet& devices, int threads,
                                StageContext& ctx) {
  int64_t start = observe::now_ns();
  ExecutionPlan plan;
  plan.threads = std::max(1, threads);
  // oneDNN fixes a primitive's thread partitioning when its descriptor is created: create them
  // under the thread count that will load and run them (load and execute set the same).
  cpu::set_intra_op_threads(plan.threads);
  placed.place_new_nodes();
  plan.preferred = placed.preferred;
  plan.fallbacks = placed.fallbacks;
  plan.graph = std::move(placed.graph);
  ir::Graph& g = plan.graph;
  int nodes = g.num_nodes();
  RETURN_IF_ERROR(ops::infer_types(g, ctx.registry));

  // Devices in use, host first.
  plan.devices.push_back(kHostDevice);
  for (ir::NodeId id : g.node_ids()) {
    const std::string& d = placed.device(id);
    if (std::find(plan.devices.begin(), plan.devices.end(), d) == plan.devices.end()) plan.devices.push_back(d);
  }
  std::vector<backend::Device*> devs;
  for (const std::string& name : plan.devices) {
    backend::Device* d = devices.find(name);
    if (!d) return make_error("compile: the graph was placed on device '" + name + "', which this session does not have");
    devs.push_back(d);
  }
  auto device_index = [&](const std::string& name) {
    return static_cast<int>(std::find(plan.devices.begin(), plan.devices.end(), name) - plan.devices.begin());
  };

  plan.slots.assign(static_cast<size_t>(g.value_capacity()), ValueSlot{});
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    ValueSlot& s = plan.slots[static_cast<size_t>(g.inputs()[i])];
    s.kind = ValueSlot::Kind::kInput;
    s.input_index = static_cast<int>(i);
  }
  for (ir::ValueId p : g.params()) plan.slots[static_cast<size_t>(p)].kind = ValueSlot::Kind::kParam;

  TRY(std::vector<ir::NodeId> order, g.topological_order());
  std::vector<int> step_of(static_cast<size_t>(g.node_capacity()), -1);
  std::vector<std::vector<ir::ValueId>> reads(order.size());  // inputs + captured, per step
  int fast = 0, reference = 0;
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    const ops::OpDef* def = ctx.registry.find(n.op);
    if (!def) return make_error(ir::describe_node(n) + ": unknown op '" + n.op + "'", {}, id);
    Step st;
    st.node = id;
    st.device = device_index(placed.device(id));
    st.flops = ops::node_flops(g, id, *def);
    int index = static_cast<int>(plan.steps.size());
    step_of[id] = index;

    std::vector<const ir::TensorType*> in_types, out_types;
    std::vector<const Tensor*> constants;
    std::vector<backend::LayoutTag> in_layouts;
    bool all_static = true;
    for (ir::ValueId v : n.inputs) {
      in_types.push_back(v == ir::kNoValue ? nullptr : &g.value(v).type);
      constants.push_back(v == ir::kNoValue ? nullptr : ops::constant_value(g, v));
      in_layouts.push_back(v == ir::kNoValue ? "" : layout_of(g, v));
      if (v != ir::kNoValue) {
        all_static &= g.value(v).type.is_static();
        reads[static_cast<size_t>(index)].push_back(v);
      }
    }
    for (ir::ValueId v : n.outputs) {
      out_types.push_back(&g.value(v).type);
      all_static &= g.value(v).type.is_static();
    }
    backend::LayoutTag out_layout = n.op == "Reorder" ? string_attr(n, "to") : string_attr(n, backend::kLayoutAttr);
    if (n.op == "Copy") out_layout = in_layouts.empty() ? "" : in_layouts[0];

    if (n.op == "Copy") {
      st.kind = Step::Kind::kCopy;
      st.impl = "copy";
    } else if (all_static && !has_graph_attr(n)) {
      backend::KernelInit init{n, *def, in_types, out_types, constants, in_layouts, out_layout, plan.threads};
      init.bf16 = ctx.bf16;
      const auto candidates = devs[static_cast<size_t>(st.device)]->kernels().candidates(n.op);
      if (candidates.empty()) st.why_reference = "no fast kernel for " + n.op;
      backend::take_decline_reason();
      for (const auto* entry : candidates) {
        Expected<std::unique_ptr<backend::Kernel>> k = entry->factory(init);
        if (!k) {
          Error e = k.error();
          e.node = id;
          e.message = ir::describe_node(n) + ": kernel " + entry->impl + ": " + e.message;
          return e;
        }
        if (*k) {
          st.kernel = std::move(*k);
          st.kind = Step::Kind::kKernel;
          st.impl = st.kernel->name();
          st.detail = st.kernel->detail();
          break;
        }
        st.why_reference += (st.why_reference.empty() ? "declined by " : ", ") + entry->impl;
        if (std::string why = backend::take_decline_reason(); !why.empty()) st.why_reference += " (" + why + ")";
      }
      if (st.kind == Step::Kind::kReference) {
        std::string types;
        for (const ir::TensorType* t : in_types)
          if (t) types += (types.empty() ? "" : ",") + std::string(dtype_name(t->dtype));
        st.why_reference = n.op + "(" + types + "): " + st.why_reference;
      }
    } else if (all_static) {
      st.why_reference = n.op + ": control flow on the host; its graphs are compiled through the six stages on first run (stages/nested.h)";
    } else {
      st.why_reference = n.op + ": shapes known only at run time";
      if (devs[static_cast<size_t>(st.device)]->host_accessible()) st.specialised = std::make_unique<ShapeSpecialised>();
    }
    if (st.kind == Step::Kind::kReference && !devs[static_cast<size_t>(st.device)]->runs_reference())
      return make_error(ir::describe_node(n) + ": placed on " + plan.devices[static_cast<size_t>(st.device)] +
                            ", which runs no reference kernels, but no kernel of it takes this node (" + st.why_reference + ")",
                        {}, id);
    if (st.kind == Step::Kind::kReference) {
      st.impl = "ref";
      if (!def->reference) return make_error(ir::describe_node(n) + ": no kernel and no reference kernel", {}, id);
      for (size_t i = 0; i < in_layouts.size(); ++i)
        if (!in_layouts[i].empty())
          return make_error(ir::describe_node(n) + ": input " + std::to_string(i) + " is in layout " + in_layouts[i] +
                                " but no kernel for this node reads it (the layout pass should have inserted a Reorder)",
                            {}, id);
      if (!out_layout.empty())
        return make_error(ir::describe_node(n) + ": asked for layout " + out_layout + " but only the reference kernel runs it", {}, id);
      st.nested = has_graph_attr(n);
      std::vector<std::string> names;
      runtime::nested_captures(n, names);
      std::set<std::string> seen;
      for (const std::string& name : names) {
        if (!seen.insert(name).second) continue;
        auto v = g.find_value(name);
        if (!v) return make_error(ir::describe_node(n) + ": a nested graph captures '" + name + "', which is not defined", {}, id);
        st.captured.push_back(*v);
        reads[static_cast<size_t>(index)].push_back(*v);
      }
    }
    (st.kind == Step::Kind::kKernel ? fast : reference) += 1;

    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ValueSlot& s = plan.slots[static_cast<size_t>(n.outputs[i])];
      s.device = st.device;
      s.layout = out_layout;
      if (!g.value(n.outputs[i]).type.is_static() || (st.kind == Step::Kind::kReference && !all_static)) {
        s.kind = ValueSlot::Kind::kDynamic;
        continue;
      }
      s.kind = ValueSlot::Kind::kArena;
      if (st.kind == Step::Kind::kKernel)
        s.bytes = st.kernel->output_bytes(i);
      else if (st.kind == Step::Kind::kCopy && plan.slots[static_cast<size_t>(n.inputs[0])].kind == ValueSlot::Kind::kArena)
        s.bytes = plan.slots[static_cast<size_t>(n.inputs[0])].bytes;
      else
        s.bytes = backend::plain_bytes(g.value(n.outputs[i]).type);
    }
    // A copy of a value the host makes at run time stays dynamic on the host side; on a device
    // the host cannot address it is planned (its type is static there: the device's kernels
    // need that) and the copy reads the host tensor.
    if (st.kind == Step::Kind::kCopy && plan.slots[static_cast<size_t>(n.inputs[0])].kind == ValueSlot::Kind::kDynamic &&
        (devs[static_cast<size_t>(st.device)]->host_accessible() || !g.value(n.outputs[0]).type.is_static()))
      plan.slots[static_cast<size_t>(n.outputs[0])].kind = ValueSlot::Kind::kDynamic;
    if (st.kernel) st.scratch_bytes = st.kernel->scratch_bytes();
    for (ir::ValueId v : n.inputs)
      if (v != ir::kNoValue && g.value(v).type.is_static()) st.bytes += static_cast<int64_t>(backend::plain_bytes(g.value(v).type));
    for (ir::ValueId v : n.outputs)
      if (g.value(v).type.is_static()) st.bytes += static_cast<int64_t>(backend::plain_bytes(g.value(v).type));
    plan.total_flops += st.flops;
    plan.steps.push_back(std::move(st));
  }

  // Views share their input's buffer: a kernel that only copies its input's bytes (is_view())
  // whose input is planned in the arena or is a graph input, and neither end is a graph output
  // (those get buffers of their own for the caller). The root's lifetime then covers the views'
  // readers.
  std::set<ir::ValueId> graph_outputs(g.outputs().begin(), g.outputs().end());
  std::vector<ir::ValueId> alias_root(static_cast<size_t>(g.value_capacity()), ir::kNoValue);
  int aliases = 0;
  for (Step& st : plan.steps) {
    if (st.kind != Step::Kind::kKernel || !st.kernel->is_view()) continue;
    const ir::Node& n = g.node(st.node);
    const ir::ValueId in = n.inputs[0], out = n.outputs[0];
    const ValueSlot& si = plan.slots[static_cast<size_t>(in)];
    ValueSlot& so = plan.slots[static_cast<size_t>(out)];
    if (so.kind != ValueSlot::Kind::kArena || si.device != so.device || graph_outputs.count(in) ||
        graph_outputs.count(out))
      continue;
    const bool arena = si.kind == ValueSlot::Kind::kArena && si.bytes == so.bytes;
    const bool input = si.kind == ValueSlot::Kind::kInput && backend::plain_bytes(g.value(in).type) == so.bytes;
    if (!arena && !input) continue;
    st.kind = Step::Kind::kAlias;
    st.impl = "alias";
    st.kernel.reset();
    st.scratch_bytes = 0;
    alias_root[static_cast<size_t>(out)] = alias_root[static_cast<size_t>(in)] != ir::kNoValue ? alias_root[static_cast<size_t>(in)] : in;
    so.kind = si.kind;
    so.input_index = si.input_index;
    ++aliases;
  }

  // In-place outputs over donated inputs: the output of an op that may write over its input
  // (OpDef::in_place) takes the input's buffer when the input is a graph input read last by that
  // step in the sequential order (through views too); every other reader is ordered before it.
  std::vector<std::vector<int>> in_place_readers(plan.steps.size());  // per writing step
  if (ctx.donate_inputs) {
    auto root_of = [&](ir::ValueId v) { return alias_root[static_cast<size_t>(v)] != ir::kNoValue ? alias_root[static_cast<size_t>(v)] : v; };
    std::vector<std::vector<int>> readers(static_cast<size_t>(g.value_capacity()));
    for (size_t s = 0; s < plan.steps.size(); ++s)
      for (ir::ValueId v : reads[s]) readers[static_cast<size_t>(root_of(v))].push_back(static_cast<int>(s));
    std::set<ir::ValueId> taken(g.outputs().begin(), g.outputs().end());  // an input that is also an output stays
    std::map<ir::ValueId, int> output_count;
    for (ir::ValueId v : g.outputs()) ++output_count[v];
    for (ir::ValueId out : g.outputs()) {
      const ir::Value& val = g.value(out);
      ValueSlot& so = plan.slots[static_cast<size_t>(out)];
      if (val.kind != ir::ValueKind::kNodeOutput || so.kind != ValueSlot::Kind::kArena || !so.layout.empty() ||
          alias_root[static_cast<size_t>(out)] != ir::kNoValue || output_count[out] != 1)
        continue;
      const ir::Node& n = g.node(val.producer);
      const ops::OpDef* def = ctx.registry.find(n.op);
      const int p = step_of[n.id];
      for (const auto& [oi, ii] : def->in_place) {
        if (static_cast<size_t>(oi) >= n.outputs.size() || n.outputs[static_cast<size_t>(oi)] != out ||
            static_cast<size_t>(ii) >= n.inputs.size())
          continue;
        const ir::ValueId in = n.inputs[static_cast<size_t>(ii)];
        if (in == ir::kNoValue || g.value(in).kind != ir::ValueKind::kInput || taken.count(in) ||
            !g.value(in).type.is_static() || backend::plain_bytes(g.value(in).type) != so.bytes ||
            plan.slots[static_cast<size_t>(in)].device != so.device ||
            !devs[static_cast<size_t>(so.device)]->host_accessible())
          continue;
        const std::vector<int>& rs = readers[static_cast<size_t>(in)];
        if (std::any_of(rs.begin(), rs.end(), [&](int r) { return r > p; })) continue;
        taken.insert(in);
        so.kind = ValueSlot::Kind::kInput;
        so.input_index = plan.slots[static_cast<size_t>(in)].input_index;
        plan.donations.emplace_back(out, in);
        for (int r : rs)
          if (r != p) in_place_readers[static_cast<size_t>(p)].push_back(r);
        break;
      }
    }
  }

  // The step DAG (data edges, and the readers of a donated input before the step writing over it).
  std::vector<std::vector<int>> users(static_cast<size_t>(g.value_capacity()));
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    std::set<int> preds(in_place_readers[s].begin(), in_place_readers[s].end());
    for (ir::ValueId v : reads[s]) {
      users[static_cast<size_t>(v)].push_back(static_cast<int>(s));
      const ir::Value& val = g.value(v);
      if (val.kind == ir::ValueKind::kNodeOutput) preds.insert(step_of[val.producer]);
    }
    for (int p : preds) plan.steps[static_cast<size_t>(p)].succs.push_back(static_cast<int>(s));
    plan.steps[s].num_preds = static_cast<int>(preds.size());
  }

  // Gradient buckets as views into one buffer (PyTorch DDP's gradient_as_bucket_view).
  std::vector<BucketGroup> buckets = bucket_groups(g, plan, step_of, users, alias_root, graph_outputs, devs);
  // The sums are views of the bucket too (the reducer leaves them where MPI put them): one buffer
  // for a bucket's gradients and sums, unless a sum is a graph output or something views it.
  int sums_in_place = 0;
  const std::set<ir::ValueId> viewed(alias_root.begin(), alias_root.end());
  for (const BucketGroup& bg : buckets) {
    const std::vector<ir::ValueId>& sums = g.node(plan.steps[static_cast<size_t>(bg.reducer)].node).outputs;
    bool ok = sums.size() == bg.members.size();
    for (size_t i = 0; ok && i < sums.size(); ++i) {
      const ValueSlot& so = plan.slots[static_cast<size_t>(sums[i])];
      ok = so.kind == ValueSlot::Kind::kArena && so.layout.empty() && so.device == plan.slots[static_cast<size_t>(bg.members[i])].device &&
           so.bytes == plan.slots[static_cast<size_t>(bg.members[i])].bytes && !graph_outputs.count(sums[i]) &&
           !viewed.count(sums[i]) && alias_root[static_cast<size_t>(sums[i])] == ir::kNoValue;
    }
    if (!ok) continue;
    for (size_t i = 0; i < sums.size(); ++i) alias_root[static_cast<size_t>(sums[i])] = bg.members[i];
    ++sums_in_place;
  }
  std::vector<int> bucket_of(static_cast<size_t>(g.value_capacity()), -1);
  std::vector<size_t> within(static_cast<size_t>(g.value_capacity()), 0);
  for (size_t b = 0; b < buckets.size(); ++b)
    for (size_t i = 0; i < buckets[b].members.size(); ++i) {
      bucket_of[static_cast<size_t>(buckets[b].members[i])] = static_cast<int>(b);
      within[static_cast<size_t>(buckets[b].members[i])] = buckets[b].within[i];
    }

  // Buffers per device: arena values and scratch.
  plan.requests.assign(plan.devices.size(), {});
  std::set<ir::ValueId> outputs(g.outputs().begin(), g.outputs().end());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& st = plan.steps[s];
    for (ir::ValueId v : g.node(st.node).outputs) {
      ValueSlot& sl = plan.slots[static_cast<size_t>(v)];
      if (sl.kind != ValueSlot::Kind::kArena) continue;
      if (const ir::ValueId root = alias_root[static_cast<size_t>(v)]; root != ir::kNoValue) {
        // A view: its readers keep the root's buffer alive.
        auto& uses = plan.requests[static_cast<size_t>(sl.device)][static_cast<size_t>(plan.slots[static_cast<size_t>(root)].request)].use_steps;
        uses.insert(uses.end(), users[static_cast<size_t>(v)].begin(), users[static_cast<size_t>(v)].end());
        continue;
      }
      auto& reqs = plan.requests[static_cast<size_t>(sl.device)];
      if (const int b = bucket_of[static_cast<size_t>(v)]; b >= 0) {
        // A bucket's gradient: one request for the bucket, from its first gradient's writer to its
        // last reader.
        BucketGroup& bg = buckets[static_cast<size_t>(b)];
        if (bg.request < 0) {
          BufferRequest r;
          r.bytes = bg.bytes;
          r.def_step = static_cast<int>(s);
          r.label = "gradient bucket " + std::to_string(b);
          bg.request = static_cast<int>(reqs.size());
          reqs.push_back(std::move(r));
        }
        auto& uses = reqs[static_cast<size_t>(bg.request)].use_steps;
        uses.insert(uses.end(), users[static_cast<size_t>(v)].begin(), users[static_cast<size_t>(v)].end());
        sl.request = bg.request;
        continue;
      }
      BufferRequest r;
      r.bytes = sl.bytes;
      r.def_step = static_cast<int>(s);
      r.use_steps = users[static_cast<size_t>(v)];
      r.pinned = outputs.count(v) > 0;
      r.label = "%" + std::to_string(v) + (g.value(v).name.empty() ? "" : " \"" + g.value(v).name + "\"");
      sl.request = static_cast<int>(reqs.size());
      reqs.push_back(std::move(r));
    }
    if (st.scratch_bytes) {
      BufferRequest r;
      r.bytes = st.scratch_bytes;
      r.def_step = static_cast<int>(s);
      r.label = "scratch of step " + std::to_string(s);
      auto& reqs = plan.requests[static_cast<size_t>(st.device)];
      plan.steps[s].scratch_request = static_cast<int>(reqs.size());
      reqs.push_back(std::move(r));
    }
  }
  // Plan over the sequential (step) order, which reuses the most memory, then add the memory
  // edges that keep buffers sharing bytes apart in time whatever the thread count (see
  // memory_plan.h). Data edges already order most such pairs; the rest only serialise branches
  // that really share bytes.
  std::set<std::pair<int, int>> edges;
  for (size_t s = 0; s < plan.steps.size(); ++s)
    for (int t : plan.steps[s].succs) edges.emplace(static_cast<int>(s), t);
  // An edge already implied by a path is left out; the path is looked for with a bounded search
  // (steps are numbered topologically, so only steps before `to` can lie on it), which keeps the
  // cost linear; past the bound the edge is added anyway, which is safe.
  std::vector<int> seen(plan.steps.size(), -1), stack;
  int search = 0;
  auto reaches = [&](int from, int to) {
    ++search;
    stack.assign(1, from);
    for (int budget = 256; !stack.empty() && budget > 0; --budget) {
      int s = stack.back();
      stack.pop_back();
      for (int t : plan.steps[static_cast<size_t>(s)].succs) {
        if (t == to) return true;
        if (t < to && seen[static_cast<size_t>(t)] != search) {
          seen[static_cast<size_t>(t)] = search;
          stack.push_back(t);
        }
      }
    }
    return false;
  };
  int memory_edges = 0;
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const auto& reqs = plan.requests[d];
    TRY(MemoryPlan m, plan_memory(reqs, static_cast<int>(plan.steps.size())));
    // A bucket's buffer is written by each of its gradients' writers, not only by the first (its
    // request's def_step): what must precede that one precedes them all.
    std::map<int, std::vector<int>> writers;
    for (const BucketGroup& bg : buckets)
      if (bg.request >= 0 && plan.slots[static_cast<size_t>(bg.members[0])].device == static_cast<int>(d))
        for (int w : bg.writers) writers[reqs[static_cast<size_t>(bg.request)].def_step].push_back(w);
    auto add_edge = [&](int from, int to) {
      if (from == to || edges.count({from, to}) || reaches(from, to)) return;
      edges.emplace(from, to);
      plan.steps[static_cast<size_t>(from)].succs.push_back(to);
      ++plan.steps[static_cast<size_t>(to)].num_preds;
      ++memory_edges;
    };
    for (const auto& [from, to] : memory_order_edges(reqs, m)) {
      add_edge(from, to);
      if (auto it = writers.find(to); it != writers.end())
        for (int w : it->second) add_edge(from, w);
    }
    plan.memory.push_back(std::move(m));
  }
  plan.memory_edges = memory_edges;
  for (size_t v = 0; v < plan.slots.size(); ++v) {
    ValueSlot& sl = plan.slots[v];
    if (sl.kind == ValueSlot::Kind::kArena && sl.request >= 0)
      sl.offset = plan.memory[static_cast<size_t>(sl.device)].offsets[static_cast<size_t>(sl.request)] + within[v];
  }
  for (size_t v = 0; v < alias_root.size(); ++v)
    if (alias_root[v] != ir::kNoValue && plan.slots[v].kind == ValueSlot::Kind::kArena) {
      plan.slots[v].offset = plan.slots[static_cast<size_t>(alias_root[v])].offset;
      plan.slots[v].request = plan.slots[static_cast<size_t>(alias_root[v])].request;
    }
  for (Step& st : plan.steps)
    if (st.scratch_request >= 0)
      st.scratch_offset = plan.memory[static_cast<size_t>(st.device)].offsets[static_cast<size_t>(st.scratch_request)];

  std::ostringstream summary;
  summary << plan.steps.size() << " steps (" << fast << " fast kernels of which " << aliases << " views, " << reference
          << " reference); arena "
          << plan.peak_bytes() << " bytes, lifetime lower bound " << plan.lower_bound_bytes() << ", "
          << plan.memory_edges << " memory edges";
  if (!plan.donations.empty()) summary << ", " << plan.donations.size() << " outputs in place";
  if (!buckets.empty())
    summary << ", " << buckets.size() << " gradient buckets as views (" << sums_in_place << " with their sums in place)";
  ctx.finish_stage("compile", start, nodes, nullptr, summary.str());
  return plan;
}

}  // namespace tessera::stages
