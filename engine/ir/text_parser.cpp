// Parsing the textual IR (grammar in text.h). Errors carry "where:line:col".
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "engine/ir/text.h"

#include "engine/core/strings.h"

namespace tessera::ir {
namespace {

// Graph attributes nest at most this deep below the top graph (as in the JSON graph format and
// .tsr); the parser recurses per level, so a deeper text would only exhaust the stack.
constexpr int kMaxGraphDepth = 32;
// Graphs store values and nodes densely by id, so an id costs a slot for every smaller id. All
// graphs of one text together get at most max(kMinIdSlots, kIdSlotsPerChar * text size) slots: a
// printed graph needs far fewer (every live id takes a line), while "%99999999" alone would make
// the graph allocate gigabytes.
constexpr int64_t kMinIdSlots = 65536;
constexpr int64_t kIdSlotsPerChar = 4;

enum class Tok { kEnd, kIdent, kInt, kFloat, kString, kValue, kNode, kPunct, kArrow };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  // identifier, string contents, punctuation, number spelling
  int line = 1, col = 1;
};

class Lexer {
 public:
  Lexer(std::string_view src, std::string where) : src_(src), where_(std::move(where)) {}

  Expected<Token> next() {
    skip_space();
    Token t;
    t.line = line_;
    t.col = col_;
    if (pos_ >= src_.size()) return t;
    const char c = src_[pos_];
    if (c == '"') return string_token(t);
    if (c == '%' || c == '#') {
      advance();
      if (pos_ >= src_.size() || !std::isdigit(static_cast<unsigned char>(src_[pos_])))
        return error(t, std::string("expected digits after '") + c + "'");
      t.kind = c == '%' ? Tok::kValue : Tok::kNode;
      while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) t.text += advance();
      return t;
    }
    if (c == '-' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '>') {
      advance();
      advance();
      t.kind = Tok::kArrow;
      t.text = "->";
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') return number(t);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_' || src_[pos_] == '.'))
        t.text += advance();
      t.kind = Tok::kIdent;  // "inf" and "nan" stay identifiers: they may name attributes
      return t;
    }
    if (std::string_view("{}()[]<>,:=*?").find(c) != std::string_view::npos) {
      t.kind = Tok::kPunct;
      t.text = std::string(1, advance());
      return t;
    }
    return error(t, std::string("unexpected character '") + c + "'");
  }

  Error error(const Token& at, const std::string& msg) const {
    return make_error(msg, where_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.col));
  }
  // Characters not yet lexed.
  size_t remaining() const { return src_.size() - pos_; }
  size_t size() const { return src_.size(); }

 private:
  char advance() {
    const char c = src_[pos_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  void skip_space() {
    while (pos_ < src_.size()) {
      if (std::isspace(static_cast<unsigned char>(src_[pos_]))) {
        advance();
      } else if (src_.compare(pos_, 2, "//") == 0) {
        while (pos_ < src_.size() && src_[pos_] != '\n') advance();
      } else {
        break;
      }
    }
  }
  Expected<Token> string_token(Token t) {
    advance();
    t.kind = Tok::kString;
    while (true) {
      if (pos_ >= src_.size() || src_[pos_] == '\n') return error(t, "unterminated string");
      char c = advance();
      if (c == '"') return t;
      if (c != '\\') {
        t.text += c;
        continue;
      }
      if (pos_ >= src_.size()) return error(t, "unterminated string");
      c = advance();
      switch (c) {
        case 'n': t.text += '\n'; break;
        case 't': t.text += '\t'; break;
        case '"': t.text += '"'; break;
        case '\\': t.text += '\\'; break;
        case 'x': {
          if (pos_ + 2 > src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_])) ||
              !std::isxdigit(static_cast<unsigned char>(src_[pos_ + 1])))
            return error(t, "bad \\x escape in string");
          std::string hex{advance(), advance()};
          t.text += static_cast<char>(std::strtol(hex.c_str(), nullptr, 16));
          break;
        }
        default: return error(t, std::string("unknown escape '\\") + c + "' in string");
      }
    }
  }
  Expected<Token> number(Token t) {
    if (src_[pos_] == '-' || src_[pos_] == '+') t.text += advance();
    if (src_.compare(pos_, 3, "inf") == 0) {
      for (int i = 0; i < 3; ++i) t.text += advance();
      t.kind = Tok::kFloat;
      return t;
    }
    bool is_float = false;
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        t.text += advance();
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        t.text += advance();
        if ((c == 'e' || c == 'E') && pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+')) t.text += advance();
      } else {
        break;
      }
    }
    if (t.text.empty() || t.text == "-" || t.text == "+") return error(t, "malformed number");
    t.kind = is_float ? Tok::kFloat : Tok::kInt;
    return t;
  }

  std::string_view src_;
  std::string where_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

class Parser {
 public:
  Parser(std::string_view src, const std::string& where)
      : lex_(src, where), id_slots_(id_slot_budget(src.size())), id_slots_left_(id_slots_) {}

  Expected<Graph> parse_top() {
    RETURN_IF_ERROR(advance());
    TRY(Graph g, graph());
    if (cur_.kind != Tok::kEnd) return err("unexpected '" + cur_.text + "' after the graph");
    return g;
  }

 private:
  Status advance() {
    auto t = lex_.next();
    if (!t) return t.error();
    cur_ = std::move(*t);
    return Status::ok();
  }
  Error err(const std::string& msg) const { return lex_.error(cur_, msg); }
  bool is_punct(char c) const { return cur_.kind == Tok::kPunct && cur_.text[0] == c; }
  bool is_ident(const char* s) const { return cur_.kind == Tok::kIdent && cur_.text == s; }
  Status expect_punct(char c) {
    if (!is_punct(c)) return err(std::string("expected '") + c + "'" + found());
    return advance();
  }
  Status expect_ident(const char* s) {
    if (!is_ident(s)) return err(std::string("expected '") + s + "'" + found());
    return advance();
  }
  std::string found() const {
    if (cur_.kind == Tok::kEnd) return ", found the end of the text";
    return ", found '" + cur_.text + "'";
  }
  Expected<int64_t> integer() {
    if (cur_.kind != Tok::kInt) return err("expected an integer" + found());
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(cur_.text.c_str(), &end, 10);
    if (errno == ERANGE) return err("integer out of range: " + cur_.text);
    RETURN_IF_ERROR(advance());
    return static_cast<int64_t>(v);
  }
  bool is_float_word() const { return is_ident("inf") || is_ident("nan"); }
  Expected<double> number() {
    if (cur_.kind != Tok::kInt && cur_.kind != Tok::kFloat && !is_float_word())
      return err("expected a number" + found());
    const double v = std::strtod(cur_.text.c_str(), nullptr);
    RETURN_IF_ERROR(advance());
    return v;
  }
  Expected<int32_t> id(Tok kind) {
    if (cur_.kind != kind) return err(std::string("expected ") + (kind == Tok::kValue ? "a value (%N)" : "a node (#N)") + found());
    const long long v = std::strtoll(cur_.text.c_str(), nullptr, 10);
    if (v > 100000000) return err("id " + cur_.text + " is too large");
    RETURN_IF_ERROR(advance());
    return static_cast<int32_t>(v);
  }
  Expected<std::string> string() {
    if (cur_.kind != Tok::kString) return err("expected a string" + found());
    std::string s = cur_.text;
    RETURN_IF_ERROR(advance());
    return s;
  }

  Expected<TensorType> type() {
    if (cur_.kind == Tok::kIdent && (cur_.text == "seq" || cur_.text == "opt")) {
      const bool seq = cur_.text == "seq";
      RETURN_IF_ERROR(advance());
      RETURN_IF_ERROR(expect_punct('('));
      TRY(TensorType inner, type());
      RETURN_IF_ERROR(expect_punct(')'));
      if (seq && inner.is_tensor()) return inner.as(TypeKind::kSequence);
      if (!seq && inner.is_tensor()) return inner.as(TypeKind::kOptional);
      if (!seq && inner.kind == TypeKind::kSequence) return inner.as(TypeKind::kOptionalSequence);
      return err("Tessera has sequences of tensors, optional tensors and optional sequences");
    }
    if (cur_.kind != Tok::kIdent) return err("expected a type such as f32[N, 3]" + found());
    auto dt = dtype_from_name(cur_.text);
    if (!dt) return err("unknown element type '" + cur_.text + "'");
    RETURN_IF_ERROR(advance());
    RETURN_IF_ERROR(expect_punct('['));
    if (is_punct('*')) {
      RETURN_IF_ERROR(advance());
      RETURN_IF_ERROR(expect_punct(']'));
      return TensorType::unranked(*dt);
    }
    TensorType t(*dt, {});
    while (!is_punct(']')) {
      if (!t.dims.empty()) RETURN_IF_ERROR(expect_punct(','));
      if (cur_.kind == Tok::kInt) {
        TRY(int64_t n, integer());
        if (n < 0) return err("negative dimension");
        t.dims.push_back(Dim::known(n));
      } else if (cur_.kind == Tok::kIdent) {
        t.dims.push_back(Dim::named(cur_.text));
        RETURN_IF_ERROR(advance());
      } else if (is_punct('?')) {
        t.dims.push_back(Dim::unknown());
        RETURN_IF_ERROR(advance());
      } else {
        return err("expected a dimension (a size, a name or '?')" + found());
      }
    }
    RETURN_IF_ERROR(advance());
    return t;
  }

  Expected<Tensor> tensor() {
    RETURN_IF_ERROR(expect_ident("tensor"));
    RETURN_IF_ERROR(expect_punct('<'));
    TRY(TensorType tt, type());
    RETURN_IF_ERROR(expect_punct('>'));
    if (!tt.is_static()) return err("a tensor literal needs a fully known shape, got " + tt.to_string());
    // Nothing is allocated before the text shows it holds the elements: each takes at least one
    // character (and a ',' or the closing ']').
    auto numel = checked_numel(tt.static_shape(), tt.dtype);
    if (!numel) return err(numel.error().message);
    if (static_cast<uint64_t>(*numel) > lex_.remaining())
      return err("tensor literal declares " + std::to_string(*numel) + " elements but only " +
                 std::to_string(lex_.remaining()) + " characters of text follow");
    auto made = Tensor::create(tt.dtype, tt.static_shape());
    if (!made) return err(made.error().message);
    Tensor t = std::move(*made);
    RETURN_IF_ERROR(expect_punct('['));
    int64_t i = 0;
    while (!is_punct(']')) {
      if (i > 0) RETURN_IF_ERROR(expect_punct(','));
      if (i >= t.numel()) return err("tensor literal has more than the " + std::to_string(t.numel()) + " elements its type declares");
      if (t.dtype() == DType::kString) {
        TRY(std::string v, string());
        t.data<uint64_t>()[i++] = intern_string(v);
        continue;
      }
      if (t.dtype() == DType::kI64) {  // exact: doubles cannot hold every int64
        TRY(int64_t v, integer());
        t.data<int64_t>()[i++] = v;
        continue;
      }
      TRY(double v, number());
      t.set(i++, v);
    }
    if (i != t.numel())
      return err("tensor literal has " + std::to_string(i) + " elements, its type declares " + std::to_string(t.numel()));
    RETURN_IF_ERROR(advance());
    return t;
  }

  Expected<Attribute> attribute() {
    if (cur_.kind == Tok::kInt) {
      TRY(int64_t v, integer());
      return Attribute(v);
    }
    if (cur_.kind == Tok::kFloat || is_float_word()) {
      TRY(double v, number());
      return Attribute(v);
    }
    if (cur_.kind == Tok::kString) {
      TRY(std::string s, string());
      return Attribute(std::move(s));
    }
    if (is_ident("tensor")) {
      TRY(Tensor t, tensor());
      return Attribute(std::move(t));
    }
    if (is_ident("graph")) {
      TRY(Graph g, graph());
      return Attribute(std::move(g));
    }
    if (is_ident("ints") || is_ident("floats") || is_ident("strings")) {
      const std::string kind = cur_.text;
      RETURN_IF_ERROR(advance());
      RETURN_IF_ERROR(expect_punct('['));
      RETURN_IF_ERROR(expect_punct(']'));
      if (kind == "ints") return Attribute(std::vector<int64_t>{});
      if (kind == "floats") return Attribute(std::vector<double>{});
      return Attribute(std::vector<std::string>{});
    }
    if (is_punct('[')) {
      RETURN_IF_ERROR(advance());
      std::vector<int64_t> ints;
      std::vector<double> floats;
      std::vector<std::string> strings;
      enum { kNone, kI, kF, kS } kind = kNone;
      while (!is_punct(']')) {
        if (kind != kNone) RETURN_IF_ERROR(expect_punct(','));
        const auto k = cur_.kind == Tok::kString                    ? kS
                       : (cur_.kind == Tok::kFloat || is_float_word()) ? kF
                       : cur_.kind == Tok::kInt                        ? kI
                                                                       : kNone;
        if (k == kNone) return err("expected a list element" + found());
        if (kind != kNone && k != kind) return err("list mixes element kinds");
        kind = k;
        if (k == kI) {
          TRY(int64_t v, integer());
          ints.push_back(v);
        } else if (k == kF) {
          TRY(double v, number());
          floats.push_back(v);
        } else {
          TRY(std::string s, string());
          strings.push_back(std::move(s));
        }
      }
      RETURN_IF_ERROR(advance());
      if (kind == kF) return Attribute(std::move(floats));
      if (kind == kS) return Attribute(std::move(strings));
      return Attribute(std::move(ints));
    }
    return err("expected an attribute value" + found());
  }

  // value ':' type, with an optional name.
  Expected<Value> value_decl(ValueKind kind, ValueId* id) {
    TRY(*id, this->id(Tok::kValue));
    Value v;
    v.kind = kind;
    if (cur_.kind == Tok::kString) {
      TRY(v.name, string());
    }
    RETURN_IF_ERROR(expect_punct(':'));
    TRY(v.type, type());
    return v;
  }

  static int64_t id_slot_budget(size_t text_size) {
    return std::max<int64_t>(kMinIdSlots, kIdSlotsPerChar * static_cast<int64_t>(text_size));
  }
  // Charges the slots that defining `id` adds to a table of `capacity` slots.
  Status charge_id_slots(int capacity, int id, const char* sigil, const Token& at) {
    const int64_t grow = std::max<int64_t>(0, int64_t{id} + 1 - capacity);
    if (grow > id_slots_left_)
      return lex_.error(at, std::string("id ") + sigil + std::to_string(id) + " is too large for a text of " +
                                std::to_string(lex_.size()) + " characters (its graphs may use " +
                                std::to_string(id_slots_) + " ids in all)");
    id_slots_left_ -= grow;
    return Status::ok();
  }

  Status define(Graph& g, ValueId id, Value v, const Token& at) {
    RETURN_IF_ERROR(charge_id_slots(g.value_capacity(), id, "%", at));
    Status st = g.define_value(id, std::move(v));
    if (!st.is_ok()) return lex_.error(at, st.error().message);
    return Status::ok();
  }

  Expected<Graph> graph() {
    if (depth_ > kMaxGraphDepth)  // depth_ = the number of enclosing graphs
      return err("graphs are nested more than " + std::to_string(kMaxGraphDepth) + " deep");
    ++depth_;
    auto g = graph_body();
    --depth_;
    return g;
  }

  Expected<Graph> graph_body() {
    RETURN_IF_ERROR(expect_ident("graph"));
    TRY(std::string name, string());
    Graph g(name);
    RETURN_IF_ERROR(expect_punct('{'));
    while (!is_punct('}')) {
      const Token at = cur_;
      if (is_ident("input") || is_ident("param") || is_ident("capture")) {
        const ValueKind kind = is_ident("input") ? ValueKind::kInput : is_ident("param") ? ValueKind::kParam : ValueKind::kCapture;
        RETURN_IF_ERROR(advance());
        ValueId vid;
        TRY(Value v, value_decl(kind, &vid));
        if (kind == ValueKind::kParam) {
          RETURN_IF_ERROR(expect_punct('='));
          const Token lit = cur_;
          TRY(Tensor t, tensor());
          if (!v.type.accepts(t.dtype(), t.shape()))
            return lex_.error(lit, "param is declared " + v.type.to_string() + " but its literal is " + t.summary(0));
          RETURN_IF_ERROR(define(g, vid, std::move(v), at));
          g.set_param_data(vid, std::move(t));
        } else {
          RETURN_IF_ERROR(define(g, vid, std::move(v), at));
        }
      } else if (is_ident("output")) {
        RETURN_IF_ERROR(advance());
        std::vector<ValueId> outs;
        do {
          if (!outs.empty()) RETURN_IF_ERROR(advance());
          TRY(ValueId v, id(Tok::kValue));
          outs.push_back(v);
        } while (is_punct(','));
        g.set_outputs(std::move(outs));
      } else if (cur_.kind == Tok::kNode) {
        RETURN_IF_ERROR(node(g));
      } else {
        return err("expected 'input', 'param', 'capture', 'output' or a node (#N)" + found());
      }
    }
    RETURN_IF_ERROR(advance());
    return g;
  }

  Status node(Graph& g) {
    const Token at = cur_;
    Node n;
    TRY(NodeId nid, id(Tok::kNode));
    if (cur_.kind == Tok::kString) {
      TRY(n.name, string());
    }
    RETURN_IF_ERROR(expect_punct('='));
    if (cur_.kind != Tok::kIdent) return err("expected an op name" + found());
    n.op = cur_.text;
    RETURN_IF_ERROR(advance());
    RETURN_IF_ERROR(expect_punct('('));
    while (!is_punct(')')) {
      if (!n.inputs.empty()) RETURN_IF_ERROR(expect_punct(','));
      if (is_ident("_")) {
        n.inputs.push_back(kNoValue);
        RETURN_IF_ERROR(advance());
      } else {
        TRY(ValueId v, id(Tok::kValue));
        n.inputs.push_back(v);
      }
    }
    RETURN_IF_ERROR(advance());
    if (cur_.kind != Tok::kArrow) return err("expected '->'" + found());
    RETURN_IF_ERROR(advance());
    RETURN_IF_ERROR(expect_punct('('));
    std::vector<std::pair<ValueId, Value>> outs;
    while (!is_punct(')')) {
      if (!outs.empty()) RETURN_IF_ERROR(expect_punct(','));
      ValueId vid;
      TRY(Value v, value_decl(ValueKind::kNodeOutput, &vid));
      outs.emplace_back(vid, std::move(v));
    }
    RETURN_IF_ERROR(advance());
    if (is_punct('{')) {
      RETURN_IF_ERROR(advance());
      while (!is_punct('}')) {
        if (!n.attrs.empty()) RETURN_IF_ERROR(expect_punct(','));
        if (cur_.kind != Tok::kIdent) return err("expected an attribute name" + found());
        std::string key = cur_.text;
        RETURN_IF_ERROR(advance());
        RETURN_IF_ERROR(expect_punct('='));
        TRY(Attribute a, attribute());
        if (!n.attrs.emplace(key, std::move(a)).second) return err("attribute '" + key + "' given twice");
      }
      RETURN_IF_ERROR(advance());
    }
    if (is_ident("from")) {
      RETURN_IF_ERROR(advance());
      RETURN_IF_ERROR(expect_punct('['));
      while (!is_punct(']')) {
        if (!n.provenance.from.empty()) RETURN_IF_ERROR(expect_punct(','));
        TRY(NodeId f, id(Tok::kNode));
        n.provenance.from.push_back(f);
      }
      RETURN_IF_ERROR(advance());
    }
    if (is_ident("origin")) {
      RETURN_IF_ERROR(advance());
      TRY(n.provenance.origin, string());
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      outs[i].second.producer = nid;
      outs[i].second.producer_output = static_cast<int>(i);
      n.outputs.push_back(outs[i].first);
      RETURN_IF_ERROR(define(g, outs[i].first, std::move(outs[i].second), at));
    }
    RETURN_IF_ERROR(charge_id_slots(g.node_capacity(), nid, "#", at));
    Status st = g.define_node(nid, std::move(n));
    if (!st.is_ok()) return lex_.error(at, st.error().message);
    return Status::ok();
  }

  Lexer lex_;
  Token cur_;
  int depth_ = 0;  // graph() calls in progress
  int64_t id_slots_;       // id slots all graphs of the text may use (see kIdSlotsPerChar)
  int64_t id_slots_left_;
};

}  // namespace

Expected<Graph> parse_graph(std::string_view text, const std::string& where) {
  Parser p(text, where);
  return p.parse_top();
}

}  // namespace tessera::ir
