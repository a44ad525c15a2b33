// Table-driven gradient check: every op's gradient rule against central finite differences in f64
// (tests/engine/grad/*_cases.inc), and coverage: every op has a rule or a stated reason, and every
// rule has a case.
#include <map>
#include <set>

#include "tests/engine/grad_check_util.h"

namespace tessera::gradcheck {

#include "tests/engine/grad/control_cases.inc"
#include "tests/engine/grad/elementwise_cases.inc"
#include "tests/engine/grad/nn_cases.inc"
#include "tests/engine/grad/tensor_cases.inc"

namespace {

const ops::OpRegistry& reg() {
  static const ops::OpRegistry r = ops::make_default_registry();
  return r;
}

std::vector<GradCase> all_cases() {
  std::vector<GradCase> all;
  for (auto* family : {elementwise_grad_cases, tensor_grad_cases, nn_grad_cases, control_grad_cases})
    for (GradCase& c : family()) all.push_back(std::move(c));
  return all;
}

class GradCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradCheck, MatchesFiniteDifferences) { check_gradient(GetParam(), reg()); }

std::string param_name(const ::testing::TestParamInfo<GradCase>& info) {
  std::string n = case_name(info.param) + "_" + std::to_string(info.index);
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Ops, GradCheck, ::testing::ValuesIn(all_cases()), param_name);

TEST(GradCoverage, EveryOpHasARuleOrAReason) {
  std::vector<std::string> missing, both;
  for (const ops::OpDef* d : reg().all()) {
    if (!d->gradient && d->no_gradient_reason.empty()) missing.push_back(d->name);
    if (d->gradient && !d->no_gradient_reason.empty()) both.push_back(d->name);
  }
  std::string m;
  for (const auto& n : missing) m += n + " ";
  EXPECT_TRUE(missing.empty()) << missing.size() << " ops have neither a gradient rule nor a reason: " << m;
  EXPECT_TRUE(both.empty());
}

TEST(GradCoverage, EveryRuleHasACase) {
  std::set<std::string> covered;
  for (const GradCase& c : all_cases()) covered.insert(c.op);
  std::string m;
  for (const ops::OpDef* d : reg().all())
    if (d->gradient && !covered.count(d->name)) m += d->name + " ";
  EXPECT_TRUE(m.empty()) << "gradient rules without a finite-difference case: " << m;
}

}  // namespace
}  // namespace tessera::gradcheck
