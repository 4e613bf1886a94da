#include "inductor/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "support/log.h"
#include "symbolic/shape_env.h"

namespace sinter::inductor {
namespace {

bool same_dims(const std::vector<ExprPtr>& a, size_t an, const std::vector<ExprPtr>& b, size_t bn) {
  if (an != bn) return false;
  for (size_t i = 0; i < an; ++i)
    if (a[i] != b[i] && sym::expand(a[i]) != sym::expand(b[i])) return false;
  return true;
}

class Scheduler {
 public:
  Scheduler(const LoopProgram& p, const Target& target)
      : p_(p), target_(target), producer_kernel_(p.buffers.size(), -1) {
    if (p.shape_env) hints_ = p.shape_env->hints();
  }
  Schedule run();

 private:
  double numel(const std::vector<ExprPtr>& dims, size_t n) const {
    double r = 1;
    for (size_t i = 0; i < n; ++i) {
      try {
        r *= static_cast<double>(sym::evaluate(*dims[i], hints_));
      } catch (const Error&) {
        r *= 64;
      }
    }
    return r;
  }
  double bytes(int buffer) const {
    const Buffer& b = p_.buffers[buffer];
    return numel(b.sizes, b.sizes.size()) * static_cast<double>(element_size(b.dtype));
  }
  // Whether node `n` may join kernel `k`; `why` says why not, `score` what it saves.
  bool fits(const Kernel& k, const LoopNode& n, std::string& why, double& score);
  void decide(const std::string& text) {
    s_.decisions.push_back(text);
    SINTER_LOG(kFusion, "{}", text);
  }
  void close_kernel();
  void move_next_to_readers();
  void bind_epilogues();
  void build_stages(Kernel& k);
  bool flat_reads_match(const Kernel& k, const Buffer& out) const;
  void find_local_buffers();
  void combine_kernels();

  const LoopProgram& p_;
  const Target& target_;
  sym::SymbolValues hints_;
  Schedule s_;
  std::vector<int> producer_kernel_;  // buffer -> kernel index
  int open_ = -1;
  int open_size_ = 0;  // scalar nodes in the open kernel's bodies
};

bool Scheduler::fits(const Kernel& k, const LoopNode& n, std::string& why, double& score) {
  const LoopNode& first = p_.nodes[k.nodes.front()];
  bool red = n.kind == LoopKind::kReduction;
  size_t outer = k.rows ? k.outer.size() : first.domain.size();
  if (!k.rows) {
    if (!red && !same_dims(n.domain, n.domain.size(), first.domain, first.domain.size())) {
      why = "different iteration domains";
      return false;
    }
    if (red) {
      outer = static_cast<size_t>(n.num_outer);
      if (outer >= first.domain.size() || !same_dims(n.domain, outer, first.domain, outer)) {
        why = "the reduction's kept dims are not a prefix of the kernel's domain";
        return false;
      }
      if (numel(n.domain, outer) < 2 &&
          numel(first.domain, first.domain.size()) > static_cast<double>(target_.parallel_min_elements)) {
        why = "a full reduction would serialise a parallel pointwise kernel (lost parallelism)";
        return false;
      }
    }
  } else {
    if (n.domain.size() < outer || !same_dims(n.domain, outer, k.outer, outer) ||
        (red && static_cast<size_t>(n.num_outer) != outer)) {
      why = "its domain does not start with the kernel's outer dims";
      return false;
    }
    if (!red && numel(k.outer, outer) < 2 &&
        numel(n.domain, n.domain.size()) > static_cast<double>(target_.parallel_min_elements)) {
      why = "a large element-wise node after a full reduction would run inside its one row (lost parallelism)";
      return false;
    }
  }
  std::vector<SExpr> loads;
  collect_loads(n.body, loads);
  score = 0;
  for (SExpr l : loads) {
    int pk = producer_kernel_[l->buffer];
    if (pk != open_) continue;
    if (p_.buffers[l->buffer].producer < 0) {
      // Written in parts by several nodes (cat, stack, pad) of this kernel: whole only once the kernel is done.
      // (A reduction over cat's rows fused into the row loop writing them read rows not yet written.)
      why = fmt::format("it reads {}, which this kernel writes in parts", p_.buffers[l->buffer].name);
      return false;
    }
    const LoopNode& prod = p_.nodes[p_.buffers[l->buffer].producer];
    bool ok;
    if (prod.kind == LoopKind::kReduction || !k.rows) {
      ok = l->offset == prod.store_offset;
    } else {
      std::vector<ExprPtr> ca, cb;
      ExprPtr ra, rb;
      int nv = static_cast<int>(std::max(n.domain.size(), prod.domain.size()));
      ok = affine_split(l->offset, nv, ca, ra) && affine_split(prod.store_offset, nv, cb, rb) && ra == rb;
      for (size_t v = 0; ok && v < outer; ++v) ok = ca[v] == cb[v];
    }
    if (!ok) {
      why = fmt::format("it reads {} outside the row (or element) the kernel computes", p_.buffers[l->buffer].name);
      return false;
    }
    score += bytes(l->buffer);
  }
  return true;
}

void Scheduler::close_kernel() {
  if (open_ < 0) return;
  Kernel& k = s_.kernels[open_];
  if (!k.rows) k.outer = p_.nodes[k.nodes.front()].domain;
  open_ = -1;
}

Schedule Scheduler::run() {
  for (const LoopNode& n : p_.nodes) {
    if (n.kind == LoopKind::kExtern) {
      close_kernel();
      Kernel k;
      k.kind = Kernel::Kind::kExtern;
      k.nodes = {n.id};
      k.name = fmt::format("extern{}", s_.kernels.size());
      s_.kernels.push_back(std::move(k));
      for (int b : n.outs) producer_kernel_[b] = static_cast<int>(s_.kernels.size()) - 1;
      continue;
    }
    std::string why;
    double score = 0;
    int size = dag_size(n.body);
    bool small = open_size_ + size <= kMaxKernelNodes;
    if (!small)
      why = fmt::format("the kernel would compute {} scalar nodes > {} (kernels are kept a size the C++ compiler "
                        "handles quickly)",
                        open_size_ + size, kMaxKernelNodes);
    if (open_ >= 0 && small && fits(s_.kernels[open_], n, why, score)) {
      open_size_ += size;
      Kernel& k = s_.kernels[open_];
      if (n.kind == LoopKind::kReduction && !k.rows) {
        k.rows = true;
        k.outer.assign(n.domain.begin(), n.domain.begin() + n.num_outer);
      }
      k.nodes.push_back(n.id);
      // A buffer written in parts (producer -1): the kernel of its last part so far, which readers must not join.
      if (p_.buffers[n.out].producer == n.id || p_.buffers[n.out].producer < 0) producer_kernel_[n.out] = open_;
      decide(fmt::format("fuse loop node {} ({}) into {}: same outer domain, score {:.0f} bytes not re-read", n.id,
                         n.origin, k.name, score));
      continue;
    }
    if (open_ >= 0)
      decide(fmt::format("refuse loop node {} ({}) in {}: {}", n.id, n.origin, s_.kernels[open_].name, why));
    close_kernel();
    Kernel k;
    k.nodes = {n.id};
    k.name = fmt::format("kernel{}", s_.kernels.size());
    if (n.kind == LoopKind::kReduction) {
      k.rows = true;
      k.outer.assign(n.domain.begin(), n.domain.begin() + n.num_outer);
    }
    s_.kernels.push_back(std::move(k));
    open_ = static_cast<int>(s_.kernels.size()) - 1;
    open_size_ = size;
    if (p_.buffers[n.out].producer == n.id || p_.buffers[n.out].producer < 0) producer_kernel_[n.out] = open_;
  }
  close_kernel();
  move_next_to_readers();
  bind_epilogues();
  for (Kernel& k : s_.kernels)
    if (k.kind == Kernel::Kind::kLoops) build_stages(k);
  find_local_buffers();
  if (target_.combined_kernels) combine_kernels();
  return std::move(s_);
}

// A GEMM or conv whose first reader comes later, with kernels that do not read its output in between (a copy or
// reduction of something else), moves down to just before that reader, so the reader can become its epilogue.
// Legal: its inputs were all made before its old place, and nothing it skips reads it. It never moves past another
// GEMM or conv (with a ResNet shortcut conv in between, the shortcut conv hosts the epilogue instead).
void Scheduler::move_next_to_readers() {
  auto reads = [&](const Kernel& k, const std::vector<int>& bufs) {
    for (int id : k.nodes) {
      const LoopNode& n = p_.nodes[id];
      if (n.kind == LoopKind::kExtern) {
        for (const BufferView& v : n.tensor_args)
          if (std::find(bufs.begin(), bufs.end(), v.buffer) != bufs.end()) return true;
        continue;
      }
      std::vector<SExpr> loads;
      collect_loads(n.body, loads);
      for (SExpr l : loads)
        if (std::find(bufs.begin(), bufs.end(), l->buffer) != bufs.end()) return true;
    }
    return false;
  };
  for (size_t i = 0; i < s_.kernels.size(); ++i) {
    const Kernel& g = s_.kernels[i];
    if (g.kind != Kernel::Kind::kExtern) continue;
    const LoopNode& n = p_.nodes[g.nodes[0]];
    if (!n.gemm && !n.conv) continue;
    size_t j = i + 1;
    bool past_gemm = false;  // never past another GEMM/conv: two feeding one reader would swap places forever
    for (; j < s_.kernels.size() && !reads(s_.kernels[j], n.outs); ++j) {
      const Kernel& m = s_.kernels[j];
      past_gemm = past_gemm || (m.kind == Kernel::Kind::kExtern && (p_.nodes[m.nodes[0]].gemm || p_.nodes[m.nodes[0]].conv));
    }
    if (past_gemm || j == i + 1 || j == s_.kernels.size() || s_.kernels[j].kind != Kernel::Kind::kLoops) continue;
    decide(fmt::format("move {} down past {} kernel(s) to just before its first reader {}", g.name, j - i - 1,
                       s_.kernels[j].name));
    std::rotate(s_.kernels.begin() + static_cast<std::ptrdiff_t>(i), s_.kernels.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                s_.kernels.begin() + static_cast<std::ptrdiff_t>(j));
    --i;  // the kernel now at i has not been looked at
  }
}

void Scheduler::bind_epilogues() {
  for (size_t i = 1; i < s_.kernels.size(); ++i) {
    Kernel& k = s_.kernels[i];
    Kernel& g = s_.kernels[i - 1];
    if (k.kind != Kernel::Kind::kLoops || g.kind != Kernel::Kind::kExtern) continue;
    const LoopNode& gemm = p_.nodes[g.nodes[0]];
    if (!gemm.gemm && !gemm.conv) continue;
    const Buffer& out = p_.buffers[gemm.outs[0]];
    size_t r = out.sizes.size();
    // A conv's tiles are blocks of output pixels x channels in channels-last memory order: only a flat
    // epilogue whose flat index is that memory offset fits.
    bool shape_ok = gemm.conv ? false
                    : k.rows  ? same_dims(k.outer, k.outer.size(), out.sizes, r - 1)
                              : same_dims(k.outer, k.outer.size(), out.sizes, r);
    // A flat kernel over another arrangement of the same elements (qkv -> view -> permute -> unbind) still
    // fits when its flat index is the GEMM output's: every read of the output is at the kernel's flat index.
    bool flat_order = !k.rows && !shape_ok && flat_reads_match(k, out);
    std::string why = shape_ok || flat_order ? ""
                      : gemm.conv     ? "it does not walk the conv's output in its memory order"
                                      : "it does not walk the GEMM's output rows";
    // The shape of this epilogue, which the target's library call must accept.
    const ExternKind call = gemm.conv ? ExternKind::kConv : ExternKind::kGemm;
    const EpilogueShape shape = k.rows ? EpilogueShape::kRows : EpilogueShape::kTile;
    if (why.empty() && !target_.accepts(call, shape)) why = target_.missing(call, shape);
    for (int id : k.nodes) {
      if (flat_order) break;
      if (!why.empty()) break;
      std::vector<SExpr> loads;
      collect_loads(p_.nodes[id].body, loads);
      for (SExpr l : loads) {
        if (l->buffer != out.id) continue;
        std::vector<ExprPtr> c;
        ExprPtr rest;
        bool ok = affine_split(l->offset, static_cast<int>(p_.nodes[id].domain.size()), c, rest) && rest->is_const(0);
        for (size_t v = 0; ok && v + 1 < r; ++v) ok = c[v] == out.strides[v] || out.sizes[v]->is_const(1);
        if (!ok) {
          why = "it reads the GEMM's output outside the row it computes";
          break;
        }
      }
    }
    if (why.empty()) {
      k.epilogue_of = static_cast<int>(i) - 1;
      g.epilogue = static_cast<int>(i);
      decide(fmt::format("fuse {} into {} as its epilogue: applied to each block of rows right after it is "
                         "computed, score {:.0f} bytes not re-read",
                         k.name, g.name, bytes(out.id)));
    } else {
      decide(fmt::format("refuse {} as epilogue of {}: {}", k.name, g.name, why));
    }
  }
}

bool Scheduler::flat_reads_match(const Kernel& k, const Buffer& out) const {
  const std::vector<ExprPtr>& dom = p_.nodes[k.nodes.front()].domain;
  ExprPtr numel = sym::make_const(1), flat = sym::make_const(0);
  for (size_t d = dom.size(); d-- > 0;) {
    if (!dom[d]->is_const(1)) flat = sym::make_add(flat, sym::make_mul(loop_var(static_cast<int>(d)), numel));
    numel = sym::make_mul(numel, dom[d]);
  }
  ExprPtr out_numel = sym::make_const(1);
  for (const ExprPtr& e : out.sizes) out_numel = sym::make_mul(out_numel, e);
  if (sym::expand(numel) != sym::expand(out_numel)) return false;
  ExprPtr want = sym::expand(flat);
  bool any = false;
  for (int id : k.nodes) {
    std::vector<SExpr> loads;
    collect_loads(p_.nodes[id].body, loads);
    for (SExpr l : loads) {
      if (l->buffer != out.id) continue;
      if (sym::expand(l->offset) != want) return false;
      any = true;
    }
  }
  return any;
}

void Scheduler::build_stages(Kernel& k) {
  size_t outer = k.outer.size();
  if (!k.rows) {
    k.stages.push_back(Stage{k.nodes, false});
    return;
  }
  for (int id : k.nodes) {
    const LoopNode& n = p_.nodes[id];
    bool red = n.kind == LoopKind::kReduction;
    bool join = false;
    if (!k.stages.empty() && k.stages.back().reduction == red) {
      const Stage& st = k.stages.back();
      const LoopNode& f = p_.nodes[st.nodes.front()];
      join = same_dims(std::vector<ExprPtr>(n.domain.begin() + outer, n.domain.end()), n.domain.size() - outer,
                       std::vector<ExprPtr>(f.domain.begin() + outer, f.domain.end()), f.domain.size() - outer);
      std::vector<SExpr> loads;
      collect_loads(n.body, loads);
      for (SExpr l : loads) {
        for (int other : st.nodes) {
          const LoopNode& o = p_.nodes[other];
          if (o.out != l->buffer) continue;
          if (red || l->offset != o.store_offset) join = false;  // needs the whole stage done first
        }
      }
    }
    if (join) k.stages.back().nodes.push_back(id);
    else k.stages.push_back(Stage{{id}, red});
  }
}

void Scheduler::find_local_buffers() {
  std::unordered_map<int, int> stage_of;  // node -> stage index within its kernel
  std::vector<int> kernel_of(p_.nodes.size(), -1);
  for (size_t ki = 0; ki < s_.kernels.size(); ++ki) {
    const Kernel& k = s_.kernels[ki];
    for (int id : k.nodes) kernel_of[id] = static_cast<int>(ki);
    for (size_t si = 0; si < k.stages.size(); ++si)
      for (int id : k.stages[si].nodes) stage_of[id] = static_cast<int>(si);
  }
  std::vector<bool> local(p_.buffers.size(), true);
  for (const Buffer& b : p_.buffers)
    if (b.kind != BufferKind::kIntermediate || b.producer < 0 || p_.nodes[b.producer].kind == LoopKind::kExtern)
      local[b.id] = false;
  for (const BufferView& v : p_.outputs) local[v.buffer] = false;
  for (const LoopNode& n : p_.nodes) {
    if (n.kind == LoopKind::kExtern) {
      for (const BufferView& v : n.tensor_args) local[v.buffer] = false;
      continue;
    }
    std::vector<SExpr> loads;
    collect_loads(n.body, loads);
    for (SExpr l : loads) {
      if (!local[l->buffer]) continue;
      const LoopNode& prod = p_.nodes[p_.buffers[l->buffer].producer];
      bool ok = kernel_of[prod.id] == kernel_of[n.id] && l->offset == prod.store_offset &&
                (prod.kind == LoopKind::kReduction || stage_of[prod.id] == stage_of[n.id]);
      if (!ok) local[l->buffer] = false;
    }
  }
  for (Kernel& k : s_.kernels)
    for (int id : k.nodes)
      if (p_.nodes[id].kind != LoopKind::kExtern && local[p_.nodes[id].out]) k.local_buffers.push_back(p_.nodes[id].out);
}

}  // namespace

// Groups consecutive flat element-wise kernels none of which reads or writes a buffer another one of them writes,
// so that they may run in any order or at once. Only kernels that store nothing but the program's outputs (an
// optimiser's updated parameters and state): a group's buffers are all allocated before it runs, which would
// raise the peak memory with intermediate values that one-by-one launches free in between.
void Scheduler::combine_kernels() {
  std::unordered_set<int> outputs;
  for (const BufferView& v : p_.outputs) outputs.insert(v.buffer);
  std::vector<int> group;
  std::unordered_set<int> reads, writes;
  auto close = [&] {
    if (group.size() >= 2) {
      const int id = static_cast<int>(s_.combined.size());
      std::vector<std::string> names;
      for (int k : group) {
        s_.kernels[k].combined = id;
        names.push_back(s_.kernels[k].name);
      }
      decide(fmt::format("combine {} into one launch: independent flat kernels", fmt::join(names, ", ")));
      s_.combined.push_back(group);
    }
    group.clear();
    reads.clear();
    writes.clear();
  };
  for (size_t ki = 0; ki < s_.kernels.size(); ++ki) {
    const Kernel& k = s_.kernels[ki];
    if (k.kind != Kernel::Kind::kLoops || k.rows || k.epilogue_of >= 0) {
      close();
      continue;
    }
    std::unordered_set<int> r, w;
    bool stores_outputs = true;
    for (int id : k.nodes) {
      const LoopNode& n = p_.nodes[id];
      w.insert(n.out);
      const bool local = std::count(k.local_buffers.begin(), k.local_buffers.end(), n.out) > 0;
      stores_outputs = stores_outputs && (local || outputs.count(n.out));
      std::vector<SExpr> loads;
      collect_loads(n.body, loads);
      for (SExpr l : loads) r.insert(l->buffer);
    }
    if (!stores_outputs) {
      close();
      continue;
    }
    bool independent = static_cast<int>(group.size()) < kMaxCombined;
    for (int b : r) independent = independent && !writes.count(b);
    for (int b : w) independent = independent && !writes.count(b) && !reads.count(b);
    if (!independent) close();
    group.push_back(static_cast<int>(ki));
    reads.insert(r.begin(), r.end());
    writes.insert(w.begin(), w.end());
  }
  close();
}

int Schedule::launches() const {
  int n = 0;
  for (size_t k = 0; k < kernels.size(); ++k)
    if (launched_with(static_cast<int>(k)) == static_cast<int>(k)) ++n;
  return n;
}

int Schedule::launched_with(int k) const {
  const Kernel& kernel = kernels.at(k);
  if (kernel.epilogue_of >= 0) return kernel.epilogue_of;
  if (kernel.combined >= 0) return combined[kernel.combined].front();
  return k;
}

Schedule schedule(const LoopProgram& program, const Target& target) {
  Scheduler s(program, target);
  return s.run();
}

}  // namespace sinter::inductor
