// embedding (a bounds-checked row gather) and dropout. Dropout's rule, which generated code reproduces: in
// training with 0 < p < 1 it reserves numel() numbers from the default Philox generator; element i (the
// row-major index over the input's sizes, whatever its layout) is kept iff philox_uniform(seed, first + i) >=
// p (compared as double) and then scaled by 1/(1-p). p == 0, eval mode or an empty input copy the input and
// draw nothing; p == 1 multiplies by zero (NaN stays NaN, as PyTorch) and draws nothing.
#include <cstring>

#include "ops/linalg_util.h"
#include "tensor/generator.h"

namespace sinter {
namespace {

// ---- embedding(weight, indices, padding_idx): padding_idx only matters for the gradient ----
ShapeResult embedding_shape(OpId, const Args& args) {
  const Tensor& w = args[0].tensor();
  const Tensor& idx = args[1].tensor();
  SINTER_CHECK(w.dim() == 2, "weight must be 2-D ([num_embeddings, embedding_dim]), got shape {}",
               w.sizes().str());
  SINTER_CHECK(is_integral(idx.dtype(), false), "indices must be an integer tensor, got {}",
               dtype_name(idx.dtype()));
  SymIntList out = idx.sizes();
  out.push_back(w.sizes()[1]);
  return dense_meta(out, w.dtype(), common_device(args));
}

void embedding_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& out = outs[0];
  Tensor w = contiguous_as(args[0].tensor(), args[0].tensor().dtype());
  Tensor idx = contiguous_as(args[1].tensor(), kInt64);
  std::vector<int64_t> ws = sizes_of(w);
  int64_t rows = ws[0], n = idx.numel().hint();
  const int64_t* ip = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    SINTER_CHECK(ip[i] >= 0 && ip[i] < rows,
                 "index {} is out of range for an embedding of size {} (at position {})", ip[i], rows, i);
  size_t row_bytes = static_cast<size_t>(ws[1]) * w.element_size();
  if (row_bytes == 0 || n == 0) return;
  const char* src = static_cast<const char*>(w.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  parallel_for(0, n, std::max<int64_t>(1, (1 << 16) / static_cast<int64_t>(row_bytes)),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = b; i < e; ++i)
                   std::memcpy(dst + i * row_bytes, src + ip[i] * row_bytes, row_bytes);
               });
}

// ---- dropout(input, p, train) ----
ShapeResult dropout_shape(OpId, const Args& args) {
  const Tensor& x = args[0].tensor();
  double p = args[1].to_double();
  SINTER_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got {}", p);
  SINTER_CHECK(!args[2].to_bool() || p == 0 || is_floating(x.dtype()),
               "dropout in training expects a floating-point input, got {}", dtype_name(x.dtype()));
  return dense_meta_like(x.sizes(), x.dtype(), x);
}

template <class A>
void dropout_loop(const A* x, A* y, int64_t n, double p) {
  if (p >= 1) {  // x * 0: zeros, with NaN and inf giving NaN as in PyTorch
    parallel_for(0, n, kGrainElementwise, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = x[i] * A(0);
    });
    return;
  }
  uint64_t seed = default_generator().seed();
  uint64_t first = default_generator().reserve(static_cast<uint64_t>(n));
  A scale = static_cast<A>(1.0 / (1.0 - p));
  parallel_for(0, n, kGrainElementwise / 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      y[i] = philox_uniform(seed, first + static_cast<uint64_t>(i)) >= p ? x[i] * scale : A(0);
  });
}

void dropout_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& x = args[0].tensor();
  const Tensor& out = outs[0];
  double p = args[1].to_double();
  int64_t n = x.numel().hint();
  if (!args[2].to_bool() || p == 0 || n == 0) {
    write_into(out, x);
    return;
  }
  DType cd = compute_dtype(x.dtype());
  Tensor X = contiguous_as(x, cd);
  Tensor Y =
      out.dtype() == cd && out.is_contiguous() ? out : empty_from_meta(dense_meta(x.sizes(), cd, kCPU));
  if (cd == kFloat64)
    dropout_loop<double>(X.data_ptr<double>(), Y.data_ptr<double>(), n, p);
  else
    dropout_loop<float>(X.data_ptr<float>(), Y.data_ptr<float>(), n, p);
  write_into(out, Y);
}

}  // namespace

void register_embedding_dropout_ops(OpTable& t) {
  t.set(OpId::embedding, embedding_shape, embedding_kernel);
  t.set(OpId::dropout, dropout_shape, dropout_kernel);
}

}  // namespace sinter
