// PyTorch's behaviour for every dim-taking op on a 0-dim tensor. PyTorch wraps a dim of a 0-dim tensor as if
// its rank were 1 (maybe_wrap_dim's wrap_scalar), so dims 0 and -1 are accepted and name "the only element":
// a reduction, scan, softmax, sort, roll or flip over it returns the value (an index of 0 where there is
// one). Ops that need a real dimension to cut, index or take the size of (size/stride, select, slice, narrow,
// split, chunk, unbind, cat, tril/triu, roll along dims) raise an error instead. Values and errors below are
// PyTorch's (2.11) for x = tensor(2.5).
#include "ops/zero_dim_cases.h"

#include <cmath>
#include <limits>

namespace sinter::zero_dim {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Out f32(double v, SymIntList sizes = {}) { return {std::move(sizes), kFloat32, v}; }
Out i64(double v, SymIntList sizes = {}) { return {std::move(sizes), kInt64, v}; }
Out b8(double v, SymIntList sizes = {}) { return {std::move(sizes), kBool, v}; }

std::vector<Tensor> one(const Tensor& t) { return {t}; }
std::vector<Tensor> two(const TensorPair& p) { return {std::get<0>(p), std::get<1>(p)}; }

Tensor idx(int64_t i) { return scalar_tensor(i, kInt64); }

}  // namespace

std::vector<Case> cases() {
  const double v = kValue;
  return {
      // ---- reductions: dim 0 and -1 reduce the one element; keepdim keeps the rank 0 ----
      {"sum(x, {0})", [](const Tensor& x) { return one(sum(x, DimList{0})); }, {f32(v)}},
      {"sum(x, {-1}, keepdim)", [](const Tensor& x) { return one(sum(x, DimList{-1}, true)); }, {f32(v)}},
      {"sum(x, {0, -1}) repeats a dim",
       [](const Tensor& x) {
         return one(sum(x, DimList{0, -1}));
       },
       {},
       "more than once"},
      {"sum(x, {1})", [](const Tensor& x) { return one(sum(x, DimList{1})); }, {}, "out of range"},
      {"sum(int x, {0}) is int64",
       [](const Tensor& x) { return one(sum(x.to(kInt32), DimList{0})); },
       {i64(2)}},
      {"mean(x, {0}, keepdim)", [](const Tensor& x) { return one(mean(x, DimList{0}, true)); }, {f32(v)}},
      {"prod(x, 0, keepdim)", [](const Tensor& x) { return one(prod(x, 0, true)); }, {f32(v)}},
      {"prod(x, -1)", [](const Tensor& x) { return one(prod(x, -1)); }, {f32(v)}},
      {"amax(x, {0})", [](const Tensor& x) { return one(amax(x, {0})); }, {f32(v)}},
      {"amin(x, {-1}, keepdim)", [](const Tensor& x) { return one(amin(x, {-1}, true)); }, {f32(v)}},
      {"amax(x)", [](const Tensor& x) { return one(amax(x)); }, {f32(v)}},
      {"max(x, 0)", [](const Tensor& x) { return two(max(x, 0)); }, {f32(v), i64(0)}},
      {"min(x, -1, keepdim)", [](const Tensor& x) { return two(min(x, -1, true)); }, {f32(v), i64(0)}},
      {"max(x, 1)", [](const Tensor& x) { return two(max(x, 1)); }, {}, "out of range"},
      {"argmax(x)", [](const Tensor& x) { return one(argmax(x)); }, {i64(0)}},
      {"argmax(x, 0)", [](const Tensor& x) { return one(argmax(x, 0)); }, {i64(0)}},
      {"argmin(x, -1, keepdim)", [](const Tensor& x) { return one(argmin(x, -1, true)); }, {i64(0)}},
      // var of one element: 0 / (1 - correction), so NaN (0/0) for correction 1 and 0 for correction 0.
      {"var(x)", [](const Tensor& x) { return one(var(x)); }, {f32(kNaN)}},
      {"var(x, {0})", [](const Tensor& x) { return one(var(x, {0})); }, {f32(kNaN)}},
      {"var(x, {0}, correction 0, keepdim)",
       [](const Tensor& x) { return one(var(x, {0}, 0, true)); },
       {f32(0)}},
      {"std(x, {-1}, correction 0)", [](const Tensor& x) { return one(std(x, {-1}, 0)); }, {f32(0)}},
      {"std(x, {0})", [](const Tensor& x) { return one(std(x, {0})); }, {f32(kNaN)}},
      {"norm(-x, 2, {0})", [](const Tensor& x) { return one(norm(-x, 2, {0})); }, {f32(v)}},
      {"norm(-x, 1, {-1}, keepdim)", [](const Tensor& x) { return one(norm(-x, 1, {-1}, true)); }, {f32(v)}},
      {"logsumexp(x, {0})", [](const Tensor& x) { return one(logsumexp(x, {0})); }, {f32(v)}},
      {"logsumexp(x, {-1}, keepdim)",
       [](const Tensor& x) { return one(logsumexp(x, {-1}, true)); },
       {f32(v)}},
      {"all(x, {0})", [](const Tensor& x) { return one(all(x, {0})); }, {b8(1)}},
      {"any(x - 2.5, {-1}, keepdim)", [](const Tensor& x) { return one(any(x - 2.5, {-1}, true)); }, {b8(0)}},
      // ---- scans and softmax over the one element ----
      {"cumsum(x, 0)", [](const Tensor& x) { return one(cumsum(x, 0)); }, {f32(v)}},
      {"cumprod(x, -1)", [](const Tensor& x) { return one(cumprod(x, -1)); }, {f32(v)}},
      {"cumsum(int x, 0) is int64", [](const Tensor& x) { return one(cumsum(x.to(kInt32), 0)); }, {i64(2)}},
      {"cumsum(x, 1)", [](const Tensor& x) { return one(cumsum(x, 1)); }, {}, "out of range"},
      {"softmax(x, 0)", [](const Tensor& x) { return one(softmax(x, 0)); }, {f32(1)}},
      {"log_softmax(x, -1)", [](const Tensor& x) { return one(log_softmax(x, -1)); }, {f32(0)}},
      {"softmax(x, 1)", [](const Tensor& x) { return one(softmax(x, 1)); }, {}, "out of range"},
      // ---- sorting: the value, index 0; topk's k may be 0 or 1 and gives the value either way (PyTorch's
      // topk copies a 0-dim input for k = 0 too: its output keeps the input's sizes, which have no dim k)
      // ----
      {"sort(x)", [](const Tensor& x) { return two(sort(x)); }, {f32(v), i64(0)}},
      {"sort(x, 0, descending)", [](const Tensor& x) { return two(sort(x, 0, true)); }, {f32(v), i64(0)}},
      {"argsort(x, -1)", [](const Tensor& x) { return one(argsort(x, -1)); }, {i64(0)}},
      {"topk(x, 1)", [](const Tensor& x) { return two(topk(x, 1)); }, {f32(v), i64(0)}},
      {"topk(x, 1, 0, smallest)",
       [](const Tensor& x) { return two(topk(x, 1, 0, false)); },
       {f32(v), i64(0)}},
      {"topk(x, 0)", [](const Tensor& x) { return two(topk(x, 0, 0)); }, {f32(v), i64(0)}},
      {"topk(x, 2)", [](const Tensor& x) { return two(topk(x, 2)); }, {}, "out of range"},
      {"topk(x, -1)", [](const Tensor& x) { return two(topk(x, -1)); }, {}, "out of range"},
      // ---- reordering ----
      // roll takes the size of each rolled dim: only the flat roll (no dims) applies to a 0-dim tensor.
      {"roll(x, {2}) flattened", [](const Tensor& x) { return one(roll(x, {2})); }, {f32(v)}},
      {"roll(x, {1}, {0})", [](const Tensor& x) { return one(roll(x, {1}, {0})); }, {}, "no dimensions"},
      {"roll(x, {-3}, {-1})", [](const Tensor& x) { return one(roll(x, {-3}, {-1})); }, {}, "no dimensions"},
      {"roll(x, {1, 2}, {0, -1})",
       [](const Tensor& x) {
         return one(roll(x, {1, 2}, {0, -1}));
       },
       {},
       "no dimensions"},
      {"roll(x, {1}, {1})", [](const Tensor& x) { return one(roll(x, {1}, {1})); }, {}, "no dimensions"},
      {"flip(x, {0})", [](const Tensor& x) { return one(flip(x, {0})); }, {f32(v)}},
      {"flip(x, {-1})", [](const Tensor& x) { return one(flip(x, {-1})); }, {f32(v)}},
      {"flip(x, {})", [](const Tensor& x) { return one(flip(x, {})); }, {f32(v)}},
      {"flip(x, {0, -1}) repeats a dim",
       [](const Tensor& x) {
         return one(flip(x, {0, -1}));
       },
       {},
       "multiple"},
      {"repeat(x, {})", [](const Tensor& x) { return one(repeat(x, {})); }, {f32(v)}},
      {"repeat(x, {3})", [](const Tensor& x) { return one(repeat(x, {3})); }, {f32(v, {3})}},
      {"tril(x)", [](const Tensor& x) { return one(tril(x)); }, {}, "2"},
      {"triu(x)", [](const Tensor& x) { return one(triu(x)); }, {}, "2"},
      // ---- views ----
      {"transpose(x, 0, 0)", [](const Tensor& x) { return one(transpose(x, 0, 0)); }, {f32(v)}},
      {"transpose(x, -1, 0)", [](const Tensor& x) { return one(transpose(x, -1, 0)); }, {f32(v)}},
      {"transpose(x, 0, 1)", [](const Tensor& x) { return one(transpose(x, 0, 1)); }, {}, "out of range"},
      {"t(x)", [](const Tensor& x) { return one(t(x)); }, {f32(v)}},
      {"permute(x, {})", [](const Tensor& x) { return one(permute(x, {})); }, {f32(v)}},
      {"permute(x, {0})", [](const Tensor& x) { return one(permute(x, {0})); }, {}, "rank"},
      {"movedim(x, {0}, {-1})", [](const Tensor& x) { return one(movedim(x, {0}, {-1})); }, {f32(v)}},
      {"squeeze(x)", [](const Tensor& x) { return one(squeeze(x)); }, {f32(v)}},
      {"squeeze(x, {0})", [](const Tensor& x) { return one(squeeze(x, {0})); }, {f32(v)}},
      {"squeeze(x, {-1})", [](const Tensor& x) { return one(squeeze(x, {-1})); }, {f32(v)}},
      {"squeeze(x, {1})", [](const Tensor& x) { return one(squeeze(x, {1})); }, {}, "out of range"},
      {"unsqueeze(x, 0)", [](const Tensor& x) { return one(unsqueeze(x, 0)); }, {f32(v, {1})}},
      {"unsqueeze(x, -1)", [](const Tensor& x) { return one(unsqueeze(x, -1)); }, {f32(v, {1})}},
      {"unsqueeze(x, 1)", [](const Tensor& x) { return one(unsqueeze(x, 1)); }, {}, "out of range"},
      {"flatten(x)", [](const Tensor& x) { return one(flatten(x)); }, {f32(v, {1})}},
      {"expand(x, {2, 3})",
       [](const Tensor& x) {
         return one(expand(x, {2, 3}));
       },
       {f32(v, {2, 3})}},
      {"reshape(x, {1, 1})",
       [](const Tensor& x) {
         return one(reshape(x, {1, 1}));
       },
       {f32(v, {1, 1})}},
      {"select(x, 0, 0)", [](const Tensor& x) { return one(select(x, 0, 0)); }, {}, "0-dim"},
      {"slice(x, 0)", [](const Tensor& x) { return one(slice(x, 0)); }, {}, "0-dim"},
      {"narrow(x, 0, 0, 1)", [](const Tensor& x) { return one(narrow(x, 0, 0, 1)); }, {}, "0-dim"},
      {"unflatten(x, 0, {1})", [](const Tensor& x) { return one(unflatten(x, 0, {1})); }, {}, "0-dim"},
      {"split(x, 1)", [](const Tensor& x) { return split(x, 1); }, {}, "0-dim"},
      {"split(x, {1})", [](const Tensor& x) { return split(x, {1}); }, {}, "0-dim"},
      {"chunk(x, 1)", [](const Tensor& x) { return chunk(x, 1); }, {}, "0-dim"},
      {"unbind(x)", [](const Tensor& x) { return unbind(x); }, {}, "0-dim"},
      // ---- joining: stack makes a new dim; cat has no dim to join along ----
      {"stack({x, x})",
       [](const Tensor& x) {
         return one(stack({x, x}));
       },
       {f32(v, {2})}},
      {"stack({x, x}, -1)",
       [](const Tensor& x) {
         return one(stack({x, x * 1}, -1));
       },
       {f32(v, {2})}},
      {"stack({x, x}, 1)",
       [](const Tensor& x) {
         return one(stack({x, x}, 1));
       },
       {},
       "out of range"},
      {"cat({x, x})",
       [](const Tensor& x) {
         return one(cat({x, x}));
       },
       {},
       "zero-dimensional"},
      // ---- indexing along the one element: the only valid index is 0 ----
      {"gather(x, 0, 0-dim index)", [](const Tensor& x) { return one(gather(x, 0, idx(0))); }, {f32(v)}},
      {"gather(x, -1, [0] index)",
       [](const Tensor& x) { return one(gather(x, -1, idx(0).reshape({1}))); },
       {f32(v, {1})}},
      {"gather(x, 0, index 1)", [](const Tensor& x) { return one(gather(x, 0, idx(1))); }, {}, "out of"},
      {"scatter(x, 0, 0-dim index, src)",
       [](const Tensor& x) { return one(scatter(x, 0, idx(0), x * 3)); },
       {f32(3 * v)}},
      {"scatter(x, 0, 0-dim index, 7.0)",
       [](const Tensor& x) { return one(scatter(x, 0, idx(0), 7.0)); },
       {f32(7)}},
      {"scatter_add(x, -1, 0-dim index, src)",
       [](const Tensor& x) { return one(scatter_add(x, -1, idx(0), x * 2)); },
       {f32(3 * v)}},
      {"scatter_(0, 0-dim index, src) in place",
       [](const Tensor& x) {
         Tensor y = x * 1;
         y.scatter_(0, idx(0), x * 3);
         return one(y);
       },
       {f32(3 * v)}},
      {"scatter_add_(-1, 0-dim index, src) in place",
       [](const Tensor& x) {
         Tensor y = x * 1;
         y.scatter_add_(-1, idx(0), x * 2);
         return one(y);
       },
       {f32(3 * v)}},
      {"index_select(x, 0, 0-dim index)",
       [](const Tensor& x) { return one(index_select(x, 0, idx(0))); },
       {f32(v)}},
      {"index_select(x, -1, [0] index)",
       [](const Tensor& x) { return one(index_select(x, -1, idx(0).reshape({1}))); },
       {f32(v)}},
      {"index_select(x, 0, index 1)",
       [](const Tensor& x) { return one(index_select(x, 0, idx(1))); },
       {},
       "out of"},
      {"index_select(x, 0, [0, 0] index)",
       [](const Tensor& x) { return one(index_select(x, 0, idx(0).expand({2}))); },
       {},
       "only 1 value"},
  };
}

}  // namespace sinter::zero_dim
