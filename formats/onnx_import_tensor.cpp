// ONNX TensorProto decoding: data types, raw and typed data, external data files, and
// read_onnx_tensor_file. Every size from the file is checked before allocating.
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "engine/core/strings.h"
#include "formats/file_io.h"
#include "formats/onnx_import.h"
#include "formats/onnx_import_internal.h"

#include <onnx/onnx-data.pb.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "formats/onnx_import_tensor.cpp assumes a little-endian host (ONNX raw_data is little-endian)"
#endif

namespace tessera::formats::onnx_internal {
namespace {

using TP = onnx::TensorProto;

// Bytes a tensor of these dims would need, as a double (no overflow), for messages and limits.
double bytes_needed(const Shape& dims, DType dt) {
  double n = dtype_size(dt);
  for (int64_t d : dims) n *= static_cast<double>(d);
  return n;
}

std::string format_bytes(double b) {
  char buf[64];
  if (b < 1e6)
    std::snprintf(buf, sizeof buf, "%.0f bytes", b);
  else
    std::snprintf(buf, sizeof buf, "%.4g bytes", b);
  return buf;
}

// A relative path that stays inside the model's folder.
Status check_external_path(const std::string& location, const std::string& what) {
  if (location.empty()) return make_error(what + ": external data has no 'location'");
  if (location[0] == '/')
    return make_error(what + ": external data location '" + location + "' is absolute; only paths relative to the model's folder are allowed");
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0)
      return make_error(what + ": external data location '" + location + "' leaves the model's folder");
    start = end + 1;
  }
  if (location.find('\0') != std::string::npos)
    return make_error(what + ": external data location contains a NUL byte");
  return Status::ok();
}

Expected<int64_t> parse_nonnegative(const std::string& text, const std::string& key, const std::string& what) {
  if (text.empty() || text.size() > 18) return make_error(what + ": external data '" + key + "' is not a valid size: '" + text + "'");
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return make_error(what + ": external data '" + key + "' is not a valid size: '" + text + "'");
    v = v * 10 + (c - '0');
  }
  return v;
}

// Where external data lives, checked against the file's size (nothing is read yet).
struct ExternalSpan {
  std::string path;
  int64_t offset = 0;
};

Expected<ExternalSpan> locate_external(const TP& proto, const std::string& base_dir, const std::string& what,
                                       int64_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      TRY(offset, parse_nonnegative(kv.value(), "offset", what));
    } else if (kv.key() == "length") {
      TRY(length, parse_nonnegative(kv.value(), "length", what));
    }
  }
  RETURN_IF_ERROR(check_external_path(location, what));
  if (length >= 0 && length != nbytes)
    return make_error(what + ": external data length " + std::to_string(length) + " does not match the " +
                      std::to_string(nbytes) + " bytes its dims and type need");
  const std::string path = join_path(base_dir, location);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return make_error(what + ": external data file '" + path + "' is missing or not a regular file");
  const int64_t size = static_cast<int64_t>(st.st_size);
  if (offset > size || size - offset < nbytes)
    return make_error(what + ": external data file '" + path + "' holds " + std::to_string(size) +
                      " bytes; " + std::to_string(nbytes) + " are needed from offset " + std::to_string(offset));
  return ExternalSpan{path, offset};
}

Status read_external(const ExternalSpan& span, const std::string& what, void* dst, int64_t nbytes) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(span.path.c_str(), "rb"), &std::fclose);
  if (!f) return make_error(what + ": cannot open external data file '" + span.path + "'");
  if (std::fseek(f.get(), static_cast<long>(span.offset), SEEK_SET) != 0 ||
      (nbytes > 0 && std::fread(dst, 1, static_cast<size_t>(nbytes), f.get()) != static_cast<size_t>(nbytes)))
    return make_error(what + ": cannot read " + std::to_string(nbytes) + " bytes from external data file '" + span.path + "'");
  return Status::ok();
}

// Number of values in the typed field that holds elements of `dt`, and the field's name.
std::pair<int64_t, const char*> typed_count(const TP& proto, DType dt) {
  switch (dt) {
    case DType::kF32: return {proto.float_data_size(), "float_data"};
    case DType::kF64: return {proto.double_data_size(), "double_data"};
    case DType::kI64: return {proto.int64_data_size(), "int64_data"};
    case DType::kU32:
    case DType::kU64: return {proto.uint64_data_size(), "uint64_data"};
    case DType::kString: return {proto.string_data_size(), "string_data"};
    default: return {proto.int32_data_size(), "int32_data"};
  }
}

// Copies typed-field values into the tensor, converting each element.
template <class Field, class Fn>
Status copy_typed(const Field& field, int64_t numel, const std::string& field_name, const std::string& what, Fn&& store) {
  if (static_cast<int64_t>(field.size()) != numel)
    return make_error(what + ": " + field_name + " holds " + std::to_string(field.size()) + " values but the dims say " +
                      std::to_string(numel));
  for (int64_t i = 0; i < numel; ++i) store(i, field.Get(static_cast<int>(i)));
  return Status::ok();
}

}  // namespace

std::optional<DType> dtype_from_onnx(int32_t t) {
  switch (t) {
    case TP::FLOAT: return DType::kF32;
    case TP::UINT8: return DType::kU8;
    case TP::INT8: return DType::kI8;
    case TP::INT32: return DType::kI32;
    case TP::INT64: return DType::kI64;
    case TP::BOOL: return DType::kBool;
    case TP::FLOAT16: return DType::kF16;
    case TP::DOUBLE: return DType::kF64;
    case TP::BFLOAT16: return DType::kBF16;
    case TP::INT16: return DType::kI16;
    case TP::UINT16: return DType::kU16;
    case TP::UINT32: return DType::kU32;
    case TP::UINT64: return DType::kU64;
    case TP::STRING: return DType::kString;
    default: return std::nullopt;
  }
}

std::string onnx_dtype_name(int32_t t) {
  if (TP::DataType_IsValid(t)) return TP::DataType_Name(static_cast<TP::DataType>(t));
  return "data type " + std::to_string(t);
}

Expected<Tensor> decode_tensor(const TP& proto, const std::string& base_dir, const std::string& what, TP* adopt) {
  auto dt = dtype_from_onnx(proto.data_type());
  if (!dt) return make_error(what + ": element type " + onnx_dtype_name(proto.data_type()) + " is not supported by Tessera");
  if (proto.has_segment()) return make_error(what + ": segmented tensors are not supported");
  Shape dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims)
    if (d < 0) return make_error(what + ": negative dimension " + std::to_string(d) + " in dims " + shape_to_string(dims));
  const double need = bytes_needed(dims, *dt);
  if (need > static_cast<double>(kMaxTensorBytes))
    return make_error(what + ": dims " + shape_to_string(dims) + " of " + std::string(dtype_name(*dt)) + " need " +
                      format_bytes(need) + ", more than the " + std::to_string(kMaxTensorBytes >> 30) + " GiB limit");
  TRY(int64_t numel, checked_numel(dims, *dt));
  const int64_t nbytes = numel * dtype_size(*dt);
  const bool external = proto.data_location() == TP::EXTERNAL;

  // Values in one field only: ONNX allows one of them, and which one a reader uses is a guess.
  std::string fields;
  int nfields = 0;
  auto field = [&](bool present, const char* name) {
    if (!present) return;
    fields += (nfields++ ? ", " : "") + std::string(name);
  };
  field(proto.has_raw_data(), "raw_data");
  field(external, "external data");
  field(proto.float_data_size() > 0, "float_data");
  field(proto.int32_data_size() > 0, "int32_data");
  field(proto.string_data_size() > 0, "string_data");
  field(proto.int64_data_size() > 0, "int64_data");
  field(proto.double_data_size() > 0, "double_data");
  field(proto.uint64_data_size() > 0, "uint64_data");
  if (nfields > 1) return make_error(what + ": holds values in " + fields + " (ONNX allows exactly one of them)");

  // Check that the data present matches before allocating anything.
  std::optional<ExternalSpan> span;
  if (external) {
    TRY(ExternalSpan s, locate_external(proto, base_dir, what, nbytes));
    span = std::move(s);
  } else if (proto.has_raw_data()) {
    if (*dt == DType::kString) return make_error(what + ": a STRING tensor keeps its values in string_data, not raw_data");
    if (static_cast<int64_t>(proto.raw_data().size()) != nbytes)
      return make_error(what + ": raw_data holds " + std::to_string(proto.raw_data().size()) + " bytes but dims " +
                        shape_to_string(dims) + " of " + std::string(dtype_name(*dt)) + " need " + std::to_string(nbytes));
  } else {
    auto [count, field] = typed_count(proto, *dt);
    if (count != numel)
      return make_error(what + ": " + field + " holds " + std::to_string(count) + " values but the dims say " +
                        std::to_string(numel));
  }
  if (adopt && proto.has_raw_data() && nbytes > 0) {
    // The message's string becomes the tensor's storage (16-byte aligned; no kernel needs more).
    std::shared_ptr<std::string> bytes(adopt->release_raw_data());
    Tensor t = Tensor::wrap(bytes->data(), *dt, dims, bytes);
    if (*dt == DType::kBool) {
      auto* p = t.data<uint8_t>();
      for (int64_t i = 0; i < numel; ++i) p[i] = p[i] != 0;
    }
    return t;
  }
  auto created = Tensor::create(*dt, dims);
  if (!created) return make_error(what + ": " + created.error().message);
  Tensor t = std::move(created).value();
  if (span) {
    RETURN_IF_ERROR(read_external(*span, what, t.raw_data(), nbytes));
    return t;
  }
  if (proto.has_raw_data()) {
    if (nbytes > 0) std::memcpy(t.raw_data(), proto.raw_data().data(), static_cast<size_t>(nbytes));
    if (*dt == DType::kBool) {
      auto* p = t.data<uint8_t>();
      for (int64_t i = 0; i < numel; ++i) p[i] = p[i] != 0;
    }
    return t;
  }
  switch (*dt) {
    case DType::kF32:
      RETURN_IF_ERROR(copy_typed(proto.float_data(), numel, "float_data", what,
                                 [&](int64_t i, float v) { t.data<float>()[i] = v; }));
      break;
    case DType::kF64:
      RETURN_IF_ERROR(copy_typed(proto.double_data(), numel, "double_data", what,
                                 [&](int64_t i, double v) { t.data<double>()[i] = v; }));
      break;
    case DType::kI64:
      RETURN_IF_ERROR(copy_typed(proto.int64_data(), numel, "int64_data", what,
                                 [&](int64_t i, int64_t v) { t.data<int64_t>()[i] = v; }));
      break;
    case DType::kF16:
    case DType::kBF16:  // the 16 bits of each element, stored in int32_data
      RETURN_IF_ERROR(copy_typed(proto.int32_data(), numel, "int32_data", what, [&](int64_t i, int32_t v) {
        t.data<uint16_t>()[i] = static_cast<uint16_t>(v & 0xffff);
      }));
      break;
    case DType::kBool:
      RETURN_IF_ERROR(copy_typed(proto.int32_data(), numel, "int32_data", what,
                                 [&](int64_t i, int32_t v) { t.data<uint8_t>()[i] = v != 0; }));
      break;
    case DType::kU8:
      RETURN_IF_ERROR(copy_typed(proto.int32_data(), numel, "int32_data", what,
                                 [&](int64_t i, int32_t v) { t.data<uint8_t>()[i] = static_cast<uint8_t>(v); }));
      break;
    case DType::kI8:
      RETURN_IF_ERROR(copy_typed(proto.int32_data(), numel, "int32_data", what,
                                 [&](int64_t i, int32_t v) { t.data<int8_t>()[i] = static_cast<int8_t>(v); }));
      break;
    case DType::kI32:
      RETURN_IF_ERROR(copy_typed(proto.int32_data(), numel, "int32_data", what,
                                 [&](int64_t i, int32_t v) { t.data<int32_t>()[i] = v; }));
      break;
    case DType::kI16:
      RETURN_IF_ERROR(copy_typed(proto.int32_data(), numel, "int32_data", what,
                                 [&](int64_t i, int32_t v) { t.data<int16_t>()[i] = static_cast<int16_t>(v); }));
      break;
    case DType::kU16:
      RETURN_IF_ERROR(copy_typed(proto.int32_data(), numel, "int32_data", what,
                                 [&](int64_t i, int32_t v) { t.data<uint16_t>()[i] = static_cast<uint16_t>(v); }));
      break;
    case DType::kU32:
      RETURN_IF_ERROR(copy_typed(proto.uint64_data(), numel, "uint64_data", what,
                                 [&](int64_t i, uint64_t v) { t.data<uint32_t>()[i] = static_cast<uint32_t>(v); }));
      break;
    case DType::kU64:
      RETURN_IF_ERROR(copy_typed(proto.uint64_data(), numel, "uint64_data", what,
                                 [&](int64_t i, uint64_t v) { t.data<uint64_t>()[i] = v; }));
      break;
    case DType::kString:  // bytes, kept as they are (UTF-8 is checked by the ops that need it)
      RETURN_IF_ERROR(copy_typed(proto.string_data(), numel, "string_data", what,
                                 [&](int64_t i, const std::string& v) { t.data<uint64_t>()[i] = intern_string(v); }));
      break;
  }
  return t;
}

}  // namespace tessera::formats::onnx_internal

namespace tessera::formats {

Expected<std::pair<std::string, Tensor>> read_onnx_tensor_file(const std::string& path) {
  TRY(std::string bytes, read_file(path));
  onnx::TensorProto proto;
  bool ok = false;
  try {
    ok = proto.ParseFromString(bytes);
  } catch (const std::exception& e) {
    return make_error(std::string("protobuf: ") + e.what(), path);
  }
  if (!ok) return make_error("not a valid ONNX TensorProto (truncated or corrupt protobuf)", path);
  auto t = onnx_internal::decode_tensor(proto, parent_dir(path), "tensor '" + proto.name() + "'");
  if (!t) return make_error(t.error().message, path);
  return std::make_pair(proto.name(), std::move(t).value());
}

namespace {

template <class Proto>
Expected<Proto> parse_proto_file(const std::string& path, const char* what) {
  TRY(std::string bytes, read_file(path));
  Proto proto;
  bool ok = false;
  try {
    ok = proto.ParseFromString(bytes);
  } catch (const std::exception& e) {
    return make_error(std::string("protobuf: ") + e.what(), path);
  }
  if (!ok) return make_error(std::string("not a valid ONNX ") + what + " (truncated or corrupt protobuf)", path);
  return proto;
}

Expected<Tensor> decode_sequence(const onnx::SequenceProto& sp, DType declared, const std::string& dir,
                                 const std::string& where) {
  if (sp.elem_type() != onnx::SequenceProto::TENSOR && sp.tensor_values_size() + sp.elem_type() != 0)
    return make_error("sequence '" + sp.name() + "' holds element type " + std::to_string(sp.elem_type()) +
                          "; Tessera reads sequences of tensors",
                      where);
  std::vector<Tensor> items;
  for (int i = 0; i < sp.tensor_values_size(); ++i) {
    auto t = onnx_internal::decode_tensor(sp.tensor_values(i), dir, "sequence '" + sp.name() + "' item " + std::to_string(i));
    if (!t) return make_error(t.error().message, where);
    if (t->dtype() != declared)
      return make_error("sequence '" + sp.name() + "' item " + std::to_string(i) + " is " +
                            std::string(dtype_name(t->dtype())) + ", the sequence's type says " +
                            std::string(dtype_name(declared)),
                        where);
    items.push_back(std::move(t).value());
  }
  return Tensor::sequence(declared, std::move(items));
}

}  // namespace

Expected<std::pair<std::string, Tensor>> read_onnx_value_file(const std::string& path, const ir::TensorType& declared) {
  const std::string dir = parent_dir(path);
  switch (declared.kind) {
    case TypeKind::kTensor: return read_onnx_tensor_file(path);
    case TypeKind::kSequence: {
      TRY(onnx::SequenceProto sp, parse_proto_file<onnx::SequenceProto>(path, "SequenceProto"));
      TRY(Tensor t, decode_sequence(sp, declared.dtype, dir, path));
      return std::make_pair(sp.name(), std::move(t));
    }
    case TypeKind::kOptional:
    case TypeKind::kOptionalSequence: {
      TRY(onnx::OptionalProto op, parse_proto_file<onnx::OptionalProto>(path, "OptionalProto"));
      std::vector<Tensor> item;
      if (op.has_tensor_value()) {
        auto t = onnx_internal::decode_tensor(op.tensor_value(), dir, "optional '" + op.name() + "'");
        if (!t) return make_error(t.error().message, path);
        item.push_back(std::move(t).value());
      } else if (op.has_sequence_value()) {
        TRY(Tensor t, decode_sequence(op.sequence_value(), declared.dtype, dir, path));
        item.push_back(std::move(t));
      }
      return std::make_pair(op.name(), Tensor::optional(declared.dtype, std::move(item)));
    }
  }
  return make_error("unknown value kind", path);
}

}  // namespace tessera::formats
