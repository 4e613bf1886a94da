// Decompositions of composite reductions into amax / sum / mean.dim and pointwise ops: softmax, log_softmax,
// logsumexp, mse_loss. Sizes may be symbolic: no size is ever baked into a Scalar unless it is concrete (mean.dim
// divides by the reduction size in the lowering).
//
// var and std are not decomposed. Their two-pass form, mean((x - mean(x))^2), evaluates x once per pass, and a
// fused kernel recomputes x there rather than storing it: under FMA contraction x*y - m rounds differently from
// x*y summed into the mean, so equal values get nonzero deviations (var of one element with correction 1 gave
// inf instead of 0/0 = NaN), and a mean accumulated in another order than eager's is not exact for a constant
// (its var was 2e-16, not 0). Eager's kernel reads one stored x in both passes and divides its sum of squared
// deviations by max(0, N - correction), as PyTorch; the lowering runs it as a library call.
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

}  // namespace sinter::passes::decomp
