// Tests for engine/data/csv.cpp: headers, label columns, number syntax, errors at file:line:column.
#include "engine/data/csv.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/data/data_test_util.h"

namespace tessera::data {
namespace {

using testing::fresh_dir;
using testing::write_bytes;

struct Row {
  std::vector<float> x;
  int64_t label;
};

Row row(const Source& src, int64_t i) {
  Example ex;
  Status st = src.get(i, ex);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  if (!st.is_ok()) return {};
  Row r;
  for (int64_t j = 0; j < ex[0].numel(); ++j) r.x.push_back(ex[0].data<float>()[j]);
  r.label = ex[1].data<int64_t>()[0];
  return r;
}

std::shared_ptr<const Source> open_ok(const std::string& path, const CsvOptions& opt = {}) {
  auto src = open_csv(path, opt);
  EXPECT_TRUE(src) << src.error().to_string();
  return src ? *src : nullptr;
}

TEST(Csv, HeaderDetectedAndLabelLastByDefault) {
  const std::string dir = fresh_dir("csv_header");
  write_bytes(dir + "/a.csv", "f1, f2 ,class\r\n1.5,-2,0\r\n\r\n3e2, +4 ,2\n  \n0.25,nan,1");
  auto src = open_ok(dir + "/a.csv");
  ASSERT_TRUE(src);
  EXPECT_EQ(src->size(), 3);
  const auto f = src->fields();
  EXPECT_EQ(f[0].shape, (Shape{2}));
  EXPECT_EQ(f[1].dtype, DType::kI64);
  EXPECT_EQ(row(*src, 0).x, (std::vector<float>{1.5f, -2.f}));
  EXPECT_EQ(row(*src, 0).label, 0);
  EXPECT_EQ(row(*src, 1).x, (std::vector<float>{300.f, 4.f}));
  EXPECT_EQ(row(*src, 1).label, 2);
  EXPECT_TRUE(std::isnan(row(*src, 2).x[1]));
  EXPECT_EQ(row(*src, 2).label, 1);
}

TEST(Csv, LabelColumnByNameOrIndex) {
  const std::string dir = fresh_dir("csv_label");
  write_bytes(dir + "/a.csv", "label,a,b\n3,0.5,1\n4,1.5,2\n");
  CsvOptions opt;
  opt.label_column = "label";
  auto by_name = open_ok(dir + "/a.csv", opt);
  ASSERT_TRUE(by_name);
  EXPECT_EQ(row(*by_name, 1).x, (std::vector<float>{1.5f, 2.f}));
  EXPECT_EQ(row(*by_name, 1).label, 4);
  opt.label_column = "0";
  auto by_index = open_ok(dir + "/a.csv", opt);
  ASSERT_TRUE(by_index);
  EXPECT_EQ(row(*by_index, 0).label, 3);
  opt.label_column = "b";
  auto b = open_ok(dir + "/a.csv", opt);
  ASSERT_TRUE(b);
  EXPECT_EQ(row(*b, 0).x, (std::vector<float>{3.f, 0.5f}));
  EXPECT_EQ(row(*b, 0).label, 1);

  opt.label_column = "missing";
  auto missing = open_csv(dir + "/a.csv", opt);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no column named 'missing'"), std::string::npos);
  opt.label_column = "3";
  auto out_of_range = open_csv(dir + "/a.csv", opt);
  ASSERT_FALSE(out_of_range);
  EXPECT_NE(out_of_range.error().message.find("out of range"), std::string::npos);
}

TEST(Csv, NoHeaderAndForcedHeader) {
  const std::string dir = fresh_dir("csv_noheader");
  write_bytes(dir + "/a.csv", "1;2;5\n3;4;6\n");
  CsvOptions opt;
  opt.delimiter = ';';
  auto src = open_ok(dir + "/a.csv", opt);
  ASSERT_TRUE(src);
  EXPECT_EQ(src->size(), 2);
  EXPECT_EQ(row(*src, 0).x, (std::vector<float>{1.f, 2.f}));
  EXPECT_EQ(row(*src, 0).label, 5);
  opt.header = CsvHeader::kPresent;  // a numeric first line taken as a header
  auto forced = open_ok(dir + "/a.csv", opt);
  ASSERT_TRUE(forced);
  EXPECT_EQ(forced->size(), 1);
  EXPECT_EQ(row(*forced, 0).label, 6);
}

TEST(Csv, ErrorsNameFileLineColumn) {
  const std::string dir = fresh_dir("csv_errors");
  const std::string p = dir + "/bad.csv";
  write_bytes(p, "a,b,y\n1,2,0\n\n1, x2 ,1\n");
  auto bad = open_csv(p);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, p + ":4:4");
  EXPECT_NE(bad.error().message.find("field 2 is not a number: 'x2'"), std::string::npos)
      << bad.error().message;

  write_bytes(p, "1,2,0\n1,2\n");
  auto count = open_csv(p);
  ASSERT_FALSE(count);
  EXPECT_EQ(count.error().where, p + ":2:1");
  EXPECT_NE(count.error().message.find("expected 3 fields, found 2"), std::string::npos);

  write_bytes(p, "1,2,0\n1,2,0.5\n");
  auto frac = open_csv(p);
  ASSERT_FALSE(frac);
  EXPECT_EQ(frac.error().where, p + ":2:5");
  EXPECT_NE(frac.error().message.find("not an integer"), std::string::npos);

  write_bytes(p, "1,2,\n");
  auto empty_field = open_csv(p, CsvOptions{"", CsvHeader::kAbsent, ','});
  ASSERT_FALSE(empty_field);
  EXPECT_EQ(empty_field.error().where, p + ":1:5");

  write_bytes(p, "\n\n");
  EXPECT_FALSE(open_csv(p));
  write_bytes(p, "a,b\n");
  EXPECT_FALSE(open_csv(p));
  write_bytes(p, "1\n2\n");
  EXPECT_FALSE(open_csv(p));
  auto absent = open_csv(dir + "/absent.csv");
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().where, dir + "/absent.csv");
}

}  // namespace
}  // namespace tessera::data
