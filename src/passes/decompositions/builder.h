// Shared by the decompositions (src/passes/decompositions/*.cpp): a small builder that records primitive ops
// just before the node being decomposed, and the helpers the families have in common (compute dtypes, dim
// lists, layouts). Internal to the decompose pass.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "ops/op_table.h"
#include "sinter/graph.h"

namespace sinter::passes::decomp {

// Records ops before `anchor` (the node being replaced), with the anchor's source location, so that generated
// code and errors still point at the user's line.
class Builder {
 public:
  Builder(Rewriter& rw, const Node& anchor) : rw_(rw), anchor_(anchor) {}
  const Node& node() const { return anchor_; }
  const Graph& graph() const { return rw_.graph(); }
  // Whether a value has users (a decomposition returns an undefined tensor for an output nobody reads).
  bool used(const Tensor& t) const { return !rw_.graph().users(t).empty(); }

  Tensor op(OpId id, Args args) { return rw_.insert_op1_before(anchor_, id, std::move(args), anchor_.loc); }
  std::vector<Tensor> ops(OpId id, Args args) {  // an op with several outputs
    return rw_.insert_op_before(anchor_, id, std::move(args), anchor_.loc);
  }
  // x as `dtype` (no op when it already is).
  Tensor to(const Tensor& x, DType dtype) { return x.dtype() == dtype ? x : op(OpId::to_copy, {x, dtype}); }

  Tensor add(const Tensor& a, const Tensor& b) { return op(OpId::add_Tensor, {a, b}); }
  Tensor add(const Tensor& a, Scalar b) { return op(OpId::add_Scalar, {a, b}); }
  Tensor sub(const Tensor& a, const Tensor& b) { return op(OpId::sub_Tensor, {a, b}); }
  Tensor sub(const Tensor& a, Scalar b) { return op(OpId::sub_Scalar, {a, b}); }
  Tensor rsub(const Tensor& a, Scalar b) { return op(OpId::rsub_Scalar, {a, b}); }  // b - a
  Tensor mul(const Tensor& a, const Tensor& b) { return op(OpId::mul_Tensor, {a, b}); }
  Tensor mul(const Tensor& a, Scalar b) { return op(OpId::mul_Scalar, {a, b}); }
  Tensor div(const Tensor& a, const Tensor& b) { return op(OpId::div_Tensor, {a, b}); }
  Tensor div(const Tensor& a, Scalar b) { return op(OpId::div_Scalar, {a, b}); }
  Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) { return op(OpId::where_self, {c, a, b}); }
  Tensor unary(OpId id, const Tensor& x) { return op(id, {x}); }
  Tensor clamp(const Tensor& x, Value lo, Value hi) { return op(OpId::clamp, {x, std::move(lo), std::move(hi)}); }
  // mean.dim / sum.dim_IntList / amax over explicit dims with keepdim.
  Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
    return op(OpId::mean_dim, {x, SymIntList(dims), keepdim});
  }
  Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
    return op(OpId::sum_dim_IntList, {x, SymIntList(dims), keepdim});
  }
  Tensor amax(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
    return op(OpId::amax, {x, SymIntList(dims), keepdim});
  }
  // x with `n` trailing dims of size 1 (a per-channel parameter [C] against an input [N, C, *]).
  Tensor unsqueeze_trailing(Tensor x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x = op(OpId::unsqueeze, {x, -1});
    return x;
  }

 private:
  Rewriter& rw_;
  const Node& anchor_;
};

// A decomposition: the values that replace the node's outputs (same count, sizes and dtypes; undefined for an
// output without users), or nullopt to leave the node alone (a form not decomposed, e.g. batch_norm in
// training). It decides before recording any op.
using Decomposition = std::optional<std::vector<Tensor>> (*)(Builder& b, const Node& n);

// The dtype the eager kernels compute a floating dtype in: float16/bfloat16 in float32, others as themselves.
inline DType compute_dtype(DType d) { return d == kFloat16 || d == kBFloat16 ? kFloat32 : d; }

// The reduced dims of a reduction's `dim` argument (None or [] is every dim), wrapped to 0..ndim-1, sorted.
std::vector<int64_t> reduction_dims(const Value& dim, int64_t ndim);

// Runs `fn`, sinter ops on the node's argument proxies, while a dispatch hook records each op it calls just before
// the node (grad mode and autocast off); its tensors are the values that replace the node's outputs.
std::vector<Tensor> record(Builder& b, const Node& n, const std::function<std::vector<Tensor>()>& fn);

// ---- The families (one function per op; the table in decompose.cpp lists them). ----
// custom.cpp: a custom op's decomposition (sinter/library.h), the user's function recorded op by op.
std::optional<std::vector<Tensor>> custom(Builder& b, const Node& n);
// activations.cpp
std::optional<std::vector<Tensor>> gelu(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> silu(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> mish(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> softplus(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> hardsigmoid(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> hardswish(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> leaky_relu(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> elu(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> celu(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> selu(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> hardtanh(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> logit(Builder& b, const Node& n);
// pointwise.cpp
std::optional<std::vector<Tensor>> addcmul(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> addcdiv(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> lerp(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> square(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> dropout(Builder& b, const Node& n);
// reductions.cpp
std::optional<std::vector<Tensor>> softmax(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> log_softmax(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> logsumexp(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> mse_loss(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> var(Builder& b, const Node& n);  // only where recomputation is exact
std::optional<std::vector<Tensor>> std(Builder& b, const Node& n);
// convolution.cpp
std::optional<std::vector<Tensor>> conv2d_weight_grad(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> conv2d(Builder& b, const Node& n);
// normalization.cpp
std::optional<std::vector<Tensor>> layer_norm(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> rms_norm(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> group_norm(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> batch_norm(Builder& b, const Node& n);
std::optional<std::vector<Tensor>> batch_norm_functional(Builder& b, const Node& n);

}  // namespace sinter::passes::decomp
