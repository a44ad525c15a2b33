// Op coverage (engine/ops/registry.cpp): every registered op is complete, and the first op set
// named by the foundation issue is all there.
#include <gtest/gtest.h>

#include <set>

#include "engine/ops/op_def.h"

namespace tessera::ops {
namespace {

TEST(Registry, EveryOpHasSchemaInferenceKernelAndDocs) {
  const OpRegistry reg = make_default_registry();
  std::vector<std::string> problems;
  for (const OpDef* def : reg.all()) {
    if (!def->infer) problems.push_back(def->name + ": no type inference");
    if (!def->reference) problems.push_back(def->name + ": no reference kernel");
    if (def->doc.empty()) problems.push_back(def->name + ": no documentation");
    if (def->category.empty()) problems.push_back(def->name + ": no category");
    if (def->outputs.empty()) problems.push_back(def->name + ": no outputs in its schema");
    for (const PortSpec& p : def->inputs)
      if (p.name.empty()) problems.push_back(def->name + ": an input without a name");
    for (const AttrSpec& a : def->attrs) {
      if (a.doc.empty()) problems.push_back(def->name + "." + a.name + ": attribute without documentation");
      if (a.default_value && a.default_value->kind() != a.kind &&
          !(a.default_value->kind() == AttrKind::kInts && a.default_value->ints().empty()))
        problems.push_back(def->name + "." + a.name + ": default of the wrong kind");
    }
  }
  for (const std::string& p : problems) ADD_FAILURE() << p;
}

TEST(Registry, FirstOpSetIsComplete) {
  const OpRegistry reg = make_default_registry();
  const char* required[] = {
      "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Exp", "Log", "Sqrt", "Pow", "Reciprocal", "Relu",
      "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Gelu", "Clip", "Softmax", "LogSoftmax", "MatMul", "Gemm",
      "Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization", "LayerNormalization",
      "Dropout", "Flatten", "Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "Squeeze",
      "Unsqueeze", "ReduceMean", "ReduceSum", "ReduceMax", "Cast", "Constant", "Identity", "Shape",
      "Expand", "Where", "Equal", "Less", "Greater", "If", "Loop"};
  for (const char* name : required) EXPECT_NE(reg.find(name), nullptr) << "missing op " << name;
  EXPECT_GE(reg.all().size(), std::size(required));
}

TEST(Registry, AllIsSortedAndFindIsExact) {
  const OpRegistry reg = make_default_registry();
  auto all = reg.all();
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1]->name, all[i]->name);
  EXPECT_EQ(reg.find("relu"), nullptr);
}

}  // namespace
}  // namespace tessera::ops
