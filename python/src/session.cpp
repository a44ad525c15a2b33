// InferenceSession (shaped like ONNX Runtime's) and tessera.compile: the six stages from Python,
// with every stage's and pass's report, the placement and the memory plan as Python objects.
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/cpu/cpu_backend.h"
#include "engine/ops/infer.h"
#include "engine/stages/session.h"
#include "formats/document.h"
#include "python/src/common.h"

namespace tessera::python {

namespace {

// What ONNX Runtime's NodeArg gives: name, shape (ints, symbols, None) and type ("tensor(float)").
struct NodeArg {
  std::string name, type, dtype;
  py::list shape;
};

ir::Graph graph_from(const py::handle& source) {
  if (py::isinstance<GraphHandle>(source)) {
    ir::Graph g = source.cast<const GraphHandle&>().graph;
    check(ops::infer_types(g, registry()));
    return g;
  }
  std::string path = fspath(source);
  Expected<formats::GraphDocument> doc = [&] {
    py::gil_scoped_release nogil;
    return formats::load_typed_document(path, registry());
  }();
  return unwrap(std::move(doc)).graph;
}

py::dict stage_dict(const stages::StageReport& s) {
  return py::dict("stage"_a = s.stage, "seconds"_a = static_cast<double>(s.duration_ns) / 1e9,
                  "nodes_before"_a = s.nodes_before, "nodes_after"_a = s.nodes_after, "summary"_a = s.summary);
}

py::dict pass_dict(const stages::PassReport& p) {
  return py::dict("stage"_a = p.stage, "pass"_a = p.pass, "seconds"_a = static_cast<double>(p.duration_ns) / 1e9,
                  "changed"_a = p.changed, "nodes_before"_a = p.nodes_before, "nodes_after"_a = p.nodes_after);
}

py::list stage_list(const stages::StageContext& ctx) {
  py::list l;
  for (const stages::StageReport& s : ctx.stages) l.append(stage_dict(s));
  return l;
}

py::list pass_list(const stages::StageContext& ctx) {
  py::list l;
  for (const stages::PassReport& p : ctx.passes) l.append(pass_dict(p));
  return l;
}

const char* step_kind(stages::Step::Kind k) {
  switch (k) {
    case stages::Step::Kind::kKernel: return "kernel";
    case stages::Step::Kind::kReference: return "reference";
    case stages::Step::Kind::kCopy: return "copy";
    case stages::Step::Kind::kAlias: return "alias";
  }
  return "?";
}

// The compiled program: steps with kernels and devices, and each device's memory plan.
py::dict plan_dict(const stages::ExecutionPlan& plan) {
  py::list steps;
  const ir::Graph& g = plan.graph;
  for (const stages::Step& s : plan.steps) {
    const ir::Node& n = g.node(s.node);
    steps.append(py::dict("node"_a = n.name, "op"_a = n.op, "kind"_a = step_kind(s.kind), "impl"_a = s.impl, "detail"_a = s.detail,
                          "device"_a = plan.devices[static_cast<size_t>(s.device)],
                          "why_reference"_a = s.why_reference, "flops"_a = s.flops, "bytes"_a = s.bytes));
  }
  py::list memory;
  for (size_t d = 0; d < plan.memory.size(); ++d) {
    const stages::MemoryPlan& m = plan.memory[d];
    py::list buffers;
    for (size_t r = 0; r < plan.requests[d].size(); ++r) {
      const stages::BufferRequest& q = plan.requests[d][r];
      buffers.append(py::dict("value"_a = q.label, "bytes"_a = q.bytes, "offset"_a = m.offsets[r],
                              "first_step"_a = q.def_step, "last_step"_a = q.last_step(m.num_steps)));
    }
    memory.append(py::dict("device"_a = plan.devices[d], "arena_bytes"_a = m.arena_bytes,
                           "lower_bound_bytes"_a = m.lower_bound_bytes, "total_bytes"_a = m.total_bytes,
                           "buffers"_a = buffers));
  }
  return py::dict("steps"_a = steps, "memory"_a = memory, "threads"_a = plan.threads, "workers"_a = plan.workers,
                  "flops"_a = plan.total_flops, "peak_bytes"_a = plan.peak_bytes(), "text"_a = plan.print());
}

class PySession {
 public:
  PySession(const py::handle& source, int threads, int inter_op_threads, const std::string& pipeline,
            const std::string& device, const std::string& precision) {
    if (precision != "tf32" && precision != "fp32" && precision != "bf16")
      throw py::value_error("precision must be tf32, fp32 or bf16, not '" + precision + "'");
    if (precision == "bf16")
      if (std::string why = cpu::bf16_unsupported(); !why.empty()) throw py::value_error("precision bf16: " + why);
    ir::Graph g = graph_from(source);
    for (ir::ValueId v : g.inputs()) inputs_.push_back(arg(g, v));
    for (ir::ValueId v : g.outputs()) outputs_.push_back(arg(g, v));
    threads = intra_op_threads(threads);
    if (inter_op_threads < 1 || inter_op_threads > cpu::kMaxInterOpThreads)
      throw py::value_error("inter_op_threads must be in [1, " + std::to_string(cpu::kMaxInterOpThreads) + "], not " +
                            std::to_string(inter_op_threads));
    stages::SessionOptions so;
    so.threads = threads;
    so.inter_op_threads = inter_op_threads;
    so.pipeline = pipeline;
    so.device = device;
    so.tf32 = precision == "tf32";
    so.bf16 = precision == "bf16";
    session_ = std::make_unique<stages::Session>(std::move(g), registry(), so);
    if (Expected<std::string> d = session_->device(); !d) throw py::value_error(d.error().message);
    else device_ = *d;
  }

  const std::vector<NodeArg>& inputs() const { return inputs_; }
  const std::string& device() const { return device_; }
  const std::vector<NodeArg>& outputs() const { return outputs_; }

  // Threads: run() converts its inputs with the GIL held, then releases the GIL and only then
  // waits for the session (one run at a time), so that a second thread waiting never holds the
  // GIL the first needs to return. close() waits for a running call the same way.
  py::list run(const py::object& output_names, const py::dict& feeds) {
    if (!session_) throw py::value_error("the session is closed");
    runtime::Feeds in;
    for (auto [k, v] : feeds) {
      std::string name = py::str(k);
      if (!has(inputs_, name)) throw py::value_error("unknown input '" + name + "'; the inputs are " + names(inputs_));
      bool copied = false;
      in.emplace(name, tensor_from_array(v, "input '" + name + "'", &copied));
      if (copied &&
          PyErr_WarnEx(PyExc_UserWarning,
                       ("tessera: input '" + name + "' is not a C-contiguous array in native byte order: copied").c_str(), 1) < 0)
        throw py::error_already_set();  // warnings turned into errors
    }
    for (const NodeArg& a : inputs_)
      if (!in.count(a.name)) throw py::value_error("missing input '" + a.name + "' (" + a.type + ")");
    std::vector<int> pick;
    if (output_names.is_none()) {
      for (size_t i = 0; i < outputs_.size(); ++i) pick.push_back(static_cast<int>(i));
    } else {
      for (py::handle n : output_names) {
        std::string name = py::str(n);
        int found = -1;
        for (size_t i = 0; i < outputs_.size(); ++i)
          if (outputs_[i].name == name) found = static_cast<int>(i);
        if (found < 0) throw py::value_error("unknown output '" + name + "'; the outputs are " + names(outputs_));
        pick.push_back(found);
      }
    }
    Expected<std::vector<Tensor>> outs = locked([&](stages::Session& s) { return s.run(in); });
    in.clear();  // drop the inputs' references with the GIL held
    std::vector<Tensor> values = unwrap(std::move(outs));
    py::list result;
    for (int i : pick) result.append(array_from_tensor(values[static_cast<size_t>(i)]));
    return result;
  }

  // Times `runs` calls of the C++ Session::run on these feeds (converted once), for the overhead
  // benchmark: the same work as run() without the Python side. Nanoseconds per call.
  std::vector<int64_t> time_cpp(const py::dict& feeds, int runs) {
    runtime::Feeds in;
    for (auto [k, v] : feeds) in.emplace(std::string(py::str(k)), tensor_from_array(v, "input"));
    std::vector<int64_t> ns = locked([&](stages::Session& s) {
      std::vector<int64_t> out;
      for (int i = 0; i < runs; ++i) {
        const int64_t t0 = observe::now_ns();
        Expected<std::vector<Tensor>> outs = s.run(in);
        out.push_back(observe::now_ns() - t0);
        if (!outs) break;
      }
      return out;
    });
    in.clear();
    return ns;
  }

  // Waits for a running call, then frees the compiled programs.
  void close() {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lk(mu_);
    session_.reset();
  }
  bool closed() const { return !session_; }

  // Calls f(session) with the session's lock held and the GIL held (taken after the lock, as
  // locked() orders them), for the properties that read the last compilation.
  py::object inspect(const std::function<py::object(stages::Session&)>& f) {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lk(mu_);
    py::gil_scoped_acquire gil;
    if (!session_) throw py::value_error("the session is closed");
    return f(*session_);
  }

 private:
  static NodeArg arg(const ir::Graph& g, ir::ValueId v) {
    const ir::Value& x = g.value(v);
    return NodeArg{x.name, numpy_type_name(x.type), std::string(dtype_name(x.type.dtype)), dims_to_python(x.type)};
  }
  static bool has(const std::vector<NodeArg>& l, const std::string& n) {
    for (const NodeArg& a : l)
      if (a.name == n) return true;
    return false;
  }
  static std::string names(const std::vector<NodeArg>& l) {
    std::string s;
    for (const NodeArg& a : l) s += (s.empty() ? "'" : ", '") + a.name + "'";
    return s.empty() ? "(none)" : s;
  }

  // Calls f(session) with the GIL released and the session's lock held; "the session is closed"
  // when close() came first. The GIL is released before the lock is taken: a thread holding the
  // lock may need the GIL to finish, never the reverse.
  template <class F>
  auto locked(F f) -> decltype(f(std::declval<stages::Session&>())) {
    bool closed = false;
    std::optional<decltype(f(std::declval<stages::Session&>()))> out;
    {
      py::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lk(mu_);
      if (session_) out.emplace(f(*session_));
      else closed = true;
    }
    if (closed) throw py::value_error("the session is closed");
    return std::move(*out);
  }

  std::vector<NodeArg> inputs_, outputs_;
  std::unique_ptr<stages::Session> session_;
  std::string device_;
  std::mutex mu_;
};

// Concrete input shapes: `shapes` where given, else each input's dims with symbols from `dims`
// (default 1).
stages::InputShapes shapes_for(const ir::Graph& g, const py::dict& shapes, const py::dict& dims) {
  std::map<std::string, int64_t> sym;
  for (auto [k, v] : dims) sym[py::str(k)] = v.cast<int64_t>();
  stages::InputShapes out;
  for (ir::ValueId v : g.inputs()) {
    const ir::Value& x = g.value(v);
    if (shapes.contains(x.name)) {
      out[x.name] = shapes[py::str(x.name)].cast<Shape>();
      continue;
    }
    if (!x.type.is_tensor()) continue;
    Shape s;
    for (const ir::Dim& d : x.type.dims) {
      if (d.is_known()) s.push_back(d.size);
      else if (d.is_symbolic() && sym.count(d.symbol)) s.push_back(sym[d.symbol]);
      else s.push_back(1);
    }
    out[x.name] = s;
  }
  for (auto [k, v] : shapes) {
    (void)v;
    if (!out.count(py::str(k))) throw py::value_error("shapes: the graph has no input '" + std::string(py::str(k)) + "'");
  }
  return out;
}

}  // namespace

void bind_session(py::module_& m) {
  py::class_<NodeArg>(m, "NodeArg", "An input or output of a session: name, shape (ints, symbols, None), type.")
      .def_readonly("name", &NodeArg::name, "The graph input's or output's name.")
      .def_readonly("type", &NodeArg::type, "As ONNX Runtime spells it: 'tensor(float)', 'tensor(int64)', ...")
      .def_readonly("dtype", &NodeArg::dtype, "Tessera's element type name: 'f32', 'i64', ...")
      .def_readonly("shape", &NodeArg::shape, "Dims: ints, symbols (str) for symbolic dims, None where unknown.")
      .def("__repr__", [](const NodeArg& a) {
        return "NodeArg(name='" + a.name + "', type='" + a.type + "', shape=" + std::string(py::repr(a.shape)) + ")";
      });

  py::class_<PySession>(m, "InferenceSession", R"doc(Runs a graph through the six stages, like ONNX Runtime's InferenceSession.

    sess = tessera.InferenceSession("model.onnx", threads=2)
    print(sess.get_inputs()[0].name, sess.get_inputs()[0].shape)
    (logits,) = sess.run(None, {"x": x})

`source` is a path (.onnx, .tsr, .json, .tir) or a tessera.Graph. One compiled program is kept per
set of input shapes. C-contiguous inputs of the right dtype are read in place (no copy); outputs are
arrays over the engine's own buffers (no copy). Engine errors raise tessera.Error.)doc")
      .def(py::init<const py::handle&, int, int, const std::string&, const std::string&, const std::string&>(),
           py::arg("source"), py::arg("threads") = 0, py::arg("inter_op_threads") = 1, py::arg("pipeline") = "",
           py::arg("device") = "auto", py::arg("precision") = "tf32",
           "threads: intra-op threads (0: one per hardware thread); pipeline: the optimise passes "
           "(empty: the default pipeline, as `tessera passes` prints it); device: cpu, cuda, cuda:N or "
           "auto (the first GPU when there is one, else cpu; ValueError when a GPU is asked for and none "
           "is usable, with the reason); precision: tf32 (TF32 tensor cores on a GPU, f32 on a CPU), fp32, "
           "or bf16 (CPUs with AVX-512 BF16 or AMX: convolutions and matrix products on bf16 with f32 "
           "accumulation; ValueError elsewhere, with the reason), as the CLI's --precision.")
      .def_property_readonly("device", [](const PySession& s) { return s.device(); },
                             "The device the session runs on (\"auto\" resolved): \"cpu\" or \"cuda:N\".")
      .def("get_inputs", &PySession::inputs, "The graph inputs, as NodeArg (name, shape, type).")
      .def("get_outputs", &PySession::outputs, "The graph outputs, as NodeArg (name, shape, type).")
      .def("run", &PySession::run, py::arg("output_names"), py::arg("input_feed"),
           "Runs once: output_names (None: all) and a dict of input name -> array. Returns a list of arrays.")
      .def_static("_feed_addresses", [](const py::dict& feeds) {
             // The addresses the engine reads each feed from (run() converts feeds the same way),
             // for the tests that check that arrays are not copied.
             py::dict out;
             for (auto [k, v] : feeds) {
               Tensor t = tensor_from_array(v, "input");
               out[k] = reinterpret_cast<uintptr_t>(t.raw_data());
             }
             return out;
           })
      .def("_time_cpp", &PySession::time_cpp, py::arg("feeds"), py::arg("runs"))
      .def("close", &PySession::close, "Frees the compiled programs; run() afterwards raises.")
      .def_property_readonly("closed", &PySession::closed, "Whether close() was called.")
      .def_property_readonly("stages", [](PySession& s) {
        return s.inspect([](stages::Session& x) -> py::object { return x.last_program() ? stage_list(x.context()) : py::list(); });
      }, "The last compilation's stages: dicts with stage, seconds, nodes_before/after, summary.")
      .def_property_readonly("passes", [](PySession& s) {
        return s.inspect([](stages::Session& x) -> py::object { return x.last_program() ? pass_list(x.context()) : py::list(); });
      }, "The last compilation's pass runs: stage, pass, seconds, changed, nodes_before/after.")
      .def_property_readonly("plan", [](PySession& s) {
        return s.inspect([](stages::Session& x) -> py::object { return x.last_program() ? py::object(plan_dict(x.last_program()->plan())) : py::none(); });
      }, "The program of the last run: steps (node, op, kind, impl, device), memory plan per device.")
      .def_property_readonly("compile_seconds", [](PySession& s) {
        return s.inspect([](stages::Session& x) -> py::object { return py::float_(static_cast<double>(x.last_compile_ns()) / 1e9); });
      },
                             "Seconds the last compilation took (prepare .. load).")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PySession& s, py::args) { s.close(); });

  m.def("devices", [] {
          const backend::DeviceSet set = backend::DeviceSet::discover(false);
          py::list out;
          for (const auto& d : set.all())
            out.append(py::dict("name"_a = d->name(), "description"_a = d->description()));
          return py::dict("devices"_a = out, "cuda_unavailable"_a = set.cuda_unavailable());
        },
        "The devices sessions may use: {'devices': [{'name', 'description'}], 'cuda_unavailable': why no GPU "
        "is listed ('' when one is)}.");
  m.def("compile", [](const py::handle& source, const py::dict& shapes, const py::dict& dims, const std::string& pipeline) {
          ir::Graph g = graph_from(source);
          stages::InputShapes sh = shapes_for(g, shapes, dims);
          stages::SessionOptions so;
          so.pipeline = pipeline;
          backend::DeviceSet devices = backend::DeviceSet::standard(false);
          Expected<stages::Compilation> c = [&] {
            py::gil_scoped_release nogil;
            return stages::compile_all(std::move(g), registry(), sh, so, devices, true);
          }();
          stages::Compilation comp = unwrap(std::move(c));
          py::list placement;
          const ir::Graph& og = comp.program->plan().graph;
          for (ir::NodeId id : og.node_ids())
            if (static_cast<size_t>(id) < comp.device_of.size())
              placement.append(py::dict("node"_a = og.node(id).name, "op"_a = og.node(id).op,
                                        "device"_a = comp.device_of[static_cast<size_t>(id)]));
          py::list fallbacks;
          for (const stages::Placement& p : comp.fallbacks)
            fallbacks.append(py::dict("node"_a = p.node, "device"_a = p.device, "reason"_a = p.reason));
          py::dict out;
          out["stages"] = stage_list(*comp.context);
          out["passes"] = pass_list(*comp.context);
          out["prepared"] = comp.prepared;
          out["placed"] = comp.placed;
          out["optimised"] = comp.optimised;
          out["preferred_device"] = comp.preferred;
          out["placement"] = placement;
          out["fallbacks"] = fallbacks;
          out["plan"] = plan_dict(comp.program->plan());
          return out;
        },
        py::arg("source"), py::arg("shapes") = py::dict(), py::arg("dims") = py::dict(), py::arg("pipeline") = "",
        R"doc(Runs the stages prepare .. load once and returns every artefact, as `tessera passes` prints them:

    c = tessera.compile("lenet.onnx", dims={"N": 64})
    c["stages"]     # [{'stage': 'prepare', 'seconds': ..., 'nodes_before': .., 'nodes_after': .., 'summary': ..}, ...]
    c["passes"]     # every pass run: stage, pass, seconds, changed, nodes before and after
    c["optimised"]  # the optimised graph's IR text; also "prepared" and "placed"
    c["placement"]  # node -> device;  c["fallbacks"]: nodes kept off the preferred device, with why
    c["plan"]       # steps (kernel or reference, why), memory plan per device (arena, buffers)

shapes: input name -> shape; otherwise each input's declared dims, symbols from `dims` (default 1).)doc");
}

}  // namespace tessera::python
