// Shared pieces of the linalg family: compute-dtype copies, argument checks, batch offsets and the batched
// matmul core. float32/float64 operands go to BLAS as they are when their last two dims have a unit stride;
// anything else (other dtypes, odd layouts) is converted once into a dense compute buffer first.
#include "ops/linalg_util.h"

#include "ops/blas.h"
#include "ops/copy.h"
#include "ops/cuda_blas.h"
#include "sinter/cuda.h"
#include "tensor/cuda_graph.h"

namespace sinter {

DType compute_dtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
      return kFloat32;
    case DType::kFloat64:
      return kFloat64;
    default:
      return kInt64;
  }
}

Tensor contiguous_as(const Tensor& t, DType dtype, MemoryFormat format) {
  if (t.dtype() == dtype && t.is_contiguous(format)) return t;
  Tensor out = empty_from_meta(dense_meta(t.sizes(), dtype, t.device(), format));
  copy_strided(out, t);
  return out;
}

void write_into(const Tensor& dst, const Tensor& src) {
  if (dst.is_same(src)) return;
  // On a GPU through the op (its CUDA kernel where it has one) rather than copy_strided's host round trip.
  if (dst.is_cuda() && !cuda::is_simulated()) {
    Tensor d = dst;
    d.copy_(src);
    return;
  }
  copy_strided(dst, src);
}

void check_floating_input(const Tensor& t, std::string_view what) {
  SINTER_CHECK(is_floating(t.dtype()), "expected a floating-point {}, got {}", what, dtype_name(t.dtype()));
}

void check_same_dtype(const Tensor& a, const Tensor& b, std::string_view a_name, std::string_view b_name) {
  SINTER_CHECK(a.dtype() == b.dtype(), "expected {} and {} to have the same dtype, but got {} and {}", a_name,
               b_name, dtype_name(a.dtype()), dtype_name(b.dtype()));
}

std::array<int64_t, 2> int_pair(const Value& v, std::string_view name) {
  std::vector<int64_t> l = v.to_int_list();
  SINTER_CHECK(l.size() == 1 || l.size() == 2, "{} must have 1 or 2 entries, got {}", name, l.size());
  return {l[0], l.size() == 2 ? l[1] : l[0]};
}

Tensor strided_view(const Tensor& base, const std::vector<int64_t>& sizes,
                    const std::vector<int64_t>& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->meta = TensorMeta{SymIntList(sizes), SymIntList(strides), base.storage_offset().hint() + offset,
                          base.dtype(), base.device()};
  return Tensor(std::move(impl));
}

std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().hints(); }
std::vector<int64_t> strides_of(const Tensor& t) { return t.strides().hints(); }

Tensor unsqueeze_to(const Tensor& t, int64_t rank) {
  std::vector<int64_t> sizes = sizes_of(t), strides = strides_of(t);
  while (static_cast<int64_t>(sizes.size()) < rank) {
    sizes.insert(sizes.begin(), 1);
    strides.insert(strides.begin(), 1);
  }
  return strided_view(t, sizes, strides);
}

std::vector<int64_t> batch_offsets(const Tensor& t, int64_t nbatch, const std::vector<int64_t>& batch) {
  int64_t total = 1;
  for (int64_t s : batch) total *= s;
  std::vector<int64_t> offsets(total, 0);
  // Row-major walk over the batch with a counter, adding each dim's stride (0 where t broadcasts).
  std::vector<int64_t> idx(nbatch, 0), stride(nbatch, 0);
  for (int64_t d = 0; d < nbatch; ++d) stride[d] = t.sizes()[d].hint() == 1 ? 0 : t.strides()[d].hint();
  int64_t off = 0;
  for (int64_t i = 0; i < total; ++i) {
    offsets[i] = off;
    for (int64_t d = nbatch - 1; d >= 0; --d) {
      off += stride[d];
      if (++idx[d] < batch[d]) break;
      off -= stride[d] * batch[d];
      idx[d] = 0;
    }
  }
  return offsets;
}

namespace {

template <class T>
T scalar_as(const Scalar& s) {
  if constexpr (std::is_same_v<T, int64_t>)
    return s.to_int();
  else
    return static_cast<T>(s.to_double());
}

// bf16_values: a and b hold bfloat16 values (converted from a bfloat16 product's operands).
template <class T>
void run_gemm(const Tensor& a, const Tensor& b, const Tensor& c, const Scalar& alpha, const Scalar& beta,
              bool bf16_values = false) {
  int64_t r = c.dim(), nb = r - 2;
  std::vector<int64_t> batch = c.sizes().hints();
  batch.resize(nb);
  int64_t m = c.sizes()[r - 2].hint(), n = c.sizes()[r - 1].hint(), k = a.sizes()[r - 1].hint();
  blas::Gemm<T> g;
  g.m = m, g.n = n, g.k = k;
  g.a = a.data_ptr<T>(), g.a_rs = a.strides()[r - 2].hint(), g.a_cs = a.strides()[r - 1].hint();
  g.b = b.data_ptr<T>(), g.b_rs = b.strides()[r - 2].hint(), g.b_cs = b.strides()[r - 1].hint();
  g.c = c.data_ptr<T>(), g.c_rs = n, g.c_bs = m * n;
  g.alpha = scalar_as<T>(alpha), g.beta = scalar_as<T>(beta);
  if constexpr (std::is_same_v<T, float>) g.bf16_values = bf16_values;

  // Fold the batch into the rows of one big GEMM when b is shared by every item and a's batch dims chain onto
  // its rows ([B, T, K] @ [K, N] is one [B*T, K] @ [K, N]): one call, one packing of b, better blocking.
  bool fold = true;
  int64_t rows = m, rs = g.a_rs;
  for (int64_t d = nb - 1; d >= 0 && fold; --d) {
    int64_t s = batch[d];
    if (s == 1) continue;
    if (b.sizes()[d].hint() != 1 || a.sizes()[d].hint() != s)
      fold = false;
    else if (rows == 1)
      rows = s, rs = a.strides()[d].hint();
    else if (a.strides()[d].hint() != rows * rs)
      fold = false;
    else
      rows *= s;
  }
  std::vector<int64_t> a_off, b_off;
  if (fold && (std::is_same_v<T, int64_t> || blas::blas_compatible(rows, k, rs, g.a_cs))) {
    g.m = rows, g.a_rs = rs, g.batch = 1;
  } else {
    a_off = batch_offsets(a, nb, batch);
    b_off = batch_offsets(b, nb, batch);
    g.batch = static_cast<int64_t>(a_off.size());
    g.a_off = a_off.data(), g.b_off = b_off.data();
  }
  blas::gemm(g);
}

}  // namespace

Tensor blas_operand(const Tensor& t, DType cd) {
  int64_t r = t.dim();
  if (t.dtype() == cd && r >= 2 &&
      blas::blas_compatible(t.sizes()[r - 2].hint(), t.sizes()[r - 1].hint(), t.strides()[r - 2].hint(),
                            t.strides()[r - 1].hint()))
    return t;
  return contiguous_as(t, cd);
}

void matmul_into(const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& alpha,
                 const Scalar& beta) {
  SINTER_INTERNAL_ASSERT(
      out.dim() >= 2 && a.dim() == out.dim() && b.dim() == out.dim() && out.is_contiguous(),
      "matmul_into: bad operands");
  if (out.numel().hint() == 0) return;
  if (out.is_cuda() && cuda::gemm_supported(out.dtype()))
    return cuda::gemm(a, b, out, alpha.to_double(), beta.to_double());
  // The simulated device's product is a CPU GEMM on its memory: while a CUDA graph is captured, one for the replays.
  if (out.is_cuda() && cuda::record_simulated(out.device().index, [=] { matmul_into(a, b, out, alpha, beta); })) return;
  DType cd = compute_dtype(out.dtype());
  bool direct = cd == out.dtype();
  Tensor A = a, B = b;
  if (cd == kInt64) {  // the integer GEMM reads any strides
    if (!direct) A = contiguous_as(a, cd), B = contiguous_as(b, cd);
  } else {
    A = blas_operand(a, cd), B = blas_operand(b, cd);
  }
  bool use_beta = beta.to_double() != 0;
  Tensor C = direct     ? out
             : use_beta ? contiguous_as(out, cd)
                        : empty_from_meta(dense_meta(out.sizes(), cd, kCPU));
  switch (cd) {
    case DType::kFloat32:
      run_gemm<float>(A, B, C, alpha, beta, a.dtype() == kBFloat16 && b.dtype() == kBFloat16);
      break;
    case DType::kFloat64:
      run_gemm<double>(A, B, C, alpha, beta);
      break;
    default:
      run_gemm<int64_t>(A, B, C, alpha, beta);
      break;
  }
  write_into(out, C);
}

}  // namespace sinter
