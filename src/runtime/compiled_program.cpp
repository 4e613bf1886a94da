#include "runtime/compiled_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "ops/blas.h"
#include "ops/conv_kernels.h"
#include "ops/dispatch.h"
#include "ops/sgemm.h"
#include "sinter/ops.h"
#include "support/check.h"
#include "support/log.h"
#include "tensor/thread_pool.h"

namespace sinter::runtime {

using inductor::Buffer;
using inductor::BufferKind;
using inductor::BufferView;
using inductor::Kernel;
using inductor::LoopKind;
using inductor::LoopNode;
using ::sinter::ExprPtr;

namespace {

struct KernelArgs {  // matches `struct sn_kargs` in the generated preamble
  void** bufs;
  const int64_t* syms;
  int* error;  // set to 1 by a kernel that met an integer division by zero
};

void check_error(int error, const std::string& kernel) {
  SINTER_CHECK(error == 0, "ZeroDivisionError: integer division by zero in compiled kernel {}", kernel);
}

// A view of `base`'s storage (`offset` counts from base's first element), built without dispatch.
Tensor make_view(const Tensor& base, const SymIntList& sizes, const SymIntList& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->meta = TensorMeta{sizes, strides, SymInt(base.storage_offset().hint() + offset), base.dtype(), base.device()};
  return Tensor(std::move(impl));
}

}  // namespace

// A generated epilogue kernel run on finished tiles of a GEMM's [M, N] output (row stride ldc).
struct TileEpilogue {
  void (*fn)(void* args, int64_t begin, int64_t end);
  void* args;
  int64_t ldc;
  // A flat epilogue (element-wise over [M, N]) row by row over the tile's columns.
  static void flat(void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    auto* p = static_cast<TileEpilogue*>(ctx);
    for (int64_t i = i0; i < i1; ++i) p->fn(p->args, i * p->ldc + j0, i * p->ldc + j1);
  }
  // A row epilogue (it reduces over rows, e.g. residual + layer norm) over whole rows.
  static void rows(void* ctx, int64_t i0, int64_t i1, int64_t, int64_t) {
    auto* p = static_cast<TileEpilogue*>(ctx);
    p->fn(p->args, i0, i1);
  }
};

struct CompiledProgram::Run {
  std::vector<int64_t> syms;
  std::vector<Tensor> bufs;
  int64_t ev(const ExprPtr& e) const { return sym::evaluate(*e, syms); }
  SymIntList evs(const std::vector<ExprPtr>& es) const {
    SymIntList r;
    for (const ExprPtr& e : es) r.push_back(SymInt(ev(e)));
    return r;
  }
  Tensor view(const BufferView& v) const {
    const Tensor& base = bufs.at(v.buffer);
    SINTER_INTERNAL_ASSERT(base.defined(), "compiled graph: buffer {} used before it is made", v.buffer);
    return make_view(base, evs(v.sizes), evs(v.strides), ev(v.offset));
  }
};

// One launch's arguments: the kernel's buffers, the symbol values and its error flag.
struct CompiledProgram::KernelCall {
  std::vector<void*> ptrs;
  int error = 0;
  KernelArgs args;
  const std::string& symbol;
  KernelCall(const Run& r, const codegen::cpp::KernelInfo& info) : symbol(info.symbol) {
    for (int b : info.buffers) ptrs.push_back(r.bufs[b].data_ptr());
    args = KernelArgs{ptrs.data(), r.syms.data(), &error};
  }
  KernelCall(const KernelCall&) = delete;  // args points into this object
  void check() const { check_error(error, symbol); }
};

struct CompiledProgram::Profile {
  std::mutex mutex;
  int64_t calls = 0;
  std::vector<double> seconds;  // per kernel, summed over calls
};

CompiledProgram::CompiledProgram(inductor::LoopProgram program, inductor::Schedule schedule,
                                 codegen::cpp::GeneratedCode code, std::shared_ptr<SharedLibrary> library)
    : program_(std::move(program)), schedule_(std::move(schedule)), code_(std::move(code)),
      library_(std::move(library)) {
  for (const codegen::cpp::KernelInfo& k : code_.kernels)
    fns_.push_back(k.symbol.empty() ? nullptr : reinterpret_cast<KernelFn>(library_->symbol(k.symbol)));
  bind_symbols();
  plan_lifetimes();
  if (log_enabled(LogChannel::kProfile)) {
    profile_ = std::make_unique<Profile>();
    profile_->seconds.assign(schedule_.kernels.size(), 0.0);
  }
}

CompiledProgram::~CompiledProgram() {
  if (!profile_ || profile_->calls == 0) return;
  double total = 0;
  for (double t : profile_->seconds) total += t;
  std::string text = fmt::format("{} calls, {:.3f} ms per call in kernels:", profile_->calls,
                                 1e3 * total / static_cast<double>(profile_->calls));
  std::vector<size_t> order;
  for (size_t k = 0; k < profile_->seconds.size(); ++k)
    if (schedule_.kernels[k].epilogue_of < 0) order.push_back(k);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return profile_->seconds[a] > profile_->seconds[b]; });
  for (size_t k : order)
    text += fmt::format("\n  {:9.3f} ms {:5.1f}%  {}", 1e3 * profile_->seconds[k] / static_cast<double>(profile_->calls),
                        total > 0 ? 100.0 * profile_->seconds[k] / total : 0.0, describe(static_cast<int>(k)));
  log_message(LogChannel::kProfile, text);
}

std::string CompiledProgram::describe(int k) const {
  const Kernel& kernel = schedule_.kernels[k];
  const LoopNode& first = program_.nodes[kernel.nodes[0]];
  auto dims = [&](const BufferView& v) {
    std::string d;
    for (const ExprPtr& e : v.sizes) d += (d.empty() ? "" : "x") + to_string(e);
    return d;
  };
  std::string what;
  if (kernel.kind == Kernel::Kind::kExtern && first.gemm) {
    what = fmt::format("gemm [{}] @ [{}]", dims(first.tensor_args[0]), dims(first.tensor_args[1]));
    if (kernel.epilogue >= 0) what += fmt::format(" + epilogue {}", schedule_.kernels[kernel.epilogue].name);
  } else if (kernel.kind == Kernel::Kind::kExtern) {
    what = fmt::format("extern {}{}", op_name(first.op), first.conv ? " (implicit GEMM)" : "");
    if (kernel.epilogue >= 0) what += fmt::format(" + epilogue {}", schedule_.kernels[kernel.epilogue].name);
  } else {
    what = fmt::format("loops ({} nodes, {} stages)", kernel.nodes.size(), kernel.stages.size());
  }
  // The graph values it computes, named as in the graph printed before lowering (SINTER_DEBUG_DIR's
  // graph_before_lowering.txt); one origin per graph node, however many loop nodes it became.
  std::vector<std::string> origins;
  for (int id : kernel.nodes)
    if (origins.empty() || origins.back() != program_.nodes[id].origin) origins.push_back(program_.nodes[id].origin);
  if (kernel.epilogue >= 0)
    for (int id : schedule_.kernels[kernel.epilogue].nodes)
      if (origins.back() != program_.nodes[id].origin) origins.push_back(program_.nodes[id].origin);
  constexpr size_t kShown = 8;
  std::string list;
  for (size_t i = 0; i < std::min(origins.size(), kShown); ++i) list += (i ? "; " : "") + origins[i];
  if (origins.size() > kShown) list += fmt::format("; ... ({} more)", origins.size() - kShown);
  return fmt::format("{} {}  # {}", kernel.name, what, list);
}

void CompiledProgram::bind_symbols() {
  std::vector<bool> bound(program_.num_symbols, false);
  for (const Buffer& b : program_.buffers) {
    if (b.kind != BufferKind::kInput) continue;
    for (int pass = 0; pass < 2; ++pass) {
      const std::vector<ExprPtr>& dims = pass == 0 ? b.sizes : b.strides;
      for (size_t d = 0; d < dims.size(); ++d) {
        const ExprPtr& e = dims[d];
        if (!e->is_symbol() || inductor::is_loop_var(e->symbol_id())) continue;
        int64_t s = e->symbol_id();
        if (s >= program_.num_symbols || bound[s]) continue;
        bound[s] = true;
        bindings_.push_back({b.graph_input, static_cast<int>(d), pass == 1, s});
      }
    }
  }
}

void CompiledProgram::plan_lifetimes() {
  size_t nk = schedule_.kernels.size(), nb = program_.buffers.size();
  std::vector<int> kernel_of_node(program_.nodes.size(), -1);
  // An epilogue runs inside its GEMM's step: its uses count there.
  auto step = [&](int k) { return schedule_.kernels[k].epilogue_of >= 0 ? schedule_.kernels[k].epilogue_of : k; };
  for (size_t k = 0; k < nk; ++k)
    for (int id : schedule_.kernels[k].nodes) kernel_of_node[id] = static_cast<int>(k);
  std::vector<bool> local(nb, false), keep(nb, false);
  for (const Kernel& k : schedule_.kernels)
    for (int b : k.local_buffers) local[b] = true;
  for (const BufferView& v : program_.outputs) keep[v.buffer] = true;
  std::vector<int> last(nb, -1);
  allocs_.assign(nk, {});
  frees_.assign(nk, {});
  for (const LoopNode& n : program_.nodes) {
    int s = step(kernel_of_node[n.id]);
    if (n.kind == LoopKind::kExtern) {
      for (const BufferView& v : n.tensor_args) last[v.buffer] = std::max(last[v.buffer], s);
      if (n.gemm || n.conv) allocs_[s].push_back(n.outs[0]);
      continue;
    }
    if (!local[n.out]) allocs_[s].push_back(n.out);
    std::vector<inductor::SExpr> loads;
    inductor::collect_loads(n.body, loads);
    for (inductor::SExpr l : loads) last[l->buffer] = std::max(last[l->buffer], s);
  }
  for (size_t b = 0; b < nb; ++b)
    if (last[b] >= 0 && !keep[b] && program_.buffers[b].kind == BufferKind::kIntermediate) frees_[last[b]].push_back(b);
}

void CompiledProgram::allocate(Run& r, int b) const {
  const Buffer& buf = program_.buffers[b];
  r.bufs[b] = empty_from_meta(TensorMeta{r.evs(buf.sizes), r.evs(buf.strides), 0, buf.dtype, kCPU});
}

void CompiledProgram::run_loops(Run& r, int k) const {
  const codegen::cpp::KernelInfo& info = code_.kernels[k];
  KernelCall call(r, info);
  int64_t total = r.ev(info.total), work = std::max<int64_t>(1, r.ev(info.work));
  int64_t grain = std::max<int64_t>(1, kGrainElementwise / work);
  parallel_for_raw(0, total, grain, reinterpret_cast<RangeFn>(fns_[k]), &call.args);
  call.check();
}

// out[M, N] = A[M, K] @ B[K, N] on sinter's own GEMM over the pool, the epilogue kernel run on each finished tile
// while it is in cache (whole rows for a row epilogue such as residual + layer norm). On a CPU without its
// micro-kernels, or for thin products, OpenBLAS computes the product and the epilogue sweeps the output once.
void CompiledProgram::run_gemm(Run& r, int k) const {
  const Kernel& kernel = schedule_.kernels[k];
  const LoopNode& n = program_.nodes[kernel.nodes[0]];
  Tensor a = r.view(n.tensor_args[0]), b = r.view(n.tensor_args[1]);
  const Tensor& c = r.bufs[n.outs[0]];
  int64_t m = a.size(0).hint(), kk = a.size(1).hint(), nn = b.size(1).hint();
  const int e = kernel.epilogue;
  if (!blas::sgemm_suits(m, nn, kk)) {  // the choice eager's GEMM makes too, so both round alike
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
  if (e < 0) {
    blas::sgemm_tiled(g);
    return;
  }
  const codegen::cpp::KernelInfo& info = code_.kernels[e];
  KernelCall call(r, info);
  TileEpilogue ep{fns_[e], &call.args, nn};
  g.ctx = &ep;
  g.whole_rows = info.row_elems == nullptr;  // a row epilogue reduces over each row: it needs whole rows
  g.tile_done = g.whole_rows ? TileEpilogue::rows : TileEpilogue::flat;
  blas::sgemm_tiled(g);
  call.check();
}

Args CompiledProgram::extern_args(Run& r, const LoopNode& n) const {
  Args args = n.args;
  size_t t = 0;
  for (Value& v : args) {
    if (v.is_tensor()) {
      v = r.view(n.tensor_args[t++]);
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> ts;
      for (size_t i = 0; i < v.tensor_list().size(); ++i) ts.push_back(r.view(n.tensor_args[t++]));
      v = Value(std::move(ts));
    } else if (v.is_int() && v.sym_int().is_symbolic()) {
      v = Value(SymInt(r.ev(v.sym_int().expr())));
    } else if (v.is_int_list()) {
      SymIntList l;
      for (const SymInt& s : v.int_list()) l.push_back(s.is_symbolic() ? SymInt(r.ev(s.expr())) : s);
      v = Value(std::move(l));
    }
  }
  return args;
}

// A conv2d as one implicit GEMM, its epilogue run on each finished tile of output pixels x channels. Where the
// implicit GEMM does not apply at run time (no micro-kernel on this CPU), the eager conv fills the buffer and
// the epilogue sweeps it.
void CompiledProgram::run_conv(Run& r, int k) const {
  const Kernel& kernel = schedule_.kernels[k];
  const LoopNode& n = program_.nodes[kernel.nodes[0]];
  Args args = extern_args(r, n);
  const Tensor& out = r.bufs[n.outs[0]];
  const int e = kernel.epilogue;
  if (e < 0) {
    if (conv2d_tiled(n.op, args, out, nullptr, nullptr)) return;
  } else {
    KernelCall call(r, code_.kernels[e]);
    TileEpilogue ep{fns_[e], &call.args, out.size(1).hint()};  // channels: the row stride of [pixels, O]
    if (conv2d_tiled(n.op, args, out, TileEpilogue::flat, &ep)) {
      call.check();
      return;
    }
  }
  std::vector<Tensor> outs = run_eager(n.op, args, n.loc);
  r.bufs[n.outs[0]].copy_(outs[0]);
  if (e >= 0) run_loops(r, e);
}

void CompiledProgram::run_extern(Run& r, int k) const {
  const LoopNode& n = program_.nodes[schedule_.kernels[k].nodes[0]];
  Args args = extern_args(r, n);
  std::vector<Tensor> outs = run_eager(n.op, args, n.loc);
  SINTER_INTERNAL_ASSERT(outs.size() == n.outs.size(), "compiled graph: {} returned {} outputs, expected {}",
                         op_name(n.op), outs.size(), n.outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    const Buffer& b = program_.buffers[n.outs[i]];
    SymIntList strides = r.evs(b.strides);
    bool same = outs[i].storage_offset().hint() == 0 && outs[i].strides().size() == strides.size();
    for (size_t d = 0; same && d < strides.size(); ++d)
      same = outs[i].size(d).hint() <= 1 || outs[i].stride(d).hint() == strides[d].hint();
    if (same) {
      r.bufs[n.outs[i]] = outs[i];
    } else {  // the rest of the program indexes this buffer with the graph's layout
      allocate(r, n.outs[i]);
      r.bufs[n.outs[i]].copy_(outs[i]);
    }
  }
}

std::vector<Tensor> CompiledProgram::run(const std::vector<Tensor>& inputs) const {
  Run r;
  r.syms.assign(program_.num_symbols, -1);
  for (const Binding& b : bindings_) {
    const Tensor& t = inputs.at(b.input);
    r.syms[b.symbol] = (b.stride ? t.stride(b.dim) : t.size(b.dim)).hint();
  }
  r.bufs.resize(program_.buffers.size());
  for (const Buffer& b : program_.buffers) {
    if (b.kind == BufferKind::kInput) r.bufs[b.id] = inputs.at(b.graph_input);
    else if (b.kind == BufferKind::kConstant) r.bufs[b.id] = b.constant;
  }
  std::vector<double> seconds(profile_ ? schedule_.kernels.size() : 0);
  for (size_t k = 0; k < schedule_.kernels.size(); ++k) {
    const Kernel& kernel = schedule_.kernels[k];
    if (kernel.epilogue_of >= 0) continue;  // ran inside its GEMM
    auto start = profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    for (int b : allocs_[k]) allocate(r, b);
    if (kernel.kind == Kernel::Kind::kLoops) run_loops(r, static_cast<int>(k));
    else if (program_.nodes[kernel.nodes[0]].gemm) run_gemm(r, static_cast<int>(k));
    else if (program_.nodes[kernel.nodes[0]].conv) run_conv(r, static_cast<int>(k));
    else run_extern(r, static_cast<int>(k));
    for (int b : frees_[k]) r.bufs[b] = Tensor();
    if (profile_) seconds[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (profile_) {
    std::lock_guard<std::mutex> lock(profile_->mutex);
    ++profile_->calls;
    for (size_t k = 0; k < seconds.size(); ++k) profile_->seconds[k] += seconds[k];
  }
  std::vector<Tensor> outs;
  for (const BufferView& v : program_.outputs) outs.push_back(r.view(v));
  return outs;
}

}  // namespace sinter::runtime
