// Printing the IR in its textual form (grammar in text.h).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/ir/text.h"

namespace tessera::ir {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// A float that reads back bit-identically and never looks like an integer.
std::string float_text(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string element_text(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF64: return float_text(t.get(i), 17);
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return float_text(t.get(i), 9);
    case DType::kI64: return std::to_string(t.data<int64_t>()[i]);  // exact; t is contiguous
    case DType::kU64: return std::to_string(t.data<uint64_t>()[i]);
    case DType::kString: return quote(t.string_at(i));
    default: return std::to_string(static_cast<int64_t>(t.get(i)));
  }
}

class Printer {
 public:
  Printer(std::ostringstream& os, const PrintOptions& options) : os_(os), options_(options) {}

  void graph(const Graph& g, int indent) {
    os_ << "graph " << quote(g.name()) << " {\n";
    const std::string pad(static_cast<size_t>(indent + 2), ' ');
    for (ValueId v : g.inputs()) os_ << pad << "input " << value_decl(g, v) << "\n";
    for (ValueId v : g.params())
      os_ << pad << "param " << value_decl(g, v) << " = "
          << (options_.param_data ? tensor(*g.param_data(v)) : std::string("elided")) << "\n";
    for (ValueId v : g.captures()) os_ << pad << "capture " << value_decl(g, v) << "\n";
    auto order = g.topological_order();
    const std::vector<NodeId> ids = order ? *order : g.node_ids();  // a cyclic graph still prints
    for (NodeId id : ids) {
      os_ << pad;
      node(g, g.node(id), indent + 2);
      os_ << "\n";
    }
    if (!g.outputs().empty()) {
      os_ << pad << "output ";
      for (size_t i = 0; i < g.outputs().size(); ++i) os_ << (i ? ", " : "") << "%" << g.outputs()[i];
      os_ << "\n";
    }
    os_ << std::string(static_cast<size_t>(indent), ' ') << "}";
  }

 private:
  static std::string value_decl(const Graph& g, ValueId v) {
    std::string s = "%" + std::to_string(v);
    if (!g.value(v).name.empty()) s += " " + quote(g.value(v).name);
    return s + " : " + g.value(v).type.to_string();
  }

  static std::string tensor(const Tensor& any) {
    const Tensor t = any.contiguous();
    std::string s = "tensor<" + TensorType::of(t.dtype(), t.shape()).to_string() + "> [";
    for (int64_t i = 0; i < t.numel(); ++i) s += (i ? ", " : "") + element_text(t, i);
    return s + "]";
  }

  void node(const Graph& g, const Node& n, int indent) {
    os_ << "#" << n.id;
    if (!n.name.empty()) os_ << " " << quote(n.name);
    os_ << " = " << n.op << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      os_ << (i ? ", " : "") << (n.inputs[i] == kNoValue ? "_" : "%" + std::to_string(n.inputs[i]));
    os_ << ") -> (";
    for (size_t i = 0; i < n.outputs.size(); ++i) os_ << (i ? ", " : "") << value_decl(g, n.outputs[i]);
    os_ << ")";
    if (!n.attrs.empty()) {
      os_ << " {";
      bool first = true;
      for (const auto& [key, a] : n.attrs) {
        os_ << (first ? "" : ", ") << key << " = ";
        attr(a, indent);
        first = false;
      }
      os_ << "}";
    }
    if (!n.provenance.from.empty()) {
      os_ << " from [";
      for (size_t i = 0; i < n.provenance.from.size(); ++i) os_ << (i ? ", " : "") << "#" << n.provenance.from[i];
      os_ << "]";
    }
    if (!n.provenance.origin.empty()) os_ << " origin " << quote(n.provenance.origin);
  }

  void attr(const Attribute& a, int indent) {
    switch (a.kind()) {
      case AttrKind::kInt: os_ << a.i(); break;
      case AttrKind::kFloat: os_ << float_text(a.f(), 17); break;
      case AttrKind::kString: os_ << quote(a.s()); break;
      case AttrKind::kTensor: os_ << tensor(a.t()); break;
      case AttrKind::kGraph: graph(a.g(), indent); break;
      case AttrKind::kInts:
        if (a.ints().empty()) { os_ << "ints[]"; break; }
        os_ << "[";
        for (size_t i = 0; i < a.ints().size(); ++i) os_ << (i ? ", " : "") << a.ints()[i];
        os_ << "]";
        break;
      case AttrKind::kFloats:
        if (a.floats().empty()) { os_ << "floats[]"; break; }
        os_ << "[";
        for (size_t i = 0; i < a.floats().size(); ++i) os_ << (i ? ", " : "") << float_text(a.floats()[i], 17);
        os_ << "]";
        break;
      case AttrKind::kStrings:
        if (a.strings().empty()) { os_ << "strings[]"; break; }
        os_ << "[";
        for (size_t i = 0; i < a.strings().size(); ++i) os_ << (i ? ", " : "") << quote(a.strings()[i]);
        os_ << "]";
        break;
    }
  }

  std::ostringstream& os_;
  PrintOptions options_;
};

}  // namespace

std::string print_graph(const Graph& graph) { return print_graph(graph, PrintOptions{}); }

std::string print_graph(const Graph& graph, const PrintOptions& options) {
  std::ostringstream os;
  Printer(os, options).graph(graph, 0);
  os << "\n";
  return os.str();
}

}  // namespace tessera::ir
