#include "runtime/cpu_launcher.h"

#include <fmt/format.h>

#include <algorithm>

#include "ops/blas.h"
#include "ops/conv_kernels.h"
#include "ops/gemm_thin.h"
#include "ops/sgemm.h"
#include "sinter/ops.h"
#include "support/check.h"
#include "tensor/thread_pool.h"

namespace sinter::runtime {

using inductor::Kernel;
using inductor::LoopNode;

namespace {

struct KernelArgs {  // matches `struct sn_kargs` in the generated preamble
  void** bufs;
  const int64_t* syms;
  int* error;  // set to 1 by a kernel that met an integer division by zero
};

// A generated epilogue kernel run on finished tiles of a GEMM's [M, N] output (row stride ldc).
struct TileEpilogue {
  KernelFn fn;
  void* args;
  int64_t ldc;
  // A flat epilogue (element-wise over [M, N]) over the tile: one range where the tile spans whole rows, else
  // row by row over its columns.
  static void flat(void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    auto* p = static_cast<TileEpilogue*>(ctx);
    if (j0 == 0 && j1 == p->ldc) return p->fn(p->args, i0 * p->ldc, i1 * p->ldc);
    for (int64_t i = i0; i < i1; ++i) p->fn(p->args, i * p->ldc + j0, i * p->ldc + j1);
  }
  // A row epilogue (it reduces over rows, e.g. residual + layer norm) over whole rows.
  static void rows(void* ctx, int64_t i0, int64_t i1, int64_t, int64_t) {
    auto* p = static_cast<TileEpilogue*>(ctx);
    p->fn(p->args, i0, i1);
  }
};

}  // namespace

// One launch's arguments: the kernel's buffers, the symbol values and its error flag.
struct CpuLauncher::Call {
  std::vector<void*> ptrs;
  int error = 0;
  KernelArgs args;
  const std::string& name;
  Call(const RunState& r, const inductor::KernelPlan& plan) : name(plan.name) {
    for (int b : plan.buffers) ptrs.push_back(r.bufs[b].data_ptr());
    args = KernelArgs{ptrs.data(), r.syms.data(), &error};
  }
  Call(const Call&) = delete;  // args points into this object
  void check() const {
    SINTER_CHECK(error == 0, "ZeroDivisionError: integer division by zero in compiled kernel {}", name);
  }
};

CpuLauncher::CpuLauncher(std::shared_ptr<const CompiledGraphParts> parts, std::vector<KernelFn> fns,
                         std::shared_ptr<const void> code)
    : parts_(parts), fns_(std::move(fns)), code_(std::move(code)) {}

Tensor CpuLauncher::allocate(const TensorMeta& meta) const {
  TensorMeta m = meta;
  m.device = kCPU;
  return empty_from_meta(m);
}

void CpuLauncher::run_loops(RunState& r, int k) const {
  const inductor::KernelPlan& plan = parts_->plan.kernels[k];
  Call call(r, plan);
  int64_t total = r.ev(plan.total), work = std::max<int64_t>(1, r.ev(plan.work));
  int64_t grain = std::max<int64_t>(1, kGrainElementwise / work);
  parallel_for_raw(0, total, grain, reinterpret_cast<RangeFn>(fns_[k]), &call.args);
  call.check();
}

void CpuLauncher::run_combined(RunState& r, const std::vector<int>& kernels) const {
  std::vector<std::unique_ptr<Call>> calls;
  struct Part {
    KernelFn fn;
    void* args;
    int64_t begin;  // where its iterations start in the joined range
  };
  std::vector<Part> parts;
  int64_t total = 0;
  for (int k : kernels) {
    const inductor::KernelPlan& plan = parts_->plan.kernels[k];
    calls.push_back(std::make_unique<Call>(r, plan));
    int64_t n = r.ev(plan.total);
    if (n <= 0) continue;
    parts.push_back({fns_[k], &calls.back()->args, total});
    total += n;
  }
  parts.push_back({nullptr, nullptr, total});  // the end
  parallel_for(0, total, kGrainElementwise, [&parts](int64_t begin, int64_t end) {
    auto p = std::upper_bound(parts.begin(), parts.end(), begin,
                              [](int64_t i, const Part& part) { return i < part.begin; }) - 1;
    for (; p->begin < end; ++p) {
      const int64_t from = std::max(begin, p->begin), to = std::min(end, (p + 1)->begin);
      if (from < to) p->fn(p->args, from - p->begin, to - p->begin);
    }
  });
  for (const auto& call : calls) call->check();
}

bool CpuLauncher::run_library(RunState& r, int k) const {
  const LoopNode& n = parts_->program->nodes[parts_->schedule.kernels[k].nodes[0]];
  if (n.gemm) {
    run_gemm(r, k);
    return true;
  }
  return n.conv && run_conv(r, k);
}

// out[M, N] = A[M, K] @ B[K, N] on sinter's own GEMM over the pool, the epilogue kernel run on each finished tile
// while it is in cache (whole rows for a row epilogue such as residual + layer norm). On a CPU without its
// micro-kernels, or for thin products, OpenBLAS computes the product and the epilogue sweeps the output once.
void CpuLauncher::run_gemm(RunState& r, int k) const {
  const Kernel& kernel = parts_->schedule.kernels[k];
  const LoopNode& n = parts_->program->nodes[kernel.nodes[0]];
  Tensor a = r.view(n.tensor_args[0]), b = r.view(n.tensor_args[1]);
  const Tensor& c = r.bufs[n.outs[0]];
  int64_t m = a.size(0).hint(), kk = a.size(1).hint(), nn = b.size(1).hint();
  const int e = kernel.epilogue;
  const bool constant_b = constant_operand(n, 1);
  if (constant_b && b.stride(0).hint() != 1 && blas::thin_suits(m, kk, a.stride(1).hint(), 1))
    b = transposed_weight(k, b);
  // The choice eager's GEMM makes too, so both round alike: a thin product's dot products, OpenBLAS below
  // sinter's GEMM's sizes.
  if (blas::thin_suits(m, kk, a.stride(1).hint(), b.stride(0).hint()) || !blas::sgemm_suits(m, nn, kk)) {
    if (!blas::blas_compatible(m, kk, a.stride(0).hint(), a.stride(1).hint())) a = a.contiguous();
    if (!blas::blas_compatible(kk, nn, b.stride(0).hint(), b.stride(1).hint())) b = b.contiguous();
    blas::Gemm<float> g;
    g.m = m, g.n = nn, g.k = kk, g.a = a.data_ptr<float>(), g.a_rs = a.stride(0).hint(), g.a_cs = a.stride(1).hint();
    g.b = b.data_ptr<float>(), g.b_rs = b.stride(0).hint(), g.b_cs = b.stride(1).hint();
    g.c = c.data_ptr<float>(), g.c_rs = nn;
    blas::gemm(g);
    if (e >= 0) run_loops(r, e);
    return;
  }
  blas::TiledGemm g;
  g.m = m, g.n = nn, g.k = kk;
  g.a = a.data_ptr<float>(), g.a_rs = a.stride(0).hint(), g.a_cs = a.stride(1).hint();
  g.b = b.data_ptr<float>(), g.b_rs = b.stride(0).hint(), g.b_cs = b.stride(1).hint();
  g.c = c.data_ptr<float>(), g.c_rs = nn;
  g.bf16 = blas::matmul_bf16();
  std::shared_ptr<const blas::PackedB> packed;  // a weight frozen into the graph is packed once
  if (constant_b) {
    packed = packed_weight(k, g);
    g.packed_b = packed.get();
  }
  if (e < 0) {
    blas::sgemm_tiled(g);
    return;
  }
  const inductor::KernelPlan& plan = parts_->plan.kernels[e];
  Call call(r, plan);
  TileEpilogue ep{fns_[e], &call.args, nn};
  g.ctx = &ep;
  g.whole_rows = plan.row_elems == nullptr;  // a row epilogue reduces over each row: it needs whole rows
  g.tile_done = g.whole_rows ? TileEpilogue::rows : TileEpilogue::flat;
  blas::sgemm_tiled(g);
  call.check();
}

bool CpuLauncher::constant_operand(const LoopNode& n, int i) const {
  return parts_->program->buffers[n.tensor_args[i].buffer].kind == inductor::BufferKind::kConstant;
}

std::shared_ptr<const blas::PackedB> CpuLauncher::packed_weight(int k, const blas::TiledGemm& g) const {
  std::lock_guard<std::mutex> lock(packed_mutex_);
  std::shared_ptr<const blas::PackedB>& p = packed_[{k, g.bf16}];
  if (!p || p->k != g.k || p->n != g.n) p = blas::sgemm_pack_b(g);
  return p;
}

Tensor CpuLauncher::transposed_weight(int k, const Tensor& b) const {
  std::lock_guard<std::mutex> lock(packed_mutex_);
  Tensor& t = transposed_[k];
  if (!t.defined() || t.size(0).hint() != b.size(1).hint() || t.size(1).hint() != b.size(0).hint())
    t = b.t().contiguous();
  return t.t();
}

// A conv2d as one implicit GEMM, its epilogue run on each finished tile of output pixels x channels. False where
// the implicit GEMM does not apply at run time (no micro-kernel on this CPU): the executor then runs the eager
// conv into the buffer and the epilogue over it.
bool CpuLauncher::run_conv(RunState& r, int k) const {
  const Kernel& kernel = parts_->schedule.kernels[k];
  const LoopNode& n = parts_->program->nodes[kernel.nodes[0]];
  Args args = bind_extern_args(r, n);
  const Tensor& out = r.bufs[n.outs[0]];
  const int e = kernel.epilogue;
  // A weight frozen into the graph is packed once, as a GEMM's.
  struct Weight {
    const CpuLauncher* launcher;
    int k;
    std::shared_ptr<const blas::PackedB> keep;
  } weight{this, k, nullptr};
  WeightPacker packer;
  if (constant_operand(n, 1))
    packer = {[](void* ctx, const blas::TiledGemm& g) -> const blas::PackedB* {
                auto* w = static_cast<Weight*>(ctx);
                w->keep = w->launcher->packed_weight(w->k, g);
                return w->keep.get();
              },
              &weight};
  if (e < 0) return conv2d_tiled(n.op, args, out, nullptr, nullptr, packer);
  Call call(r, parts_->plan.kernels[e]);
  TileEpilogue ep{fns_[e], &call.args, out.size(1).hint()};  // channels: the row stride of [pixels, O]
  if (!conv2d_tiled(n.op, args, out, TileEpilogue::flat, &ep, packer)) return false;
  call.check();
  return true;
}

}  // namespace sinter::runtime
