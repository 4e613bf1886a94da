// scaled_dot_product_attention, the math reference: softmax(q k^T * scale + mask) @ v, with a bool mask (true
// = attend) or a float mask (added), is_causal (top-left aligned lower triangle), and dropout on the
// probabilities from the Philox generator. Work is split over (batch item, block of query rows); each task
// does its two GEMMs single-threaded, so the score block stays in cache. Causal blocks compute only the keys
// they can see. Rows whose every key is masked out give zeros (PyTorch's _safe_softmax), not NaN.
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "ops/blas.h"
#include "ops/cuda_fallback.h"
#include "ops/dispatch.h"
#include "ops/linalg_util.h"
#include "ops/reduce_math.h"
#include "ops/vec_math.h"
#include "sinter/ops.h"
#include "tensor/generator.h"

namespace sinter {
namespace {

ShapeResult sdpa_shape(OpId, const Args& args) {
  const Tensor& q = args[0].tensor();
  const Tensor& k = args[1].tensor();
  const Tensor& v = args[2].tensor();
  SINTER_CHECK(
      q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2,
      "expected query, key and value to have at least 2 dims ([..., L, E]), got shapes {}, {} and {}",
      q.sizes().str(), k.sizes().str(), v.sizes().str());
  check_floating_input(q, "query");
  SINTER_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(),
               "expected query, key and value to have the same dtype, but got {}, {} and {}",
               dtype_name(q.dtype()), dtype_name(k.dtype()), dtype_name(v.dtype()));
  SINTER_CHECK(q.sizes().back() == k.sizes().back(),
               "query's embedding size {} must equal key's ({}); shapes {} and {}", q.sizes().back().str(),
               k.sizes().back().str(), q.sizes().str(), k.sizes().str());
  SINTER_CHECK(k.sizes()[k.dim() - 2] == v.sizes()[v.dim() - 2],
               "key and value must have the same sequence length, got shapes {} and {}", k.sizes().str(),
               v.sizes().str());
  double p = args[4].to_double();
  SINTER_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got {}", p);
  SymIntList qb(q.sizes().begin(), q.sizes().end() - 2), kb(k.sizes().begin(), k.sizes().end() - 2),
      vb(v.sizes().begin(), v.sizes().end() - 2);
  if (args.size() > 7 && args[7].to_bool() && q.dim() >= 3) {
    // Grouped-query attention: key/value heads (dim -3) each serve q_heads / kv_heads query heads.
    SINTER_CHECK(k.dim() >= 3 && v.dim() >= 3 && k.sizes()[k.dim() - 3] == v.sizes()[v.dim() - 3],
                 "enable_gqa: key and value must have the same number of heads (dim -3), got shapes {} and {}",
                 k.sizes().str(), v.sizes().str());
    const SymInt& hq = q.sizes()[q.dim() - 3];
    const SymInt& hk = k.sizes()[k.dim() - 3];
    SINTER_CHECK(hk.hint() > 0 && hq.hint() % hk.hint() == 0,
                 "enable_gqa: the query's {} heads are not a multiple of the key's {} (shapes {} and {})", hq.str(),
                 hk.str(), q.sizes().str(), k.sizes().str());
    kb.back() = hq;
    vb.back() = hq;
  }
  SymIntList out = broadcast_all({&qb, &kb, &vb});
  const SymInt& L = q.sizes()[q.dim() - 2];
  const SymInt& S = k.sizes()[k.dim() - 2];
  if (!args[3].is_none()) {
    const Tensor& m = args[3].tensor();
    SINTER_CHECK(!args[5].to_bool(), "explicit attn_mask should not be set when is_causal=True");
    SINTER_CHECK(
        m.dtype() == kBool || m.dtype() == q.dtype(),
        "expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype {} and "
        "query.dtype {}",
        dtype_name(m.dtype()), dtype_name(q.dtype()));
    SymIntList full = out;
    full.push_back(L);
    full.push_back(S);
    SINTER_CHECK(m.dim() <= static_cast<int64_t>(full.size()) && broadcast_shapes(m.sizes(), full) == full,
                 "attn_mask of shape {} cannot be broadcast to the attention weights' shape {}",
                 m.sizes().str(), full.str());
  }
  out.push_back(L);
  out.push_back(v.sizes().back());
  return dense_meta(out, q.dtype(), common_device(args));
}

// One operand's BLAS view: data, per-batch offsets, and its matrix layout.
template <class A>
struct Operand {
  Tensor t;
  const A* data;
  std::vector<int64_t> off;
  int64_t rs, cs;
};

template <class A>
Operand<A> operand(const Tensor& x, int64_t rank, const std::vector<int64_t>& batch, DType cd) {
  Operand<A> o;
  o.t = blas_operand(unsqueeze_to(x, rank), cd);
  o.data = o.t.template data_ptr<A>();
  o.off = batch_offsets(o.t, rank - 2, batch);
  o.rs = strides_of(o.t)[rank - 2], o.cs = strides_of(o.t)[rank - 1];
  return o;
}

// The softmax helpers of the reduction family (max and exp-sum in vector lanes; AVX-512 exp where the CPU has
// it), compiled also for AVX2 as the softmax op is: row = exp(row - max). Returns 1 / sum, the factor that
// makes the row its softmax, or 0 when every entry is -inf (row untouched).
template <class A>
SINTER_CLONES A softmax_row(A* row, int64_t n) {
  if constexpr (std::is_same_v<A, float>) {
    if (vec::available()) {
      const float mx = vec::row_max(row, n);
      if (mx == -std::numeric_limits<float>::infinity()) return 0.0f;
      return static_cast<float>(1.0 / vec::exp_shift_sum(row, row, n, mx));
    }
  }
  A mx = reduce::lane_extreme<true>(row, n, reduce::lowest<A>(), [](A v) { return v; });
  if (mx == -std::numeric_limits<A>::infinity()) return A(0);
  return static_cast<A>(1.0 / reduce::exp_sum<true>(row, row, n, mx));
}

template <class A>
void sdpa(const Args& args, const Tensor& y) {
  const Tensor& q = args[0].tensor();
  DType cd = compute_dtype(q.dtype());
  int64_t rank = y.dim(), nb = rank - 2;
  std::vector<int64_t> ys = sizes_of(y), batch(ys.begin(), ys.end() - 2);
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  const Tensor& key = args[1].tensor();
  int64_t L = ys[rank - 2], Ev = ys[rank - 1], E = sizes_of(q).back(), S = sizes_of(key)[key.dim() - 2];
  Operand<A> Q = operand<A>(q, rank, batch, cd), K = operand<A>(key, rank, batch, cd),
             V = operand<A>(args[2].tensor(), rank, batch, cd);
  bool causal = args[5].to_bool();
  double p = args[4].to_double();
  A scale = static_cast<A>(args[6].is_none() ? 1.0 / std::sqrt(static_cast<double>(E)) : args[6].to_double());

  // The mask, broadcast over the batch and the [L, S] block (stride 0 where it has size 1).
  Tensor mask;
  std::vector<int64_t> m_off;
  int64_t m_rs = 0, m_cs = 0;
  if (!args[3].is_none()) {
    mask = unsqueeze_to(args[3].tensor(), rank);
    if (mask.dtype() != kBool) mask = contiguous_as(mask, cd);
    m_off = batch_offsets(mask, nb, batch);
    std::vector<int64_t> ms = sizes_of(mask), mst = strides_of(mask);
    m_rs = ms[rank - 2] == 1 ? 0 : mst[rank - 2];
    m_cs = ms[rank - 1] == 1 ? 0 : mst[rank - 1];
  }
  const bool* bool_mask = mask.defined() && mask.dtype() == kBool ? mask.data_ptr<bool>() : nullptr;
  const A* add_mask = mask.defined() && mask.dtype() != kBool ? mask.data_ptr<A>() : nullptr;

  // Dropout: one number per attention weight, element (b, i, j) at first + (b * L + i) * S + j; kept iff u >=
  // p.
  uint64_t seed = 0, first = 0;
  bool dropout = p > 0 && p < 1 && B * L * S > 0;
  if (dropout) {
    seed = default_generator().seed();
    first = default_generator().reserve(static_cast<uint64_t>(B * L * S));
  }
  A keep_scale = p >= 1 ? A(0) : static_cast<A>(1.0 / (1.0 - p));

  // (q is copied, scaled, into a row-major block per item, so only K and V are read as BLAS operands.)
  bool k_t = false, v_t = false;
  int64_t k_ld = 1, v_ld = 1;
  bool ready = blas::blas_layout(E, S, K.cs, K.rs, k_t, k_ld) &&  // K^T
               blas::blas_layout(S, Ev, V.rs, V.cs, v_t, v_ld);
  // (An empty dim skips the GEMM before the layout matters.)
  SINTER_INTERNAL_ASSERT(ready || E == 0 || S == 0, "sdpa operands not BLAS-ready");
  // Row blocks: a score block of about 256 KB at most. Causal blocks are cut finer until there are enough to
  // balance the pool (they differ in cost, and finer ones skip more of the masked triangle). Other blocks are
  // all alike: each reads all of K and V again (about as much work as kBlockOverhead more rows), so the count
  // is chosen by rounds over the cores times that cost: on the 16-core host [1, 12, 256, 64] ran in 0.33 ms as
  // 12 blocks of 256 rows (4 cores idle), 0.37-0.42 ms as 24 of 128, 0.47-0.86 ms as 48 of 64.
  constexpr int64_t kBlockOverhead = 64;
  int64_t threads = get_num_threads(), cores = cores_for(static_cast<int>(threads));
  int64_t rows = std::clamp<int64_t>((1 << 16) / std::max<int64_t>(S, 1), 1, std::max<int64_t>(L, 1));
  if (causal) {
    rows = std::min<int64_t>(rows, 64);
    while (rows > 1 && B * ceil_div(L, rows) < 4 * cores) rows = ceil_div(rows, 2);
  } else {
    auto cost = [&](int64_t r) { return ceil_div(B * ceil_div(L, r), cores) * (r + kBlockOverhead); };
    for (int64_t r = rows; r > 1;) {
      r = ceil_div(r, 2);
      if (cost(r) < cost(rows)) rows = r;
    }
  }
  int64_t blocks = ceil_div(L, rows), items = B * blocks;
  A* out = y.data_ptr<A>();
  // Causal (top-left aligned): row li sees keys [0, li], so a block of rows [l0, l0 + lb) needs only the first
  // min(S, l0 + lb) keys; the rest would be exp(-inf) = 0 weights. Both GEMMs skip them.
  auto keys_of = [&](int64_t l0, int64_t lb) { return causal ? std::min(S, l0 + lb) : S; };
  // Item i, in decreasing cost (later row blocks first when causal); parallel_for_dynamic hands items out one
  // at a time, so blocks of different cost even out.
  auto run_item = [&](int64_t i, A* sc, A* row_scale, A* qs) {
    int64_t b = i % B, blk = causal ? blocks - 1 - i / B : i / B;
    int64_t l0 = blk * rows, lb = std::min(rows, L - l0), Sb = keys_of(l0, lb);
    // q * scale first (rows x E values, not rows x S scores), stored row-major so the GEMM reads it in place.
    const A* q_rows = Q.data + Q.off[b] + l0 * Q.rs;
    for (int64_t r = 0; r < lb; ++r)
      for (int64_t e = 0; e < E; ++e) qs[r * E + e] = q_rows[r * Q.rs + e * Q.cs] * scale;
    blas::gemm_serial(false, k_t, lb, Sb, E, A(1), qs, E, K.data + K.off[b], k_ld, A(0), sc, Sb);
    for (int64_t r = 0; r < lb; ++r) {
      A* row = sc + r * Sb;
      int64_t li = l0 + r;
      if (causal)
        for (int64_t j = li + 1; j < Sb; ++j) row[j] = -std::numeric_limits<A>::infinity();
      if (bool_mask) {
        const bool* mr = bool_mask + m_off[b] + li * m_rs;
        for (int64_t j = 0; j < Sb; ++j)
          if (!mr[j * m_cs]) row[j] = -std::numeric_limits<A>::infinity();
      } else if (add_mask) {
        const A* mr = add_mask + m_off[b] + li * m_rs;
        for (int64_t j = 0; j < Sb; ++j) row[j] += mr[j * m_cs];
      }
      // Without dropout the row keeps exp(x - max) and its output row is scaled by 1 / sum after the second
      // GEMM: Ev values per row instead of S.
      A inv = softmax_row(row, Sb);
      row_scale[r] = p >= 1 ? A(0) : inv;
      if (inv == A(0)) {  // every key masked: zeros, as _safe_softmax
        std::fill(row, row + Sb, A(0));
        continue;
      }
      if (dropout) {
        uint64_t base = first + static_cast<uint64_t>((b * L + li) * S);
        for (int64_t j = 0; j < Sb; ++j)
          row[j] = philox_uniform(seed, base + j) >= p ? row[j] * inv * keep_scale : A(0);
      }
    }
    A* o = out + (b * L + l0) * Ev;
    blas::gemm_serial(false, v_t, lb, Ev, Sb, A(1), sc, Sb, V.data + V.off[b], v_ld, A(0), o, Ev);
    if (!dropout)
      for (int64_t r = 0; r < lb; ++r)
        for (int64_t j = 0; j < Ev; ++j) o[r * Ev + j] *= row_scale[r];
  };
  // One score block per worker; the first GEMM writes it (beta 0).
  int64_t slots = std::max<int64_t>(1, std::min(items, threads));
  auto scores = std::make_unique_for_overwrite<A[]>(slots * rows * S);
  auto scales = std::make_unique_for_overwrite<A[]>(slots * rows);
  auto scaled_q = std::make_unique_for_overwrite<A[]>(slots * rows * E);
  parallel_for_dynamic(items, threads, [&](int64_t i, int64_t worker) {
    run_item(i, scores.get() + worker * rows * S, scales.get() + worker * rows, scaled_q.get() + worker * rows * E);
  });
}

}  // namespace

Tensor sdpa_repeat_kv(const Tensor& kv, int64_t q_heads) {
  int64_t r = kv.dim(), heads = kv.size(r - 3).hint();
  if (heads == q_heads) return kv;
  HookScope none(nullptr);  // a copy inside the op's kernel, not an op of the caller's graph
  SymIntList grouped = kv.sizes(), expanded = kv.sizes(), out = kv.sizes();
  grouped.insert(grouped.begin() + (r - 2), SymInt(1));
  expanded.insert(expanded.begin() + (r - 2), SymInt(q_heads / heads));
  out[r - 3] = SymInt(q_heads);
  return kv.reshape(grouped).expand(expanded).reshape(out);
}

namespace {

void sdpa_kernel(OpId, const Args& args0, std::vector<Tensor>& outs) {
  const Tensor& y = outs[0];
  if (y.numel().hint() == 0) return;
  Args args = args0;
  if (args.size() > 7 && args[7].to_bool() && y.dim() >= 3) {
    int64_t heads = y.size(y.dim() - 3).hint();
    args[1] = Value(sdpa_repeat_kv(args[1].tensor(), heads));
    args[2] = Value(sdpa_repeat_kv(args[2].tensor(), heads));
  }
  DType cd = compute_dtype(y.dtype());
  Tensor Y = y.dtype() == cd ? y : empty_from_meta(dense_meta(y.sizes(), cd, kCPU));
  if (cd == kFloat32)
    sdpa<float>(args, Y);
  else
    sdpa<double>(args, Y);
  write_into(y, Y);
}

// On CUDA: the kernel the backends layer installs (backends/cuda_attention.cpp), else the CPU kernel staged.
void sdpa_cuda_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  if (KernelFn installed = cuda_attention_kernel()) return installed(op, args, outs);
  run_without_cuda_kernel(sdpa_kernel, op, args, outs, false, outs.at(0).device());
}

}  // namespace

namespace {

// ---- scaled_dot_product_attention_backward(grad, query, key, value, is_causal, scale) ----
// The gradients of attention without a mask, dropout or grouped heads, q, k and v of one batch shape: what
// compiled training calls on CUDA, where its kernel is flash attention's backward.

ShapeResult sdpa_backward_shape(OpId, const Args& args) {
  const Tensor& g = args[0].tensor();
  const Tensor& q = args[1].tensor();
  const Tensor& k = args[2].tensor();
  const Tensor& v = args[3].tensor();
  SINTER_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim() && g.dim() == q.dim(),
               "expected grad, query, key and value of one rank >= 2, got shapes {}, {}, {} and {}", g.sizes().str(),
               q.sizes().str(), k.sizes().str(), v.sizes().str());
  check_floating_input(q, "query");
  SINTER_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype() && q.dtype() == g.dtype(),
               "expected grad, query, key and value of one dtype, got {}, {}, {} and {}", dtype_name(g.dtype()),
               dtype_name(q.dtype()), dtype_name(k.dtype()), dtype_name(v.dtype()));
  const int64_t r = q.dim();
  SymIntList qs = q.sizes(), ks = k.sizes(), vs = v.sizes(), want = q.sizes();
  want[r - 1] = vs[r - 1];
  SINTER_CHECK(SymIntList(qs.begin(), qs.end() - 2) == SymIntList(ks.begin(), ks.end() - 2) &&
                   SymIntList(qs.begin(), qs.end() - 2) == SymIntList(vs.begin(), vs.end() - 2) &&
                   qs[r - 1] == ks[r - 1] && ks[r - 2] == vs[r - 2] && g.sizes() == want,
               "shapes grad {}, query {}, key {}, value {} do not fit one attention ([..., L, E], [..., S, E], "
               "[..., S, Ev], grad [..., L, Ev])",
               g.sizes().str(), qs.str(), ks.str(), vs.str());
  Device device = common_device(args);
  return std::vector<TensorMeta>{dense_meta(qs, q.dtype(), device), dense_meta(ks, q.dtype(), device),
                                 dense_meta(vs, q.dtype(), device)};
}

}  // namespace

void sdpa_backward_math(const Args& args, std::vector<Tensor>& outs) {
  HookScope none(nullptr);  // the ops below are this kernel's, not the caller's graph
  const Tensor& q0 = args[1].tensor();
  if (q0.numel().hint() == 0 && args[2].tensor().numel().hint() == 0) return;
  DType cd = compute_dtype(q0.dtype());
  Tensor g = args[0].tensor().to(cd), q = q0.to(cd), k = args[2].tensor().to(cd), v = args[3].tensor().to(cd);
  const double scale = args[5].to_double(), inf = std::numeric_limits<double>::infinity();
  Tensor s = matmul(q, k.transpose(-2, -1)) * scale;
  const int64_t L = q.size(-2).hint(), S = k.size(-2).hint();
  if (args[4].to_bool()) {  // query i sees keys j <= i; built on the host (arange has no CUDA kernel)
    Tensor above = lt(arange(L).unsqueeze(1), arange(S).unsqueeze(0)).to(q.device());
    s = masked_fill(s, above, -inf);
  }
  Tensor live = ne(amax(s, {-1}, true), -inf);  // rows with every key masked: zero probabilities (_safe_softmax)
  Tensor p = where(live, softmax(where(live, s, 0.0), -1), 0.0);
  Tensor gp = matmul(g, v.transpose(-2, -1));
  Tensor gs = p * (gp - sum(gp * p, {-1}, true));
  write_into(outs[0], matmul(gs, k) * scale);
  write_into(outs[1], matmul(gs.transpose(-2, -1), q) * scale);
  write_into(outs[2], matmul(p.transpose(-2, -1), g));
}

void sdpa_backward_cpu_kernel(OpId, const Args& args, std::vector<Tensor>& outs) { sdpa_backward_math(args, outs); }

namespace {

// On CUDA: flash attention's backward where the backends layer installed it and it applies, else the math.
void sdpa_backward_cuda_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  if (KernelFn installed = cuda_attention_backward_kernel()) return installed(op, args, outs);
  run_without_cuda_kernel(&sdpa_backward_cpu_kernel, op, args, outs, false, outs.at(0).device());
}

}  // namespace

void register_attention_ops(OpTable& t) {
  t.set(OpId::scaled_dot_product_attention, sdpa_shape, sdpa_kernel);
  t.set_kernel(OpId::scaled_dot_product_attention, kCUDA, sdpa_cuda_kernel);
  t.set(OpId::scaled_dot_product_attention_backward, sdpa_backward_shape, sdpa_backward_cpu_kernel);
  t.set_kernel(OpId::scaled_dot_product_attention_backward, kCUDA, sdpa_backward_cuda_kernel);
}

}  // namespace sinter
