#include "inductor/kernel_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "support/check.h"

namespace sinter::inductor {

namespace {

ExprPtr product(const std::vector<LoopDim>& dims) {
  ExprPtr p = sym::make_const(1);
  for (const LoopDim& d : dims) p = sym::make_mul(p, d.size);
  return p;
}

// Whether some node reachable from `root` (walked from an explicit stack) satisfies `pred`.
template <class Pred>
bool any_node(SExpr root, Pred pred) {
  std::unordered_set<SExpr> seen;
  std::vector<SExpr> stack{root};
  while (!stack.empty()) {
    SExpr e = stack.back();
    stack.pop_back();
    if (pred(e)) return true;
    if (e->kind != SKind::kOp || !seen.insert(e).second) continue;
    for (SExpr a : e->args) stack.push_back(a);
  }
  return false;
}

// Whether computing e once instead of twice is worth a store and a load: it calls a transcendental function.
bool costly(SExpr e) {
  return any_node(e, [](SExpr n) { return n->kind == SKind::kOp && is_transcendental(n->op); });
}

class Planner {
 public:
  Planner(const LoopProgram& p, const Schedule& s, int index, const std::vector<bool>& local, SPool& pool)
      : p_(p), k_(s.kernels[index]), local_(local), pool_(pool) {
    plan_.kernel = index;
    plan_.name = k_.name;
    plan_.rows = k_.rows;
    if (k_.epilogue_of >= 0) plan_.epilogue_of = s.kernels[k_.epilogue_of].name;
  }
  KernelPlan plan();

 private:
  ExprPtr subst_index(const ExprPtr& e) const { return subst_.empty() ? e : sym::substitute(e, subst_); }
  SExpr subst(SExpr e);
  std::vector<LoopDim> coalesce(std::vector<LoopDim> dims, const std::vector<int>& nodes);
  StagePlan plan_stage(const Stage& st, size_t first_dim);
  bool fits_32_bits() const;
  void plan_kept_values();
  void plan_forwarding();
  void plan_arguments();
  bool plan_column_lanes() const;

  const LoopProgram& p_;
  const Kernel& k_;
  const std::vector<bool>& local_;
  SPool& pool_;
  KernelPlan plan_;
  std::unordered_map<int64_t, ExprPtr> subst_;
  std::unordered_map<SExpr, SExpr> subst_memo_;
};

// Post-order over the expression from an explicit stack (a body can be thousands of nodes deep).
SExpr Planner::subst(SExpr root) {
  if (subst_.empty()) return root;
  std::vector<SExpr> stack{root};
  while (!stack.empty()) {
    SExpr e = stack.back();
    if (subst_memo_.count(e)) {
      stack.pop_back();
      continue;
    }
    bool ready = true;
    for (SExpr a : e->args)
      if (!subst_memo_.count(a)) {
        stack.push_back(a);
        ready = false;
      }
    if (!ready) continue;
    stack.pop_back();
    SExpr r = e;
    if (e->kind == SKind::kLoad) {
      r = pool_.load(e->buffer, subst_index(e->offset), e->type);
    } else if (e->kind == SKind::kOp) {
      std::vector<SExpr> args;
      for (SExpr a : e->args) args.push_back(subst_memo_.at(a));
      r = pool_.op(e->op, std::move(args), e->type);
    }
    subst_memo_[e] = r;
  }
  return subst_memo_.at(root);
}

// Merges neighbouring loop dims that every access walks as one (stride of the outer = size * stride of the
// inner), and drops size-1 dims, so the innermost loop is as long as the data allows.
std::vector<LoopDim> Planner::coalesce(std::vector<LoopDim> dims, const std::vector<int>& nodes) {
  subst_.clear();  // each stage has its own inner loops
  subst_memo_.clear();
  std::vector<ExprPtr> offsets;
  int nv = 0;
  for (int id : nodes) {
    const LoopNode& n = p_.nodes[id];
    nv = std::max(nv, static_cast<int>(n.domain.size()));
    offsets.push_back(n.store_offset);
    std::vector<SExpr> loads;
    collect_loads(n.body, loads);
    for (SExpr l : loads) offsets.push_back(l->offset);
  }
  std::vector<std::vector<ExprPtr>> coeffs(offsets.size());
  bool affine = true;
  for (size_t i = 0; i < offsets.size() && affine; ++i) {
    ExprPtr rest;
    affine = affine_split(offsets[i], nv, coeffs[i], rest);
  }
  std::vector<LoopDim> out;
  for (size_t j = dims.size(); j-- > 0;) {
    LoopDim d = dims[j];
    if (d.size->is_const(1)) {
      subst_[kLoopVarBase + d.var] = sym::make_const(0);
      continue;
    }
    if (affine && !out.empty()) {
      LoopDim& in = out.back();
      bool ok = true;
      for (const auto& c : coeffs)
        if (sym::expand(c[d.var]) != sym::expand(sym::make_mul(c[in.var], in.size))) ok = false;
      if (ok) {
        subst_[kLoopVarBase + d.var] = sym::make_const(0);
        in.size = sym::make_mul(d.size, in.size);
        continue;
      }
    }
    out.push_back(d);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// The loops of one stage: the nodes' dims from `first_dim` on, coalesced, with bodies and store offsets
// rewritten for them.
StagePlan Planner::plan_stage(const Stage& st, size_t first_dim) {
  const LoopNode& f = p_.nodes[st.nodes.front()];
  StagePlan sp;
  sp.reduction = st.reduction;
  for (size_t d = first_dim; d < f.domain.size(); ++d) sp.loops.push_back({static_cast<int>(d), f.domain[d]});
  sp.loops = coalesce(sp.loops, st.nodes);
  for (int id : st.nodes) {
    const LoopNode& n = p_.nodes[id];
    PlannedNode pn;
    pn.node = id;
    pn.body = subst(n.body);
    pn.store = subst_index(n.store_offset);
    pn.stored = !local_[n.out];
    sp.nodes.push_back(std::move(pn));
  }
  sp.elems = product(sp.loops);
  return sp;
}

// 32-bit index arithmetic when every size and stride the kernel touches is static and every buffer it touches
// (so every offset it computes) and its iteration space stay below 2^31 elements; symbolic sizes keep 64 bits.
bool Planner::fits_32_bits() const {
  constexpr int64_t kLimit = int64_t(1) << 31;
  auto is_static = [](const ExprPtr& e) {
    for (int64_t id : sym::free_symbols(e))
      if (!is_loop_var(id)) return false;
    return true;
  };
  auto extent_ok = [&](const Buffer& b) {
    int64_t extent = 1;
    for (size_t d = 0; d < b.sizes.size(); ++d) {
      if (!b.sizes[d]->is_const() || !b.strides[d]->is_const()) return false;
      int64_t size = b.sizes[d]->value(), stride = b.strides[d]->value();
      if (size == 0) return true;
      extent += (size - 1) * (stride < 0 ? -stride : stride);
      if (extent >= kLimit) return false;
    }
    return true;
  };
  for (int id : k_.nodes) {
    const LoopNode& n = p_.nodes[id];
    int64_t space = 1;
    for (const ExprPtr& d : n.domain) {
      if (!d->is_const()) return false;
      space *= std::max<int64_t>(d->value(), 1);
      if (space >= kLimit) return false;
    }
    if (!is_static(n.store_offset) || !extent_ok(p_.buffers[n.out])) return false;
    std::vector<SExpr> loads;
    collect_loads(n.body, loads);
    for (SExpr l : loads)
      if (!is_static(l->offset) || !extent_ok(p_.buffers[l->buffer])) return false;
  }
  return true;
}

// For each reduction stage and each later pointwise stage with the same loops (so the reduction's index
// variables address that stage's output), a float32 output whose value contains the reduction's costly
// per-element value takes it as a cache. The output is distinct from every input of the kernel (buffers are
// freed only after the kernels that read them), so storing early clobbers nothing.
void Planner::plan_kept_values() {
  auto same = [](const std::vector<LoopDim>& a, const std::vector<LoopDim>& b) {
    if (a.size() != b.size()) return false;
    for (size_t j = 0; j < a.size(); ++j)
      if (a[j].var != b[j].var || sym::expand(a[j].size) != sym::expand(b[j].size)) return false;
    return true;
  };
  for (size_t si = 0; si < plan_.stages.size(); ++si) {
    StagePlan& red = plan_.stages[si];
    if (!red.reduction) continue;
    for (size_t pi = si + 1; pi < plan_.stages.size(); ++pi) {
      StagePlan& pw = plan_.stages[pi];
      if (pw.reduction || pw.loops.empty() || !same(pw.loops, red.loops)) continue;
      for (PlannedNode& r : red.nodes) {
        SExpr x = r.body;
        if (r.keep_for >= 0 || x->type != CType::kF32 || !costly(x)) continue;
        for (PlannedNode& n : pw.nodes) {
          const int out = p_.nodes[n.node].out;
          if (!n.stored || p_.buffers[out].dtype != kFloat32 || !n.loaded_keeps.empty()) continue;
          if (!any_node(n.body, [x](SExpr e) { return e == x; })) continue;
          r.keep_for = n.node;
          r.keep_at = n.store;
          n.loaded_keeps.push_back(x);
          break;
        }
      }
    }
  }
}

// Loads of values this kernel computed before them: a reduction's row result (read at its own store offset, in
// any later stage) and a pointwise value of the same stage (read where it is stored). Divisions by a row result
// become one reciprocal per row and a multiply per element (within an ulp of the quotient).
void Planner::plan_forwarding() {
  std::unordered_map<int, ExprPtr> row_results;  // reduction node -> its store offset
  for (StagePlan& st : plan_.stages) {
    std::unordered_map<int, ExprPtr> values = row_results;
    if (!st.reduction)
      for (const PlannedNode& n : st.nodes) values[n.node] = n.store;
    auto forwarded = [&](SExpr l) {
      const int prod = p_.buffers[l->buffer].producer;
      auto it = prod >= 0 ? values.find(prod) : values.end();
      return it != values.end() && l->offset == it->second ? prod : -1;
    };
    for (const PlannedNode& n : st.nodes) {
      std::vector<SExpr> loads;
      collect_loads(n.body, loads);
      for (SExpr l : loads)
        if (int prod = forwarded(l); prod >= 0) st.forwarded[l] = prod;
      any_node(n.body, [&](SExpr e) {
        if (e->kind == SKind::kOp && e->op == SOp::div && e->type == CType::kF32 && e->args[1]->kind == SKind::kLoad) {
          auto it = st.forwarded.find(e->args[1]);
          if (it != st.forwarded.end() && p_.nodes[it->second].kind == LoopKind::kReduction) st.reciprocal_divs.insert(e);
        }
        return false;
      });
    }
    if (st.reduction)
      for (const PlannedNode& n : st.nodes) row_results[n.node] = n.store;
  }
}

// Arguments in a fixed order: per node, the buffers it loads from memory, then the one it stores.
void Planner::plan_arguments() {
  auto add = [&](int b) {
    if (!local_[b] && std::find(plan_.buffers.begin(), plan_.buffers.end(), b) == plan_.buffers.end())
      plan_.buffers.push_back(b);
  };
  for (const StagePlan& st : plan_.stages)
    for (const PlannedNode& n : st.nodes) {
      std::vector<SExpr> loads;
      collect_loads(n.body, loads);
      for (SExpr l : loads)
        if (!st.forwarded.count(l)) add(l->buffer);
      add(p_.nodes[n.node].out);
    }
}

KernelPlan Planner::plan() {
  int nv = 0;
  for (int id : k_.nodes) nv = std::max(nv, static_cast<int>(p_.nodes[id].domain.size()));
  plan_.index32 = fits_32_bits();
  const LoopNode& f = p_.nodes[k_.nodes.front()];
  if (k_.rows) {
    for (size_t d = 0; d < k_.outer.size(); ++d) plan_.outer.push_back({static_cast<int>(d), k_.outer[d]});
    for (const Stage& st : k_.stages) {
      plan_.stages.push_back(plan_stage(st, k_.outer.size()));
      StagePlan& sp = plan_.stages.back();
      if (sp.reduction && sp.loops.empty()) sp.loops.push_back({static_cast<int>(f.domain.size()), sym::make_const(1)});
    }
    plan_kept_values();
    plan_.total = product(plan_.outer);
    ExprPtr work = sym::make_const(1);
    for (size_t d = k_.outer.size(); d < f.domain.size(); ++d) work = sym::make_mul(work, f.domain[d]);
    plan_.work = work;
  } else {
    // Flat pointwise: the launcher splits the elements of the whole domain; each row of the coalesced loops
    // is one innermost loop.
    Stage all{k_.nodes, false};
    plan_.stages.push_back(plan_stage(all, 0));
    StagePlan& sp = plan_.stages.back();
    if (sp.loops.empty()) sp.loops.push_back({nv, sym::make_const(1)});
    ExprPtr total = sym::make_const(1);
    for (const ExprPtr& d : f.domain) total = sym::make_mul(total, d);
    plan_.total = total;
    plan_.work = sym::make_const(1);
    plan_.row_elems = f.domain.empty() ? sym::make_const(1) : f.domain.back();
  }
  plan_forwarding();
  plan_arguments();
  plan_.column_lanes = plan_column_lanes();
  return std::move(plan_);
}

// Whether lanes over consecutive rows give contiguous loads where lanes over the reduced dim would not: one
// reduction stage, every load's index moving by 0 or 1 with the last outer dim, and some load that moves by 1 with
// it but by another step along the reduced dim. Later stages may follow that compute one element per row from the
// reduced values (a mean's cast back to float32): they run per lane after the block.
bool Planner::plan_column_lanes() const {
  if (!plan_.rows || plan_.outer.empty() || plan_.stages.empty() || !plan_.stages[0].reduction) return false;
  for (size_t i = 1; i < plan_.stages.size(); ++i)
    if (plan_.stages[i].reduction || !plan_.stages[i].loops.empty()) return false;
  const StagePlan& st = plan_.stages[0];
  const int last = plan_.outer.back().var, inner = st.loops.back().var;
  const int nvars = std::max(last, inner) + 1;
  bool strided = false;
  for (const PlannedNode& n : st.nodes) {
    if (n.keep_for >= 0) return false;
    std::vector<SExpr> loads;
    collect_loads(n.body, loads);
    for (SExpr l : loads) {
      if (st.forwarded.count(l)) continue;
      std::vector<ExprPtr> coeffs;
      ExprPtr rest;
      if (!affine_split(l->offset, nvars, coeffs, rest) || !coeffs[last]->is_const()) return false;
      const int64_t across = coeffs[last]->value();
      if (across != 0 && across != 1) return false;
      if (across == 1 && !coeffs[inner]->is_const(1)) strided = true;
    }
  }
  return strided;
}

}  // namespace

int KernelPlan::argument(int buffer) const {
  auto it = std::find(buffers.begin(), buffers.end(), buffer);
  SINTER_INTERNAL_ASSERT(it != buffers.end(), "kernel plan: buffer {} is not an argument of {}", buffer, name);
  return static_cast<int>(it - buffers.begin());
}

std::string KernelPlan::str(const LoopProgram& p) const {
  auto loops = [](const std::vector<LoopDim>& ls) {
    std::string s;
    for (const LoopDim& l : ls) s += fmt::format("{}v{} < {}", s.empty() ? "" : ", ", l.var, index_text(l.size));
    return s.empty() ? std::string("-") : s;
  };
  std::string s = fmt::format("{}: {}, {}-bit indices{}{}\n", name, rows ? "row loops" : "flat loops", index32 ? 32 : 64,
                              column_lanes ? ", lanes across rows" : "",
                              epilogue_of.empty() ? "" : ", epilogue of " + epilogue_of);
  if (rows) s += fmt::format("  outer: {}\n", loops(outer));
  std::string args;
  for (size_t i = 0; i < buffers.size(); ++i) args += fmt::format("{}b{} = {}", i ? ", " : "", i, p.buffers[buffers[i]].name);
  s += fmt::format("  args: {}\n", args.empty() ? "-" : args);
  for (size_t i = 0; i < stages.size(); ++i) {
    const StagePlan& st = stages[i];
    s += fmt::format("  stage {}: {} over {}\n", i, st.reduction ? "reduction" : "pointwise", loops(st.loops));
    for (const PlannedNode& n : st.nodes) {
      const LoopNode& ln = p.nodes[n.node];
      s += fmt::format("    node {}: {}{}", n.node, st.reduction ? std::string(reduce_op_name(ln.reduce_op)) + " " : "",
                       p.buffers[ln.out].name);
      s += n.stored ? fmt::format("[{}]", index_text(n.store)) : std::string(" (kept in registers)");
      if (n.keep_for >= 0) s += fmt::format(", keeps its per-element value for node {}", n.keep_for);
      if (!n.loaded_keeps.empty()) s += fmt::format(", loads {} kept value(s)", n.loaded_keeps.size());
      s += "\n";
    }
    if (!st.forwarded.empty()) {
      std::vector<int> from;
      for (const auto& [load, node] : st.forwarded) from.push_back(node);
      std::sort(from.begin(), from.end());
      from.erase(std::unique(from.begin(), from.end()), from.end());
      s += fmt::format("    reads computed values of node(s) {}\n", fmt::join(from, ", "));
    }
    if (!st.reciprocal_divs.empty())
      s += fmt::format("    {} division(s) by a row result as reciprocal multiplies\n", st.reciprocal_divs.size());
  }
  s += fmt::format("  total {}, work {}", index_text(total), index_text(work));
  if (row_elems) s += fmt::format(", row elements {}", index_text(row_elems));
  return s + "\n";
}

std::string ProgramPlan::str(const LoopProgram& program) const {
  std::string s;
  for (const KernelPlan& k : kernels)
    if (!k.name.empty()) s += k.str(program);
  return s;
}

ProgramPlan plan_kernels(const LoopProgram& program, const Schedule& schedule) {
  ProgramPlan plan;
  plan.pool = std::make_unique<SPool>(&program.pool);
  std::vector<bool> local(program.buffers.size(), false);
  for (const Kernel& k : schedule.kernels)
    for (int b : k.local_buffers) local[b] = true;
  for (size_t i = 0; i < schedule.kernels.size(); ++i) {
    const Kernel& k = schedule.kernels[i];
    if (k.kind == Kernel::Kind::kLoops) {
      plan.kernels.push_back(Planner(program, schedule, static_cast<int>(i), local, *plan.pool).plan());
    } else {
      KernelPlan ext;
      ext.kernel = static_cast<int>(i);
      plan.kernels.push_back(std::move(ext));
    }
  }
  return plan;
}

}  // namespace sinter::inductor
