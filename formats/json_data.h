// Internal to formats/: tensor data as JSON arrays (numbers that read back bit for bit), JSON
// pointer tokens, and the pretty printer of the JSON graph format.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace tessera::formats::json_detail {

// Insertion-ordered, so that files keep their fields in the order a person expects.
using Json = nlohmann::ordered_json;

// Escapes a key for use in a JSON pointer ("~" -> "~0", "/" -> "~1").
std::string pointer_token(std::string_view key);

// One element of dtype `dt` (a float for the float types) as JSON: the shortest decimal that
// reads back to the same bits in `dt`; "nan", "inf" and "-inf" as strings.
Json float_to_json(double v, DType dt);
// Reads a JSON number or one of the strings "nan", "inf", "+inf", "-inf" (any case; also
// "infinity"). Returns false for anything else.
bool json_to_float(const Json& j, double* out);

// The elements of `t` in row-major order: numbers, or true/false for bool.
Json tensor_data_to_json(const Tensor& t);
// A tensor of `dtype` and `shape` from a flat JSON array in row-major order. Errors have
// Error.where = the relative pointer of the offending element ("/5") or "" for the array.
Expected<Tensor> tensor_from_json(const Json& data, DType dtype, const Shape& shape);

// 2-space indented text; arrays of scalars on one line, and objects on one line when they hold
// only scalars and arrays of scalars and fit in 100 columns. Ends with a newline.
std::string dump_pretty(const Json& j);

}  // namespace tessera::formats::json_detail
