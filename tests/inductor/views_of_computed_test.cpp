// Views, reshapes and in-place writes through views of computed values (not inputs), compiled under the inductor
// and aot_eager, static and with symbolic shapes (kAlways, and kAuto after its recompile), on inputs of several
// layouts: values, sizes and strides must be eager's.
#include <gtest/gtest.h>

#include "sinter/sinter.h"
#include "testing.h"
#include "view_checks.h"

namespace sinter {
namespace {

using view_checks::Case;
using view_checks::check_cases;
using view_checks::Layout;
using In = std::vector<Tensor>;
using Out = std::vector<Tensor>;

// Even sizes, so that every case is valid for every layout (a view splitting a dim in two halves). Three calls:
// kAuto compiles static, then symbolic, then reuses the symbolic entry.
const std::vector<std::vector<int64_t>> kMatrixSizes = {{4, 6}, {6, 10}, {8, 4}};
// Two calls where the third adds little but compile time.
const std::vector<std::vector<int64_t>> kTwoSizes = {{4, 6}, {6, 10}};

TEST(ViewsOfComputed, EveryViewOpOfAComputedValue) {
  std::vector<Case> cases = {
      {"slice", [](const In& i) { return Out{sigmoid(i[0]).slice(1, 1)}; }},
      {"slice with step", [](const In& i) { return Out{sigmoid(i[0]).slice(0, 1, std::nullopt, 2)}; }},
      {"narrow", [](const In& i) { return Out{exp(i[0]).narrow(1, 1, i[0].size(1) - 2)}; }},
      {"select", [](const In& i) { return Out{cos(i[0]).select(1, i[0].size(1) / 2)}; }},
      {"chunk", [](const In& i) { return Out{cos(i[0]).chunk(3, 0)[1]}; }},
      {"split", [](const In& i) { return cos(i[0]).split(2, 1); }},
      {"unbind", [](const In& i) { return tanh(i[0]).unbind(0); }},
      {"view", [](const In& i) { return Out{exp(i[0]).view({i[0].size(0), 2, i[0].size(1) / 2})}; }},
      {"reshape", [](const In& i) { return Out{exp(i[0]).reshape({2, -1})}; }},
      {"flatten", [](const In& i) { return Out{exp(i[0]).flatten()}; }},
      {"unflatten", [](const In& i) { return Out{exp(i[0]).unsqueeze(0).unflatten(0, {1, 1})}; }},
      {"transpose", [](const In& i) { return Out{sin(i[0]).transpose(0, 1)}; }},
      {"permute", [](const In& i) { return Out{sin(i[0]).permute({1, 0})}; }},
      {"mT", [](const In& i) { return Out{sin(i[0]).mT()}; }},
      {"unsqueeze", [](const In& i) { return Out{sin(i[0]).unsqueeze(1)}; }},
      {"squeeze", [](const In& i) { return Out{sin(i[0]).unsqueeze(0).squeeze(0)}; }},
      {"expand", [](const In& i) { return Out{sin(i[0]).unsqueeze(0).expand({3, i[0].size(0), i[0].size(1)})}; }},
      {"slice of a transpose", [](const In& i) { return Out{sigmoid(i[0]).t().slice(0, 1)}; }},
      {"view of a slice", [](const In& i) { return Out{sigmoid(i[0]).slice(0, 1).reshape({-1})}; }},
      {"two views of one value", [](const In& i) {
         Tensor y = sigmoid(i[0]);
         return Out{y.slice(1, 1), y.select(0, 0)};
       }},
  };
  check_cases(cases, kMatrixSizes);
}

// A layout-preserving op (to, neg, a scalar product) after layer_norm or softmax of a transposed input, then a view:
// the view was captured on eager's strides, so the compiled graph must give the composite op eager's layout.
TEST(ViewsOfComputed, ViewAfterDecomposedOpKeepsEagerStrides) {
  std::vector<Case> cases = {
      {"layer_norm, to int64, reshape",
       [](const In& i) { return Out{layer_norm(i[0], {i[0].size(1)}).to(kInt64).reshape({-1})}; }},
      {"layer_norm, neg, view", [](const In& i) { return Out{neg(layer_norm(i[0], {i[0].size(1)})).view({-1})}; }},
      {"softmax, times 2, view", [](const In& i) { return Out{(softmax(i[0], -1) * 2).view({-1})}; }},
      {"rms_norm, to float64, flatten", [](const In& i) { return Out{rms_norm(i[0], {i[0].size(1)}).to(kFloat64).flatten()}; }},
  };
  check_cases(cases, {{2, 2}, {3, 4}});
}

// masked_fill_ into a reshape (here a view) of a computed value whose layout is transposed (pow of mT): the write
// and the result must address eager's elements, whatever layout the compiled graph stores the value in.
TEST(ViewsOfComputed, MaskedFillIntoReshapeOfTransposedComputedValue) {
  auto f = [](const In& i) {
    const Tensor &m = i[0], &y = i[1];
    Tensor v = pow(y.mT(), -2);
    Tensor r = v.reshape({v.size(0), v.size(1), 1, -1});
    r.masked_fill_(lt(m, 0.0), -3);
    return Out{r};
  };
  auto make = [](const std::vector<int64_t>& s, Layout layout, uint64_t seed) {
    int64_t n = s[0];
    manual_seed(seed);
    Tensor m = randint(-5, 6, {n}, TensorOptions(kInt32));
    return In{m, view_checks::make_input({2, n, n}, layout, seed)};
  };
  check_cases({{"masked_fill_ into reshape of pow(mT)", f}}, {{2}, {3}, {5}}, view_checks::kAllLayouts, make);
}

// A reshape that copies (merging dims of a transposed computed value) must read elements in eager's order.
TEST(ViewsOfComputed, ReshapeCopyOfTransposedComputedValue) {
  std::vector<Case> cases = {
      {"pow of mT, reshape -1", [](const In& i) { return Out{pow(i[0].mT(), 2).reshape({-1})}; }},
      {"exp of t, reshape [n, m]", [](const In& i) { return Out{exp(i[0].t()).reshape({i[0].size(0), -1}) + 1}; }},
      {"sin, t, reshape, add_", [](const In& i) {
         Tensor r = sin(i[0]).t().reshape({-1});
         r.add_(1.0);
         return Out{r};
       }},
  };
  check_cases(cases, kTwoSizes);
}

// y = tanh(x).select(0, n / 2); y.add_(y): the write through the view reads and writes the same elements.
TEST(ViewsOfComputed, InPlaceAddOfAViewToItself) {
  auto f = [](const In& i) {
    Tensor y = tanh(i[0]).select(0, i[0].size(0) / 2);
    y.add_(y);
    return Out{y};
  };
  // The repro's layout (permute(2, 0, 1) of a contiguous [3, 2, 2]) and the checks' layouts.
  auto make = [](const std::vector<int64_t>& s, Layout layout, uint64_t seed) {
    if (layout == Layout::kPermuted)
      return In{testing::random({s[1], s[2], s[0]}, kFloat32, seed).permute({2, 0, 1})};
    return In{view_checks::make_input(s, layout, seed)};
  };
  const std::vector<std::vector<int64_t>> sizes = {{2, 3, 2}, {4, 3, 5}};
  // The same write reached through a base that is itself written afterwards, and through a transposed view.
  auto g = [](const In& i) {
    Tensor b = tanh(i[0]);
    Tensor y = b.select(0, i[0].size(0) / 2).t();
    y.mul_(y);
    b.add_(1.0);
    return Out{y, b};
  };
  check_cases({{"select, add_ itself", f}, {"select, t, mul_ itself, then the base add_", g}}, sizes,
              view_checks::kAllLayouts, make);
}

// Views of empty computed values: every layout of an empty value is dense, so the value is stored in the graph's
// (eager's contiguous strides of [0, 0, 0, 0] are all 1). Found by sinter fuzz (sub_ of an empty input, then
// unflatten and any over several dims).
TEST(ViewsOfComputed, ViewsOfAnEmptyComputedValue) {
  auto f = [](const In& i) {
    Tensor x = i[0].clone();
    x.sub_(x);
    return Out{any(x.unflatten(0, {-1, 3}), {1, 2, 4}, true), x.reshape({-1}), exp(x).transpose(0, 2)};
  };
  auto g = [](const In& i) { return Out{sigmoid(i[0]).view({-1}), cos(i[0]).slice(1, 1).flatten(1)}; };
  check_cases({{"sub_, unflatten, any", f}, {"view, slice, flatten", g}}, {{0, 0, 0, 0}, {0, 3, 2, 4}},
              {Layout::kContiguous});
}

}  // namespace
}  // namespace sinter
