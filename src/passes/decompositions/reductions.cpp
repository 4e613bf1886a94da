// Decompositions of composite reductions into amax / sum / mean.dim and pointwise ops: softmax, log_softmax,
// logsumexp, mse_loss. Sizes may be symbolic: no size is ever baked into a Scalar unless it is concrete (mean.dim
// divides by the reduction size in the lowering).
//
// var and std decompose only where the target's kernels round each op as eager (decompose's exact_recompute; the
// CUDA target). Their two-pass form evaluates x once per pass, and a fused kernel recomputes x there rather than
// storing it: under FMA contraction x*y - m rounds differently from x*y summed into the mean, so equal values got
// nonzero deviations (var of one element with correction 1 gave inf instead of 0/0 = NaN), and a mean accumulated
// in another order than eager's is not exact for a constant (its var was 2e-16, not 0). Elsewhere the lowering
// runs eager's kernel as a library call, which reads one stored x in both passes.
#include "passes/decompositions/builder.h"

namespace sinter::passes::decomp {
namespace {

using Result = std::optional<std::vector<Tensor>>;

// Whether some reduced dim is empty (amax has no identity: those forms stay undecomposed, for the op's own
// kernel). A symbolic size is asked too: an expression such as s0//3 can be 0 although no input symbol is, and
// the comparison records the guard (`s0//3 == 0` or `!= 0`) under which this choice holds.
bool has_empty_dim(const Tensor& x, const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (x.sizes()[d] == 0) return true;
  return false;
}

// The input of softmax / log_softmax in its compute dtype: a dtype argument casts the input first (as
// PyTorch and the eager kernel do).
struct SoftmaxInput {
  Tensor x;
  DType out;
  std::vector<int64_t> dims;
};

std::optional<SoftmaxInput> softmax_input(Builder& b, const Node& n) {
  const Tensor& self = n.args[0].tensor();
  if (self.dim() == 0) return std::nullopt;
  std::vector<int64_t> dims = reduction_dims(n.args[1], self.dim());
  if (has_empty_dim(self, dims)) return std::nullopt;
  DType out = n.meta().dtype;
  return SoftmaxInput{b.to(b.to(self, out), compute_dtype(out)), out, dims};
}

}  // namespace

// softmax(x, dim) -> e / sum(e, dim) where e = exp(x - amax(x, dim))
Result softmax(Builder& b, const Node& n) {
  std::optional<SoftmaxInput> in = softmax_input(b, n);
  if (!in) return std::nullopt;
  Tensor e = b.unary(OpId::exp, b.sub(in->x, b.amax(in->x, in->dims, true)));
  return std::vector<Tensor>{b.to(b.div(e, b.sum(e, in->dims, true)), in->out)};
}

// log_softmax(x, dim) -> (x - m) - log(sum(exp(x - m), dim)) where m = amax(x, dim)
Result log_softmax(Builder& b, const Node& n) {
  std::optional<SoftmaxInput> in = softmax_input(b, n);
  if (!in) return std::nullopt;
  Tensor shifted = b.sub(in->x, b.amax(in->x, in->dims, true));
  Tensor log_sum = b.unary(OpId::log, b.sum(b.unary(OpId::exp, shifted), in->dims, true));
  return std::vector<Tensor>{b.to(b.sub(shifted, log_sum), in->out)};
}

// logsumexp(x, dims) -> log(sum(exp(x - m), dims)) + m where m = amax(x, dims), or 0 where that is infinite
// (rows of -inf give -inf, rows holding +inf give +inf, as PyTorch)
Result logsumexp(Builder& b, const Node& n) {
  const Tensor& self = n.args[0].tensor();
  std::vector<int64_t> dims = reduction_dims(n.args[1], self.dim());
  bool keepdim = n.args[2].to_bool();
  if (has_empty_dim(self, dims)) return std::nullopt;
  DType out = n.meta().dtype;
  Tensor x = b.to(self, compute_dtype(out));
  Tensor m = b.amax(x, dims, true);
  m = b.op(OpId::where_ScalarSelf, {b.unary(OpId::isinf, m), 0.0, m});
  Tensor s = b.sum(b.unary(OpId::exp, b.sub(x, m)), dims, keepdim);
  Tensor shift = keepdim || dims.empty() ? m : b.op(OpId::squeeze_dims, {m, SymIntList(dims)});
  return std::vector<Tensor>{b.to(b.add(b.unary(OpId::log, s), shift), out)};
}

// mse_loss(x, t, 'none') -> (x - t)^2; 'mean' -> mean((x - t)^2); 'sum' -> sum((x - t)^2)
Result mse_loss(Builder& b, const Node& n) {
  DType out = n.meta().dtype, cd = compute_dtype(out);
  const std::string& reduction = n.args[2].str_value();
  Tensor d = b.sub(b.to(n.args[0].tensor(), cd), b.to(n.args[1].tensor(), cd));
  Tensor sq = b.mul(d, d);
  if (reduction == "mean") sq = b.op(OpId::mean, {sq});
  else if (reduction == "sum") sq = b.op(OpId::sum, {sq});
  return std::vector<Tensor>{b.to(sq, out)};
}

// var(x, dims, correction) -> sum((d - mean(d))^2) / max(0, N - correction), d = x - x[first of the reduced dims].
// The shift keeps the two-pass form exact where eager's is: a constant row has d = 0 exactly, so its var is 0, and
// one element with correction 1 is 0/0 = NaN, as eager. Computed in float32 for float16/bfloat16 (as eager), and
// left alone where a reduced size is symbolic or empty (N must be a number) or the input is not floating.
Result var(Builder& b, const Node& n) {
  const Tensor& self = n.args[0].tensor();
  if (!is_floating(self.dtype())) return std::nullopt;
  std::vector<int64_t> dims = reduction_dims(n.args[1], self.dim());
  int64_t count = 1;
  for (int64_t d : dims) {
    if (self.sizes()[d].is_symbolic() || self.sizes()[d].hint() == 0) return std::nullopt;
    count *= self.sizes()[d].hint();
  }
  const double correction = n.args[2].is_none() ? 1.0 : n.args[2].scalar().to_double();
  const bool keepdim = n.args[3].to_bool();
  DType out = n.meta().dtype;
  Tensor x = b.to(self, compute_dtype(out));
  Tensor first = x;
  for (int64_t d : dims) first = b.op(OpId::slice_Tensor, {first, d, SymInt(0), SymInt(1), SymInt(1)});
  Tensor shifted = b.sub(x, first);
  Tensor dev = b.sub(shifted, b.mean(shifted, dims, true));
  Tensor s = b.sum(b.mul(dev, dev), dims, keepdim);
  return std::vector<Tensor>{b.to(b.div(s, Scalar(std::max(0.0, static_cast<double>(count) - correction))), out)};
}

// std(x, ...) -> sqrt(var(x, ...)).
Result std(Builder& b, const Node& n) {
  Result v = var(b, n);
  if (!v) return std::nullopt;
  return std::vector<Tensor>{b.unary(OpId::sqrt, (*v)[0])};
}

}  // namespace sinter::passes::decomp
