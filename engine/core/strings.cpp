// The intern table of string elements and UTF-8 validation.
#include "engine/core/strings.h"

#include <deque>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace tessera {
namespace {

struct Table {
  std::shared_mutex mu;
  std::deque<std::string> strings{std::string()};  // deque: references stay valid as it grows
  std::unordered_map<std::string_view, uint64_t> ids{{std::string_view(), 0}};
};

Table& table() {
  static Table* t = new Table();  // never destroyed: strings are readable until exit
  return *t;
}

}  // namespace

uint64_t intern_string(std::string_view s) {
  Table& t = table();
  {
    std::shared_lock<std::shared_mutex> lock(t.mu);
    auto it = t.ids.find(s);
    if (it != t.ids.end()) return it->second;
  }
  std::unique_lock<std::shared_mutex> lock(t.mu);
  auto it = t.ids.find(s);
  if (it != t.ids.end()) return it->second;
  t.strings.emplace_back(s);
  const uint64_t id = t.strings.size() - 1;
  t.ids.emplace(std::string_view(t.strings.back()), id);
  return id;
}

const std::string& interned_string(uint64_t id) {
  Table& t = table();
  std::shared_lock<std::shared_mutex> lock(t.mu);
  return id < t.strings.size() ? t.strings[id] : t.strings[0];
}

bool is_valid_utf8(std::string_view s, size_t* bad_offset) {
  size_t i = 0;
  const size_t n = s.size();
  auto fail = [&](size_t at) {
    if (bad_offset) *bad_offset = at;
    return false;
  };
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return fail(i);
    if (i + static_cast<size_t>(len) > n) return fail(i);
    for (int k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc & 0xC0) != 0x80) return fail(i);
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return fail(i);
    i += static_cast<size_t>(len);
  }
  return true;
}

std::u32string utf8_to_code_points(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string code_points_to_utf8(std::u32string_view cps) {
  std::string out;
  for (char32_t cp : cps) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

}  // namespace tessera
