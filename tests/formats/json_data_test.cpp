// Tests for formats/json_data.cpp: exact float printing, tensor data to and from JSON, JSON
// pointer tokens and the pretty printer's layout.
#include "formats/json_data.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::formats::json_detail {
namespace {

TEST(JsonData, PointerTokens) {
  EXPECT_EQ(pointer_token("kernel_shape"), "kernel_shape");
  EXPECT_EQ(pointer_token("a/b~c"), "a~1b~0c");
  EXPECT_EQ(pointer_token(""), "");
}

TEST(JsonData, ShortestFloatThatReadsBack) {
  EXPECT_EQ(float_to_json(0.1f, DType::kF32).dump(), "0.1");
  EXPECT_EQ(float_to_json(1.0f / 3.0f, DType::kF32).dump(), "0.33333334");
  EXPECT_EQ(float_to_json(-0.0, DType::kF32).dump(), "-0.0");
  EXPECT_EQ(float_to_json(1.0, DType::kF32).dump(), "1.0");
  EXPECT_EQ(float_to_json(0.1, DType::kF64).dump(), "0.1");
  EXPECT_EQ(float_to_json(1.0 / 3.0, DType::kF64).dump(), "0.3333333333333333");
  // The f16 nearest to 0.1 is 0.0999755859375; "0.1" reads back to it.
  EXPECT_EQ(float_to_json(half_to_float(float_to_half(0.1f)), DType::kF16).dump(), "0.1");
  EXPECT_EQ(float_to_json(bf16_to_float(float_to_bf16(0.1f)), DType::kBF16).dump(), "0.1");
  EXPECT_EQ(float_to_json(std::nan(""), DType::kF32), Json("nan"));
  EXPECT_EQ(float_to_json(HUGE_VAL, DType::kF64), Json("inf"));
  EXPECT_EQ(float_to_json(-HUGE_VAL, DType::kF16), Json("-inf"));
}

TEST(JsonData, ReadsNumbersAndSpecialStrings) {
  double v = 0;
  EXPECT_TRUE(json_to_float(Json(3), &v));
  EXPECT_EQ(v, 3.0);
  EXPECT_TRUE(json_to_float(Json(-2.5), &v));
  EXPECT_EQ(v, -2.5);
  EXPECT_TRUE(json_to_float(Json("NaN"), &v));
  EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(json_to_float(Json("Infinity"), &v));
  EXPECT_EQ(v, HUGE_VAL);
  EXPECT_TRUE(json_to_float(Json("-inf"), &v));
  EXPECT_EQ(v, -HUGE_VAL);
  EXPECT_FALSE(json_to_float(Json("1.5"), &v));
  EXPECT_FALSE(json_to_float(Json(true), &v));
  EXPECT_FALSE(json_to_float(Json(nullptr), &v));
}

TEST(JsonData, TensorToJson) {
  EXPECT_EQ(tensor_data_to_json(Tensor::from_vector<int64_t>({2}, {INT64_MIN, 5})).dump(),
            "[-9223372036854775808,5]");
  EXPECT_EQ(tensor_data_to_json(Tensor::from_bools({2}, {true, false})).dump(), "[true,false]");
  EXPECT_EQ(tensor_data_to_json(Tensor::from_vector<uint8_t>({1}, {255})).dump(), "[255]");
  EXPECT_EQ(tensor_data_to_json(Tensor::from_vector<float>({2}, {0.5f, 0.1f})).dump(), "[0.5,0.1]");
  EXPECT_EQ(tensor_data_to_json(Tensor(DType::kF32, {0})).dump(), "[]");
  // Row-major order for a non-contiguous view (a transpose).
  Tensor t = Tensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(tensor_data_to_json(t.view({2, 2}, {1, 2}, 0)).dump(), "[1,3,2,4]");
}

TEST(JsonData, TensorFromJsonErrorsPointAtTheElement) {
  auto bad = tensor_from_json(Json::parse("[1, 2, \"x\"]"), DType::kF32, {3});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "/2");
  EXPECT_NE(bad.error().message.find("expected a number"), std::string::npos);
  auto count = tensor_from_json(Json::parse("[1, 2]"), DType::kI32, {3});
  ASSERT_FALSE(count);
  EXPECT_EQ(count.error().where, "");
  EXPECT_EQ(count.error().message, "the data has 2 elements but the type i32[3] holds 3");
  auto range = tensor_from_json(Json::parse("[0, 128]"), DType::kI8, {2});
  ASSERT_FALSE(range);
  EXPECT_EQ(range.error().where, "/1");
  EXPECT_EQ(range.error().message, "128 does not fit i8");
  auto huge = tensor_from_json(Json::parse("[18446744073709551615]"), DType::kI64, {1});
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("does not fit i64"), std::string::npos);
  auto u16 = tensor_from_json(Json::parse("[65535, -1]"), DType::kU16, {2});
  ASSERT_FALSE(u16);
  EXPECT_EQ(u16.error().where, "/1");
  EXPECT_EQ(u16.error().message, "-1 does not fit u16");
  auto u64 = tensor_from_json(Json::parse("[18446744073709551615, 0]"), DType::kU64, {2});
  ASSERT_TRUE(u64) << u64.error().message;
  EXPECT_EQ(u64->data<uint64_t>()[0], UINT64_MAX);
  EXPECT_EQ(tensor_data_to_json(*u64).dump(), "[18446744073709551615,0]");
  auto not_array = tensor_from_json(Json::parse("{}"), DType::kF32, {});
  ASSERT_FALSE(not_array);
  EXPECT_EQ(not_array.error().message, "expected an array, got object");
  auto ok = tensor_from_json(Json::parse("[1, \"-inf\", 0.25]"), DType::kF64, {3});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->to_doubles(), (std::vector<double>{1, -HUGE_VAL, 0.25}));
}

TEST(JsonData, PrettyLayout) {
  Json j = Json::parse(R"({"a": 1, "list": [1, 2], "objs": [{"n": "x", "t": "f32[2]"}],
                           "nested": {"deep": {"k": [true, null]}}, "empty": [], "none": {}})");
  EXPECT_EQ(dump_pretty(j),
            "{\n"
            "  \"a\": 1,\n"
            "  \"list\": [1, 2],\n"
            "  \"objs\": [\n"
            "    {\"n\": \"x\", \"t\": \"f32[2]\"}\n"
            "  ],\n"
            "  \"nested\": {\n"
            "    \"deep\": {\"k\": [true, null]}\n"
            "  },\n"
            "  \"empty\": [],\n"
            "  \"none\": {}\n"
            "}\n");
  // An object too wide for one line is split even when it is flat.
  Json wide = Json::object();
  wide["data"] = std::vector<int>(40, 1000);
  const std::string text = dump_pretty(wide);
  EXPECT_EQ(text.substr(0, 12), "{\n  \"data\": ");
  // Strings are escaped, invalid UTF-8 replaced rather than thrown.
  EXPECT_EQ(dump_pretty(Json("a\"b\n")), "\"a\\\"b\\n\"\n");
  EXPECT_EQ(dump_pretty(Json(std::string("\xff"))), "\"\xEF\xBF\xBD\"\n");
}

}  // namespace
}  // namespace tessera::formats::json_detail
