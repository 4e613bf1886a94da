// THE op table: one row per op (an overload, as in PyTorch), with its schema in PyTorch's notation.
// X(id, flags, schema). The OpId enum, names, schemas, argument checks, the graph printer/parser and the
// dispatch point all derive from this list. Shape rules and kernels are attached per family (see op_table.h).
// Aliasing in the schema decides the kind: `Tensor(a)` out = view, `Tensor(a!)` = written in place.
// Flags: kDataDependent (output sizes depend on data: capture breaks the graph), kRandom (draws from the generator),
// kSymScalars (Scalar arguments may stay symbolic integers).
// Composite ops that are only a different spelling (reshape, flatten, t, narrow, contiguous, *_like, ...) are
// C++ functions over these rows and have no row of their own, as in PyTorch's CompositeImplicit ops.

#include "sinter/op_names.h"

#define SINTER_UNARY_OPS(X, U) SINTER_UNARY_NAMES(U, X)
#define SINTER_BINARY_TS_OPS(X, B) SINTER_BINARY_TS_NAMES(B, X)

#define SINTER_OP_LIST(X)                                                                                        \
  /* ---- pointwise unary: name(Tensor self) -> Tensor ---- */                                                   \
  SINTER_UNARY_OPS(X, SINTER_UNARY_ROW)                                                                          \
  X(gelu, 0, "gelu(Tensor self, *, str approximate='none') -> Tensor")                                           \
  X(softplus, 0, "softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor")                          \
  X(leaky_relu, 0, "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor")                              \
  X(elu, 0, "elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor")                  \
  X(celu, 0, "celu(Tensor self, Scalar alpha=1.0) -> Tensor")                                                    \
  X(hardtanh, 0, "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor")                         \
  X(threshold, 0, "threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor")                            \
  X(logit, 0, "logit(Tensor self, float? eps=None) -> Tensor")                                                   \
  X(nan_to_num, 0, "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor") \
  /* ---- pointwise binary ---- */                                                                               \
  X(add_Tensor, 0, "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")                         \
  X(add_Scalar, 0, "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")                            \
  X(sub_Tensor, 0, "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")                         \
  X(sub_Scalar, 0, "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")                            \
  X(rsub_Scalar, 0, "rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor")                          \
  SINTER_BINARY_TS_OPS(X, SINTER_BINARY_TS_ROWS)                                                                    \
  X(div_Tensor_mode, 0, "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor")           \
  X(div_Scalar_mode, 0, "div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor")           \
  X(pow_Tensor_Tensor, 0, "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor")                           \
  X(pow_Tensor_Scalar, 0, "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor")                           \
  X(pow_Scalar, 0, "pow.Scalar(Scalar self, Tensor exponent) -> Tensor")                                         \
  X(atan2, 0, "atan2(Tensor self, Tensor other) -> Tensor")                                                      \
  X(maximum, 0, "maximum(Tensor self, Tensor other) -> Tensor")                                                  \
  X(minimum, 0, "minimum(Tensor self, Tensor other) -> Tensor")                                                  \
  X(logical_and, 0, "logical_and(Tensor self, Tensor other) -> Tensor")                                          \
  X(logical_or, 0, "logical_or(Tensor self, Tensor other) -> Tensor")                                            \
  X(logical_xor, 0, "logical_xor(Tensor self, Tensor other) -> Tensor")                                          \
  X(hypot, 0, "hypot(Tensor self, Tensor other) -> Tensor")                                                      \
  X(copysign, 0, "copysign.Tensor(Tensor self, Tensor other) -> Tensor")                                         \
  /* ---- pointwise ternary ---- */                                                                              \
  X(where_self, 0, "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor")                          \
  X(where_ScalarOther, 0, "where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor")            \
  X(where_ScalarSelf, 0, "where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor")              \
  X(where_Scalar, 0, "where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor")                      \
  X(clamp, 0, "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor")                                \
  X(clamp_Tensor, 0, "clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor")                  \
  X(lerp_Scalar, 0, "lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor")                             \
  X(lerp_Tensor, 0, "lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor")                             \
  X(addcmul, 0, "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor")             \
  X(addcdiv, 0, "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor")             \
  X(masked_fill_Scalar, 0, "masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor")               \
  X(masked_fill_Tensor, 0, "masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor")               \
  /* ---- in place: the family kernel writes into self ---- */                                                   \
  X(add__Tensor, 0, "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")               \
  X(add__Scalar, 0, "add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)")                  \
  X(sub__Tensor, 0, "sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")               \
  X(sub__Scalar, 0, "sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)")                  \
  X(mul__Tensor, 0, "mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")                                  \
  X(mul__Scalar, 0, "mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")                                  \
  X(div__Tensor, 0, "div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")                                  \
  X(div__Scalar, 0, "div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")                                  \
  X(pow__Scalar, 0, "pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)")                               \
  X(clamp_, 0, "clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)")                      \
  SINTER_UNARY_INPLACE_NAMES(SINTER_UNARY_INPLACE_ROW, X)                                                       \
  X(masked_fill__Scalar, 0, "masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)")     \
  X(fill__Scalar, 0, "fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)")                                \
  X(zero_, 0, "zero_(Tensor(a!) self) -> Tensor(a!)")                                                            \
  X(copy_, 0, "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)")                       \
  /* ---- copies and conversions ---- */                                                                         \
  X(to_copy, 0,                                                                                                  \
    "_to_copy(Tensor self, *, ScalarType? dtype=None, Device? device=None, MemoryFormat? memory_format=None, "   \
    "bool non_blocking=False) -> Tensor")                                                                        \
  X(clone, 0, "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor")                               \
  /* functional form of a write through a view: a copy of self with src written where the view points */        \
  X(as_strided_scatter, 0,                                                                                       \
    "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "  \
    "-> Tensor")                                                                                                 \
  /* ---- views ---- */                                                                                          \
  X(view, 0, "view(Tensor(a) self, SymInt[] size) -> Tensor(a)")                                                 \
  X(permute, 0, "permute(Tensor(a) self, int[] dims) -> Tensor(a)")                                              \
  X(transpose_int, 0, "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")                          \
  X(expand, 0, "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)")                     \
  X(squeeze_dims, 0, "squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)")                                     \
  X(unsqueeze, 0, "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)")                                             \
  X(slice_Tensor, 0,                                                                                             \
    "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)") \
  X(select_int, 0, "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)")                             \
  X(as_strided, 0,                                                                                               \
    "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)")      \
  X(split_Tensor, 0, "split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]")                \
  X(split_with_sizes, 0, "split_with_sizes(Tensor(a) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]")     \
  X(chunk, 0, "chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]")                                     \
  X(unbind_int, 0, "unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]")                                       \
  /* ---- reductions and scans ---- */                                                                           \
  X(sum, 0, "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor")                                             \
  X(sum_dim_IntList, 0,                                                                                          \
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")        \
  X(mean, 0, "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor")                                           \
  X(mean_dim, 0, "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")  \
  X(prod, 0, "prod(Tensor self, *, ScalarType? dtype=None) -> Tensor")                                           \
  X(prod_dim_int, 0, "prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor") \
  X(amax, 0, "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")                                   \
  X(amin, 0, "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")                                   \
  X(max, 0, "max(Tensor self) -> Tensor")                                                                        \
  X(min, 0, "min(Tensor self) -> Tensor")                                                                        \
  X(max_dim, 0, "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")          \
  X(min_dim, 0, "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")          \
  X(argmax, 0, "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")                               \
  X(argmin, 0, "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")                               \
  X(var_correction, 0,                                                                                           \
    "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor")   \
  X(std_correction, 0,                                                                                           \
    "std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor")   \
  X(norm_ScalarOpt_dim, 0,                                                                                       \
    "norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor")                      \
  X(logsumexp, 0, "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor")                            \
  X(all, 0, "all(Tensor self) -> Tensor")                                                                        \
  X(all_dims, 0, "all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor")                         \
  X(any, 0, "any(Tensor self) -> Tensor")                                                                        \
  X(any_dims, 0, "any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor")                         \
  X(cumsum, 0, "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor")                              \
  X(cumprod, 0, "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor")                            \
  X(softmax_int, 0, "softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")                       \
  X(log_softmax_int, 0, "log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")               \
  X(sort, 0, "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)")          \
  X(argsort, 0, "argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor")                             \
  X(topk, 0,                                                                                                     \
    "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)") \
  /* ---- normalisation ---- */                                                                                  \
  X(layer_norm, 0,                                                                                               \
    "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "               \
    "float eps=1e-05) -> Tensor")                                                                                \
  X(group_norm, 0,                                                                                               \
    "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor") \
  X(rms_norm, 0,                                                                                                 \
    "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor")         \
  X(batch_norm, 0,                                                                                               \
    "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, Tensor(b!)? running_var, " \
    "bool training, float momentum, float eps) -> Tensor")                                                       \
  /* functional batch_norm (what functionalization turns batch_norm into): also returns the new running stats */ \
  X(batch_norm_functional, 0,                                                                                    \
    "batch_norm_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "                    \
    "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor output, Tensor running_mean, "      \
    "Tensor running_var)")                                                                                       \
  /* ---- linear algebra, convolution, pooling, attention, losses ---- */                                       \
  X(mm, 0, "mm(Tensor self, Tensor mat2) -> Tensor")                                                             \
  X(bmm, 0, "bmm(Tensor self, Tensor mat2) -> Tensor")                                                           \
  X(matmul, 0, "matmul(Tensor self, Tensor other) -> Tensor")                                                    \
  X(addmm, 0, "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor")        \
  X(linear, 0, "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor")                               \
  X(einsum, 0, "einsum(str equation, Tensor[] tensors) -> Tensor")                                               \
  X(conv1d, 0,                                                                                                   \
    "conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, "           \
    "SymInt[1] dilation=1, SymInt groups=1) -> Tensor")                                                          \
  X(conv1d_padding, 0,                                                                                           \
    "conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, str padding=\"valid\", " \
    "SymInt[1] dilation=1, SymInt groups=1) -> Tensor")                                                          \
  X(conv2d, 0,                                                                                                   \
    "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, "           \
    "SymInt[2] dilation=1, SymInt groups=1) -> Tensor")                                                          \
  X(conv2d_padding, 0,                                                                                           \
    "conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, str padding=\"valid\", " \
    "SymInt[2] dilation=1, SymInt groups=1) -> Tensor")                                                          \
  X(conv_transpose2d, 0,                                                                                         \
    "conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, "                \
    "SymInt[2] padding=0, SymInt[2] output_padding=0, SymInt groups=1, SymInt[2] dilation=1) -> Tensor")         \
  /* conv2d's weight gradient (torch.nn.grad.conv2d_weight): batched input, symmetric padding */                 \
  X(conv2d_weight_grad, 0,                                                                                       \
    "conv2d_weight_grad(Tensor input, SymInt[] weight_size, Tensor grad_output, SymInt[2] stride=1, "            \
    "SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor")                                     \
  X(max_pool2d, 0,                                                                                               \
    "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "        \
    "bool ceil_mode=False) -> Tensor")                                                                           \
  X(avg_pool2d, 0,                                                                                               \
    "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "     \
    "bool count_include_pad=True, int? divisor_override=None) -> Tensor")                                        \
  X(adaptive_avg_pool2d, 0, "adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor")                 \
  X(upsample_nearest2d, 0,                                                                                       \
    "upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor") \
  X(upsample_bilinear2d, 0,                                                                                      \
    "upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, "         \
    "float? scales_w=None) -> Tensor")                                                                           \
  X(scaled_dot_product_attention, kRandom,                                                                       \
    "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "              \
    "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor")         \
  X(scaled_dot_product_attention_backward, 0,                                                                    \
    "scaled_dot_product_attention_backward(Tensor grad, Tensor query, Tensor key, Tensor value, "               \
    "bool is_causal=False, float scale=1.0) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)")         \
  X(cross_entropy_loss, 0,                                                                                       \
    "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', "                 \
    "SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor")                                            \
  X(nll_loss, 0,                                                                                                 \
    "nll_loss(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', "                           \
    "SymInt ignore_index=-100) -> Tensor")                                                                       \
  X(mse_loss, 0, "mse_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor")                         \
  X(embedding, 0, "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1) -> Tensor")                   \
  X(dropout, kRandom, "dropout(Tensor input, float p, bool train) -> Tensor")                                    \
  /* ---- joining, indexing, reordering ---- */                                                                  \
  X(cat, 0, "cat(Tensor[] tensors, int dim=0) -> Tensor")                                                        \
  X(stack, 0, "stack(Tensor[] tensors, int dim=0) -> Tensor")                                                    \
  X(gather, 0, "gather(Tensor self, int dim, Tensor index) -> Tensor")                                           \
  X(scatter_src, 0, "scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor")                     \
  X(scatter_value, 0, "scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor")               \
  X(scatter_add, 0, "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor")                     \
  X(scatter__src, 0, "scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)")           \
  X(scatter_add_, 0, "scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)")           \
  X(index_select, 0, "index_select(Tensor self, int dim, Tensor index) -> Tensor")                               \
  X(index_Tensor, kDataDependent, "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor")                      \
  X(index_put, 0, "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor")   \
  X(index_put_, 0,                                                                                               \
    "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)")        \
  X(masked_select, kDataDependent, "masked_select(Tensor self, Tensor mask) -> Tensor")                          \
  X(nonzero, kDataDependent, "nonzero(Tensor self) -> Tensor")                                                   \
  X(tril, 0, "tril(Tensor self, int diagonal=0) -> Tensor")                                                      \
  X(triu, 0, "triu(Tensor self, int diagonal=0) -> Tensor")                                                      \
  X(pad, 0, "pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor")                \
  X(repeat, 0, "repeat(Tensor self, SymInt[] repeats) -> Tensor")                                                \
  X(roll, 0, "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor")                                    \
  X(flip, 0, "flip(Tensor self, int[] dims) -> Tensor")                                                          \
  /* ---- factories and random ---- */                                                                           \
  X(empty, 0, "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Device? device=None, "              \
              "MemoryFormat? memory_format=None) -> Tensor")                                                     \
  X(zeros, 0, "zeros(SymInt[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor")                  \
  X(ones, 0, "ones(SymInt[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor")                    \
  X(full, 0, "full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor") \
  X(arange, kSymScalars,                                                                                         \
    "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Device? device=None) " \
    "-> Tensor")                                                                                                 \
  X(linspace, 0,                                                                                                 \
    "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Device? device=None) -> Tensor")   \
  X(eye, 0, "eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Device? device=None) -> Tensor")               \
  X(rand, kRandom, "rand(SymInt[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor")              \
  X(randn, kRandom, "randn(SymInt[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor")            \
  X(randint, kRandom,                                                                                            \
    "randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=None, Device? device=None) "       \
    "-> Tensor")                                                                                                 \
  X(normal, kRandom,                                                                                             \
    "normal.float_float(float mean, float std, SymInt[] size, *, ScalarType? dtype=None, Device? device=None) "  \
    "-> Tensor")                                                                                                 \
  X(bernoulli_p, kRandom, "bernoulli.p(Tensor self, float p=0.5) -> Tensor")                                     \
  X(uniform_, kRandom, "uniform_(Tensor(a!) self, float from=0, float to=1) -> Tensor(a!)")                      \
  X(normal_, kRandom, "normal_(Tensor(a!) self, float mean=0, float std=1) -> Tensor(a!)")

#define SINTER_UNARY_ROW(X, name) X(name, 0, #name "(Tensor self) -> Tensor")
#define SINTER_UNARY_INPLACE_ROW(X, name) X(name##_, 0, #name "_(Tensor(a!) self) -> Tensor(a!)")
#define SINTER_BINARY_TS_ROWS(X, name)                                       \
  X(name##_Tensor, 0, #name ".Tensor(Tensor self, Tensor other) -> Tensor") \
  X(name##_Scalar, 0, #name ".Scalar(Tensor self, Scalar other) -> Tensor")
