// Tests for formats/npy.cpp: NumPy fixtures, byte-exact encoding, round trips, bad input.
#include "tests/support/paths.h"
#include "formats/npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "formats/file_io.h"

namespace tessera::formats {
namespace {

const std::string kData = tessera::test::source_dir() + "/tests/formats/data/";

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera_npy_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string slurp(const std::string& path) {
  auto s = read_file(path);
  EXPECT_TRUE(s.has_value()) << path;
  return s ? *s : std::string();
}

// A .npy file with the given header dict text and data bytes (header padded like NumPy's).
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  std::string h = dict;
  const size_t len_bytes = major == 1 ? 2 : 4;
  while ((8 + len_bytes + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return out + h + data;
}

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

Error parse_error(const std::string& bytes) {
  auto t = parse_npy(bytes.data(), bytes.size(), "mem.npy");
  EXPECT_FALSE(t.has_value());
  return t ? Error{} : t.error();
}

// ---- real NumPy files ----

TEST(NpyFixtures, F32) {
  auto t = read_npy(kData + "f32.npy");
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ(t->dtype(), DType::kF32);
  EXPECT_EQ(t->shape(), (Shape{2, 3}));
  EXPECT_EQ(t->to_doubles(), (std::vector<double>{-1.0, -0.5, 0.0, 0.5, 1.0, 1.5}));
}

TEST(NpyFixtures, EveryDType) {
  struct Case {
    const char* file;
    DType dtype;
    Shape shape;
    std::vector<double> values;
  };
  const Case cases[] = {
      {"f64.npy", DType::kF64, {3}, {0.1, -2.0, 1e300}},
      {"f16.npy", DType::kF16, {4}, {1.0, -0.5, 65504.0, 0.0}},
      {"i8.npy", DType::kI8, {4}, {-128, -1, 0, 127}},
      {"u8.npy", DType::kU8, {4}, {0, 1, 200, 255}},
      {"i32.npy", DType::kI32, {2, 2}, {-2147483648.0, 0, 1, 2147483647.0}},
      {"bool.npy", DType::kBool, {3}, {1, 0, 1}},
      {"f32_v2.npy", DType::kF32, {2, 3}, {-1.0, -0.5, 0.0, 0.5, 1.0, 1.5}},
      {"f32_v3.npy", DType::kF32, {2, 3}, {-1.0, -0.5, 0.0, 0.5, 1.0, 1.5}},
      {"f64_fortran.npy", DType::kF64, {2, 3}, {0, 1, 2, 10, 11, 12}},
      {"i32_big.npy", DType::kI32, {3}, {1, -2, 70000}},
      {"f64_big.npy", DType::kF64, {2}, {1.5, -0.25}},
      {"f32_scalar.npy", DType::kF32, {}, {3.25}},
      {"f32_empty.npy", DType::kF32, {0, 3}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto t = read_npy(kData + c.file);
    ASSERT_TRUE(t) << t.error().to_string();
    EXPECT_EQ(t->dtype(), c.dtype);
    EXPECT_EQ(t->shape(), c.shape);
    EXPECT_EQ(t->to_doubles(), c.values);
  }
}

TEST(NpyFixtures, Int64KeepsAllBits) {
  auto t = read_npy(kData + "i64.npy");
  ASSERT_TRUE(t) << t.error().to_string();
  ASSERT_EQ(t->dtype(), DType::kI64);
  const int64_t* p = t->data<int64_t>();
  EXPECT_EQ(p[0], -9007199254740993LL);  // 2^53 + 1: not representable as a double
  EXPECT_EQ(p[1], 0);
  EXPECT_EQ(p[2], 9007199254740993LL);
}

TEST(NpyFixtures, SixteenBitAndWideUnsigned) {
  auto u16 = read_npy(kData + "u16.npy");
  ASSERT_TRUE(u16) << u16.error().to_string();
  ASSERT_EQ(u16->dtype(), DType::kU16);
  EXPECT_EQ(u16->to_doubles(), (std::vector<double>{1, 2}));
  auto u64 = read_npy(kData + "u64.npy");
  ASSERT_TRUE(u64) << u64.error().to_string();
  ASSERT_EQ(u64->dtype(), DType::kU64);
  EXPECT_EQ(u64->data<uint64_t>()[0], UINT64_MAX);
  EXPECT_EQ(u64->data<uint64_t>()[1], 0u);
  auto enc = encode_npy(*u64);
  ASSERT_TRUE(enc);
  EXPECT_EQ(*enc, slurp(kData + "u64.npy"));
}

TEST(NpyFixtures, FixedWidthStrings) {
  auto u = read_npy(kData + "str_u.npy");
  ASSERT_TRUE(u) << u.error().to_string();
  ASSERT_EQ(u->dtype(), DType::kString);
  EXPECT_EQ(u->shape(), (Shape{2, 2}));
  EXPECT_EQ(u->to_strings(), (std::vector<std::string>{"a", "h\xC3\xA9llo", "\xF0\x9F\x98\x80", ""}));
  auto enc = encode_npy(*u);
  ASSERT_TRUE(enc);
  EXPECT_EQ(*enc, slurp(kData + "str_u.npy"));  // NumPy's own bytes: '<U5', NUL-padded
  auto s = read_npy(kData + "str_s.npy");
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->to_strings(), (std::vector<std::string>{"ab", "\xFF"}));
  auto enc_s = encode_npy(*s);  // not UTF-8: written as bytes
  ASSERT_TRUE(enc_s);
  EXPECT_EQ(*enc_s, slurp(kData + "str_s.npy"));
  // A code point past U+10FFFF is an error naming the element.
  std::string bad = slurp(kData + "str_u.npy");
  bad[bad.size() - 4 * 5 * 4 + 2] = '\x7f';  // element 0's first code point
  auto b = parse_npy(bad.data(), bad.size(), "bad.npy");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("element 0 holds"), std::string::npos) << b.error().message;
}

TEST(NpyFixtures, UnsupportedDTypeNamesFileAndDescr) {
  auto t = read_npy(kData + "c64.npy");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().where, kData + "c64.npy");
  EXPECT_NE(t.error().message.find("unsupported dtype '<c8'"), std::string::npos)
      << t.error().message;
}

// Our encoder produces the very bytes numpy.save wrote.
TEST(NpyEncode, ByteIdenticalToNumPy) {
  struct Case {
    const char* file;
    Tensor t;
  };
  const Case cases[] = {
      {"f32.npy", Tensor::from_vector<float>({2, 3}, {-1.f, -0.5f, 0.f, 0.5f, 1.f, 1.5f})},
      {"i8.npy", Tensor::from_vector<int8_t>({4}, {-128, -1, 0, 127})},
      {"u8.npy", Tensor::from_vector<uint8_t>({4}, {0, 1, 200, 255})},
      {"bool.npy", Tensor::from_bools({3}, {true, false, true})},
      {"i64.npy", Tensor::from_vector<int64_t>({3}, {-9007199254740993LL, 0, 9007199254740993LL})},
      {"f32_scalar.npy", Tensor::scalar<float>(3.25f)},
      {"f32_empty.npy", Tensor(DType::kF32, {0, 3})},
      {"f16.npy", Tensor::from_doubles(DType::kF16, {4}, {1.0, -0.5, 65504.0, 0.0})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto enc = encode_npy(c.t);
    ASSERT_TRUE(enc) << enc.error().to_string();
    EXPECT_EQ(*enc, slurp(kData + c.file));
  }
}

// ---- round trips ----

TEST(NpyRoundTrip, EveryDType) {
  const std::vector<Tensor> tensors = {
      Tensor::from_vector<float>({2, 2}, {1.f, -0.f, 3.4028235e38f, 1e-45f}),
      Tensor::from_vector<double>({3}, {0.1, -1e-310, 1.7976931348623157e308}),
      Tensor::from_doubles(DType::kF16, {2}, {0.333, -65504}),
      Tensor::from_vector<int8_t>({1, 3}, {-128, 5, 127}),
      Tensor::from_vector<uint8_t>({2}, {0, 255}),
      Tensor::from_vector<int32_t>({2}, {-7, 1 << 30}),
      Tensor::from_vector<int64_t>({2}, {INT64_MIN, INT64_MAX}),
      Tensor::from_vector<int16_t>({2}, {INT16_MIN, INT16_MAX}),
      Tensor::from_vector<uint16_t>({1}, {UINT16_MAX}),
      Tensor::from_vector<uint32_t>({1}, {UINT32_MAX}),
      Tensor::from_vector<uint64_t>({2}, {UINT64_MAX, 1}),
      Tensor::from_bools({2, 1}, {false, true}),
      Tensor::scalar<int32_t>(42),
      Tensor(DType::kI64, {3, 0, 2}),
  };
  for (const Tensor& t : tensors) {
    SCOPED_TRACE(t.summary());
    const std::string path = temp_path("rt.npy");
    ASSERT_TRUE(write_npy(path, t).is_ok());
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    auto back = read_npy(path);
    ASSERT_TRUE(back) << back.error().to_string();
    EXPECT_EQ(back->dtype(), t.dtype());
    EXPECT_EQ(back->shape(), t.shape());
    ASSERT_EQ(back->nbytes(), t.nbytes());
    EXPECT_EQ(std::memcmp(back->raw_data(), t.raw_data(), t.nbytes()), 0);
  }
}

TEST(NpyRoundTrip, NonContiguousIsWrittenInCOrder) {
  Tensor t = Tensor::from_vector<int32_t>({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor transposed = t.view({3, 2}, {1, 3}, 0);  // [[0, 3], [1, 4], [2, 5]]
  auto enc = encode_npy(transposed);
  ASSERT_TRUE(enc);
  auto back = parse_npy(enc->data(), enc->size(), "mem");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->shape(), (Shape{3, 2}));
  EXPECT_EQ(back->to_doubles(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(NpyRoundTrip, Bf16IsRefused) {
  Tensor t = Tensor::from_doubles(DType::kBF16, {2}, {1, 2});
  auto enc = encode_npy(t);
  ASSERT_FALSE(enc);
  EXPECT_NE(enc.error().message.find("bf16"), std::string::npos);
  const std::string path = temp_path("bf16.npy");
  Status st = write_npy(path, t);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().where, path);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(NpyRoundTrip, WriteToMissingDirectoryFails) {
  Status st = write_npy("/nonexistent-dir/x.npy", Tensor::scalar<float>(1.f));
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().where, "/nonexistent-dir/x.npy");
}

// ---- bad input ----

const char kF32Dict[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";

TEST(NpyBad, LyingShapeNamesSizes) {
  const std::string bytes =
      make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 1000), }",
               std::string(12, '\0'));
  Error e = parse_error(bytes);
  EXPECT_EQ(e.where, "mem.npy");
  EXPECT_EQ(e.message,
            "header declares shape (1000, 1000) of <f4 = 4000000 bytes but only 12 bytes follow");
}

TEST(NpyBad, HugeShapeIsRejectedBeforeAllocating) {
  Error e = parse_error(
      make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""));
  EXPECT_NE(e.message.find("header declares shape (4294967296, 4294967296)"), std::string::npos);
  EXPECT_NE(e.message.find("limit"), std::string::npos) << e.message;
}

// Found by npy_fuzz: an empty Fortran-order array whose other dims multiply past int64 (the column-
// major strides overflowed, UBSan's signed-overflow report).
TEST(NpyGood, EmptyFortranArrayWithHugeDims) {
  const std::string bytes =
      make_npy("{'descr': '<f8', 'fortran_order': True, 'shape': (0,2,2,0,0,3165443346, 22,3,2117322117,3, 3), }", "");
  auto t = parse_npy(bytes.data(), bytes.size(), "mem.npy");
  ASSERT_TRUE(t.has_value()) << t.error().to_string();
  EXPECT_EQ(t->numel(), 0);
  EXPECT_EQ(t->shape(), (Shape{0, 2, 2, 0, 0, 3165443346, 22, 3, 2117322117, 3, 3}));
}

TEST(NpyBad, TrailingBytes) {
  Error e = parse_error(make_npy(kF32Dict, std::string(16, '\0')));
  EXPECT_EQ(e.message, "header declares shape (3,) of <f4 = 12 bytes but 16 bytes follow");
}

TEST(NpyBad, BadMagic) {
  std::string bytes = make_npy(kF32Dict, std::string(12, '\0'));
  bytes[1] = 'X';
  EXPECT_NE(parse_error(bytes).message.find("magic string"), std::string::npos);
  EXPECT_NE(parse_error("").message.find("magic string"), std::string::npos);
  EXPECT_NE(parse_error("PK\x03\x04").message.find("not a NumPy .npy file"), std::string::npos);
  EXPECT_NE(parse_error("\x93NUM").message.find("truncated"), std::string::npos);
}

TEST(NpyBad, BadVersion) {
  std::string bytes = make_npy(kF32Dict, std::string(12, '\0'));
  bytes[6] = 4;
  EXPECT_NE(parse_error(bytes).message.find("unsupported .npy format version 4.0"),
            std::string::npos);
  bytes[6] = 1;
  bytes[7] = 1;
  EXPECT_NE(parse_error(bytes).message.find("version 1.1"), std::string::npos);
}

TEST(NpyBad, Version2And3HeadersAreRead) {
  for (int major : {2, 3}) {
    std::vector<float> v = {1.f, 2.f, 3.f};
    const std::string bytes = make_npy(kF32Dict, bytes_of(v), major);
    auto t = parse_npy(bytes.data(), bytes.size(), "mem");
    ASSERT_TRUE(t) << t.error().to_string();
    EXPECT_EQ(t->to_doubles(), (std::vector<double>{1, 2, 3}));
  }
}

TEST(NpyBad, HeaderLengthPastTheEnd) {
  std::string bytes = make_npy(kF32Dict, "");
  bytes[8] = '\xff';
  bytes[9] = '\x7f';
  Error e = parse_error(bytes);
  EXPECT_NE(e.message.find("header length 32767 runs past the end"), std::string::npos)
      << e.message;
  // Version 2 with a 4 GB header length: must not allocate it.
  std::string v2 = make_npy(kF32Dict, "", 2);
  v2[8] = v2[9] = v2[10] = v2[11] = '\xff';
  EXPECT_NE(parse_error(v2).message.find("runs past the end"), std::string::npos);
  EXPECT_NE(parse_error(bytes.substr(0, 9)).message.find("inside the header length"),
            std::string::npos);
}

TEST(NpyBad, MalformedDicts) {
  struct Case {
    std::string dict;
    std::string expect;
  };
  const Case cases[] = {
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", "unsupported dtype '<c8'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", "structured dtypes"},
      {"{'descr': '<f4', 'fortran_order': False, }", "no 'shape' key"},
      {"{'fortran_order': False, 'shape': (3,), }", "no 'descr' key"},
      {"{'descr': '<f4', 'shape': (3,), }", "no 'fortran_order' key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", "unexpected key 'x'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }", "must be True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", "negative dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
       "dimension too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [3], }", "must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), ", "expected a quoted key"},
      {"{'descr' '<f4'}", "expected ':' after key 'descr'"},
      {"{'descr': '<f4', 'descr': '<f4'}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } junk", "after the closing"},
      {"", "expected '{'"},
      {"{'descr: '<f4'}", "expected ':'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dict);
    Error e = parse_error(make_npy(c.dict, std::string(12, '\0')));
    EXPECT_EQ(e.where, "mem.npy");
    EXPECT_NE(e.message.find(c.expect), std::string::npos) << e.message;
  }
}

TEST(NpyBad, TooManyDimensions) {
  std::string shape = "(";
  for (int i = 0; i < 65; ++i) shape += "1, ";
  Error e = parse_error(
      make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "), }", "    "));
  EXPECT_NE(e.message.find("more than 64 dimensions"), std::string::npos) << e.message;
}

TEST(NpyBad, BoolBytesAreNormalised) {
  const std::string bytes =
      make_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\0\2\1", 3));
  auto t = parse_npy(bytes.data(), bytes.size(), "mem");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->to_doubles(), (std::vector<double>{0, 1, 1}));
}

TEST(NpyBad, FileErrorsNameThePath) {
  auto missing = read_npy("/nonexistent/a.npy");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().where, "/nonexistent/a.npy");
  EXPECT_NE(missing.error().message.find("cannot open"), std::string::npos);

  const std::string path = temp_path("truncated.npy");
  const std::string good = slurp(kData + "f32.npy");
  ASSERT_TRUE(write_file_atomic(path, good.substr(0, good.size() - 5)).is_ok());
  auto t = read_npy(path);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().where, path);
  EXPECT_EQ(t.error().message,
            "header declares shape (2, 3) of <f4 = 24 bytes but only 19 bytes follow");
}

// A small in-process fuzz: every truncation and many single-byte corruptions of a valid file
// give an error or a tensor, never a crash (run under ASan in the asan preset).
TEST(NpyBad, TruncationsAndCorruptionsNeverCrash) {
  const std::string good = slurp(kData + "f64_fortran.npy");
  for (size_t n = 0; n < good.size(); ++n) {
    auto t = parse_npy(good.data(), n, "mem");
    EXPECT_FALSE(t.has_value()) << n;
  }
  for (size_t i = 0; i < 128; ++i) {
    for (int v : {0x00, 0x20, 0x28, 0x29, 0x2c, 0x31, 0x39, 0x7d, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(v);
      auto t = parse_npy(bad.data(), bad.size(), "mem");
      if (!t) {
        EXPECT_FALSE(t.error().message.empty());
      }
    }
  }
}

}  // namespace
}  // namespace tessera::formats
