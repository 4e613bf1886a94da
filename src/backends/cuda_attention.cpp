// scaled_dot_product_attention on CUDA tensors (installed into the op's CUDA kernel, ops/cuda_fallback.h).
// bfloat16 and float16 with a head dim that is a multiple of 16 up to 128 (the same for q, k and v), without
// dropout, run sinter's flash-attention kernel (codegen/cuda/flash_attention.h): causal, a bool or additive mask
// broadcast over the batch, key/value batch dims that broadcast against the query's or serve groups of query heads
// (enable_gqa). Everything else takes the math path on the GPU: softmax(q k^T * scale + mask) @ v as cuBLAS
// products around generated softmax kernels, in float32 for the half dtypes; dropout alone runs the CPU kernel on
// staged copies (its random numbers are the CPU generator's). Why a call is not flash is logged once per reason
// (SINTER_LOGS=perf_hints).
//
// On the simulated device the flash kernel runs where eager CUDA ops run generated kernels (SINTER_CUDA_EAGER=
// generated, or while a CUDA graph is captured); otherwise the CPU kernel runs on the simulated memory, as for
// other ops.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "codegen/cpp/kernel_cache.h"
#include "codegen/cuda/cubin_cache.h"
#include "codegen/cuda/cuda_codegen.h"
#include "codegen/cuda/flash_attention.h"
#include "codegen/cuda/sim_prelude.h"
#include "ops/cuda_blas.h"
#include "ops/cuda_fallback.h"
#include "ops/dispatch.h"
#include "ops/linalg_util.h"
#include "runtime/cuda_sim.h"
#include "sinter/cuda.h"
#include "sinter/ops.h"
#include "support/log.h"
#include "support/warning.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_driver.h"
#include "tensor/cuda_graph.h"

namespace sinter {
namespace {

using codegen::cuda::FlashMask;
using codegen::cuda::FlashParams;
using codegen::cuda::FlashVariant;

void note_math_path(const std::string& why) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(why).second)
    SINTER_LOG(kPerfHints, "scaled_dot_product_attention on CUDA: the math path, not flash attention: {}", why);
}

// A loaded flash kernel: the simulator's entry or the driver's function (its module kept here).
struct FlashKernel {
  runtime::sim::Entry sim = nullptr;
  cuda::driver::CUfunction function = nullptr;
  std::shared_ptr<const void> code;
};

const FlashKernel& flash_kernel(const FlashVariant& v, int device) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, int>, FlashKernel> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_tuple(v.name(), device);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  const std::string name = v.name(), source = codegen::cuda::flash_attention_source(v);
  FlashKernel k;
  if (cuda::is_simulated()) {
    if (codegen::cuda::nvrtc_check_in_simulation()) {
      bool compiled = false;
      codegen::cuda::cubin_for(source, name, "sm_90", compiled);
    }
    std::string unit = std::string(codegen::cuda::sim_prelude()) + codegen::cuda::unit_header() + source;
    codegen::cpp::CompiledObject obj = codegen::cpp::compile_and_load({unit}, name + "_cuda_sim");
    reinterpret_cast<void (*)(const sn_sim_api*)>(obj.library->symbol("sn_sim_bind"))(runtime::sim::api());
    k.sim = reinterpret_cast<runtime::sim::Entry>(obj.library->symbol(name + "__sim"));
    k.code = obj.library;
  } else {
    cuda::DeviceProperties props = cuda::get_device_properties(device);
    bool compiled = false;
    std::string cubin = codegen::cuda::cubin_for(source, name, fmt::format("sm_{}{}", props.major, props.minor),
                                                 compiled);
    cuda::driver::use_device(device);
    auto module = std::make_shared<cuda::driver::Module>(cubin, name);
    k.function = module->function(name);
    k.code = module;
    SINTER_LOG(kPerfHints, "scaled_dot_product_attention on CUDA: kernel {} {}", name,
               compiled ? "compiled by NVRTC" : "loaded from the cache");
  }
  return loaded.emplace(key, std::move(k)).first->second;
}

// An operand's strides over the output's batch (0 where it broadcasts) and its last two dims.
std::vector<int64_t> strides_over(const Tensor& x, const std::vector<int64_t>& out_sizes) {
  Tensor t = unsqueeze_to(x, static_cast<int64_t>(out_sizes.size()));
  std::vector<int64_t> st = strides_of(t), sz = sizes_of(t);
  for (size_t d = 0; d < st.size(); ++d)
    if (sz[d] == 1) st[d] = 0;
  return st;
}

// The tiles of the flash kernel (measured on an H200 with naive_attention, head dim 64; see bench/README.md).
// SINTER_FLASH_TILES="R,K" (1 or 2 row tiles per warp, 32 or 64 keys per tile) overrides them, for measuring.
void set_tiles(FlashVariant& v) {
  // Two row tiles per warp up to head dim 64 (each K and V fragment serves both); above, their accumulators
  // would not fit in registers. 32 keys a tile keep two tiles of K and V in 48 KiB of static shared memory.
  v.row_tiles = v.head_dim <= 64 ? 2 : 1;
  v.key_tile = 32;
  if (const char* env = std::getenv("SINTER_FLASH_TILES"); env && *env) {
    int r = 0, k = 0;
    if (std::sscanf(env, "%d,%d", &r, &k) == 2 && (r == 1 || r == 2) && (k == 32 || k == 64)) {
      FlashVariant asked = v;
      asked.row_tiles = r;
      asked.key_tile = k;
      if (asked.shared_bytes() <= 48 * 1024) v = asked;  // else this head dim keeps the default
    } else {
      warn_once("SINTER_FLASH_TILES", fmt::format("SINTER_FLASH_TILES='{}' is not 'R,K' with R 1 or 2 and K 32 or "
                                                  "64; using the default", env));
    }
  }
}

// The flash kernel's launch for these arguments, or the reason it does not apply.
struct FlashPlan {
  FlashVariant variant;
  FlashParams params{};
  unsigned grid = 0;
  std::vector<Tensor> keep;  // copies made to meet the kernel's layout
};

std::string plan_flash(const Args& args, const Tensor& out, FlashPlan& plan) {
  Tensor q = args[0].tensor(), k = args[1].tensor(), v = args[2].tensor();
  DType dt = q.dtype();
  if (dt != kBFloat16 && dt != kFloat16)
    return fmt::format("dtype {} (flash takes bfloat16 and float16)", dtype_name(dt));
  if (args[4].to_double() > 0) return "dropout";
  int64_t E = sizes_of(q).back(), Ev = sizes_of(v).back();
  if (E != Ev || E % 16 != 0 || E > 128 || E == 0)
    return fmt::format("head dims {} and {} (flash takes one multiple of 16 up to 128)", E, Ev);
  std::vector<int64_t> os = sizes_of(out);
  const int64_t rank = out.dim(), L = os[rank - 2], S = sizes_of(k)[k.dim() - 2];
  // Batch dims: size-1 dims dropped, neighbours merged where every operand walks them with one stride; at most
  // two may remain.
  Tensor mask = args[3].is_none() ? Tensor() : args[3].tensor();
  auto aligned = [](const Tensor& t) {
    std::vector<int64_t> st = strides_of(t), sz = sizes_of(t);
    if (st.back() != 1 && sz.back() > 1) return false;
    for (size_t d = 0; d + 1 < st.size(); ++d)
      if (sz[d] > 1 && st[d] % 8 != 0) return false;
    return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
  };
  for (Tensor* t : {&q, &k, &v})
    if (!aligned(*t)) {
      *t = t->contiguous();
      plan.keep.push_back(*t);
    }
  std::vector<std::vector<int64_t>> st;
  for (const Tensor* t : std::initializer_list<const Tensor*>{&q, &k, &v, &out}) st.push_back(strides_over(*t, os));
  if (mask.defined()) st.push_back(strides_over(mask, os));
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> bst(st.size());
  const int64_t kv_heads = rank >= 3 ? sizes_of(unsqueeze_to(k, rank))[rank - 3] : 1;
  const bool gqa = args[7].to_bool() && rank >= 3 && kv_heads != os[rank - 3];
  for (int64_t d = 0; d < rank - 2; ++d) {
    if (os[d] == 1) continue;
    bool merge = !sizes.empty() && !(gqa && d == rank - 3);  // the heads stay a dim of their own
    for (size_t i = 0; i < st.size() && merge; ++i) merge = bst[i].back() == st[i][d] * os[d];
    if (merge) {
      sizes.back() *= os[d];
      for (size_t i = 0; i < st.size(); ++i) bst[i].back() = st[i][d];
      continue;
    }
    sizes.push_back(os[d]);
    for (size_t i = 0; i < st.size(); ++i) bst[i].push_back(st[i][d]);
  }
  if (sizes.size() > 2) return fmt::format("batch dims {} that do not merge into two", out.sizes().str());
  const int64_t group = gqa ? os[rank - 3] / kv_heads : 1;
  while (sizes.size() < 2) {
    sizes.insert(sizes.begin(), 1);
    for (auto& b : bst) b.insert(b.begin(), 0);
  }
  if (L > 0x7fffffff || S > 0x7fffffff) return "a sequence longer than 2^31";
  plan.variant.head_dim = static_cast<int>(E);
  set_tiles(plan.variant);
  const int rows = plan.variant.rows();
  int64_t items = sizes[0] * sizes[1], row_blocks = (L + rows - 1) / rows;
  if (items * row_blocks > 0x7fffffff) return "more than 2^31 blocks";
  plan.grid = static_cast<unsigned>(items * row_blocks);
  plan.variant.bf16 = dt == kBFloat16;
  plan.variant.causal = args[5].to_bool();
  plan.variant.mask = !mask.defined()          ? FlashMask::kNone
                      : mask.dtype() == kBool ? FlashMask::kBool
                                              : FlashMask::kAdditive;
  FlashParams& p = plan.params;
  p.q = q.data_ptr(), p.k = k.data_ptr(), p.v = v.data_ptr(), p.out = out.data_ptr();
  p.mask = mask.defined() ? mask.data_ptr() : nullptr;
  p.n1 = sizes[1], p.L = L, p.S = S, p.row_blocks = row_blocks, p.group = group;
  p.q0 = bst[0][0], p.q1 = bst[0][1], p.qr = st[0][rank - 2];
  p.k0 = bst[1][0], p.k1 = bst[1][1], p.kr = st[1][rank - 2];
  p.v0 = bst[2][0], p.v1 = bst[2][1], p.vr = st[2][rank - 2];
  p.o0 = bst[3][0], p.o1 = bst[3][1], p.orow = st[3][rank - 2];
  if (mask.defined()) p.m0 = bst[4][0], p.m1 = bst[4][1], p.mr = st[4][rank - 2], p.mc = st[4][rank - 1];
  double scale = args[6].is_none() ? 1.0 / std::sqrt(static_cast<double>(E)) : args[6].to_double();
  p.scale = static_cast<float>(scale);
  p.scale_log2 = static_cast<float>(scale * 1.4426950408889634);
  return "";
}

void run_flash(const FlashPlan& plan, Device device) {
  const FlashKernel& kernel = flash_kernel(plan.variant, device.index);
  const std::string name = plan.variant.name();
  const unsigned grid = plan.grid, block = codegen::cuda::kFlashThreads;
  if (cuda::is_simulated()) {
    FlashParams params = plan.params;
    auto run = [name, entry = kernel.sim, params, grid, block]() mutable {
      void* ps[] = {&params};
      runtime::sim::launch(name, entry, ps, {grid, 1, 1}, {block, 1, 1}, 0);
    };
    for (const Tensor& t : plan.keep) cuda::keep_with_graph(device.index, t.storage());
    if (!cuda::record_simulated(device.index, run)) run();
    return;
  }
  FlashParams params = plan.params;
  void* ps[] = {&params};
  cuda::driver::use_device(device.index);
  cuda::driver::launch(kernel.function, {grid, 1, 1}, {block, 1, 1}, 0, cuda::work_stream(device.index), ps,
                       name.c_str());
}

// softmax(q k^T * scale + mask) @ v with the CUDA ops (float32 scores for the half dtypes); rows whose every key
// is masked give zeros.
void math_path(const Args& args, const Tensor& out) {
  const Tensor& q = args[0].tensor();
  DType cd = q.dtype() == kFloat64 ? kFloat64 : kFloat32;
  int64_t E = sizes_of(q).back();
  double scale = args[6].is_none() ? 1.0 / std::sqrt(static_cast<double>(E)) : args[6].to_double();
  const int64_t heads = out.dim() >= 3 ? out.size(out.dim() - 3).hint() : 1;
  const bool gqa = args[7].to_bool() && out.dim() >= 3;
  Tensor k = (gqa ? sdpa_repeat_kv(args[1].tensor(), heads) : args[1].tensor()).to(cd);
  Tensor v = (gqa ? sdpa_repeat_kv(args[2].tensor(), heads) : args[2].tensor()).to(cd);
  Tensor s = matmul(q.to(cd) * scale, k.transpose(-2, -1));
  const int64_t L = s.size(-2).hint(), S = s.size(-1).hint();
  const double inf = std::numeric_limits<double>::infinity();
  bool may_mask_rows = false;
  if (args[5].to_bool()) {
    // Built on the host and copied: arange has no CUDA kernel.
    Tensor above = lt(arange(L).unsqueeze(1), arange(S).unsqueeze(0)).to(q.device());
    s = masked_fill(s, above, -inf);
  }
  if (!args[3].is_none()) {
    const Tensor& mask = args[3].tensor();
    s = mask.dtype() == kBool ? masked_fill(s, logical_not(mask), -inf) : s + mask.to(cd);
    may_mask_rows = true;
  }
  Tensor p = softmax(s, -1);
  if (may_mask_rows) p = where(eq(amax(s, {-1}, true), -inf), 0.0, p);
  write_into(out, matmul(p, v));
}

void sdpa_cuda_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& out = outs[0];
  if (out.numel().hint() == 0) return;
  HookScope none(nullptr);  // the copies and ops below are this kernel's, not the caller's graph
  KernelFn cpu = op_def(op).kernels[static_cast<int>(DeviceType::kCPU)];
  const bool sim = cuda::is_simulated();
  if (!sim || cuda_eager_generated()) {
    FlashPlan plan;
    std::string why = plan_flash(args, out, plan);
    if (why.empty()) return run_flash(plan, out.device());
    note_math_path(why);
  }
  const bool gemm = cuda::gemm_supported(kFloat32) || (sim && cuda_eager_generated());
  if (args[4].to_double() > 0 || !gemm) return run_without_cuda_kernel(cpu, op, args, outs, false, out.device());
  math_path(args, out);
}

// The ops layer's CUDA kernel of the op calls this (ops/cuda_fallback.h); installed when libsinter loads.
[[maybe_unused]] const bool installed = [] {
  set_cuda_attention_kernel(&sdpa_cuda_kernel);
  return true;
}();

}  // namespace
}  // namespace sinter
