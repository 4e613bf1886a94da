// Decompositions of composite pointwise ops (addcmul, addcdiv, lerp, square) and of dropout where it draws
// nothing. Operands are converted to the compute dtype of the result first, so mixed-dtype calls round once,
// as the eager kernels do.
#include "passes/decompositions/builder.h"

namespace sinter::passes::decomp {
namespace {

using Result = std::optional<std::vector<Tensor>>;

const Tensor& tensor_arg(const Node& n, int i) { return n.args[i].tensor(); }

}  // namespace

// addcmul(a, t1, t2, value) -> a + (t1 * value) * t2
Result addcmul(Builder& b, const Node& n) {
  DType out = n.meta().dtype, cd = compute_dtype(out);
  if (out == kBool) return std::nullopt;
  Tensor a = b.to(tensor_arg(n, 0), cd), t1 = b.to(tensor_arg(n, 1), cd), t2 = b.to(tensor_arg(n, 2), cd);
  const Value& value = n.args[3];
  Tensor scaled = value.scalar() == Scalar(1) ? t1 : b.op(OpId::mul_Scalar, {t1, value});
  return std::vector<Tensor>{b.to(b.add(a, b.mul(scaled, t2)), out)};
}

// addcdiv(a, t1, t2, value) -> a + (t1 * value) / t2
Result addcdiv(Builder& b, const Node& n) {
  DType out = n.meta().dtype, cd = compute_dtype(out);
  if (!is_floating(out)) return std::nullopt;
  Tensor a = b.to(tensor_arg(n, 0), cd), t1 = b.to(tensor_arg(n, 1), cd), t2 = b.to(tensor_arg(n, 2), cd);
  const Value& value = n.args[3];
  Tensor scaled = value.scalar() == Scalar(1) ? t1 : b.op(OpId::mul_Scalar, {t1, value});
  return std::vector<Tensor>{b.to(b.add(a, b.div(scaled, t2)), out)};
}

// lerp(a, e, w) -> |w| < 0.5 ? a + w * (e - a) : e - (e - a) * (1 - w)   (from the nearer end, as PyTorch)
Result lerp(Builder& b, const Node& n) {
  DType out = n.meta().dtype, cd = compute_dtype(out);
  Tensor a = b.to(tensor_arg(n, 0), cd), e = b.to(tensor_arg(n, 1), cd);
  Tensor diff = b.sub(e, a);
  if (n.is_op(OpId::lerp_Scalar)) {
    double w = n.args[2].to_double();
    Tensor r = std::abs(w) < 0.5 ? b.add(a, b.mul(diff, w)) : b.sub(e, b.mul(diff, 1.0 - w));
    return std::vector<Tensor>{b.to(r, out)};
  }
  Tensor w = b.to(tensor_arg(n, 2), cd);
  Tensor low = b.add(a, b.mul(w, diff));
  Tensor high = b.sub(e, b.mul(diff, b.rsub(w, 1)));
  Tensor near_start = b.op(OpId::lt_Scalar, {b.unary(OpId::abs, w), 0.5});
  return std::vector<Tensor>{b.to(b.where(near_start, low, high), out)};
}

// square(x) -> x * x   (bool counts as int64, as PyTorch)
Result square(Builder& b, const Node& n) {
  DType out = n.meta().dtype;
  Tensor x = b.to(b.to(tensor_arg(n, 0), out), compute_dtype(out));
  return std::vector<Tensor>{b.to(b.mul(x, x), out)};
}

// dropout(x, p, train=false) -> clone(x); so is p = 0 (the eager kernel draws nothing then). A dropout that
// draws stays: removing or moving it would shift the generator's stream.
Result dropout(Builder& b, const Node& n) {
  if (n.args[2].to_bool() && n.args[1].to_double() != 0) return std::nullopt;
  return std::vector<Tensor>{b.op(OpId::clone, {tensor_arg(n, 0)})};
}

}  // namespace sinter::passes::decomp
