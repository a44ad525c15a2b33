// String elements. A string tensor (DType::kString) stores 8-byte ids into this process-wide,
// append-only intern table, so every kernel that moves elements as bytes (Reshape, Gather,
// Concat, Transpose, ...) moves strings too, and equal strings have equal ids. Interned strings
// live until the process ends: a server that sees unboundedly many distinct strings grows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

// The id of `s` (the same id for the same bytes); id 0 is the empty string, so a zero-filled
// string tensor holds empty strings. Thread-safe.
uint64_t intern_string(std::string_view s);
// The string of an id from intern_string (an unknown id gives the empty string). The reference
// stays valid for the life of the process.
const std::string& interned_string(uint64_t id);
// Is `s` well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF)? On
// failure `bad_offset` (when given) is the offset of the first bad byte.
bool is_valid_utf8(std::string_view s, size_t* bad_offset = nullptr);
// The code points of valid UTF-8 (check is_valid_utf8 first), and back.
std::u32string utf8_to_code_points(std::string_view s);
std::string code_points_to_utf8(std::u32string_view cps);

}  // namespace tessera
