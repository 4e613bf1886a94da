#include "codegen/cpp/cpp_codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "codegen/cpp/cpp_ops.h"
#include "codegen/cpp/prelude.h"
#include "support/check.h"

namespace sinter::codegen::cpp {

using inductor::Buffer;
using inductor::CType;
using inductor::Kernel;
using inductor::LoopKind;
using inductor::LoopNode;
using inductor::LoopProgram;
using inductor::SExpr;
using inductor::SKind;
using inductor::Stage;
using ::sinter::ExprPtr;

namespace {

constexpr int kLanes = 16;  // accumulators per reduction: enough independent chains for AVX-512 too

// Helpers shared by every translation unit (after the prelude).
constexpr const char* kPreamble = R"(
struct sn_kargs { void** bufs; const sn_i64* syms; int* error; };
static inline sn_i64 sn_imin(sn_i64 a, sn_i64 b) { return a < b ? a : b; }
static inline sn_i64 sn_imax(sn_i64 a, sn_i64 b) { return a > b ? a : b; }
static inline sn_i64 sn_ifloordiv(sn_i64 a, sn_i64 b) {
  sn_i64 q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline sn_i64 sn_imod(sn_i64 a, sn_i64 b) {
  sn_i64 r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
)";

struct LoopDim {
  int var;
  ExprPtr size;
};

ExprPtr product(const std::vector<LoopDim>& dims) {
  ExprPtr p = sym::make_const(1);
  for (const LoopDim& d : dims) p = sym::make_mul(p, d.size);
  return p;
}

class KernelWriter {
 public:
  KernelWriter(LoopProgram& p, const Kernel& k, const std::vector<bool>& local) : p_(p), k_(k), local_(local) {}
  std::string write(KernelInfo& info);

 private:
  // ---- index rewriting (dimension coalescing) ----
  ExprPtr subst_index(const ExprPtr& e) const { return subst_.empty() ? e : sym::substitute(e, subst_); }
  SExpr subst(SExpr e);
  std::vector<LoopDim> coalesce(std::vector<LoopDim> dims, const std::vector<int>& nodes);
  // The loops of one stage: the nodes' dims from `first_dim` on, coalesced, with bodies and store offsets
  // rewritten for them (in body_ and store_).
  std::vector<LoopDim> stage_loops(const std::vector<int>& nodes, size_t first_dim);

  // ---- emission ----
  std::string var(int k) const { return fmt::format("v{}", k); }
  std::string idx(const ExprPtr& e) const { return inductor::index_str(e, var_names_, !narrow_); }
  bool fits_32_bits() const;
  std::string buf(int b);
  std::string emit(SExpr e, std::string& out, const std::string& ind);
  void emit_node(SExpr e, std::string& out, const std::string& ind);
  void store(const LoopNode& n, const std::string& value, std::string& out, const std::string& ind);
  void emit_pointwise_stage(const Stage& st, std::string& out, const std::string& ind);
  void emit_reduction_stage(const Stage& st, std::string& out, const std::string& ind);
  std::string unravel(const std::vector<LoopDim>& dims, const std::string& flat, const std::string& ind);

  LoopProgram& p_;
  const Kernel& k_;
  const std::vector<bool>& local_;
  std::vector<std::string> var_names_;
  bool narrow_ = false;       // every index of this kernel fits in 32 bits (static sizes): 32-bit arithmetic
  std::string it_ = "sn_i64"; // the index type
  std::unordered_map<int64_t, ExprPtr> subst_;
  std::unordered_map<SExpr, SExpr> subst_memo_;
  std::unordered_map<int, int> buf_index_;  // program buffer -> kernel argument position
  std::vector<int> buffers_;
  std::unordered_map<SExpr, std::string> names_;      // SSA names in the current loop body
  std::unordered_map<int, std::string> reduced_;      // reduction node -> its row result variable
  std::unordered_map<int, std::string> stage_value_;  // node in the current stage -> its SSA value
  std::unordered_map<int, SExpr> body_;               // node -> body after coalescing
  std::unordered_map<int, ExprPtr> store_;            // node -> store offset after coalescing
  // Values a reduction computes for each element that a later stage of the kernel computes again (softmax's
  // exp(x - max), summed, then divided by the sum): the reduction also stores them into that stage's output,
  // and that stage loads them instead of computing them a second time.
  std::unordered_map<int, int> cache_to_;                           // reduction node -> pointwise node
  std::unordered_map<int, std::vector<SExpr>> cached_in_;           // pointwise node -> values it loads
  void plan_cached_values();
  int tmp_ = 0;
};

// Post-order over the expression from an explicit stack (a body can be thousands of nodes deep).
SExpr KernelWriter::subst(SExpr root) {
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
      r = p_.pool.load(e->buffer, subst_index(e->offset), e->type);
    } else if (e->kind == SKind::kOp) {
      std::vector<SExpr> args;
      for (SExpr a : e->args) args.push_back(subst_memo_.at(a));
      r = p_.pool.op(e->op, std::move(args), e->type);
    }
    subst_memo_[e] = r;
  }
  return subst_memo_.at(root);
}

// Merges neighbouring loop dims that every access walks as one (stride of the outer = size * stride of the
// inner), and drops size-1 dims, so the innermost loop is as long as the data allows.
std::vector<LoopDim> KernelWriter::coalesce(std::vector<LoopDim> dims, const std::vector<int>& nodes) {
  subst_.clear();  // each stage has its own inner loops
  subst_memo_.clear();
  std::vector<ExprPtr> offsets;
  int nv = 0;
  for (int id : nodes) {
    const LoopNode& n = p_.nodes[id];
    nv = std::max(nv, static_cast<int>(n.domain.size()));
    offsets.push_back(n.store_offset);
    std::vector<SExpr> loads;
    inductor::collect_loads(n.body, loads);
    for (SExpr l : loads) offsets.push_back(l->offset);
  }
  std::vector<std::vector<ExprPtr>> coeffs(offsets.size());
  bool affine = true;
  for (size_t i = 0; i < offsets.size() && affine; ++i) {
    ExprPtr rest;
    affine = inductor::affine_split(offsets[i], nv, coeffs[i], rest);
  }
  std::vector<LoopDim> out;
  for (size_t j = dims.size(); j-- > 0;) {
    LoopDim d = dims[j];
    if (d.size->is_const(1)) {
      subst_[inductor::kLoopVarBase + d.var] = sym::make_const(0);
      continue;
    }
    if (affine && !out.empty()) {
      LoopDim& in = out.back();
      bool ok = true;
      for (const auto& c : coeffs)
        if (sym::expand(c[d.var]) != sym::expand(sym::make_mul(c[in.var], in.size))) ok = false;
      if (ok) {
        subst_[inductor::kLoopVarBase + d.var] = sym::make_const(0);
        in.size = sym::make_mul(d.size, in.size);
        continue;
      }
    }
    out.push_back(d);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<LoopDim> KernelWriter::stage_loops(const std::vector<int>& nodes, size_t first_dim) {
  const LoopNode& f = p_.nodes[nodes.front()];
  std::vector<LoopDim> dims;
  for (size_t d = first_dim; d < f.domain.size(); ++d) dims.push_back({static_cast<int>(d), f.domain[d]});
  dims = coalesce(dims, nodes);
  for (int id : nodes) {
    body_[id] = subst(p_.nodes[id].body);
    store_[id] = subst_index(p_.nodes[id].store_offset);
  }
  return dims;
}

std::string KernelWriter::buf(int b) {
  auto it = buf_index_.find(b);
  if (it != buf_index_.end()) return fmt::format("b{}", it->second);
  int i = static_cast<int>(buffers_.size());
  buffers_.push_back(b);
  buf_index_[b] = i;
  return fmt::format("b{}", i);
}

// Emits `root` and the operands it needs that have no name yet, operands first and in argument order, from an
// explicit stack (a body can be thousands of nodes deep).
std::string KernelWriter::emit(SExpr root, std::string& out, const std::string& ind) {
  std::vector<std::pair<SExpr, bool>> stack{{root, false}};  // (node, its operands are on the stack already)
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    if (names_.count(e)) {
      stack.pop_back();
      continue;
    }
    if (!expanded && e->kind == SKind::kOp && !e->args.empty()) {
      stack.back().second = true;
      for (size_t i = e->args.size(); i-- > 0;)
        if (!names_.count(e->args[i])) stack.push_back({e->args[i], false});
      continue;
    }
    stack.pop_back();
    emit_node(e, out, ind);
  }
  return names_.at(root);
}

// One node whose operands all have names.
void KernelWriter::emit_node(SExpr e, std::string& out, const std::string& ind) {
  std::string text;
  if (e->kind == SKind::kConst) {
    text = const_str(e);
  } else if (e->kind == SKind::kLoad) {
    int prod = p_.buffers[e->buffer].producer;
    auto r = reduced_.find(prod);
    auto s = stage_value_.find(prod);
    if (prod >= 0 && r != reduced_.end() && e->offset == store_.at(prod)) {
      text = r->second;
    } else if (prod >= 0 && s != stage_value_.end() && e->offset == store_.at(prod)) {
      text = s->second;
    } else {
      SINTER_INTERNAL_ASSERT(!local_[e->buffer], "codegen: a kernel-local buffer is read from memory");
      text = load_str(p_.buffers[e->buffer].dtype, fmt::format("{}[{}]", buf(e->buffer), idx(e->offset)));
    }
  } else {
    std::vector<std::string> args;
    std::vector<CType> types;
    for (SExpr a : e->args) {
      args.push_back(names_.at(a));
      types.push_back(a->type);
    }
    // Division by a row's reduction result (softmax's sum, a mean): one reciprocal per row, hoisted out of the
    // loop by the compiler, and a multiply per element instead of a divide (within an ulp of the quotient).
    const SExpr d = e->op == "div" && e->type == CType::kF32 && e->args.size() == 2 ? e->args[1] : nullptr;
    const int dp = d != nullptr && d->kind == SKind::kLoad ? p_.buffers[d->buffer].producer : -1;
    if (dp >= 0 && reduced_.count(dp) && d->offset == store_.at(dp))
      text = fmt::format("{} * (1.0f / {})", args[0], args[1]);
    else
      text = op_str(e->op, e->type, args, types);
  }
  if (e->kind == SKind::kConst) {
    names_[e] = text;
    return;
  }
  std::string name = fmt::format("t{}", tmp_++);
  out += fmt::format("{}const {} {} = {};\n", ind, inductor::ctype_name(e->type), name, text);
  names_[e] = name;
}

void KernelWriter::store(const LoopNode& n, const std::string& value, std::string& out, const std::string& ind) {
  if (local_[n.out]) return;
  const Buffer& b = p_.buffers[n.out];
  out += fmt::format("{}{}[{}] = {};\n", ind, buf(n.out), idx(store_.at(n.id)), store_str(b.dtype, value));
}

std::string KernelWriter::unravel(const std::vector<LoopDim>& dims, const std::string& flat,
                                  const std::string& ind) {
  std::string out;
  if (dims.empty()) return out;
  if (dims.size() == 1) return fmt::format("{}const {} {} = {};\n", ind, it_, var(dims[0].var), flat);
  out += fmt::format("{}{} rem_ = {};\n", ind, it_, flat);
  for (size_t j = dims.size(); j-- > 1;) {
    std::string sz = idx(dims[j].size);
    out += fmt::format("{}const {} {} = rem_ % {};\n{}rem_ /= {};\n", ind, it_, var(dims[j].var), sz, ind, sz);
  }
  out += fmt::format("{}const {} {} = rem_;\n", ind, it_, var(dims[0].var));
  return out;
}

void KernelWriter::emit_pointwise_stage(const Stage& st, std::string& out, const std::string& ind) {
  std::vector<LoopDim> dims = stage_loops(st.nodes, k_.outer.size());
  std::string in = ind;
  for (size_t j = 0; j < dims.size(); ++j) {
    if (j + 1 == dims.size()) out += in + "#pragma omp simd\n";
    out += fmt::format("{}for ({} {} = 0; {} < {}; ++{}) {{\n", in, it_, var(dims[j].var), var(dims[j].var),
                       idx(dims[j].size), var(dims[j].var));
    in += "  ";
  }
  names_.clear();
  for (int id : st.nodes) {
    out += fmt::format("{}// {}\n", in, p_.nodes[id].origin);
    auto c = cached_in_.find(id);
    if (c != cached_in_.end())
      for (SExpr x : c->second) {  // stored here by the reduction stage that computed it
        std::string name = fmt::format("t{}", tmp_++);
        out += fmt::format("{}const float {} = {}[{}];\n", in, name, buf(p_.nodes[id].out), idx(store_.at(id)));
        names_[x] = name;
      }
    std::string v = emit(body_[id], out, in);
    store(p_.nodes[id], v, out, in);
    stage_value_[id] = v;
  }
  for (size_t j = 0; j < dims.size(); ++j) {
    in.resize(in.size() - 2);
    out += in + "}\n";
  }
  names_.clear();
  stage_value_.clear();
}

void KernelWriter::emit_reduction_stage(const Stage& st, std::string& out, const std::string& ind) {
  const LoopNode& f = p_.nodes[st.nodes.front()];
  std::vector<LoopDim> dims = stage_loops(st.nodes, k_.outer.size());
  if (dims.empty()) dims.push_back({static_cast<int>(f.domain.size()), sym::make_const(1)});
  for (int id : st.nodes) {
    const LoopNode& n = p_.nodes[id];
    const char* t = inductor::ctype_name(n.body->type);
    out += fmt::format("{}// {}: {} over {}\n", ind, n.origin, n.reduce_op, idx(product(dims)));
    out += fmt::format("{}{} acc{}[{}];\n{}for (int j = 0; j < {}; ++j) acc{}[j] = {};\n", ind, t, id, kLanes, ind,
                       kLanes, id, reduce_init(n.reduce_op, n.body->type));
  }
  std::string in = ind;
  for (size_t j = 0; j + 1 < dims.size(); ++j) {
    out += fmt::format("{}for ({} {} = 0; {} < {}; ++{}) {{\n", in, it_, var(dims[j].var), var(dims[j].var),
                       idx(dims[j].size), var(dims[j].var));
    in += "  ";
  }
  const LoopDim& last = dims.back();
  std::string n_name = fmt::format("n{}", st.nodes.front());
  out += fmt::format("{}const {} {} = {};\n{}{} i{} = 0;\n", in, it_, n_name, idx(last.size), in, it_, n_name);
  // Vector body: kLanes independent accumulators, one per lane.
  out += fmt::format("{}for (; i{} + {} <= {}; i{} += {}) {{\n{}  #pragma omp simd\n{}  for (int j = 0; j < {}; ++j) {{\n",
                     in, n_name, kLanes, n_name, n_name, kLanes, in, in, kLanes);
  std::string body_ind = in + "    ";
  out += fmt::format("{}const {} {} = i{} + j;\n", body_ind, it_, var(last.var), n_name);
  names_.clear();
  auto cache = [&](int id, const std::string& v, const std::string& at) {
    auto c = cache_to_.find(id);
    if (c != cache_to_.end())
      out += fmt::format("{}{}[{}] = {};  // kept for {}\n", at, buf(p_.nodes[c->second].out), idx(store_.at(c->second)),
                         v, p_.nodes[c->second].origin);
  };
  for (int id : st.nodes) {
    std::string v = emit(body_[id], out, body_ind);
    cache(id, v, body_ind);
    out += fmt::format("{}acc{}[j] = {};\n", body_ind, id, reduce_combine(p_.nodes[id].reduce_op, fmt::format("acc{}[j]", id), v));
  }
  out += in + "  }\n" + in + "}\n";
  // Scalar tail.
  out += fmt::format("{}for (; i{} < {}; ++i{}) {{\n", in, n_name, n_name, n_name);
  body_ind = in + "  ";
  out += fmt::format("{}const {} {} = i{};\n", body_ind, it_, var(last.var), n_name);
  names_.clear();
  for (int id : st.nodes) {
    std::string v = emit(body_[id], out, body_ind);
    cache(id, v, body_ind);
    out += fmt::format("{}acc{}[0] = {};\n", body_ind, id, reduce_combine(p_.nodes[id].reduce_op, fmt::format("acc{}[0]", id), v));
  }
  out += in + "}\n";
  names_.clear();
  for (size_t j = 0; j + 1 < dims.size(); ++j) {
    in.resize(in.size() - 2);
    out += in + "}\n";
  }
  for (int id : st.nodes) {
    const LoopNode& n = p_.nodes[id];
    const char* t = inductor::ctype_name(n.body->type);
    std::string r = fmt::format("r{}", id);
    out += fmt::format("{}{} {} = acc{}[0];\n{}for (int j = 1; j < {}; ++j) {} = {};\n", ind, t, r, id, ind, kLanes, r,
                       reduce_combine(n.reduce_op, r, fmt::format("acc{}[j]", id)));
    if (n.reduce_op == "mean")
      out += fmt::format("{}{} = {} / ({}){};\n", ind, r, r, t, idx(product(dims)));
    store(n, r, out, ind);
    reduced_[id] = r;
  }
}

namespace {
// Whether computing e once instead of twice is worth a store and a load: it calls a transcendental function.
// Whether some op node reachable from `root` (walked from an explicit stack) satisfies `pred`.
template <class Pred>
bool any_node(SExpr root, std::unordered_set<SExpr>& seen, Pred pred) {
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
bool costly(SExpr e, std::unordered_set<SExpr>& seen) {
  static const std::unordered_set<std::string> kCostly = {"exp", "exp2", "expm1", "log", "log2", "log1p", "tanh",
                                                          "sigmoid", "erf", "pow", "sin", "cos"};
  return any_node(e, seen, [](SExpr n) { return n->kind == SKind::kOp && kCostly.count(n->op) > 0; });
}
bool contains(SExpr e, SExpr x, std::unordered_set<SExpr>& seen) {
  return any_node(e, seen, [x](SExpr n) { return n == x; });
}
}  // namespace

// For each reduction stage and each later pointwise stage with the same loops (so the reduction's index
// variables address that stage's output), a float32 output whose value contains the reduction's costly
// per-element value takes it as a cache. The output is distinct from every input of the kernel (buffers are
// freed only after the kernels that read them), so storing early clobbers nothing.
void KernelWriter::plan_cached_values() {
  const size_t first = k_.outer.size();
  auto same = [&](const std::vector<LoopDim>& a, const std::vector<LoopDim>& b) {
    if (a.size() != b.size()) return false;
    for (size_t j = 0; j < a.size(); ++j)
      if (a[j].var != b[j].var || idx(a[j].size) != idx(b[j].size)) return false;
    return true;
  };
  for (size_t si = 0; si < k_.stages.size(); ++si) {
    if (!k_.stages[si].reduction) continue;
    for (size_t pi = si + 1; pi < k_.stages.size(); ++pi) {
      const Stage& pw = k_.stages[pi];
      if (pw.reduction) continue;
      std::vector<LoopDim> dp = stage_loops(pw.nodes, first);
      std::vector<LoopDim> dr = stage_loops(k_.stages[si].nodes, first);
      if (dp.empty() || !same(dp, dr)) continue;
      for (int r : k_.stages[si].nodes) {
        SExpr x = body_[r];
        std::unordered_set<SExpr> seen;
        if (cache_to_.count(r) || x->type != CType::kF32 || !costly(x, seen)) continue;
        for (int n : pw.nodes) {
          const int out = p_.nodes[n].out;
          if (local_[out] || p_.buffers[out].dtype != kFloat32 || cached_in_.count(n)) continue;
          std::unordered_set<SExpr> visited;
          if (!contains(body_[n], x, visited)) continue;
          cache_to_[r] = n;
          cached_in_[n].push_back(x);
          break;
        }
      }
    }
  }
}

// 32-bit index arithmetic when every size and stride the kernel touches is static and every buffer it touches
// (so every offset it computes) and its iteration space stay below 2^31 elements; symbolic sizes keep 64 bits.
bool KernelWriter::fits_32_bits() const {
  constexpr int64_t kLimit = int64_t(1) << 31;
  auto is_static = [](const ExprPtr& e) {
    for (int64_t id : sym::free_symbols(e))
      if (!inductor::is_loop_var(id)) return false;
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
    inductor::collect_loads(n.body, loads);
    for (SExpr l : loads)
      if (!is_static(l->offset) || !extent_ok(p_.buffers[l->buffer])) return false;
  }
  return true;
}

std::string KernelWriter::write(KernelInfo& info) {
  int nv = 0;
  for (int id : k_.nodes) nv = std::max(nv, static_cast<int>(p_.nodes[id].domain.size()) + 1);
  for (int v = 0; v < nv; ++v) var_names_.push_back(var(v));
  narrow_ = fits_32_bits();
  if (narrow_) it_ = "sn_i32";
  std::string body;
  std::string ind = "  ";
  if (k_.rows) {
    std::vector<LoopDim> outer;
    for (size_t d = 0; d < k_.outer.size(); ++d) outer.push_back({static_cast<int>(d), k_.outer[d]});
    body += fmt::format("{}for ({} o_ = begin_; o_ < end_; ++o_) {{\n", ind, it_);
    body += unravel(outer, "o_", ind + "  ");
    plan_cached_values();
    for (const Stage& st : k_.stages) {
      if (st.reduction) emit_reduction_stage(st, body, ind + "  ");
      else emit_pointwise_stage(st, body, ind + "  ");
    }
    body += ind + "}\n";
    info.total = product(outer);
    ExprPtr work = sym::make_const(1);
    const LoopNode& f = p_.nodes[k_.nodes.front()];
    for (size_t d = k_.outer.size(); d < f.domain.size(); ++d) work = sym::make_mul(work, f.domain[d]);
    info.work = work;
  } else {
    // Flat pointwise: [begin, end) counts elements of the whole (coalesced) domain; each row segment is one
    // vectorised inner loop.
    const LoopNode& f = p_.nodes[k_.nodes.front()];
    ExprPtr total = sym::make_const(1);
    for (const ExprPtr& d : f.domain) total = sym::make_mul(total, d);
    std::vector<LoopDim> dims = stage_loops(k_.stages[0].nodes, 0);
    if (dims.empty()) dims.push_back({nv - 1 < 0 ? 0 : nv - 1, sym::make_const(1)});
    const LoopDim& last = dims.back();
    std::vector<LoopDim> outer(dims.begin(), dims.end() - 1);
    body += fmt::format("{}const {} inner_ = {};\n", ind, it_, idx(last.size));
    body += fmt::format("{}for ({} pos_ = begin_; pos_ < end_;) {{\n", ind, it_);
    std::string in = ind + "  ";
    body += fmt::format("{}const {} row_ = pos_ / inner_;\n", in, it_);
    body += fmt::format("{}const {} lo_ = pos_ - row_ * inner_;\n", in, it_);
    body += fmt::format("{}const {} hi_ = ({})sn_imin(inner_, end_ - row_ * inner_);\n", in, it_, it_);
    body += unravel(outer, "row_", in);
    body += in + "#pragma omp simd\n";
    body += fmt::format("{}for ({} {} = lo_; {} < hi_; ++{}) {{\n", in, it_, var(last.var), var(last.var), var(last.var));
    names_.clear();
    for (int id : k_.nodes) {
      body += fmt::format("{}  // {}\n", in, p_.nodes[id].origin);
      std::string v = emit(body_[id], body, in + "  ");
      store(p_.nodes[id], v, body, in + "  ");
      stage_value_[id] = v;
    }
    body += in + "}\n";
    body += in + "pos_ = (row_ + 1) * inner_;\n";
    body += ind + "}\n";
    info.total = total;
    info.work = sym::make_const(1);
    info.row_elems = f.domain.empty() ? sym::make_const(1) : f.domain.back();
  }
  // Header: comments, then buffers and symbols as locals.
  std::string head = fmt::format("// {}: {} node(s){}\n", k_.name, k_.nodes.size(),
                                 k_.epilogue_of >= 0 ? ", a GEMM epilogue" : "");
  for (int id : k_.nodes) head += fmt::format("//   loop node {}: {}\n", id, p_.nodes[id].origin);
  head += fmt::format("extern \"C\" void {}(void* args_, sn_i64 begin, sn_i64 end) {{\n", k_.name);
  head += "  const sn_kargs* a_ = (const sn_kargs*)args_;\n";
  head += fmt::format("  const {0} begin_ = ({0})begin, end_ = ({0})end;{1}\n", it_,
                      narrow_ ? "  // every index fits in 32 bits" : "");
  for (int s = 0; s < p_.num_symbols; ++s) head += fmt::format("  const sn_i64 s{} = a_->syms[{}];\n", s, s);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const Buffer& b = p_.buffers[buffers_[i]];
    head += fmt::format("  {}* __restrict__ b{} = ({}*)a_->bufs[{}];  // {}\n", storage_type(b.dtype), i,
                        storage_type(b.dtype), i, b.name);
  }
  info.symbol = k_.name;
  info.buffers = buffers_;
  return head + body + "}\n";
}

}  // namespace

GeneratedCode generate(LoopProgram& program, const inductor::Schedule& schedule, int max_units) {
  GeneratedCode g;
  std::vector<bool> local(program.buffers.size(), false);
  for (const Kernel& k : schedule.kernels)
    for (int b : k.local_buffers) local[b] = true;
  std::vector<std::string> fns;
  for (const Kernel& k : schedule.kernels) {
    KernelInfo info;
    if (k.kind == Kernel::Kind::kLoops) {
      KernelWriter w(program, k, local);
      fns.push_back(w.write(info));
    }
    g.kernels.push_back(std::move(info));
  }
  if (fns.empty()) return g;
  size_t units = std::clamp<size_t>(static_cast<size_t>(max_units), 1, fns.size());
  std::vector<std::string> parts(units);
  // Contiguous groups of similar length keep related kernels together in one file.
  size_t total = 0;
  for (const std::string& f : fns) total += f.size();
  size_t target = total / units + 1, u = 0, acc = 0;
  for (const std::string& f : fns) {
    if (acc >= target && u + 1 < units) {
      ++u;
      acc = 0;
    }
    parts[u] += f + "\n";
    acc += f.size();
  }
  for (std::string& part : parts) {
    if (part.empty()) continue;
    g.units.push_back(std::string(prelude()) + kPreamble + "\n" + part);
  }
  return g;
}

}  // namespace sinter::codegen::cpp
