#include "runtime/executor.h"

#include "sinter/autograd.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "ops/copy.h"
#include "ops/dispatch.h"
#include "sinter/ops.h"
#include "support/check.h"
#include "support/log.h"

namespace sinter::runtime {

using inductor::Buffer;
using inductor::BufferKind;
using inductor::BufferView;
using inductor::Kernel;
using inductor::LoopKind;
using inductor::LoopNode;
using ::sinter::ExprPtr;

namespace {

// A view of `base`'s storage (`offset` counts from base's first element), built without dispatch.
Tensor make_view(const Tensor& base, const SymIntList& sizes, const SymIntList& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->meta = TensorMeta{sizes, strides, SymInt(base.storage_offset().hint() + offset), base.dtype(), base.device()};
  return Tensor(std::move(impl));
}

}  // namespace

SymIntList RunState::evs(const std::vector<ExprPtr>& es) const {
  SymIntList r;
  for (const ExprPtr& e : es) r.push_back(SymInt(ev(e)));
  return r;
}

Tensor RunState::view(const BufferView& v) const {
  const Tensor& base = bufs.at(v.buffer);
  SINTER_INTERNAL_ASSERT(base.defined(), "compiled graph: buffer {} used before it is made", v.buffer);
  return make_view(base, evs(v.sizes), evs(v.strides), ev(v.offset));
}

Args bind_extern_args(const RunState& r, const LoopNode& n) {
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

struct Executor::Profile {
  std::mutex mutex;
  int64_t calls = 0;
  std::vector<double> seconds;  // per kernel, summed over calls
};

Executor::Executor(std::shared_ptr<const CompiledGraphParts> parts, std::unique_ptr<Launcher> launcher)
    : parts_(std::move(parts)), launcher_(std::move(launcher)) {
  bind_symbols();
  plan_lifetimes();
  if (log_enabled(LogChannel::kProfile)) {
    profile_ = std::make_unique<Profile>();
    profile_->seconds.assign(parts_->schedule.kernels.size(), 0.0);
  }
}

Executor::~Executor() {
  if (!profile_ || profile_->calls == 0) return;
  double total = 0;
  for (double t : profile_->seconds) total += t;
  std::string text = fmt::format("{} calls, {:.3f} ms per call in kernels:", profile_->calls,
                                 1e3 * total / static_cast<double>(profile_->calls));
  std::vector<size_t> order;
  for (size_t k = 0; k < profile_->seconds.size(); ++k)
    if (parts_->schedule.launched_with(static_cast<int>(k)) == static_cast<int>(k)) order.push_back(k);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return profile_->seconds[a] > profile_->seconds[b]; });
  for (size_t k : order)
    text += fmt::format("\n  {:9.3f} ms {:5.1f}%  {}", 1e3 * profile_->seconds[k] / static_cast<double>(profile_->calls),
                        total > 0 ? 100.0 * profile_->seconds[k] / total : 0.0, describe(static_cast<int>(k)));
  log_message(LogChannel::kProfile, text);
}

std::string Executor::describe(int k) const {
  const inductor::LoopProgram& program = *parts_->program;
  const std::vector<Kernel>& kernels = parts_->schedule.kernels;
  const Kernel& kernel = kernels[k];
  const LoopNode& first = program.nodes[kernel.nodes[0]];
  auto dims = [&](const BufferView& v) {
    std::string d;
    for (const ExprPtr& e : v.sizes) {
      if (!d.empty()) d += 'x';
      d += to_string(e);
    }
    return d;
  };
  std::string what;
  if (kernel.kind == Kernel::Kind::kExtern && first.gemm) {
    what = fmt::format("gemm [{}] @ [{}]", dims(first.tensor_args[0]), dims(first.tensor_args[1]));
    if (kernel.epilogue >= 0) what += fmt::format(" + epilogue {}", kernels[kernel.epilogue].name);
  } else if (kernel.kind == Kernel::Kind::kExtern) {
    what = fmt::format("extern {}{}", op_name(first.op), first.conv ? " (tiled)" : "");
    if (kernel.epilogue >= 0) what += fmt::format(" + epilogue {}", kernels[kernel.epilogue].name);
  } else if (kernel.combined >= 0) {
    const std::vector<int>& group = parts_->schedule.combined[kernel.combined];
    size_t nodes = 0;
    for (int m : group) nodes += kernels[m].nodes.size();
    what = fmt::format("combined loops ({} kernels, {} nodes)", group.size(), nodes);
  } else {
    what = fmt::format("loops ({} nodes, {} stages)", kernel.nodes.size(), kernel.stages.size());
  }
  // The graph values it computes, named as in the graph printed before lowering (SINTER_DEBUG_DIR's
  // graph_before_lowering.txt); one origin per graph node, however many loop nodes it became.
  std::vector<std::string> origins;
  for (int id : kernel.nodes)
    if (origins.empty() || origins.back() != program.nodes[id].origin) origins.push_back(program.nodes[id].origin);
  if (kernel.epilogue >= 0)
    for (int id : kernels[kernel.epilogue].nodes)
      if (origins.back() != program.nodes[id].origin) origins.push_back(program.nodes[id].origin);
  constexpr size_t kShown = 8;
  std::string list;
  for (size_t i = 0; i < std::min(origins.size(), kShown); ++i) list += (i ? "; " : "") + origins[i];
  if (origins.size() > kShown) list += fmt::format("; ... ({} more)", origins.size() - kShown);
  return fmt::format("{} {}  # {}", kernel.name, what, list);
}

void Executor::bind_symbols() {
  const inductor::LoopProgram& program = *parts_->program;
  std::vector<bool> bound(program.num_symbols, false);
  for (const Buffer& b : program.buffers) {
    if (b.kind != BufferKind::kInput) continue;
    for (int pass = 0; pass < 2; ++pass) {
      const std::vector<ExprPtr>& dims = pass == 0 ? b.sizes : b.strides;
      for (size_t d = 0; d < dims.size(); ++d) {
        const ExprPtr& e = dims[d];
        if (!e->is_symbol() || inductor::is_loop_var(e->symbol_id())) continue;
        int64_t s = e->symbol_id();
        if (s >= program.num_symbols || bound[s]) continue;
        bound[s] = true;
        bindings_.push_back({b.graph_input, static_cast<int>(d), pass == 1, s});
      }
    }
  }
}

void Executor::plan_lifetimes() {
  const inductor::LoopProgram& program = *parts_->program;
  const std::vector<Kernel>& kernels = parts_->schedule.kernels;
  size_t nk = kernels.size(), nb = program.buffers.size();
  std::vector<int> kernel_of_node(program.nodes.size(), -1);
  // An epilogue runs inside its GEMM's step, a combined kernel in its group's: its uses count there.
  auto step = [&](int k) { return parts_->schedule.launched_with(k); };
  for (size_t k = 0; k < nk; ++k)
    for (int id : kernels[k].nodes) kernel_of_node[id] = static_cast<int>(k);
  std::vector<bool> local(nb, false), keep(nb, false);
  for (const Kernel& k : kernels)
    for (int b : k.local_buffers) local[b] = true;
  for (const BufferView& v : program.outputs) keep[v.buffer] = true;
  std::vector<int> last(nb, -1);
  allocs_.assign(nk, {});
  frees_.assign(nk, {});
  for (const LoopNode& n : program.nodes) {
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
    if (last[b] >= 0 && !keep[b] && program.buffers[b].kind == BufferKind::kIntermediate) frees_[last[b]].push_back(b);
  // The same in schedule order (an epilogue at its GEMM; a combined kernel at its own place), and the graph inputs
  // each kernel reads.
  last_read_in_order_.assign(nb, -1);
  reads_inputs_.assign(nk, {});
  for (const LoopNode& n : program.nodes) {
    const int k = kernel_of_node[n.id];
    const int at = kernels[k].epilogue_of >= 0 ? kernels[k].epilogue_of : k;
    std::vector<int> read;
    if (n.kind == LoopKind::kExtern) {
      for (const BufferView& v : n.tensor_args) read.push_back(v.buffer);
    } else {
      std::vector<inductor::SExpr> loads;
      inductor::collect_loads(n.body, loads);
      for (inductor::SExpr l : loads) read.push_back(l->buffer);
    }
    for (int b : read) {
      last_read_in_order_[b] = std::max(last_read_in_order_[b], at);
      const Buffer& buf = program.buffers[b];
      std::vector<int>& mine = reads_inputs_[k];
      if (buf.kind == BufferKind::kInput && !std::count(mine.begin(), mine.end(), buf.graph_input))
        mine.push_back(buf.graph_input);
    }
  }
  // Graph inputs an owning run may drop: after the last kernel reading any of their buffers, unless an output
  // views them.
  int num_inputs = 0;
  for (const Buffer& b : program.buffers)
    if (b.kind == BufferKind::kInput) num_inputs = std::max(num_inputs, b.graph_input + 1);
  std::vector<int> input_last(num_inputs, -1);
  std::vector<bool> input_kept(num_inputs, false);
  for (const Buffer& b : program.buffers)
    if (b.kind == BufferKind::kInput) {
      input_last[b.graph_input] = std::max(input_last[b.graph_input], last[b.id]);
      input_kept[b.graph_input] = input_kept[b.graph_input] || keep[b.id];
    }
  input_frees_.assign(nk, {});
  for (int i = 0; i < num_inputs; ++i)
    if (input_last[i] >= 0 && !input_kept[i]) input_frees_[input_last[i]].push_back(i);
  written_at_.assign(nb, -1);
  for (const LoopNode& n : program.nodes)
    if (n.kind != LoopKind::kExtern) written_at_[n.out] = kernel_of_node[n.id];
}

// Whether output `o` may be computed straight into graph input `input` (a value the caller writes back there, as
// an optimiser step's updated parameters): in schedule order no kernel after the one that writes the output reads
// the input, and in the writer's own step only the node that writes the output reads it, at the element it writes
// (a row kernel's other stages and the GEMM an epilogue follows may read it later).
bool Executor::may_overwrite_input(int o, int input) const {
  const inductor::LoopProgram& program = *parts_->program;
  const int out_buffer = program.outputs[o].buffer;
  const int writer_kernel = written_at_[out_buffer];
  if (writer_kernel < 0 || program.buffers[out_buffer].producer < 0) return false;
  const std::vector<Kernel>& kernels = parts_->schedule.kernels;
  const Kernel& writer = kernels[writer_kernel];
  if (writer.kind != Kernel::Kind::kLoops) return false;
  const int producer = program.buffers[out_buffer].producer;
  const ExprPtr& store = program.nodes[producer].store_offset;
  // In schedule order (an epilogue at its GEMM; a combined group runs its kernels in waves that keep this order
  // where it matters).
  const int at = writer.epilogue_of >= 0 ? writer.epilogue_of : writer_kernel;
  for (const Buffer& b : program.buffers) {
    if (b.kind != BufferKind::kInput || b.graph_input != input || last_read_in_order_[b.id] < at) continue;
    if (last_read_in_order_[b.id] > at) return false;
    // Read in the writer's own step: by the node that writes the output, at the element it writes, only. Any
    // other reader there (a GEMM whose tiles the epilogue follows, a row kernel's other stages) may come later.
    if (writer.epilogue_of >= 0)
      for (int id : kernels[writer.epilogue_of].nodes)
        for (const BufferView& v : program.nodes[id].tensor_args)
          if (v.buffer == b.id) return false;
    for (int id : writer.nodes) {
      std::vector<inductor::SExpr> loads;
      inductor::collect_loads(program.nodes[id].body, loads);
      for (inductor::SExpr l : loads)
        if (l->buffer == b.id && (l->offset != store || (writer.rows && id != producer))) return false;
    }
  }
  return true;
}

// The waves a combined group runs in this call: a kernel that computes a value into an input's memory waits for
// the group's earlier kernels that read that input (an optimiser's parameter update reads the old moments that
// the moments' updates, later in the group, overwrite); the rest run at once.
std::vector<std::vector<int>> Executor::waves(const std::vector<int>& group, const std::vector<int>& overwrites) const {
  const inductor::LoopProgram& program = *parts_->program;
  std::vector<int> wave(group.size(), 0);
  int most = 0;
  for (size_t j = 0; j < group.size(); ++j) {
    for (size_t o = 0; o < overwrites.size(); ++o) {
      if (overwrites[o] < 0 || written_at_[program.outputs[o].buffer] != group[j]) continue;
      for (size_t i = 0; i < j; ++i)
        if (std::count(reads_inputs_[group[i]].begin(), reads_inputs_[group[i]].end(), overwrites[o]))
          wave[j] = std::max(wave[j], wave[i] + 1);
    }
    most = std::max(most, wave[j]);
  }
  std::vector<std::vector<int>> out(most + 1);
  for (size_t j = 0; j < group.size(); ++j) out[wave[j]].push_back(group[j]);
  return out;
}

void Executor::allocate(RunState& r, int b) const {
  const Buffer& buf = parts_->program->buffers[b];
  r.bufs[b] = launcher_->allocate(TensorMeta{r.evs(buf.sizes), r.evs(buf.strides), 0, buf.dtype});
}

// An extern the launcher does not compute: the op's eager kernel. A GEMM or convolution left to it fills the
// buffer its epilogue reads, and the epilogue then sweeps that buffer.
void Executor::run_extern(RunState& r, int k) const {
  const inductor::LoopProgram& program = *parts_->program;
  const Kernel& kernel = parts_->schedule.kernels[k];
  const LoopNode& n = program.nodes[kernel.nodes[0]];
  std::vector<Tensor> outs = run_eager(n.op, bind_extern_args(r, n), n.loc);
  SINTER_INTERNAL_ASSERT(outs.size() == n.outs.size(), "compiled graph: {} returned {} outputs, expected {}",
                         op_name(n.op), outs.size(), n.outs.size());
  if (n.gemm || n.conv) {
    r.bufs[n.outs[0]].copy_(outs[0]);
    if (kernel.epilogue >= 0) launcher_->run_loops(r, kernel.epilogue);
    return;
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const Buffer& b = program.buffers[n.outs[i]];
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

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) const { return run(inputs, {}); }

// Whether output `o`'s buffer may be `into` itself: the output is the whole of a buffer a loop kernel writes,
// laid out as `into`, no other output shares the buffer, and `into` overlaps no input unless it is that input
// exactly and may_overwrite_input allows it.
bool Executor::writes_directly(const RunState& r, int o, const Tensor& into, const std::vector<Tensor>& inputs,
                               int* overwritten) const {
  const inductor::LoopProgram& program = *parts_->program;
  *overwritten = -1;
  const BufferView& v = program.outputs[o];
  const Buffer& b = program.buffers[v.buffer];
  if (b.kind != BufferKind::kIntermediate || r.ev(v.offset) != 0 || into.dtype() != b.dtype) return false;
  for (size_t p = 0; p < program.outputs.size(); ++p)
    if (static_cast<int>(p) != o && program.outputs[p].buffer == v.buffer) return false;
  for (const LoopNode& n : program.nodes)
    if (n.kind == LoopKind::kExtern)
      for (int out : n.outs)
        if (out == v.buffer) return false;
  SymIntList sizes = r.evs(b.sizes), strides = r.evs(b.strides);
  if (static_cast<int64_t>(sizes.size()) != into.dim() || r.evs(v.sizes).hints() != sizes.hints()) return false;
  for (int64_t d = 0; d < into.dim(); ++d)
    if (into.size(d).hint() != sizes[d].hint() || (sizes[d].hint() > 1 && into.stride(d).hint() != strides[d].hint()))
      return false;
  // An input `into` overlaps must be `into` itself, read by no kernel after the writer and by the writer only at
  // the element it writes. (Every kernel being flat pointwise is not enough: a later kernel that reads the input
  // then reads the new values, as copy_(x1, x0) then neg_(x0) computed x1 from -x0; found by sinter fuzz, seed
  // 2026120701 case 10143.)
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined() || !may_overlap(in, into)) continue;
    if (!in.is_same(into) || !may_overwrite_input(o, static_cast<int>(i))) return false;
    *overwritten = static_cast<int>(i);
  }
  return true;
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs, std::vector<Tensor> into) const {
  return execute(inputs, std::move(into), nullptr);
}

std::vector<Tensor> Executor::run_consuming(std::vector<Tensor> inputs) const {
  return execute(inputs, {}, &inputs);
}

std::vector<Tensor> Executor::execute(const std::vector<Tensor>& inputs, std::vector<Tensor> into,
                                      std::vector<Tensor>* owned) const {
  // A compiled graph is never differentiated op by op (compiled training attaches one node to its outputs), and
  // its copies into `into` write parameters an optimiser step updates.
  NoGradGuard no_grad;
  const inductor::LoopProgram& program = *parts_->program;
  const std::vector<Kernel>& kernels = parts_->schedule.kernels;
  RunState r;
  r.syms.assign(program.num_symbols, -1);
  for (const Binding& b : bindings_) {
    const Tensor& t = inputs.at(b.input);
    r.syms[b.symbol] = (b.stride ? t.stride(b.dim) : t.size(b.dim)).hint();
  }
  r.bufs.resize(program.buffers.size());
  for (const Buffer& b : program.buffers) {
    if (b.kind == BufferKind::kInput) r.bufs[b.id] = inputs.at(b.graph_input);
    else if (b.kind == BufferKind::kConstant) r.bufs[b.id] = b.constant;
  }
  std::vector<bool> direct(program.outputs.size(), false);
  std::vector<int> overwrites(program.outputs.size(), -1);  // per output: the input it is computed into, or -1
  for (size_t o = 0; o < into.size() && o < program.outputs.size(); ++o) {
    if (!into[o].defined() || !writes_directly(r, static_cast<int>(o), into[o], inputs, &overwrites[o])) continue;
    direct[o] = true;
    r.bufs[program.outputs[o].buffer] = into[o];
  }
  std::vector<double> seconds(profile_ ? kernels.size() : 0);
  for (size_t k = 0; k < kernels.size(); ++k) {
    const Kernel& kernel = kernels[k];
    const int ki = static_cast<int>(k);
    if (parts_->schedule.launched_with(ki) != ki) continue;  // ran inside its GEMM or with its group
    if (profile_) launcher_->wait();
    auto start = profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    for (int b : allocs_[k])
      if (!r.bufs[b].defined()) allocate(r, b);
    if (kernel.combined >= 0)
      for (const std::vector<int>& wave : waves(parts_->schedule.combined[kernel.combined], overwrites))
        launcher_->run_combined(r, wave);
    else if (kernel.kind == Kernel::Kind::kLoops) launcher_->run_loops(r, ki);
    else if (!launcher_->run_library(r, ki)) run_extern(r, ki);
    for (int b : frees_[k]) r.bufs[b] = Tensor();
    if (owned)
      for (int i : input_frees_[k]) {
        for (const Buffer& b : program.buffers)
          if (b.kind == BufferKind::kInput && b.graph_input == i) r.bufs[b.id] = Tensor();
        (*owned)[i] = Tensor();
      }
    if (profile_) launcher_->wait();
    if (profile_) seconds[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (profile_) {
    std::lock_guard<std::mutex> lock(profile_->mutex);
    ++profile_->calls;
    for (size_t k = 0; k < seconds.size(); ++k) profile_->seconds[k] += seconds[k];
  }
  into.resize(program.outputs.size());
  for (size_t o = 0; o < program.outputs.size(); ++o) {
    if (direct[o]) continue;
    Tensor value = r.view(program.outputs[o]);
    if (into[o].defined()) into[o].copy_(value);
    else into[o] = std::move(value);
  }
  return into;
}

}  // namespace sinter::runtime
