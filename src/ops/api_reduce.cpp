// The public reductions, scans, softmax and sorting functions of ops.h: each packs its arguments
// in its row's schema order and dispatches. Rows with two results (max.dim, min.dim, sort, topk) return
// tuples.
#include "ops/dispatch.h"
#include "sinter/ops.h"

namespace sinter {

namespace {

TensorPair pair(OpId op, Args args, const Loc& loc) {
  std::vector<Tensor> outs = dispatch(op, std::move(args), loc);
  return {outs[0], outs[1]};
}

// Braced dims: {} means every dim, as an empty list does in PyTorch.
OptDims braced_dims(std::initializer_list<int64_t> dim) {
  return dim.size() == 0 ? OptDims() : OptDims(DimList(std::vector<int64_t>(dim)));
}

}  // namespace

// ---- reductions ----
Tensor sum(const Tensor& self, OptDType dtype, Loc loc) { return dispatch1(OpId::sum, {self, dtype}, loc); }
Tensor sum(const Tensor& self, const OptDims& dim, bool keepdim, OptDType dtype, Loc loc) {
  return dispatch1(OpId::sum_dim_IntList, {self, dim, keepdim, dtype}, loc);
}
Tensor sum(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim, OptDType dtype, Loc loc) {
  return sum(self, braced_dims(dim), keepdim, dtype, loc);
}
Tensor mean(const Tensor& self, OptDType dtype, Loc loc) { return dispatch1(OpId::mean, {self, dtype}, loc); }
Tensor mean(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim, OptDType dtype, Loc loc) {
  return mean(self, braced_dims(dim), keepdim, dtype, loc);
}
Tensor mean(const Tensor& self, const OptDims& dim, bool keepdim, OptDType dtype, Loc loc) {
  return dispatch1(OpId::mean_dim, {self, dim, keepdim, dtype}, loc);
}
Tensor prod(const Tensor& self, OptDType dtype, Loc loc) { return dispatch1(OpId::prod, {self, dtype}, loc); }
Tensor prod(const Tensor& self, int64_t dim, bool keepdim, OptDType dtype, Loc loc) {
  return dispatch1(OpId::prod_dim_int, {self, dim, keepdim, dtype}, loc);
}
Tensor amax(const Tensor& self, const DimList& dim, bool keepdim, Loc loc) {
  return dispatch1(OpId::amax, {self, dim, keepdim}, loc);
}
Tensor amin(const Tensor& self, const DimList& dim, bool keepdim, Loc loc) {
  return dispatch1(OpId::amin, {self, dim, keepdim}, loc);
}
Tensor max(const Tensor& self, Loc loc) { return dispatch1(OpId::max, {self}, loc); }
Tensor min(const Tensor& self, Loc loc) { return dispatch1(OpId::min, {self}, loc); }
TensorPair max(const Tensor& self, int64_t dim, bool keepdim, Loc loc) {
  return pair(OpId::max_dim, {self, dim, keepdim}, loc);
}
TensorPair min(const Tensor& self, int64_t dim, bool keepdim, Loc loc) {
  return pair(OpId::min_dim, {self, dim, keepdim}, loc);
}
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim, Loc loc) {
  return dispatch1(OpId::argmax, {self, dim, keepdim}, loc);
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim, Loc loc) {
  return dispatch1(OpId::argmin, {self, dim, keepdim}, loc);
}
Tensor var(const Tensor& self, const OptDims& dim, const OptScalar& correction, bool keepdim, Loc loc) {
  return dispatch1(OpId::var_correction, {self, dim, correction, keepdim}, loc);
}
Tensor std(const Tensor& self, const OptDims& dim, const OptScalar& correction, bool keepdim, Loc loc) {
  return dispatch1(OpId::std_correction, {self, dim, correction, keepdim}, loc);
}
Tensor var(const Tensor& self, std::initializer_list<int64_t> dim, const OptScalar& correction, bool keepdim,
           Loc loc) {
  return var(self, braced_dims(dim), correction, keepdim, loc);
}
Tensor std(const Tensor& self, std::initializer_list<int64_t> dim, const OptScalar& correction, bool keepdim,
           Loc loc) {
  return std(self, braced_dims(dim), correction, keepdim, loc);
}
Tensor norm(const Tensor& self, const OptScalar& p, const DimList& dim, bool keepdim, Loc loc) {
  return dispatch1(OpId::norm_ScalarOpt_dim, {self, p, dim, keepdim}, loc);
}
Tensor logsumexp(const Tensor& self, const DimList& dim, bool keepdim, Loc loc) {
  return dispatch1(OpId::logsumexp, {self, dim, keepdim}, loc);
}
Tensor all(const Tensor& self, Loc loc) { return dispatch1(OpId::all, {self}, loc); }
Tensor all(const Tensor& self, const DimList& dim, bool keepdim, Loc loc) {
  return dispatch1(OpId::all_dims, {self, dim, keepdim}, loc);
}
Tensor any(const Tensor& self, Loc loc) { return dispatch1(OpId::any, {self}, loc); }
Tensor any(const Tensor& self, const DimList& dim, bool keepdim, Loc loc) {
  return dispatch1(OpId::any_dims, {self, dim, keepdim}, loc);
}

// ---- scans, softmax, sorting ----
Tensor cumsum(const Tensor& self, int64_t dim, OptDType dtype, Loc loc) {
  return dispatch1(OpId::cumsum, {self, dim, dtype}, loc);
}
Tensor cumprod(const Tensor& self, int64_t dim, OptDType dtype, Loc loc) {
  return dispatch1(OpId::cumprod, {self, dim, dtype}, loc);
}
Tensor softmax(const Tensor& self, int64_t dim, OptDType dtype, Loc loc) {
  return dispatch1(OpId::softmax_int, {self, dim, dtype}, loc);
}
Tensor log_softmax(const Tensor& self, int64_t dim, OptDType dtype, Loc loc) {
  return dispatch1(OpId::log_softmax_int, {self, dim, dtype}, loc);
}
TensorPair sort(const Tensor& self, int64_t dim, bool descending, Loc loc) {
  return pair(OpId::sort, {self, dim, descending}, loc);
}
Tensor argsort(const Tensor& self, int64_t dim, bool descending, Loc loc) {
  return dispatch1(OpId::argsort, {self, dim, descending}, loc);
}
TensorPair topk(const Tensor& self, const SymInt& k, int64_t dim, bool largest, bool sorted, Loc loc) {
  return pair(OpId::topk, {self, k, dim, largest, sorted}, loc);
}

}  // namespace sinter
