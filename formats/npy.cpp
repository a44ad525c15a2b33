// NumPy .npy encoding and decoding: the header dict, dtype mapping, checked reads.
#include "formats/npy.h"
#include "engine/core/file_kind.h"
#include "engine/ir/limits.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/strings.h"
#include "formats/file_io.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "formats/npy.cpp assumes a little-endian host"
#endif

namespace tessera::formats {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kGrowthDigits = 21;  // numpy.lib.format.GROWTH_AXIS_MAX_DIGITS
constexpr size_t kAlign = 64;         // numpy.lib.format.ARRAY_ALIGN

// The type code after the byte-order character, e.g. "f4" in "<f4".
struct TypeCode {
  const char* code;
  DType dtype;
};
constexpr TypeCode kTypeCodes[] = {
    {"f4", DType::kF32}, {"f8", DType::kF64}, {"f2", DType::kF16}, {"i1", DType::kI8},
    {"u1", DType::kU8},  {"i4", DType::kI32}, {"i8", DType::kI64}, {"b1", DType::kBool},
    {"i2", DType::kI16}, {"u2", DType::kU16}, {"u4", DType::kU32}, {"u8", DType::kU64},
};

std::string py_shape(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// Printable excerpt of untrusted header text for error messages.
std::string excerpt(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80)) {
    if (c >= 0x20 && c < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  if (s.size() > 80) out += "...";
  return out;
}

struct Header {
  std::string descr;
  bool fortran = false;
  Shape shape;
};

// Recursive-descent reader of the header's Python dict literal:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class DictParser {
 public:
  explicit DictParser(std::string_view s) : s_(s) {}

  Expected<Header> parse() {
    Header h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_ws();
    if (!eat('{')) return fail("expected '{'");
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      std::string key;
      if (!read_string(key)) return fail("expected a quoted key or '}'");
      skip_ws();
      if (!eat(':')) return fail("expected ':' after key '" + excerpt(key) + "'");
      skip_ws();
      if (key == "descr") {
        if (seen_descr) return fail("duplicate key 'descr'");
        seen_descr = true;
        if (peek() == '[')
          return fail("structured dtypes (a list as descr) are not supported");
        if (!read_string(h.descr)) return fail("'descr' must be a string");
      } else if (key == "fortran_order") {
        if (seen_fortran) return fail("duplicate key 'fortran_order'");
        seen_fortran = true;
        if (eat_word("True")) {
          h.fortran = true;
        } else if (eat_word("False")) {
          h.fortran = false;
        } else {
          return fail("'fortran_order' must be True or False");
        }
      } else if (key == "shape") {
        if (seen_shape) return fail("duplicate key 'shape'");
        seen_shape = true;
        Status st = read_shape(h.shape);
        if (!st) return st.error();
      } else {
        return fail("unexpected key '" + excerpt(key) +
                    "' (a .npy header has descr, fortran_order and shape)");
      }
      skip_ws();
      if (eat(',')) continue;
      if (peek() != '}') return fail("expected ',' or '}'");
    }
    skip_ws();
    if (i_ != s_.size()) return fail("unexpected text after the closing '}'");
    if (!seen_descr) return make_error("the header has no 'descr' key");
    if (!seen_fortran) return make_error("the header has no 'fortran_order' key");
    if (!seen_shape) return make_error("the header has no 'shape' key");
    return h;
  }

 private:
  Error fail(const std::string& what) const {
    return make_error("malformed header at character " + std::to_string(i_) + ": " + what +
                      " (header: " + excerpt(s_) + ")");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  bool eat_word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool read_string(std::string& out) {
    const char q = peek();
    if (q != '\'' && q != '"') return false;
    size_t j = i_ + 1;
    std::string v;
    while (j < s_.size() && s_[j] != q) {
      if (s_[j] == '\\' && j + 1 < s_.size()) ++j;
      v += s_[j++];
    }
    if (j >= s_.size()) return false;
    i_ = j + 1;
    out = std::move(v);
    return true;
  }
  Status read_shape(Shape& shape) {
    if (!eat('(')) return fail("'shape' must be a tuple of integers");
    for (;;) {
      skip_ws();
      if (eat(')')) return Status::ok();
      if (peek() == '-') return fail("negative dimension in 'shape'");
      if (peek() < '0' || peek() > '9') return fail("expected a dimension or ')' in 'shape'");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const int d = peek() - '0';
        if (v > (INT64_MAX - d) / 10) return fail("dimension too large in 'shape'");
        v = v * 10 + d;
        ++i_;
      }
      eat('L');  // Python 2 long literals in files from old NumPy
      if (static_cast<int>(shape.size()) == ir::kMaxRank)  // NumPy 2's limit too (NumPy 1: 32)
        return fail("'shape' has more than " + std::to_string(ir::kMaxRank) + " dimensions");
      shape.push_back(v);
      skip_ws();
      if (eat(',')) continue;
      if (peek() != ')') return fail("expected ',' or ')' in 'shape'");
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

// Maps a descr to a dtype; *swap is set for multi-byte big-endian data.
Expected<DType> dtype_of_descr(const std::string& descr, bool* swap) {
  std::string_view code = descr;
  char order = '|';
  if (!code.empty() && std::strchr("<>|=", code[0]) != nullptr) {
    order = code[0];
    code.remove_prefix(1);
  }
  for (const TypeCode& tc : kTypeCodes) {
    if (code == tc.code) {
      *swap = order == '>' && dtype_size(tc.dtype) > 1;
      return tc.dtype;
    }
  }
  return make_error("unsupported dtype '" + excerpt(descr) +
                    "' (Tessera reads f4 f8 f2 i1 u1 i2 u2 i4 u4 i8 u8 b1 U<n> S<n>, either byte order)");
}

std::string descr_of(DType dt) {
  switch (dt) {
    case DType::kF32: return "<f4";
    case DType::kF64: return "<f8";
    case DType::kF16: return "<f2";
    case DType::kI8: return "|i1";
    case DType::kU8: return "|u1";
    case DType::kI32: return "<i4";
    case DType::kI64: return "<i8";
    case DType::kBool: return "|b1";
    case DType::kI16: return "<i2";
    case DType::kU16: return "<u2";
    case DType::kU32: return "<u4";
    case DType::kU64: return "<u8";
    case DType::kBF16:
    case DType::kString: break;
  }
  return {};
}

void byte_swap(void* data, int64_t count, int size) {
  auto* p = static_cast<unsigned char*>(data);
  for (int64_t i = 0; i < count; ++i, p += size) std::reverse(p, p + size);
}

// NumPy's fixed-width strings: 'U<n>' (n UTF-32 code points, either byte order) and 'S<n>'
// (n bytes), NUL-padded. They read as string tensors.
struct StringDescr {
  bool utf32 = true;
  bool big = false;
  int64_t width = 0;  // characters per element
  int64_t bytes() const { return utf32 ? 4 * width : width; }
};

std::optional<StringDescr> string_descr(const std::string& descr) {
  std::string_view code = descr;
  char order = '|';
  if (!code.empty() && std::strchr("<>|=", code[0]) != nullptr) {
    order = code[0];
    code.remove_prefix(1);
  }
  if (code.size() < 2 || (code[0] != 'U' && code[0] != 'S') || code.size() > 9) return std::nullopt;
  StringDescr d;
  d.utf32 = code[0] == 'U';
  d.big = order == '>';
  for (char c : code.substr(1)) {
    if (c < '0' || c > '9') return std::nullopt;
    d.width = d.width * 10 + (c - '0');
  }
  if (d.width < 1) return std::nullopt;
  return d;
}

// The UTF-8 text of NumPy string elements; errors name the element.
Expected<Tensor> decode_strings(const std::string& raw, const Shape& shape, const StringDescr& d) {
  TRY(Tensor t, Tensor::create(DType::kString, shape));
  const size_t eb = static_cast<size_t>(d.bytes());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const char* e = raw.data() + static_cast<size_t>(i) * eb;
    std::string s;
    if (!d.utf32) {
      s.assign(e, eb);
    } else {
      std::u32string cps;
      for (int64_t k = 0; k < d.width; ++k) {
        const auto* b = reinterpret_cast<const unsigned char*>(e + 4 * k);
        const uint32_t cp = d.big ? (uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3])
                                  : (uint32_t{b[3]} << 24 | uint32_t{b[2]} << 16 | uint32_t{b[1]} << 8 | b[0]);
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
          return make_error("element " + std::to_string(i) + " holds " + std::to_string(cp) + ", which is not a Unicode code point");
        cps.push_back(cp);
      }
      s = code_points_to_utf8(cps);
    }
    while (!s.empty() && s.back() == '\0') s.pop_back();  // NumPy strips trailing NULs
    t.data<uint64_t>()[i] = intern_string(s);
  }
  return t;
}

// Reads exactly n bytes unless the stream ends; returns the count read.
Expected<size_t> read_fully(const npy_detail::ReadFn& read, void* dst, size_t n) {
  size_t got = 0;
  while (got < n) {
    TRY(size_t k, read(static_cast<char*>(dst) + got, n - got));
    if (k == 0) break;
    got += k;
  }
  return got;
}

uint32_t le_uint(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A Fortran-ordered array's elements moved to row-major order.
Tensor in_c_order(Tensor t, const Header& hdr) {
  if (!hdr.fortran || t.rank() <= 1 || t.numel() == 0) return t;  // an empty array has nothing to
                                                                  // reorder; its other dims may be huge
  // Column-major: element (i0, i1, ...) sits at i0 + s0 * (i1 + s1 * (...)).
  std::vector<int64_t> strides(hdr.shape.size());
  int64_t s = 1;
  for (size_t i = 0; i < hdr.shape.size(); ++i) {
    strides[i] = s;
    s *= std::max<int64_t>(hdr.shape[i], 1);
  }
  return t.view(hdr.shape, strides, 0).clone();
}

Expected<Tensor> decode_impl(const npy_detail::ReadFn& read, uint64_t total) {
  // ---- magic, version, header length ----
  unsigned char prefix[12];
  TRY(size_t n, read_fully(read, prefix, std::min<uint64_t>(total, 8)));
  if (std::memcmp(prefix, kMagic, std::min(n, kMagicLen)) != 0 || n == 0)
    return make_error("not a NumPy .npy file: the magic string \\x93NUMPY is missing");
  if (n < kMagicLen) return make_error("truncated: the file ends inside the magic string");
  if (n < 8) return make_error("truncated: the file ends inside the format version");
  const int major = prefix[6], minor = prefix[7];
  if (major < 1 || major > 3 || minor != 0)
    return make_error("unsupported .npy format version " + std::to_string(major) + "." +
                      std::to_string(minor) + " (Tessera reads 1.0, 2.0 and 3.0)");
  const int len_bytes = major == 1 ? 2 : 4;
  TRY(size_t m, read_fully(read, prefix + 8, std::min<uint64_t>(total - 8, len_bytes)));
  if (static_cast<int>(m) < len_bytes)
    return make_error("truncated: the file ends inside the header length");
  const uint64_t header_len = le_uint(prefix + 8, len_bytes);
  const uint64_t data_offset = 8 + len_bytes + header_len;
  if (data_offset > total)
    return make_error("header length " + std::to_string(header_len) +
                      " runs past the end of the data (" + std::to_string(total) + " bytes)");

  // ---- header dict ----
  std::string text(static_cast<size_t>(header_len), '\0');  // bounded by `total` just above
  TRY(size_t h, read_fully(read, text.data(), text.size()));
  if (h < text.size()) return make_error("truncated: the file ends inside the header");
  TRY(Header hdr, DictParser(text).parse());
  if (std::optional<StringDescr> sd = string_descr(hdr.descr)) {
    auto numel = checked_numel(hdr.shape, DType::kString);
    if (!numel) return make_error("header declares shape " + py_shape(hdr.shape) + ": " + numel.error().message);
    const uint64_t avail = total - data_offset;
    if (static_cast<uint64_t>(*numel) > avail / static_cast<uint64_t>(sd->bytes()) + 1 ||
        static_cast<uint64_t>(*numel) * static_cast<uint64_t>(sd->bytes()) != avail)
      return make_error("header declares shape " + py_shape(hdr.shape) + " of " + hdr.descr + " but " +
                        std::to_string(avail) + " bytes of data follow");
    std::string raw(static_cast<size_t>(avail), '\0');
    TRY(size_t got, read_fully(read, raw.data(), raw.size()));
    if (got < raw.size()) return make_error("truncated: the data ends after " + std::to_string(got) + " bytes");
    TRY(Tensor t, decode_strings(raw, hdr.shape, *sd));
    return in_c_order(std::move(t), hdr);
  }
  bool swap = false;
  TRY(DType dtype, dtype_of_descr(hdr.descr, &swap));

  // ---- sizes, checked before allocating ----
  auto numel = checked_numel(hdr.shape, dtype);
  if (!numel)
    return make_error("header declares shape " + py_shape(hdr.shape) + ": " + numel.error().message);
  const uint64_t need = static_cast<uint64_t>(*numel) * static_cast<uint64_t>(dtype_size(dtype));
  const uint64_t avail = total - data_offset;
  const std::string decl = "header declares shape " + py_shape(hdr.shape) + " of " + hdr.descr +
                           " = " + std::to_string(need) + " bytes but ";
  if (avail < need) return make_error(decl + "only " + std::to_string(avail) + " bytes follow");
  if (avail > need) return make_error(decl + std::to_string(avail) + " bytes follow");

  // ---- data ----
  TRY(Tensor t, Tensor::create(dtype, hdr.shape));
  TRY(size_t got, read_fully(read, t.raw_data(), static_cast<size_t>(need)));
  if (got < need)
    return make_error("truncated: the data ends after " + std::to_string(got) + " of " +
                      std::to_string(need) + " bytes");
  char extra;
  TRY(size_t more, read(&extra, 1));  // also lets a zip member verify its CRC at the end
  if (more != 0) return make_error("unexpected bytes after the " + std::to_string(need) +
                                   " bytes of array data");
  if (swap) byte_swap(t.raw_data(), t.numel(), dtype_size(dtype));
  if (dtype == DType::kBool) {
    auto* p = t.data<uint8_t>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0 ? 1 : 0;
  }
  return in_c_order(std::move(t), hdr);
}

}  // namespace

namespace npy_detail {
Expected<Tensor> decode(const ReadFn& read, uint64_t total, const std::string& where) {
  try {
    auto t = decode_impl(read, total);
    if (!t) return t.error().where.empty() ? Error{t.error().message, where, -1} : t.error();
    return t;
  } catch (const std::bad_alloc&) {
    return make_error("out of memory decoding the array", where);
  }
}
}  // namespace npy_detail

Expected<Tensor> parse_npy(const void* data, size_t size, const std::string& where) {
  size_t pos = 0;
  const auto* bytes = static_cast<const char*>(data);
  npy_detail::ReadFn read = [&](void* dst, size_t n) -> Expected<size_t> {
    const size_t k = std::min(n, size - pos);
    if (k > 0) std::memcpy(dst, bytes + pos, k);
    pos += k;
    return k;
  };
  return npy_detail::decode(read, size, where);
}

Expected<Tensor> read_npy(const std::string& path) {
  RETURN_IF_ERROR(require_regular_file(path));  // fopen would block on a FIFO
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return make_error("cannot open for reading: " + std::string(std::strerror(errno)), path);
  struct stat st;
  if (fstat(fileno(f.get()), &st) != 0 || !S_ISREG(st.st_mode))
    return make_error("not a regular file", path);
  npy_detail::ReadFn read = [&](void* dst, size_t n) -> Expected<size_t> {
    const size_t k = std::fread(dst, 1, n, f.get());
    if (k < n && std::ferror(f.get()))
      return make_error("read error: " + std::string(std::strerror(errno)), path);
    return k;
  };
  return npy_detail::decode(read, static_cast<uint64_t>(st.st_size), path);
}

Expected<std::string> encode_npy(const Tensor& tensor) {
  if (!tensor.is_tensor()) return make_error("a sequence or an optional is not one array; save its tensors one by one");
  if (tensor.dtype() == DType::kBF16)
    return make_error("bf16 has no NumPy dtype; cast the tensor to f32 before saving it as .npy");
  const Tensor t = tensor.contiguous();
  std::string descr = descr_of(t.dtype());
  std::string string_data;  // a string tensor's elements as '<U<n>' (or '|S<n>' when not UTF-8)
  if (t.dtype() == DType::kString) {
    bool utf8 = true;
    size_t width = 1;
    std::vector<std::u32string> cps;
    for (int64_t i = 0; i < t.numel(); ++i) utf8 = utf8 && is_valid_utf8(t.string_at(i));
    for (int64_t i = 0; i < t.numel(); ++i) {
      const std::string& e = t.string_at(i);
      if (!utf8) {
        width = std::max(width, e.size());
        continue;
      }
      std::u32string u = utf8_to_code_points(e);
      width = std::max(width, u.size());
      cps.push_back(std::move(u));
    }
    descr = (utf8 ? "<U" : "|S") + std::to_string(width);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (utf8) {
        std::u32string u = cps[static_cast<size_t>(i)];
        u.resize(width, U'\0');
        string_data.append(reinterpret_cast<const char*>(u.data()), 4 * width);
      } else {
        std::string e = t.string_at(i);
        e.resize(width, '\0');
        string_data += e;
      }
    }
  }
  // The same bytes as numpy.lib.format.write_array (NumPy 1.24): sorted keys, room for the first
  // axis to grow to 21 digits, padded with spaces and '\n' to a multiple of 64 bytes.
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " +
                     py_shape(t.shape()) + ", }";
  if (t.rank() > 0) {
    const size_t digits = std::to_string(t.shape()[0]).size();
    if (digits < kGrowthDigits) dict.append(kGrowthDigits - digits, ' ');
  }
  int major = 1;
  size_t len_bytes = 2;
  size_t hlen = dict.size() + 1;
  size_t pad = kAlign - (8 + len_bytes + hlen) % kAlign;
  if (hlen + pad > 0xffff) {
    major = 2;
    len_bytes = 4;
    pad = kAlign - (8 + len_bytes + hlen) % kAlign;
  }
  const uint64_t header_len = hlen + pad;
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(pad, ' ');
  out += '\n';
  if (t.dtype() == DType::kString) out += string_data;
  else out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

Status write_npy(const std::string& path, const Tensor& t) {
  auto bytes = encode_npy(t);
  if (!bytes) return make_error(bytes.error().message, path);
  return write_file_atomic(path, *bytes);
}

}  // namespace tessera::formats
