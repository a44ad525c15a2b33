// Tensor data to and from JSON arrays, exact float printing, and the JSON pretty printer.
#include "formats/json_data.h"

#include "engine/core/strings.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace tessera::formats::json_detail {
namespace {

constexpr size_t kCompactWidth = 100;

bool same_bits_in(DType dt, double candidate, double original) {
  switch (dt) {
    case DType::kF32: {
      const float a = static_cast<float>(candidate), b = static_cast<float>(original);
      return std::memcmp(&a, &b, sizeof a) == 0;
    }
    case DType::kF16:
      return float_to_half(static_cast<float>(candidate)) == float_to_half(static_cast<float>(original));
    case DType::kBF16:
      return float_to_bf16(static_cast<float>(candidate)) == float_to_bf16(static_cast<float>(original));
    default:
      return std::memcmp(&candidate, &original, sizeof candidate) == 0;
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A JSON value shortened for an error message.
std::string brief(const Json& j) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

Error element_error(size_t i, const std::string& msg) {
  return make_error(msg, "/" + std::to_string(i));
}

template <class T>
Status read_ints(const Json& data, Tensor& t) {
  T* p = static_cast<T*>(t.raw_data());
  for (size_t i = 0; i < data.size(); ++i) {
    const Json& e = data[i];
    if (!e.is_number_integer())
      return element_error(i, "expected an integer for " + std::string(dtype_name(t.dtype())) +
                                  " data, got " + e.type_name() +
                                  " " + brief(e));
    bool fits;
    if (e.is_number_unsigned()) {
      fits = e.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    } else {
      const int64_t v = e.get<int64_t>();
      fits = v >= static_cast<int64_t>(std::numeric_limits<T>::lowest()) &&
             (v < 0 || static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max()));
    }
    if (!fits) return element_error(i, brief(e) + " does not fit " + std::string(dtype_name(t.dtype())));
    p[i] = e.is_number_unsigned() ? static_cast<T>(e.get<uint64_t>()) : static_cast<T>(e.get<int64_t>());
  }
  return Status::ok();
}

bool is_scalar(const Json& j) { return !j.is_array() && !j.is_object(); }
bool is_flat(const Json& j) {
  if (is_scalar(j)) return true;
  if (!j.is_array()) return false;
  for (const Json& e : j)
    if (!is_scalar(e)) return false;
  return true;
}

std::string scalar_text(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void dump_into(const Json& j, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent) + 2, ' ');
  if (j.is_array()) {
    if (j.empty()) {
      out += "[]";
      return;
    }
    if (is_flat(j)) {
      out += "[";
      bool first = true;
      for (const Json& e : j) {
        out += first ? "" : ", ";
        out += scalar_text(e);
        first = false;
      }
      out += "]";
      return;
    }
    out += "[\n";
    for (size_t i = 0; i < j.size(); ++i) {
      out += pad;
      dump_into(j[i], indent + 2, out);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<size_t>(indent), ' ') + "]";
    return;
  }
  if (j.is_object()) {
    if (j.empty()) {
      out += "{}";
      return;
    }
    bool compact = true;
    for (const auto& item : j.items()) compact = compact && is_flat(item.value());
    if (compact) {
      std::string line = "{";
      bool first = true;
      for (const auto& item : j.items()) {
        line += first ? "" : ", ";
        line += scalar_text(Json(item.key())) + ": ";
        dump_into(item.value(), indent, line);
        first = false;
      }
      line += "}";
      if (line.size() + static_cast<size_t>(indent) <= kCompactWidth) {
        out += line;
        return;
      }
    }
    out += "{\n";
    size_t i = 0;
    for (const auto& item : j.items()) {
      out += pad + scalar_text(Json(item.key())) + ": ";
      dump_into(item.value(), indent + 2, out);
      out += ++i < j.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<size_t>(indent), ' ') + "}";
    return;
  }
  out += scalar_text(j);
}

}  // namespace

std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Json float_to_json(double v, DType dt) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (dt == DType::kF64) return v;
  // The shortest %g form whose value, converted the way the reader converts it, has v's bits.
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    const double candidate = std::strtod(buf, nullptr);
    if (same_bits_in(dt, candidate, v)) return candidate;
  }
  return v;
}

bool json_to_float(const Json& j, double* out) {
  if (j.is_number()) {
    *out = j.get<double>();
    return true;
  }
  if (!j.is_string()) return false;
  const std::string s = lower(j.get<std::string>());
  if (s == "nan") {
    *out = std::nan("");
  } else if (s == "inf" || s == "+inf" || s == "infinity" || s == "+infinity") {
    *out = HUGE_VAL;
  } else if (s == "-inf" || s == "-infinity") {
    *out = -HUGE_VAL;
  } else {
    return false;
  }
  return true;
}

Json tensor_data_to_json(const Tensor& tensor) {
  const Tensor t = tensor.contiguous();
  Json arr = Json::array();
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::kI64:
      for (int64_t i = 0; i < n; ++i) arr.push_back(t.data<int64_t>()[i]);
      break;
    case DType::kU64:
      for (int64_t i = 0; i < n; ++i) arr.push_back(t.data<uint64_t>()[i]);
      break;
    case DType::kI32:
    case DType::kU32:
    case DType::kI16:
    case DType::kU16:
    case DType::kI8:
    case DType::kU8:
      for (int64_t i = 0; i < n; ++i) arr.push_back(static_cast<int64_t>(t.get(i)));
      break;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) arr.push_back(t.data<uint8_t>()[i] != 0);
      break;
    case DType::kString:
      for (int64_t i = 0; i < n; ++i) arr.push_back(t.string_at(i));
      break;
    default:
      for (int64_t i = 0; i < n; ++i) arr.push_back(float_to_json(t.get(i), t.dtype()));
      break;
  }
  return arr;
}

Expected<Tensor> tensor_from_json(const Json& data, DType dtype, const Shape& shape) {
  if (!data.is_array()) return make_error(std::string("expected an array, got ") + data.type_name());
  TRY(int64_t numel, checked_numel(shape, dtype));
  if (static_cast<uint64_t>(numel) != data.size())
    return make_error("the data has " + std::to_string(data.size()) + " elements but the type " +
                      std::string(dtype_name(dtype)) + shape_to_string(shape) + " holds " +
                      std::to_string(numel));
  TRY(Tensor t, Tensor::create(dtype, shape));
  switch (dtype) {
    case DType::kI8: RETURN_IF_ERROR(read_ints<int8_t>(data, t)); break;
    case DType::kU8: RETURN_IF_ERROR(read_ints<uint8_t>(data, t)); break;
    case DType::kI16: RETURN_IF_ERROR(read_ints<int16_t>(data, t)); break;
    case DType::kU16: RETURN_IF_ERROR(read_ints<uint16_t>(data, t)); break;
    case DType::kI32: RETURN_IF_ERROR(read_ints<int32_t>(data, t)); break;
    case DType::kU32: RETURN_IF_ERROR(read_ints<uint32_t>(data, t)); break;
    case DType::kI64: RETURN_IF_ERROR(read_ints<int64_t>(data, t)); break;
    case DType::kU64: RETURN_IF_ERROR(read_ints<uint64_t>(data, t)); break;
    case DType::kString:
      for (size_t i = 0; i < data.size(); ++i) {
        if (!data[i].is_string()) return element_error(i, "expected a string for string data, got " + brief(data[i]));
        t.data<uint64_t>()[i] = intern_string(data[i].get<std::string>());
      }
      break;
    case DType::kBool:
      for (size_t i = 0; i < data.size(); ++i) {
        const Json& e = data[i];
        if (e.is_boolean()) {
          t.data<uint8_t>()[i] = e.get<bool>() ? 1 : 0;
        } else if (e.is_number_integer() && (e.get<int64_t>() == 0 || e.get<int64_t>() == 1)) {
          t.data<uint8_t>()[i] = static_cast<uint8_t>(e.get<int64_t>());
        } else {
          return element_error(i, "expected true, false, 0 or 1 for bool data, got " + brief(e));
        }
      }
      break;
    default:
      for (size_t i = 0; i < data.size(); ++i) {
        double v;
        if (!json_to_float(data[i], &v))
          return element_error(i, "expected a number (or \"nan\", \"inf\", \"-inf\") for " +
                                      std::string(dtype_name(dtype)) + " data, got " +
                                      brief(data[i]));
        t.set(static_cast<int64_t>(i), v);
      }
      break;
  }
  return t;
}

std::string dump_pretty(const Json& j) {
  std::string out;
  dump_into(j, 0, out);
  return out + "\n";
}

}  // namespace tessera::formats::json_detail
