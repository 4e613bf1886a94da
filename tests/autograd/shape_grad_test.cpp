// Gradient checks of the view, join, indexing and reordering rows.
#include "autograd/gradcheck.h"
#include "ops/dispatch.h"

namespace sinter::testing {

std::vector<GradSample> shape_samples() {
  using V = const std::vector<Tensor>&;
  std::vector<GradSample> s;
  Tensor a = away_from_zero({3, 4}, 31), b = away_from_zero({2, 4}, 32), c3 = away_from_zero({2, 3, 2}, 33);
  Tensor one = away_from_zero({1, 4}, 34);
  Tensor idx = tensor({2, 0, 2}, kInt64);
  s.push_back({OpId::view, "view", [](V in) { return in[0].reshape({4, 3}) * 1.0; }, {a}});
  s.push_back({OpId::permute, "permute", [](V in) { return in[0].permute({2, 0, 1}) * in[0].permute({2, 0, 1}); }, {c3}});
  s.push_back({OpId::transpose_int, "transpose", [](V in) { return in[0].transpose(0, 1) * 2.0; }, {a}});
  s.push_back({OpId::expand, "expand", [](V in) { return in[0].expand({2, 3, 4}) * 1.0; }, {one}});
  s.push_back({OpId::squeeze_dims, "squeeze", [](V in) { return in[0].squeeze({0}) * 1.0; }, {one}});
  s.push_back({OpId::unsqueeze, "unsqueeze", [](V in) { return in[0].unsqueeze(1) * 1.0; }, {a}});
  s.push_back({OpId::slice_Tensor, "slice step", [](V in) { return in[0].slice(1, 1, 4, 2) * 1.0; }, {a}, true});
  s.push_back({OpId::slice_Tensor, "slice negative", [](V in) { return in[0].slice(0, -2) * 1.0; }, {a}});
  s.push_back({OpId::select_int, "select", [](V in) { return in[0].select(1, -1) * 1.0; }, {a}});
  s.push_back({OpId::as_strided, "as_strided", [](V in) { return in[0].as_strided({2, 2}, {1, 2}) * 1.0; }, {a}});
  s.push_back({OpId::split_Tensor, "split", [](V in) { auto p = in[0].split(2, 1); return p[0] * p[1]; }, {a}});
  s.push_back({OpId::split_with_sizes, "split sizes, one part unused",
               [](V in) { return in[0].split(SymIntList{1, 2}, 0)[1] * 1.0; }, {a}});
  s.push_back({OpId::chunk, "chunk", [](V in) { auto p = in[0].chunk(2, 0); return p[0] + p[1]; }, {b}});
  s.push_back({OpId::unbind_int, "unbind", [](V in) { auto p = in[0].unbind(1); return p[0] * p[3]; }, {a}});
  s.push_back({OpId::cat, "cat", [](V in) { return cat({in[0], in[1], in[0]}, 0); }, {a, b}});
  s.push_back({OpId::stack, "stack", [](V in) { return stack({in[0], in[0] * in[0]}, 1); }, {b}});
  s.push_back({OpId::gather, "gather", [](V in) { return gather(in[0], 1, in[1]); },
               {a, tensor({0, 3, 3, 1, 2, 0}, kInt64).view({3, 2})}});
  s.push_back({OpId::scatter_src, "scatter", [](V in) { return scatter(in[0], 0, in[2], in[1]); },
               {a, b, tensor({0, 1, 2, 0, 2, 0, 1, 1}, kInt64).view({2, 4})}});
  s.push_back({OpId::scatter_value, "scatter value", [](V in) { return scatter(in[0], 1, in[1], Scalar(3.0)); },
               {a, tensor({0, 1, 2}, kInt64).view({3, 1})}});
  s.push_back({OpId::scatter_add, "scatter_add", [](V in) { return scatter_add(in[0], 0, in[2], in[1]); },
               {a, b, tensor({0, 0, 2, 0, 2, 2, 1, 1}, kInt64).view({2, 4})}});
  s.push_back({OpId::index_select, "index_select repeated", [idx](V in) { return index_select(in[0], 0, idx); }, {a}});
  s.push_back({OpId::index_Tensor, "index", [idx](V in) { return in[0].index({idx}); }, {a}});
  s.push_back({OpId::index_put, "index_put", [](V in) {
                 return index_put(in[0], {tensor({1, 2}, kInt64)}, in[1].narrow(0, 0, 1), false); }, {a, b}});
  s.push_back({OpId::index_put, "index_put accumulate", [](V in) {
                 return index_put(in[0], {tensor({1, 1}, kInt64)}, in[1], true); }, {a, b}});
  s.push_back({OpId::masked_select, "masked_select broadcast", [](V in) { return masked_select(in[0], in[1]); },
               {one, a > 0.0}});
  s.push_back({OpId::tril, "tril", [](V in) { return tril(in[0], -1) * 1.0; }, {a}});
  s.push_back({OpId::triu, "triu", [](V in) { return triu(in[0], 1) * 1.0; }, {a}});
  s.push_back({OpId::pad, "pad constant", [](V in) { return pad(in[0], {1, 2}, "constant", 5.0); }, {a}});
  s.push_back({OpId::pad, "pad reflect", [](V in) { return pad(in[0].unsqueeze(0), {2, 1}, "reflect"); }, {a}});
  s.push_back({OpId::pad, "pad replicate", [](V in) { return pad(in[0].unsqueeze(0), {1, 2}, "replicate"); }, {a}});
  s.push_back({OpId::repeat, "repeat with a new dim", [](V in) { return in[0].repeat({2, 1, 3}); }, {b}});
  s.push_back({OpId::roll, "roll", [](V in) { return roll(in[0], {1, -2}, {0, 1}) * in[0]; }, {a}});
  s.push_back({OpId::flip, "flip", [](V in) { return flip(in[0], {1}) * in[0]; }, {a}});
  s.push_back({OpId::as_strided_scatter, "as_strided_scatter", [](V in) {
                 // self must be dense (the op's contract: functionalization makes it so)
                 return dispatch1(OpId::as_strided_scatter, {in[0].contiguous(), in[1], SymIntList{2, 2}, SymIntList{4, 1}, Value(SymInt(1))},
                                  Loc::current()); }, {a, b.narrow(1, 0, 2)}});
  return s;
}

namespace {

TEST(ShapeGrad, EverySample) {
  check_samples(shape_samples());
}

}  // namespace
}  // namespace sinter::testing
