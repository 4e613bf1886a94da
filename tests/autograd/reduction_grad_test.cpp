// Gradient checks of the reduction, scan, softmax and sort rows.
#include "autograd/gradcheck.h"

namespace sinter::testing {

std::vector<GradSample> reduction_samples() {
  using V = const std::vector<Tensor>&;
  std::vector<GradSample> s;
  Tensor a = away_from_zero({3, 4}, 21), one = away_from_zero({1, 4}, 22), scalar = away_from_zero({}, 23);
  Tensor pos = positive({3, 4}, 24);
  s.push_back({OpId::sum, "sum", [](V in) { return sum(in[0]); }, {a}, true});
  s.push_back({OpId::sum, "sum of a 0-d tensor", [](V in) { return sum(in[0]); }, {scalar}});
  s.push_back({OpId::sum_dim_IntList, "sum dim", [](V in) { return sum(in[0], {1}); }, {a}});
  s.push_back({OpId::sum_dim_IntList, "sum dims keepdim", [](V in) { return sum(in[0], {0, -1}, true); }, {a}});
  s.push_back({OpId::sum_dim_IntList, "sum size-1 dim", [](V in) { return sum(in[0], {0}); }, {one}});
  s.push_back({OpId::mean, "mean", [](V in) { return mean(in[0]); }, {a}});
  s.push_back({OpId::mean_dim, "mean dim", [](V in) { return mean(in[0], {0}, true); }, {a}});
  s.push_back({OpId::prod, "prod", [](V in) { return prod(in[0]); }, {away_from_zero({5}, 25)}, true});
  s.push_back({OpId::prod, "prod with a zero", [](V in) { return prod(in[0]); }, {tensor({1.5, 0.0, -2.0}, kFloat64)}});
  s.push_back({OpId::prod_dim_int, "prod dim", [](V in) { return prod(in[0], 1); }, {a}});
  s.push_back({OpId::amax, "amax", [](V in) { return amax(in[0], {1}); }, {a}});
  s.push_back({OpId::amin, "amin keepdim", [](V in) { return amin(in[0], {0}, true); }, {a}});
  s.push_back({OpId::max, "max", [](V in) { return max(in[0]); }, {a}});
  s.push_back({OpId::min, "min", [](V in) { return min(in[0]); }, {a}});
  s.push_back({OpId::max_dim, "max dim", [](V in) { return std::get<0>(max(in[0], 1)); }, {a}});
  s.push_back({OpId::min_dim, "min dim keepdim", [](V in) { return std::get<0>(min(in[0], 0, true)); }, {a}});
  s.push_back({OpId::var_correction, "var", [](V in) { return var(in[0], {1}); }, {a}, true});
  s.push_back({OpId::var_correction, "var all, correction 0", [](V in) { return var(in[0], std::nullopt, 0); }, {a}});
  s.push_back({OpId::std_correction, "std", [](V in) { return sinter::std(in[0], {0}, 1, true); }, {a}});
  s.push_back({OpId::norm_ScalarOpt_dim, "norm 2", [](V in) { return norm(in[0], 2, {1}); }, {a}});
  s.push_back({OpId::norm_ScalarOpt_dim, "norm 1", [](V in) { return norm(in[0], 1, {1}); }, {a}});
  s.push_back({OpId::norm_ScalarOpt_dim, "norm 3", [](V in) { return norm(in[0], 3, {0}); }, {a}});
  s.push_back({OpId::norm_ScalarOpt_dim, "norm inf", [](V in) {
                 return norm(in[0], std::numeric_limits<double>::infinity(), {1}); }, {a}});
  s.push_back({OpId::logsumexp, "logsumexp", [](V in) { return logsumexp(in[0], {1}); }, {a}});
  s.push_back({OpId::cumsum, "cumsum", [](V in) { return cumsum(in[0], 1); }, {a}});
  s.push_back({OpId::cumprod, "cumprod", [](V in) { return cumprod(in[0], 0); }, {a}});
  // Zeros: first, last, one or two in a slice, none; the derivative is exact there (no division by them).
  Tensor zeros_in = tensor({1.5, 0.0, -2.0, 0.5, 0.0, 2.0, 3.0, -1.0, 2.0, -1.0, 0.7, 0.0, 0.0, 1.2, 0.0, 0.8}, kFloat64)
                        .reshape({4, 4});
  s.push_back({OpId::cumprod, "cumprod with zeros", [](V in) { return cumprod(in[0], 1); }, {zeros_in}});
  s.push_back({OpId::cumprod, "cumprod with zeros, dim 0", [](V in) { return cumprod(in[0], 0); }, {zeros_in}});
  s.push_back({OpId::softmax_int, "softmax", [](V in) { return softmax(in[0], 1); }, {a}, true});
  s.push_back({OpId::softmax_int, "softmax dim 0", [](V in) { return softmax(in[0], 0); }, {a}});
  s.push_back({OpId::log_softmax_int, "log_softmax", [](V in) { return log_softmax(in[0], -1); }, {a}});
  s.push_back({OpId::sort, "sort", [](V in) { return std::get<0>(sort(in[0], 1, true)); }, {a}});
  s.push_back({OpId::topk, "topk", [](V in) { return std::get<0>(topk(in[0], 2, 1)); }, {a}});
  (void)pos;
  return s;
}

namespace {

TEST(ReductionGrad, EverySample) {
  check_samples(reduction_samples());
}

}  // namespace
}  // namespace sinter::testing
