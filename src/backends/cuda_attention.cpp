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
#include <functional>
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

// The function `function` of the flash unit `unit` (its source made by `source` on first use), loaded on
// `device`: each unit is compiled once (NVRTC, or the host compiler for the simulator) for all its functions.
const FlashKernel& flash_function(const std::string& unit, const std::function<std::string()>& source,
                                  const std::string& function, int device) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, int>, std::shared_ptr<const void>> units;
  static std::map<std::tuple<std::string, int>, FlashKernel> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find({function, device}); it != loaded.end()) return it->second;
  std::shared_ptr<const void>& code = units[{unit, device}];
  FlashKernel k;
  if (cuda::is_simulated()) {
    if (!code) {
      const std::string text = source();
      if (codegen::cuda::nvrtc_check_in_simulation()) {
        bool compiled = false;
        codegen::cuda::cubin_for(text, unit, "sm_90", compiled);
      }
      std::string whole = std::string(codegen::cuda::sim_prelude()) + codegen::cuda::unit_header() + text;
      codegen::cpp::CompiledObject obj = codegen::cpp::compile_and_load({whole}, unit + "_cuda_sim");
      reinterpret_cast<void (*)(const sn_sim_api*)>(obj.library->symbol("sn_sim_bind"))(runtime::sim::api());
      code = obj.library;
    }
    auto library = std::static_pointer_cast<const codegen::cpp::SharedLibrary>(code);
    k.sim = reinterpret_cast<runtime::sim::Entry>(library->symbol(function + "__sim"));
  } else {
    if (!code) {
      cuda::DeviceProperties props = cuda::get_device_properties(device);
      bool compiled = false;
      std::string cubin = codegen::cuda::cubin_for(source(), unit, fmt::format("sm_{}{}", props.major, props.minor),
                                                   compiled);
      cuda::driver::use_device(device);
      code = std::make_shared<cuda::driver::Module>(cubin, unit);
      SINTER_LOG(kPerfHints, "scaled_dot_product_attention on CUDA: kernels {} {}", unit,
                 compiled ? "compiled by NVRTC" : "loaded from the cache");
    }
    k.function = std::static_pointer_cast<const cuda::driver::Module>(code)->function(function);
  }
  k.code = code;
  return loaded.emplace(std::make_tuple(function, device), std::move(k)).first->second;
}

const FlashKernel& flash_kernel(const FlashVariant& v, int device) {
  const std::string name = v.name();
  return flash_function(name, [&] { return codegen::cuda::flash_attention_source(v); }, name, device);
}

// One launch of a flash function with its one by-value parameter, on the simulator or the GPU; `keep` lives until
// the replays of a CUDA graph that captures it end.
template <class Params>
void launch_flash(const FlashKernel& kernel, const std::string& name, const Params& params, unsigned grid,
                  Device device, const std::vector<Tensor>& keep) {
  const unsigned block = codegen::cuda::kFlashThreads;
  if (cuda::is_simulated()) {
    auto run = [name, entry = kernel.sim, copy = Params(params), grid, block]() mutable {
      void* ps[] = {&copy};
      runtime::sim::launch(name, entry, ps, {grid, 1, 1}, {block, 1, 1}, 0);
    };
    for (const Tensor& t : keep) cuda::keep_with_graph(device.index, t.storage());
    if (!cuda::record_simulated(device.index, run)) run();
    return;
  }
  Params copy = params;
  void* ps[] = {&copy};
  cuda::driver::use_device(device.index);
  cuda::driver::launch(kernel.function, {grid, 1, 1}, {block, 1, 1}, 0, cuda::work_stream(device.index), ps,
                       name.c_str());
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

// The batch dims of sizes `os` (all but the last two) as exactly two (n0 x n1): size-1 dims dropped, neighbours
// merged where every operand (its strides over os in `st`) walks them with one stride, ones prepended; with
// `keep_heads` dim -3 stays a dim of its own. `bst` gets each operand's two strides. False when more than two remain.
bool batch_dims(const std::vector<int64_t>& os, const std::vector<std::vector<int64_t>>& st, bool keep_heads,
                std::vector<int64_t>& sizes, std::vector<std::vector<int64_t>>& bst) {
  const int64_t rank = static_cast<int64_t>(os.size());
  sizes.clear();
  bst.assign(st.size(), {});
  for (int64_t d = 0; d < rank - 2; ++d) {
    if (os[d] == 1) continue;
    bool merge = !sizes.empty() && !(keep_heads && d == rank - 3);
    for (size_t i = 0; i < st.size() && merge; ++i) merge = bst[i].back() == st[i][d] * os[d];
    if (merge) {
      sizes.back() *= os[d];
      for (size_t i = 0; i < st.size(); ++i) bst[i].back() = st[i][d];
      continue;
    }
    sizes.push_back(os[d]);
    for (size_t i = 0; i < st.size(); ++i) bst[i].push_back(st[i][d]);
  }
  if (sizes.size() > 2) return false;
  while (sizes.size() < 2) {
    sizes.insert(sizes.begin(), 1);
    for (auto& b : bst) b.insert(b.begin(), 0);
  }
  return true;
}

// Whether the flash kernels read `t` as it is: unit innermost stride, other strides multiples of 8 elements,
// 16-byte aligned.
bool flash_readable(const Tensor& t) {
  std::vector<int64_t> st = strides_of(t), sz = sizes_of(t);
  if (st.back() != 1 && sz.back() > 1) return false;
  for (size_t d = 0; d + 1 < st.size(); ++d)
    if (sz[d] > 1 && st[d] % 8 != 0) return false;
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
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
  for (Tensor* t : {&q, &k, &v})
    if (!flash_readable(*t)) {
      *t = t->contiguous();
      plan.keep.push_back(*t);
    }
  std::vector<std::vector<int64_t>> st;
  for (const Tensor* t : std::initializer_list<const Tensor*>{&q, &k, &v, &out}) st.push_back(strides_over(*t, os));
  if (mask.defined()) st.push_back(strides_over(mask, os));
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> bst;
  const int64_t kv_heads = rank >= 3 ? sizes_of(unsqueeze_to(k, rank))[rank - 3] : 1;
  const bool gqa = args[7].to_bool() && rank >= 3 && kv_heads != os[rank - 3];
  if (!batch_dims(os, st, gqa, sizes, bst))
    return fmt::format("batch dims {} that do not merge into two", out.sizes().str());
  const int64_t group = gqa ? os[rank - 3] / kv_heads : 1;
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
  launch_flash(flash_kernel(plan.variant, device.index), plan.variant.name(), plan.params, plan.grid, device,
               plan.keep);
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

// scaled_dot_product_attention_backward by flash attention's backward: the forward's kernel in its stats variant
// (each row's lse and D), then the dq kernel and the dk/dv kernel. Returns why it does not apply, having run
// nothing, or "".
std::string run_flash_backward(const Args& args, std::vector<Tensor>& outs) {
  Tensor g = args[0].tensor(), q = args[1].tensor(), k = args[2].tensor(), v = args[3].tensor();
  const DType dt = q.dtype();
  if (dt != kBFloat16 && dt != kFloat16)
    return fmt::format("dtype {} (flash takes bfloat16 and float16)", dtype_name(dt));
  const int64_t E = sizes_of(q).back(), Ev = sizes_of(v).back();
  if (E != Ev || E % 16 != 0 || E == 0 || E > codegen::cuda::kFlashBackwardMaxHeadDim)
    return fmt::format("head dims {} and {} (the backward takes one multiple of 16 up to {})", E, Ev,
                       codegen::cuda::kFlashBackwardMaxHeadDim);
  const int64_t rank = q.dim(), L = sizes_of(q)[rank - 2], S = sizes_of(k)[rank - 2];
  if (L == 0 || S == 0) return "an empty sequence";
  if (L > 0x7fffffff || S > 0x7fffffff) return "a sequence longer than 2^31";
  std::vector<Tensor> keep;
  for (Tensor* t : {&g, &q, &k, &v})
    if (!flash_readable(*t)) {
      *t = t->contiguous();
      keep.push_back(*t);
    }
  for (const Tensor& o : outs)
    if (!flash_readable(o)) return "a gradient's layout";
  const std::vector<int64_t> os = sizes_of(q);
  std::vector<std::vector<int64_t>> st;
  for (const Tensor* t : {&g, &q, &k, &v, &outs[0], &outs[1], &outs[2]}) st.push_back(strides_over(*t, os));
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> b;
  if (!batch_dims(os, st, false, sizes, b)) return fmt::format("batch dims {} that do not merge into two", q.sizes().str());
  const int64_t items = sizes[0] * sizes[1];
  const Device device = q.device();
  Tensor lse = empty_from_meta(dense_meta(SymIntList({items * L}), kFloat32, device));
  Tensor delta = empty_from_meta(dense_meta(SymIntList({items * L}), kFloat32, device));
  keep.push_back(lse), keep.push_back(delta);
  const bool causal = args[4].to_bool();
  const double scale = args[5].to_double();
  const int64_t query_blocks = (L + 63) / 64, key_blocks = (S + 63) / 64;
  FlashVariant fv;
  fv.head_dim = static_cast<int>(E);
  set_tiles(fv);
  fv.bf16 = dt == kBFloat16, fv.causal = causal, fv.stats = true;
  const int64_t stat_blocks = (L + fv.rows() - 1) / fv.rows();
  if (items * std::max({query_blocks, key_blocks, stat_blocks}) > 0x7fffffff) return "more than 2^31 blocks";
  auto row = [&](int i) { return st[i][rank - 2]; };
  FlashParams fp{};
  fp.q = q.data_ptr(), fp.k = k.data_ptr(), fp.v = v.data_ptr();
  fp.n1 = sizes[1], fp.L = L, fp.S = S, fp.row_blocks = stat_blocks, fp.group = 1;
  fp.q0 = b[1][0], fp.q1 = b[1][1], fp.qr = row(1);
  fp.k0 = b[2][0], fp.k1 = b[2][1], fp.kr = row(2);
  fp.v0 = b[3][0], fp.v1 = b[3][1], fp.vr = row(3);
  fp.scale = static_cast<float>(scale), fp.scale_log2 = static_cast<float>(scale * 1.4426950408889634);
  fp.lse = static_cast<float*>(lse.data_ptr()), fp.delta = static_cast<float*>(delta.data_ptr());
  fp.dout = g.data_ptr(), fp.g0 = b[0][0], fp.g1 = b[0][1], fp.grow = row(0);
  launch_flash(flash_kernel(fv, device.index), fv.name(), fp, static_cast<unsigned>(items * stat_blocks), device,
               keep);
  codegen::cuda::FlashBackwardVariant bv;
  bv.bf16 = fv.bf16, bv.head_dim = fv.head_dim, bv.causal = causal;
  const std::string unit = bv.name();
  auto source = [&] { return codegen::cuda::flash_backward_source(bv); };
  codegen::cuda::FlashBackwardParams bp{};
  bp.q = fp.q, bp.k = fp.k, bp.v = fp.v, bp.dout = fp.dout;
  bp.dq = outs[0].data_ptr(), bp.dk = outs[1].data_ptr(), bp.dv = outs[2].data_ptr();
  bp.lse = fp.lse, bp.delta = fp.delta;
  bp.n1 = sizes[1], bp.L = L, bp.S = S;
  bp.q0 = fp.q0, bp.q1 = fp.q1, bp.qr = fp.qr, bp.k0 = fp.k0, bp.k1 = fp.k1, bp.kr = fp.kr;
  bp.v0 = fp.v0, bp.v1 = fp.v1, bp.vr = fp.vr, bp.g0 = fp.g0, bp.g1 = fp.g1, bp.gr = fp.grow;
  bp.dq0 = b[4][0], bp.dq1 = b[4][1], bp.dqr = row(4);
  bp.dk0 = b[5][0], bp.dk1 = b[5][1], bp.dkr = row(5);
  bp.dv0 = b[6][0], bp.dv1 = b[6][1], bp.dvr = row(6);
  bp.scale = fp.scale, bp.scale_log2 = fp.scale_log2;
  bp.row_blocks = query_blocks;
  launch_flash(flash_function(unit, source, unit + "_dq", device.index), unit + "_dq", bp,
               static_cast<unsigned>(items * query_blocks), device, keep);
  bp.row_blocks = key_blocks;
  launch_flash(flash_function(unit, source, unit + "_dkv", device.index), unit + "_dkv", bp,
               static_cast<unsigned>(items * key_blocks), device, keep);
  return "";
}

void sdpa_backward_cuda_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  HookScope none(nullptr);  // the copies and ops below are this kernel's, not the caller's graph
  const bool sim = cuda::is_simulated();
  if (!sim || cuda_eager_generated()) {
    std::string why = run_flash_backward(args, outs);
    if (why.empty()) return;
    note_math_path("backward: " + why);
  }
  const bool gemm = cuda::gemm_supported(kFloat32) || (sim && cuda_eager_generated());
  if (!gemm) return run_without_cuda_kernel(&sdpa_backward_cpu_kernel, op, args, outs, false, outs.at(0).device());
  sdpa_backward_math(args, outs);
}

// The ops layer's CUDA kernels of the two ops call these (ops/cuda_fallback.h); installed when libsinter loads.
[[maybe_unused]] const bool installed = [] {
  set_cuda_attention_kernel(&sdpa_cuda_kernel);
  set_cuda_attention_backward_kernel(&sdpa_backward_cuda_kernel);
  return true;
}();

}  // namespace
}  // namespace sinter
