// Graphs from Python: load and save every format, inspect, and build node by node with types
// inferred as each node is added (tessera.ops generates one function per op from op_schemas()).
#include <map>
#include <memory>

#include "engine/ir/text.h"
#include "engine/ir/verifier.h"
#include "engine/ops/infer.h"
#include "engine/passes/rewrite.h"
#include "formats/graph_file.h"
#include "python/src/common.h"

namespace tessera::python {

namespace {

py::dict value_info(const ir::Graph& g, ir::ValueId id) {
  const ir::Value& v = g.value(id);
  py::dict d;
  d["name"] = v.name;
  d["type"] = v.type.to_string();
  d["dtype"] = std::string(dtype_name(v.type.dtype));
  d["shape"] = dims_to_python(v.type);
  return d;
}

ValueHandle add_op(const std::shared_ptr<GraphHandle>& h, const std::string& op, const py::list& inputs,
                   const py::dict& attrs, int num_outputs, std::string name, py::list* all_outputs) {
  const ops::OpDef* def = registry().find(op);
  if (!def) throw py::value_error("unknown op '" + op + "'");
  ir::Graph& g = h->graph;
  if (name.empty()) name = op + "_" + std::to_string(g.num_nodes());
  if (g.find_value(name)) name = passes::unique_value_name(g, name);
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    py::handle in = inputs[i];
    if (in.is_none()) {
      ins.push_back(ir::kNoValue);
      continue;
    }
    if (!py::isinstance<ValueHandle>(in))
      throw py::type_error("node '" + name + "' (" + op + "): input " + std::to_string(i) +
                           " is not a graph value (use graph.input(), graph.param() or another op's output)");
    const ValueHandle& v = in.cast<const ValueHandle&>();
    if (v.graph.get() != h.get())
      throw py::value_error("node '" + name + "' (" + op + "): input " + std::to_string(i) + " belongs to another graph");
    ins.push_back(v.id);
  }
  ir::Attributes at;
  for (auto [k, v] : attrs) {
    std::string key = k.cast<std::string>();
    const ops::AttrSpec* spec = def->find_attr(key);
    if (!spec) {
      std::string known;
      for (const ops::AttrSpec& a : def->attrs) known += (known.empty() ? "" : ", ") + a.name;
      throw py::type_error("node '" + name + "' (" + op + "): no attribute '" + key + "'" +
                           (known.empty() ? std::string(" (it has none)") : " (it has " + known + ")"));
    }
    if (v.is_none()) continue;
    at.insert_or_assign(key, attribute_from_python(v, spec->kind, "node '" + name + "' (" + op + ") attribute '" + key + "'"));
  }
  if (num_outputs <= 0) {
    num_outputs = 0;
    for (const ops::PortSpec& p : def->outputs) num_outputs += !p.optional;
    num_outputs = std::max(num_outputs, 1);
  }
  ir::NodeId id = g.add_node(op, ins, num_outputs, name, std::move(at));
  const std::vector<ir::ValueId> outs = g.node(id).outputs;
  for (size_t i = 0; i < outs.size(); ++i)
    g.set_value_name(outs[i], outs.size() == 1 ? name : passes::unique_value_name(g, name + "_" + std::to_string(i)));
  Status st = ops::check_node(g.node(id), registry());
  if (st.is_ok()) st = ops::infer_node(g, id, registry());
  if (!st.is_ok()) {
    Error e = st.error();
    g.remove_node(id);
    e.message = "node '" + name + "' (" + op + "): " + e.message;
    e.node = -1;
    raise(e);
  }
  if (all_outputs)
    for (ir::ValueId v : outs) all_outputs->append(ValueHandle{h, v});
  return ValueHandle{h, outs[0]};
}

}  // namespace

void bind_graph(py::module_& m) {
  py::class_<ValueHandle>(m, "Value", "A value of a graph under construction: an input, a param or a node's output.")
      .def_property_readonly("name", [](const ValueHandle& v) { return v.graph->graph.value(v.id).name; }, "The value's name.")
      .def_property_readonly("type", [](const ValueHandle& v) { return v.graph->graph.value(v.id).type.to_string(); },
                             "The inferred type, e.g. 'f32[N, 10]'.")
      .def_property_readonly("dtype", [](const ValueHandle& v) { return std::string(dtype_name(v.graph->graph.value(v.id).type.dtype)); },
                             "The element type's name: 'f32', 'i64', ...")
      .def_property_readonly("graph", [](const ValueHandle& v) { return v.graph; }, "The graph the value belongs to.")
      .def_property_readonly("shape", [](const ValueHandle& v) { return dims_to_python(v.graph->graph.value(v.id).type); },
                             "Dims: ints, symbols (str) or None where unknown.")
      .def("__repr__", [](const ValueHandle& v) {
        const ir::Value& x = v.graph->graph.value(v.id);
        return "<tessera.Value '" + x.name + "': " + x.type.to_string() + ">";
      });

  py::class_<GraphHandle, std::shared_ptr<GraphHandle>>(m, "Graph", R"doc(A dataflow graph.

Load one with tessera.load(path) (.onnx, .tsr, .json, .tir), or build one:

    g = tessera.Graph("mlp")
    x = g.input("x", "f32", ["N", 784])
    w = g.param("w", np.zeros((784, 10), np.float32))
    y = tessera.ops.MatMul(x, w)
    g.set_outputs([y])
    g.save("mlp.onnx")
)doc")
      .def(py::init([](const std::string& name) { return std::make_shared<GraphHandle>(ir::Graph(name)); }),
           py::arg("name") = "main")
      .def_property("name", [](const GraphHandle& h) { return h.graph.name(); },
                    [](GraphHandle& h, const std::string& n) { h.graph.set_name(n); }, "The graph's name.")
      .def("input", [](const std::shared_ptr<GraphHandle>& h, const std::string& name, const py::handle& dtype,
                       const py::list& shape) {
             if (name.empty()) throw py::value_error("an input needs a name");
             if (h->graph.find_value(name)) throw py::value_error("the graph already has a value named '" + name + "'");
             std::vector<ir::Dim> dims;
             for (py::handle d : shape) {
               if (py::isinstance<py::str>(d)) dims.push_back(ir::Dim::named(d.cast<std::string>()));
               else if (d.is_none()) dims.push_back(ir::Dim::unknown());
               else {
                 int64_t n = d.cast<int64_t>();
                 if (n < 0) throw py::value_error("input '" + name + "': dim " + std::to_string(n) + " is negative");
                 dims.push_back(ir::Dim::known(n));
               }
             }
             return ValueHandle{h, h->graph.add_input(name, ir::TensorType(dtype_from_python(dtype), dims))};
           },
           py::arg("name"), py::arg("dtype"), py::arg("shape"),
           "Adds a graph input: dtype ('f32', np.float32, ...), shape of ints, symbols (str) and None.")
      .def("param", [](const std::shared_ptr<GraphHandle>& h, const std::string& name, const py::handle& array) {
             if (name.empty()) throw py::value_error("a param needs a name");
             if (h->graph.find_value(name)) throw py::value_error("the graph already has a value named '" + name + "'");
             Tensor t = tensor_from_array(array, "param '" + name + "'").clone();  // the graph owns a copy
             return ValueHandle{h, h->graph.add_param(name, std::move(t))};
           },
           py::arg("name"), py::arg("value"), "Adds a named constant (a weight): a copy of the array.")
      .def("op", [](const std::shared_ptr<GraphHandle>& h, const std::string& op, const py::list& inputs,
                    const py::dict& attrs, int num_outputs, const std::string& name) -> py::object {
             py::list outs;
             add_op(h, op, inputs, attrs, num_outputs, name, &outs);
             if (outs.size() == 1) return outs[0];
             return py::tuple(outs);
           },
           py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::dict(), py::arg("num_outputs") = 0,
           py::arg("name") = "",
           "Adds a node (None for an absent optional input) and infers its outputs' types; returns the "
           "output Value, or a tuple of them. Errors name the node.")
      .def("set_outputs", [](const std::shared_ptr<GraphHandle>& h, const py::list& outs) {
             std::vector<ir::ValueId> ids;
             for (py::handle o : outs) {
               const ValueHandle& v = o.cast<const ValueHandle&>();
               if (v.graph.get() != h.get()) throw py::value_error("an output belongs to another graph");
               ids.push_back(v.id);
             }
             h->graph.set_outputs(ids);
           },
           py::arg("outputs"), "Makes these values (of this graph) the graph's outputs, in order.")
      .def("value", [](const std::shared_ptr<GraphHandle>& h, const std::string& name) {
             auto v = h->graph.find_value(name);
             if (!v) throw py::key_error("no value named '" + name + "'");
             return ValueHandle{h, *v};
           },
           py::arg("name"), "The value called `name` (an input, a param or a node output).")
      .def_property_readonly("inputs", [](const GraphHandle& h) {
        py::list l;
        for (ir::ValueId v : h.graph.inputs()) l.append(value_info(h.graph, v));
        return l;
      }, "The graph inputs: dicts with name, type, dtype and shape.")
      .def_property_readonly("outputs", [](const GraphHandle& h) {
        py::list l;
        for (ir::ValueId v : h.graph.outputs()) l.append(value_info(h.graph, v));
        return l;
      }, "The graph outputs: dicts with name, type, dtype and shape.")
      .def_property_readonly("params", [](const GraphHandle& h) {
        py::dict d;
        for (ir::ValueId v : h.graph.params()) d[py::str(h.graph.value(v).name)] = array_from_tensor(*h.graph.param_data(v));
        return d;
      }, "The weights: name -> array (sharing the graph's bytes; the graph is immutable through them only by convention).")
      .def_property_readonly("nodes", [](const GraphHandle& h) {
        py::list l;
        const ir::Graph& g = h.graph;
        auto order = g.topological_order();
        for (ir::NodeId id : order ? *order : g.node_ids()) {
          const ir::Node& n = g.node(id);
          py::dict d;
          d["name"] = n.name;
          d["op"] = n.op;
          py::list ins, outs;
          for (ir::ValueId v : n.inputs) ins.append(v == ir::kNoValue ? py::object(py::none()) : py::object(py::str(g.value(v).name)));
          for (ir::ValueId v : n.outputs) outs.append(g.value(v).name);
          d["inputs"] = ins;
          d["outputs"] = outs;
          py::dict attrs;
          for (const auto& [k, a] : n.attrs) attrs[py::str(k)] = attribute_to_python(a);
          d["attrs"] = attrs;
          l.append(d);
        }
        return l;
      }, "The nodes in a topological order: dicts with name, op, inputs, outputs and attrs.")
      .def("check", [](GraphHandle& h) {
             check(ir::verify(h.graph));
             check(ops::infer_types(h.graph, registry()));
           },
           "Verifies the graph's structure and infers every type; raises tessera.Error naming the node.")
      .def("text", [](const GraphHandle& h) { return ir::print_graph(h.graph); }, "The IR text form, with types.")
      .def("save", [](const GraphHandle& h, const py::object& where) {
             const std::string path = fspath(where);
             py::gil_scoped_release nogil;
             Status st = formats::save_graph_file(h.graph, path);
             py::gil_scoped_acquire gil;
             check(st);
           },
           py::arg("path"), "Saves by extension: .tsr, .json, .tir or .onnx. Errors name the file.")
      .def("__repr__", [](const GraphHandle& h) {
        return "<tessera.Graph '" + h.graph.name() + "': " + std::to_string(h.graph.num_nodes()) + " nodes, " +
               std::to_string(h.graph.inputs().size()) + " inputs, " + std::to_string(h.graph.outputs().size()) +
               " outputs>";
      });

  m.def("load", [](const py::object& where) {
          const std::string path = fspath(where);
          Expected<ir::Graph> g = [&] {
            py::gil_scoped_release nogil;
            return formats::load_graph_file(path);
          }();
          return std::make_shared<GraphHandle>(unwrap(std::move(g)));
        },
        py::arg("path"), "Loads a graph: .onnx, .tsr, .json or .tir (by extension). Errors name the file and place.");

  m.def("op_schemas", [] {
    py::list l;
    for (const ops::OpDef* d : registry().all()) {
      py::dict s;
      s["name"] = d->name;
      s["category"] = d->category;
      s["doc"] = d->doc;
      py::list ins, outs, attrs;
      for (const ops::PortSpec& p : d->inputs)
        ins.append(py::dict("name"_a = p.name, "doc"_a = p.doc, "optional"_a = p.optional, "variadic"_a = p.variadic));
      for (const ops::PortSpec& p : d->outputs)
        outs.append(py::dict("name"_a = p.name, "doc"_a = p.doc, "optional"_a = p.optional, "variadic"_a = p.variadic));
      for (const ops::AttrSpec& a : d->attrs) {
        py::object def = a.default_value ? attribute_to_python(*a.default_value) : py::object(py::none());
        attrs.append(py::dict("name"_a = a.name, "kind"_a = std::string(ir::attr_kind_name(a.kind)),
                              "default"_a = def, "required"_a = a.required, "doc"_a = a.doc));
      }
      s["inputs"] = ins;
      s["outputs"] = outs;
      s["attrs"] = attrs;
      s["differentiable"] = static_cast<bool>(d->gradient);
      l.append(s);
    }
    return l;
  }, "Every registered op's schema: name, category, doc, inputs, outputs, attrs (name, kind, default, required, doc).");
}

}  // namespace tessera::python
