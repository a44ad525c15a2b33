// The `tessera._tessera` extension module: engine errors as tessera.Error, tensors as NumPy arrays,
// and the module's entry point (the bindings themselves live in graph.cpp, session.cpp, train.cpp
// and insight.cpp).
#include <cstring>
#include <memory>
#include <thread>

#include "engine/core/strings.h"
#include "engine/cpu/cpu_backend.h"
#include "python/src/common.h"

namespace tessera::python {

namespace {
PyObject* g_error_type = nullptr;  // tessera.Error, created at import (never released)
}

void raise(const Error& e) {
  py::object err = py::handle(g_error_type)(e.to_string());
  err.attr("message") = e.message;
  err.attr("where") = e.where;
  err.attr("node") = e.node;
  PyErr_SetObject(g_error_type, err.ptr());
  throw py::error_already_set();
}

std::string fspath(const py::handle& path) {
  return py::module_::import("os").attr("fspath")(path).cast<std::string>();  // str or bytes
}

int intra_op_threads(int threads, const char* what) {
  if (threads == 0) return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads < 0 || threads > cpu::kMaxThreads)
    throw py::value_error(std::string(what) + " must be 0 (one per hardware thread) or in [1, " +
                          std::to_string(cpu::kMaxThreads) + "], not " + std::to_string(threads));
  return threads;
}

const ops::OpRegistry& registry() {
  static const ops::OpRegistry reg = ops::make_default_registry();
  return reg;
}

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::kF32: return py::dtype("float32");
    case DType::kF16: return py::dtype("float16");
    case DType::kBF16: return py::dtype("float32");  // converted: NumPy has no bfloat16
    case DType::kF64: return py::dtype("float64");
    case DType::kI8: return py::dtype("int8");
    case DType::kU8: return py::dtype("uint8");
    case DType::kI16: return py::dtype("int16");
    case DType::kU16: return py::dtype("uint16");
    case DType::kI32: return py::dtype("int32");
    case DType::kU32: return py::dtype("uint32");
    case DType::kI64: return py::dtype("int64");
    case DType::kU64: return py::dtype("uint64");
    case DType::kBool: return py::dtype("bool");
    case DType::kString: return py::dtype("O");
  }
  return py::dtype("float32");
}

namespace {

// NumPy's kind + itemsize -> DType (native byte order only; the caller checks).
std::optional<DType> from_numpy(char kind, int64_t size) {
  switch (kind) {
    case 'f':
      if (size == 4) return DType::kF32;
      if (size == 8) return DType::kF64;
      if (size == 2) return DType::kF16;
      break;
    case 'i':
      if (size == 1) return DType::kI8;
      if (size == 2) return DType::kI16;
      if (size == 4) return DType::kI32;
      if (size == 8) return DType::kI64;
      break;
    case 'u':
      if (size == 1) return DType::kU8;
      if (size == 2) return DType::kU16;
      if (size == 4) return DType::kU32;
      if (size == 8) return DType::kU64;
      break;
    case 'b':
      return DType::kBool;
    case 'U': case 'S': case 'O':
      return DType::kString;
  }
  return std::nullopt;
}

}  // namespace

DType dtype_of(const py::dtype& d, const std::string& what) {
  auto t = from_numpy(d.kind(), static_cast<int64_t>(d.itemsize()));
  if (!t) throw py::type_error(what + ": NumPy dtype " + d.attr("name").cast<std::string>() + " has no Tessera element type");
  return *t;
}

DType dtype_from_python(const py::handle& h) {
  if (py::isinstance<py::str>(h)) {
    std::string s = h.cast<std::string>();
    if (auto t = dtype_from_name(s)) return *t;
    if (s == "bfloat16") return DType::kBF16;
    if (s == "str" || s == "string") return DType::kString;
  }
  py::module_ np = py::module_::import("numpy");
  py::object d;
  try {
    d = np.attr("dtype")(h);
  } catch (py::error_already_set&) {
    throw py::type_error("not an element type: " + std::string(py::repr(h)) +
                         " (use 'f32', 'i64', ..., or a NumPy dtype)");
  }
  return dtype_of(d.cast<py::dtype>(), "element type");
}

namespace {

Tensor strings_from_array(const py::array& a, const std::string& what) {
  Shape shape(a.shape(), a.shape() + a.ndim());
  py::list flat = a.attr("ravel")().attr("tolist")();
  std::vector<std::string> values;
  values.reserve(flat.size());
  for (size_t i = 0; i < flat.size(); ++i) {
    py::handle item = flat[i];
    if (py::isinstance<py::bytes>(item)) values.push_back(item.cast<std::string>());
    else if (py::isinstance<py::str>(item)) values.push_back(item.cast<std::string>());
    else throw py::type_error(what + ": element " + std::to_string(i) + " is " +
                              std::string(py::str(item.get_type().attr("__name__"))) + ", not a string");
  }
  return Tensor::from_strings(std::move(shape), values);
}

// Keeps a NumPy array alive for as long as a tensor wraps its bytes; released with the GIL held
// (tensors may die on an engine thread).
std::shared_ptr<void> hold(py::object o) {
  return std::shared_ptr<void>(new py::object(std::move(o)), [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(p);
  });
}

}  // namespace

Tensor tensor_from_array(const py::handle& obj, const std::string& what, bool* copied) {
  if (copied) *copied = false;
  py::array a;
  if (py::isinstance<py::array>(obj)) {
    a = py::reinterpret_borrow<py::array>(obj);
  } else {
    a = py::module_::import("numpy").attr("asarray")(obj);
    if (copied) *copied = true;
  }
  py::dtype d = a.dtype();
  const char order = d.attr("byteorder").cast<std::string>()[0];
  auto dt = from_numpy(d.kind(), static_cast<int64_t>(d.itemsize()));
  if (!dt) throw py::type_error(what + ": NumPy dtype " + d.attr("name").cast<std::string>() + " has no Tessera element type");
  if (*dt == DType::kString) return strings_from_array(a, what);
  if (order == '>') {
    a = a.attr("astype")(d.attr("newbyteorder")("="));
    if (copied) *copied = true;
  }
  if (!(a.flags() & py::array::c_style)) {
    a = py::module_::import("numpy").attr("ascontiguousarray")(a);
    if (copied) *copied = true;
  }
  Shape shape(a.shape(), a.shape() + a.ndim());
  void* data = const_cast<void*>(a.data());
  return Tensor::wrap(data, *dt, std::move(shape), hold(a));
}

py::object array_from_tensor(const Tensor& value) {
  if (value.kind() == TypeKind::kSequence) {
    py::list items;
    for (const Tensor& t : value.items()) items.append(array_from_tensor(t));
    return std::move(items);
  }
  if (value.kind() != TypeKind::kTensor) {
    if (value.items().empty()) return py::none();
    return array_from_tensor(value.items()[0]);
  }
  const Shape& shape = value.shape();
  if (value.dtype() == DType::kString) {
    py::array out(py::dtype("O"), shape);
    py::object* p = static_cast<py::object*>(out.mutable_data());
    std::vector<std::string> s = value.to_strings();
    for (size_t i = 0; i < s.size(); ++i) p[i] = py::str(s[i]);
    return std::move(out);
  }
  if (value.dtype() == DType::kBF16) {
    Tensor f = value.cast(DType::kF32);
    return array_from_tensor(f);
  }
  Tensor t = value.is_contiguous() ? value : value.contiguous();
  std::vector<py::ssize_t> strides;
  for (int64_t s : t.strides()) strides.push_back(static_cast<py::ssize_t>(s * dtype_size(t.dtype())));
  auto* keep = new Tensor(t);
  py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(numpy_dtype(t.dtype()), std::vector<py::ssize_t>(shape.begin(), shape.end()), strides,
                   keep->raw_data(), owner);
}

py::list dims_to_python(const ir::TensorType& t) {
  py::list dims;
  if (!t.rank_known) return dims;
  for (const ir::Dim& d : t.dims) {
    if (d.is_known()) dims.append(d.size);
    else if (d.is_symbolic()) dims.append(d.symbol);
    else dims.append(py::none());
  }
  return dims;
}

std::string numpy_type_name(const ir::TensorType& t) {
  static const char* names[] = {"float", "float16", "bfloat16", "double", "int8", "uint8", "int32",
                                "int64", "bool", "int16", "uint16", "uint32", "uint64", "string"};
  std::string elem = std::string("tensor(") + names[static_cast<int>(t.dtype)] + ")";
  switch (t.kind) {
    case TypeKind::kTensor: return elem;
    case TypeKind::kSequence: return "seq(" + elem + ")";
    case TypeKind::kOptional: return "optional(" + elem + ")";
    case TypeKind::kOptionalSequence: return "optional(seq(" + elem + "))";
  }
  return elem;
}

ir::Attribute attribute_from_python(const py::handle& v, ir::AttrKind kind, const std::string& what) {
  try {
    switch (kind) {
      case ir::AttrKind::kInt:
        if (py::isinstance<py::float_>(v)) throw py::type_error("");
        return ir::Attribute(v.cast<int64_t>());
      case ir::AttrKind::kFloat: return ir::Attribute(v.cast<double>());
      case ir::AttrKind::kString: return ir::Attribute(v.cast<std::string>());
      case ir::AttrKind::kInts: return ir::Attribute(v.cast<std::vector<int64_t>>());
      case ir::AttrKind::kFloats: return ir::Attribute(v.cast<std::vector<double>>());
      case ir::AttrKind::kStrings: return ir::Attribute(v.cast<std::vector<std::string>>());
      case ir::AttrKind::kTensor: {
        Tensor t = tensor_from_array(v, what);
        return ir::Attribute(t.clone());  // the graph owns its constants
      }
      case ir::AttrKind::kGraph: break;
    }
  } catch (py::cast_error&) {
  } catch (py::type_error&) {
  }
  throw py::type_error(what + ": expected " + std::string(ir::attr_kind_name(kind)) + ", got " +
                       std::string(py::repr(v)));
}

py::object attribute_to_python(const ir::Attribute& a) {
  switch (a.kind()) {
    case ir::AttrKind::kInt: return py::int_(a.i());
    case ir::AttrKind::kFloat: return py::float_(a.f());
    case ir::AttrKind::kString: return py::str(a.s());
    case ir::AttrKind::kTensor: return array_from_tensor(a.t());
    case ir::AttrKind::kGraph: return py::str("<graph '" + a.g().name() + "'>");
    case ir::AttrKind::kInts: return py::cast(a.ints());
    case ir::AttrKind::kFloats: return py::cast(a.floats());
    case ir::AttrKind::kStrings: return py::cast(a.strings());
  }
  return py::none();
}

}  // namespace tessera::python

PYBIND11_MODULE(_tessera, m) {
  using namespace tessera::python;
  m.doc() = "Tessera's engine, formats, trainer and insight store (the C++ side of the tessera package).";
  py::module_ np = py::module_::import("numpy");  // fail at import, not at the first array
  (void)np;
  g_error_type = PyErr_NewExceptionWithDoc("tessera.Error",
                                "An error reported by the engine: `message` (the reason), `where` (file, "
                                "input or place) and `node` (the node id, -1 when none).",
                                PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::handle(g_error_type);
  m.attr("__version__") = TESSERA_VERSION;
  bind_graph(m);
  bind_session(m);
  bind_train(m);
  bind_insight(m);
}
