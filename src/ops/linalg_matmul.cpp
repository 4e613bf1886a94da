// mm, bmm, matmul (every rank case of torch.matmul), addmm and linear: shape rules, and kernels that all
// reduce to matmul_into (linalg_util.h) over views, so no operand is copied unless BLAS cannot read its
// layout.
#include "ops/cuda_blas.h"
#include "ops/cuda_fallback.h"
#include "ops/linalg_util.h"
#include "sinter/cuda.h"
#include "tensor/cuda_graph.h"

namespace sinter {
namespace {

void check_matmul_dtypes(const Tensor& a, const Tensor& b, std::string_view a_name, std::string_view b_name) {
  check_same_dtype(a, b, a_name, b_name);
  SINTER_CHECK(a.dtype() != kBool, "bool tensors are not supported (use an integer or floating dtype)");
}

std::string shape_str(const Tensor& t) { return t.sizes().str(); }

// ---- mm ----
ShapeResult mm_shape(OpId, const Args& args) {
  const Tensor& a = args[0].tensor();
  const Tensor& b = args[1].tensor();
  SINTER_CHECK(a.dim() == 2, "self must be a matrix (2-D), got shape {}", shape_str(a));
  SINTER_CHECK(b.dim() == 2, "mat2 must be a matrix (2-D), got shape {}", shape_str(b));
  SINTER_CHECK(a.sizes()[1] == b.sizes()[0], "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
               a.sizes()[0].str(), a.sizes()[1].str(), b.sizes()[0].str(), b.sizes()[1].str());
  check_matmul_dtypes(a, b, "self", "mat2");
  return dense_meta({a.sizes()[0], b.sizes()[1]}, a.dtype(), common_device(args));
}

void mm_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  matmul_into(args[0].tensor(), args[1].tensor(), outs[0]);
}

// ---- bmm ----
ShapeResult bmm_shape(OpId, const Args& args) {
  const Tensor& a = args[0].tensor();
  const Tensor& b = args[1].tensor();
  SINTER_CHECK(a.dim() == 3, "self must be a batch of matrices (3-D), got shape {}", shape_str(a));
  SINTER_CHECK(b.dim() == 3, "mat2 must be a batch of matrices (3-D), got shape {}", shape_str(b));
  SINTER_CHECK(a.sizes()[0] == b.sizes()[0] && a.sizes()[2] == b.sizes()[1],
               "batch shapes {} and {} cannot be multiplied (expected [b, n, m] and [b, m, p])", shape_str(a),
               shape_str(b));
  check_matmul_dtypes(a, b, "self", "mat2");
  return dense_meta({a.sizes()[0], a.sizes()[1], b.sizes()[2]}, a.dtype(), common_device(args));
}

// ---- matmul ----
// torch.matmul's rank cases: 1-D x 1-D is a dot product, a 1-D operand gains a dim (in front for the left, at
// the back for the right) that the result drops again, and dims before the last two broadcast as a batch.
struct MatmulPlan {
  SymIntList batch;
  SymIntList out;
};

MatmulPlan plan_matmul(const Tensor& a, const Tensor& b) {
  int64_t da = a.dim(), db = b.dim();
  SINTER_CHECK(da >= 1 && db >= 1,
               "both arguments to matmul need to be at least 1-D, but they are {}-D and {}-D", da, db);
  const SymInt& ka = a.sizes()[da - 1];
  const SymInt& kb = b.sizes()[db == 1 ? 0 : db - 2];
  SINTER_CHECK(ka == kb, "shapes {} and {} cannot be multiplied ({} != {})", shape_str(a), shape_str(b),
               ka.str(), kb.str());
  MatmulPlan p;
  SymIntList batch_a = da > 2 ? SymIntList(a.sizes().begin(), a.sizes().end() - 2) : SymIntList();
  SymIntList batch_b = db > 2 ? SymIntList(b.sizes().begin(), b.sizes().end() - 2) : SymIntList();
  p.batch = broadcast_shapes(batch_a, batch_b);
  p.out = p.batch;
  if (da >= 2) p.out.push_back(a.sizes()[da - 2]);
  if (db >= 2) p.out.push_back(b.sizes()[db - 1]);
  return p;
}

ShapeResult matmul_shape(OpId, const Args& args) {
  const Tensor& a = args[0].tensor();
  const Tensor& b = args[1].tensor();
  MatmulPlan p = plan_matmul(a, b);
  check_matmul_dtypes(a, b, "self", "other");
  return dense_meta(p.out, a.dtype(), common_device(args));
}

void matmul_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& a = args[0].tensor();
  const Tensor& b = args[1].tensor();
  MatmulPlan p = plan_matmul(a, b);
  Tensor A = a.dim() == 1 ? strided_view(a, {1, sizes_of(a)[0]}, {1, strides_of(a)[0]}) : a;
  Tensor B = b.dim() == 1 ? strided_view(b, {sizes_of(b)[0], 1}, {strides_of(b)[0], 1}) : b;
  int64_t rank = static_cast<int64_t>(p.batch.size()) + 2;
  A = unsqueeze_to(A, rank);
  B = unsqueeze_to(B, rank);
  std::vector<int64_t> out_sizes = p.batch.hints();
  out_sizes.push_back(A.sizes()[rank - 2].hint());
  out_sizes.push_back(B.sizes()[rank - 1].hint());
  matmul_into(A, B, strided_view(outs[0], out_sizes, contiguous_strides(SymIntList(out_sizes)).hints()));
}

// ---- addmm ----
void check_integral_scalars(DType dtype, const Scalar& beta, const Scalar& alpha) {
  if (is_floating(dtype)) return;
  SINTER_CHECK(!beta.is_floating() && !alpha.is_floating(),
               "for integer tensors, beta and alpha must be integers (got beta={}, alpha={})", beta.str(),
               alpha.str());
}

ShapeResult addmm_shape(OpId, const Args& args) {
  const Tensor& self = args[0].tensor();
  const Tensor& a = args[1].tensor();
  const Tensor& b = args[2].tensor();
  SINTER_CHECK(a.dim() == 2, "mat1 must be a matrix (2-D), got shape {}", shape_str(a));
  SINTER_CHECK(b.dim() == 2, "mat2 must be a matrix (2-D), got shape {}", shape_str(b));
  SINTER_CHECK(a.sizes()[1] == b.sizes()[0], "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
               a.sizes()[0].str(), a.sizes()[1].str(), b.sizes()[0].str(), b.sizes()[1].str());
  check_matmul_dtypes(a, b, "mat1", "mat2");
  check_same_dtype(self, a, "self", "mat1");
  check_integral_scalars(a.dtype(), args[3].scalar(), args[4].scalar());
  SymIntList out{a.sizes()[0], b.sizes()[1]};
  SINTER_CHECK(self.dim() <= 2 && broadcast_shapes(self.sizes(), out) == out,
               "self of shape {} cannot be broadcast to the product's shape {}", shape_str(self), out.str());
  return dense_meta(out, a.dtype(), common_device(args));
}

void addmm_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  Scalar beta = args[3].scalar(), alpha = args[4].scalar();
  // beta == 0 ignores self entirely (NaN and inf included), as PyTorch and BLAS do.
  if (beta.to_double() != 0) write_into(outs[0], args[0].tensor());
  matmul_into(args[1].tensor(), args[2].tensor(), outs[0], alpha, beta);
}

// ---- linear ----
ShapeResult linear_shape(OpId, const Args& args) {
  const Tensor& x = args[0].tensor();
  const Tensor& w = args[1].tensor();
  SINTER_CHECK(x.dim() >= 1, "input must have at least 1 dim, got a 0-dim tensor");
  SINTER_CHECK(w.dim() == 1 || w.dim() == 2,
               "weight must be 1-D or 2-D ([out_features, in_features]), got shape {}", shape_str(w));
  SINTER_CHECK(x.sizes().back() == w.sizes().back(),
               "input of shape {} and weight of shape {} do not match: in_features {} != {}", shape_str(x),
               shape_str(w), x.sizes().back().str(), w.sizes().back().str());
  check_matmul_dtypes(x, w, "input", "weight");
  SymIntList out(x.sizes().begin(), x.sizes().end() - 1);
  if (w.dim() == 2) out.push_back(w.sizes()[0]);
  if (!args[2].is_none()) {
    const Tensor& bias = args[2].tensor();
    check_same_dtype(x, bias, "input", "bias");
    SINTER_CHECK(broadcast_shapes(bias.sizes(), out) == out,
                 "bias of shape {} cannot be broadcast to the output's shape {}", shape_str(bias), out.str());
  }
  return dense_meta(out, x.dtype(), common_device(args));
}

void linear_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& x = args[0].tensor();
  const Tensor& w = args[1].tensor();
  bool has_bias = !args[2].is_none();
  if (has_bias) write_into(outs[0], args[2].tensor());
  // x [..., in] @ w^T [in, out]: the transpose is a view; matmul_into folds x's leading dims into one GEMM.
  Tensor A = x.dim() == 1 ? strided_view(x, {1, sizes_of(x)[0]}, {1, strides_of(x)[0]}) : x;
  int64_t rank = A.dim(), in = sizes_of(w).back();
  Tensor Wt = w.dim() == 2 ? strided_view(w, {in, sizes_of(w)[0]}, {strides_of(w)[1], strides_of(w)[0]})
                           : strided_view(w, {in, 1}, {strides_of(w)[0], 1});
  std::vector<int64_t> out_sizes = sizes_of(A);
  out_sizes.back() = sizes_of(Wt)[1];
  matmul_into(A, unsqueeze_to(Wt, rank),
              strided_view(outs[0], out_sizes, contiguous_strides(SymIntList(out_sizes)).hints()), 1,
              has_bias ? 1 : 0);
}

// On CUDA the same kernels: matmul_into hands floating products to cuBLAS (ops/cuda_blas.h). Integer products,
// and every product on the simulated device, run the CPU kernel (ops/cuda_fallback.h); while a CUDA graph is
// captured there, the kernel itself runs, and its copies and product are recorded (linalg_util.cpp).
template <KernelFn cpu>
void cuda_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  DType dt = outs.at(0).dtype();
  if (cuda::gemm_supported(dt) || (cuda::is_simulated() && cuda::capturing() && is_floating(dt)))
    return cpu(op, args, outs);
  run_without_cuda_kernel(cpu, op, args, outs, false, outs[0].device());
}

}  // namespace

void register_matmul_ops(OpTable& t) {
  t.set(OpId::mm, mm_shape, mm_kernel);
  t.set(OpId::bmm, bmm_shape, mm_kernel);
  t.set(OpId::matmul, matmul_shape, matmul_kernel);
  t.set(OpId::addmm, addmm_shape, addmm_kernel);
  t.set(OpId::linear, linear_shape, linear_kernel);
  t.set_kernel(OpId::mm, kCUDA, cuda_kernel<mm_kernel>);
  t.set_kernel(OpId::bmm, kCUDA, cuda_kernel<mm_kernel>);
  t.set_kernel(OpId::matmul, kCUDA, cuda_kernel<matmul_kernel>);
  t.set_kernel(OpId::addmm, kCUDA, cuda_kernel<addmm_kernel>);
  t.set_kernel(OpId::linear, kCUDA, cuda_kernel<linear_kernel>);
}

}  // namespace sinter
