// Shared by the binding files of the `tessera._tessera` extension module: the Python exception for
// engine errors, and the conversions between engine tensors and NumPy arrays.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_def.h"

namespace tessera::python {

namespace py = pybind11;
using namespace pybind11::literals;

// A graph owned by Python (tessera.Graph), and a value of it (tessera.Value) that keeps it alive.
struct GraphHandle {
  explicit GraphHandle(ir::Graph g) : graph(std::move(g)) {}
  ir::Graph graph;
};
struct ValueHandle {
  std::shared_ptr<GraphHandle> graph;
  ir::ValueId id;
};

// tessera.Error (a RuntimeError): what the engine reported, with `where` and `node` attributes.
[[noreturn]] void raise(const Error& e);
inline void check(const Status& s) {
  if (!s.is_ok()) raise(s.error());
}
template <class T>
T unwrap(Expected<T> e) {
  if (!e) raise(e.error());
  return std::move(*e);
}

// os.fspath(path) as a string: str, bytes and pathlib paths; TypeError for anything else.
std::string fspath(const py::handle& path);

// A threads= argument as the CLI takes it: 0 is one per hardware thread, else 1..cpu::kMaxThreads
// (ValueError otherwise, naming `what`).
int intra_op_threads(int threads, const char* what = "threads");

// The registry every binding uses (built once).
const ops::OpRegistry& registry();

// DType <-> NumPy. bf16 has no NumPy type: it comes out as float32 (converted), and cannot go in.
py::dtype numpy_dtype(DType t);
DType dtype_of(const py::dtype& d, const std::string& what);
DType dtype_from_python(const py::handle& h);  // "f32", "float32", np.float32, np.dtype(...)

// A NumPy array as a tensor. A C-contiguous array of a supported dtype is wrapped without a copy
// (the tensor keeps the array alive); anything else (non-contiguous, wrong byte order, Python
// lists) is converted: `copied` says so. `what` names the value in errors ("input 'x'").
Tensor tensor_from_array(const py::handle& obj, const std::string& what, bool* copied = nullptr);
// A tensor as a NumPy array that owns the tensor's buffer (no copy); strings and bf16 are
// converted; sequences become lists and optionals None or their value.
py::object array_from_tensor(const Tensor& t);

// "f32[N, 1, 28, 28]" pieces for Python: the dtype's NumPy name and the dims (ints or symbols).
py::list dims_to_python(const ir::TensorType& t);
std::string numpy_type_name(const ir::TensorType& t);

// Attribute conversions (Python value -> ir::Attribute by the schema's kind, and back).
ir::Attribute attribute_from_python(const py::handle& v, ir::AttrKind kind, const std::string& what);
py::object attribute_to_python(const ir::Attribute& a);

void bind_graph(py::module_& m);
void bind_session(py::module_& m);
void bind_train(py::module_& m);
void bind_insight(py::module_& m);

}  // namespace tessera::python
