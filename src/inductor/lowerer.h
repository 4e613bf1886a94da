// The inductor's lowering state (src/inductor/lower.cpp walks the graph; lower_pieces.cpp lowers cat, stack and
// pad into one buffer written in parts). Internal to the inductor.
#pragma once
#include <fmt/format.h>

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/value_names.h"
#include "inductor/lower.h"
#include "inductor/lower_pointwise.h"
#include "graph/graph_util.h"
#include "ops/op_table.h"
#include "support/check.h"
#include "support/log.h"
#include "symbolic/shape_env.h"

namespace sinter::inductor {
namespace lowering {


inline ExprPtr ex(const SymInt& s) { return s.is_symbolic() ? s.expr() : sym::make_const(s.hint()); }
inline std::vector<ExprPtr> exs(const SymIntList& l) {
  std::vector<ExprPtr> r;
  for (const SymInt& s : l) r.push_back(ex(s));
  return r;
}
inline ExprPtr c0() { return sym::make_const(0); }

inline std::vector<ExprPtr> dense_strides(const std::vector<ExprPtr>& sizes) {
  std::vector<ExprPtr> st(sizes.size());
  ExprPtr acc = sym::make_const(1);
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = acc;
    acc = sym::make_mul(acc, sizes[i]);
  }
  return st;
}

// "%5 = gelu" with the value names print_graph gives (`names`: printed_value_names of the lowered graph), so the
// fusion log, kernel comments and the profile can be read against the graph dumped before lowering.
inline std::string origin_of(const Node& n, const std::vector<std::vector<std::string>>& names) {
  std::string outs;
  for (const std::string& v : names.at(n.id)) outs += (outs.empty() ? "" : ", ") + v;
  return fmt::format("{} = {}", outs.empty() ? "_" : outs, n.op_name());
}

}  // namespace lowering

using lowering::c0;
using lowering::dense_strides;
using lowering::ex;
using lowering::exs;
using lowering::origin_of;

// Implementation of lower(); one instance per call.
class Lowerer final : public PointwiseContext {
 public:
  Lowerer(const Graph& g, const LowerOptions& o)
      : g_(g), opt_(o), target_(o.target ? *o.target : host_cpu_target()),
        value_names_(graph_detail::printed_value_names(g)) {
    p_.shape_env = g.shape_env();
    if (g.shape_env()) {
      hints_ = g.shape_env()->hints();
      p_.num_symbols = static_cast<int>(hints_.size());
    }
  }

  LoopProgram run();

  // ---- PointwiseContext ----
  SExpr load_arg(const Tensor& t, const std::vector<ExprPtr>& out_sizes, const std::vector<ExprPtr>& idx) override {
    int v = value_id(t);
    const LValue& L = values_[v];
    size_t r = out_sizes.size(), ra = L.sizes.size();
    std::vector<ExprPtr> aidx(ra);
    for (size_t j = 0; j < ra; ++j) aidx[j] = broadcast_index(L.sizes[j], out_sizes[j + r - ra], idx[j + r - ra]);
    return load(v, aidx);
  }
  SPool& pool() override { return p_.pool; }

 private:
  struct LValue {
    std::vector<ExprPtr> sizes;
    DType dtype = kFloat32;
    int buffer = -1;  // >= 0: a strided view of this buffer
    std::vector<ExprPtr> strides;
    ExprPtr offset;
    bool meta_layout = true;  // the strides/offset are the graph meta's (so a view's meta applies)
    // The graph meta's layout is dense for every size by construction: a non-view op's shape rule made it
    // (contiguous strides, or the dim order of an input), so the example's density is every size's.
    bool dense_by_rule = false;
    ExprPtr meta_offset;      // the graph tensor's storage offset (a stored value's buffer starts there)
    std::function<SExpr(const std::vector<ExprPtr>&)> fn;  // lazy
    std::map<std::vector<ExprPtr>, SExpr> memo;
    int size = 1;  // lazy: an upper bound on the nodes of its expression (1 for a buffer: one load)
  };

  int value_id(const Tensor& t) const {
    auto it = value_of_.find(t.impl());
    SINTER_INTERNAL_ASSERT(it != value_of_.end(), "inductor lower: a value used before it is defined");
    return it->second;
  }
  int add_value(const Tensor& proxy, LValue v) {
    v.meta_offset = ex(proxy.storage_offset());
    values_.push_back(std::move(v));
    int id = static_cast<int>(values_.size()) - 1;
    value_of_[proxy.impl()] = id;
    return id;
  }
  int64_t hint(const ExprPtr& e) const { return sym::evaluate(*e, hints_); }

  // Value v at index idx. A lazy value's function loads its operands through here; a chain of 20,000 pointwise
  // ops would nest that many calls deep, so lazy values are evaluated from an explicit stack instead (evaluate).
  SExpr load(int v, const std::vector<ExprPtr>& idx) {
    LValue& L = values_[v];
    if (L.buffer >= 0) {
      ExprPtr off = L.offset;
      for (size_t d = 0; d < idx.size(); ++d)
        if (!is_one(L.sizes[d])) off = sym::make_add(off, sym::make_mul(idx[d], L.strides[d]));
      return p_.pool.load(L.buffer, off, compute_type(L.dtype));
    }
    auto it = L.memo.find(idx);
    if (it != L.memo.end()) return it->second;
    if (evaluating_) {  // inside another value's function: that one is evaluated again once this one is known
      needs_.emplace_back(v, idx);
      return p_.pool.op(SOp::pending, {}, compute_type(L.dtype));
    }
    evaluate(v, idx);
    return values_[v].memo.at(idx);
  }

  // Evaluates lazy value v at idx without recursion. A function run while one of its operands is unknown gets a
  // stand-in for it ("pending", an expression that is then dropped) and records the operand; the operands go on
  // the stack above it, and it runs again when they are known. So each (value, index) runs at most twice (its
  // loads do not depend on its operands' expressions), and the depth of a chain costs heap, not stack.
  void evaluate(int v, const std::vector<ExprPtr>& idx) {
    std::vector<std::pair<int, std::vector<ExprPtr>>> stack{{v, idx}};
    while (!stack.empty()) {
      int u = stack.back().first;
      LValue& U = values_[u];
      if (U.buffer >= 0 || U.memo.count(stack.back().second)) {
        stack.pop_back();
        continue;
      }
      needs_.clear();
      evaluating_ = true;
      SExpr r;
      try {
        r = U.fn(stack.back().second);
      } catch (...) {
        evaluating_ = false;
        throw;
      }
      evaluating_ = false;
      if (needs_.empty()) {
        U.memo.emplace(std::move(stack.back().second), r);
        stack.pop_back();
        continue;
      }
      for (auto& need : needs_) stack.push_back(std::move(need));
    }
  }

  // Whether a size is 1 for every size the guards admit: the constant 1, or an expression such as s0//2 that a
  // guard pinned to 1 (broadcasting's shape rule records `s0//2 == 1` when it broadcasts that dim).
  bool is_one(const ExprPtr& e) const {
    if (e->is_const()) return e->is_const(1);
    if (!p_.shape_env) return false;
    auto [it, fresh] = ones_.try_emplace(e, false);
    if (fresh) {
      std::optional<bool> one = p_.shape_env->statically_known(sym::Rel::kEq, e, sym::make_const(1));
      it->second = one && *one;
    }
    return it->second;
  }
  // The index into an operand's dim of size `in` broadcast to an output dim of size `out` walked by `i`: 0 when
  // the dim broadcasts, `i` when it matches. The shape rule decided which from the example and guarded it
  // (`in == 1`, or `in != 1` and `in == out`), so the guards tell the two apart; an example size of 1 that no
  // guard explains would make the choice a guess, which must not pass silently.
  ExprPtr broadcast_index(const ExprPtr& in, const ExprPtr& out, const ExprPtr& i) const {
    if (is_one(in)) return c0();
    if (same(in, out)) return i;
    SINTER_INTERNAL_ASSERT(hint(in) != 1, "inductor lower: {}: whether size {} broadcasts to {} is not guarded",
                           origin_, in->str(), out->str());
    return i;
  }
  // Whether two index expressions are equal for every size the guards admit (s1 and Max(1, s1) when s1 >= 2).
  bool same(const ExprPtr& a, const ExprPtr& b) const {
    if (a == b || sym::expand(a) == sym::expand(b)) return true;
    if (!p_.shape_env) return false;
    std::optional<bool> eq = p_.shape_env->statically_known(sym::Rel::kEq, a, b);
    return eq && *eq;
  }
  // Whether `strides` lay `sizes` out densely without overlap (so a buffer can be allocated with them). Every
  // layout of an empty value is (eager's contiguous strides of [0, 3] are [3, 1], of [0, 0] are [1, 1]).
  bool dense_layout(const std::vector<ExprPtr>& sizes, const std::vector<ExprPtr>& strides) const {
    for (const ExprPtr& s : sizes)
      if (s->is_const() && s->value() == 0) return true;
    // Eager's contiguous strides multiply Max(1, size) (so an empty dim keeps its neighbours' strides apart), and
    // a size the guards made 1 without making its expression 1 stays a factor of the strides outside it (taken
    // as lying where its dim index puts it). For a value with elements these are all the product of the sizes.
    std::vector<int> perm = memory_order(sizes, strides);
    ExprPtr expect = sym::make_const(1), expect_max = expect;
    for (size_t j = perm.size(); j-- > 0;) {
      const int d = perm[j];
      if (is_one(sizes[d])) continue;
      ExprPtr ones = sym::make_const(1), ones_max = ones;
      for (size_t k = d + 1; k < sizes.size(); ++k)
        if (!sizes[k]->is_const() && is_one(sizes[k])) {
          ones = sym::make_mul(ones, sizes[k]);
          ones_max = sym::make_mul(ones_max, sym::make_max(sym::make_const(1), sizes[k]));
        }
      if (!same(strides[d], expect) && !same(strides[d], expect_max) && !same(strides[d], sym::make_mul(expect, ones)) &&
          !same(strides[d], sym::make_mul(expect_max, ones_max)))
        return false;
      expect = sym::make_mul(expect, sizes[d]);
      expect_max = sym::make_mul(expect_max, sym::make_max(sym::make_const(1), sizes[d]));
    }
    return true;
  }
  // Dims from the largest stride to the smallest (the order a loop nest should walk them).
  std::vector<int> memory_order(const std::vector<ExprPtr>& sizes, const std::vector<ExprPtr>& strides) const {
    // Size-1 dims (whose strides mean nothing) go first; the others by decreasing stride, ties in dim order.
    std::vector<int> perm, ones;
    for (size_t i = 0; i < sizes.size(); ++i) (is_one(sizes[i]) ? ones : perm).push_back(static_cast<int>(i));
    std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) { return hint(strides[a]) > hint(strides[b]); });
    perm.insert(perm.begin(), ones.begin(), ones.end());
    return perm;
  }

  // Whether `strides` lay `sizes` out densely for the example's sizes.
  bool dense_at_example(const std::vector<ExprPtr>& sizes, const std::vector<ExprPtr>& strides) const {
    for (const ExprPtr& s : sizes)
      if (hint(s) == 0) return true;
    std::vector<int> perm = memory_order(sizes, strides);
    int64_t expect = 1;
    for (size_t j = perm.size(); j-- > 0;) {
      int64_t size = hint(sizes[perm[j]]);
      if (size == 1) continue;
      if (hint(strides[perm[j]]) != expect) return false;
      expect *= size;
    }
    return true;
  }

  bool storable_in(int v, const std::vector<ExprPtr>& layout) const {
    const LValue& L = values_[v];
    return dense_layout(L.sizes, layout) || (L.dense_by_rule && dense_at_example(L.sizes, layout));
  }

  // Stores a lazy value into a new buffer laid out like `layout` (the value's graph meta) when that is dense,
  // else contiguously. Dense means proved for every size the guards admit, or, for a value a non-view op's shape
  // rule laid out, dense at the example: the rule gives every size a dense layout, and an expression the algebra
  // cannot simplify must not put the value in a layout eager does not use (views of it and as_strided_scatter
  // into it address elements through the graph's strides).
  void materialize(int v, const std::vector<ExprPtr>* layout, const std::string& why) {
    if (values_[v].buffer >= 0) return;
    std::vector<ExprPtr> sizes = values_[v].sizes;
    bool meta = layout && storable_in(v, *layout);
    std::vector<ExprPtr> strides = meta ? *layout : dense_strides(sizes);
    std::vector<int> perm = memory_order(sizes, strides);
    std::vector<ExprPtr> idx(sizes.size()), domain(sizes.size());
    for (size_t j = 0; j < perm.size(); ++j) {
      idx[perm[j]] = loop_var(static_cast<int>(j));
      domain[j] = sizes[perm[j]];
    }
    DType dt = values_[v].dtype;
    SExpr body = p_.pool.cast(load(v, idx), compute_type(dt));
    ExprPtr off = c0();
    for (size_t d = 0; d < sizes.size(); ++d)
      if (!is_one(sizes[d])) off = sym::make_add(off, sym::make_mul(idx[d], strides[d]));
    Buffer b;
    b.dtype = dt;
    b.sizes = sizes;
    b.strides = strides;
    b.producer = static_cast<int>(p_.nodes.size());
    int bid = p_.add_buffer(std::move(b));
    add_loop_node(LoopKind::kPointwise, domain, static_cast<int>(domain.size()), body, bid, off);
    SINTER_LOG(kFusion, "materialize {} as {}: {}", origin_, p_.buffers[bid].name, why);
    LValue& L = values_[v];
    L.buffer = bid;
    L.strides = strides;
    L.offset = c0();
    L.meta_layout = meta;
    L.fn = nullptr;
    L.memo.clear();
    // Views of this value name offsets in the graph's storage: the buffer's first element is the value's own
    // (a value stored in its meta layout), so a view at storage offset o reads at o - base.
    base_[bid] = meta ? L.meta_offset : c0();
  }

  // Appends a pointwise or reduction node computing `body` over `domain` into buffer `out` at `store_offset`.
  void add_loop_node(LoopKind kind, std::vector<ExprPtr> domain, int num_outer, SExpr body, int out,
                     ExprPtr store_offset, ReduceOp reduce_op = ReduceOp::sum) {
    LoopNode n;
    n.id = static_cast<int>(p_.nodes.size());
    n.kind = kind;
    n.origin = origin_;
    n.domain = std::move(domain);
    n.num_outer = num_outer;
    n.body = body;
    n.out = out;
    n.store_offset = std::move(store_offset);
    n.reduce_op = reduce_op;
    p_.nodes.push_back(std::move(n));
  }

  BufferView view_of(int v) {
    const LValue& L = values_[v];
    return BufferView{L.buffer, L.sizes, L.strides, L.offset};
  }

  void mark_strided_views();
  void lower_input(const Node& n);
  void lower_op(const Node& n);
  bool lower_view(const Node& n);
  // A buffer written in parts (cat, stack, pad): see pieces_buffer.
  struct Pieces {
    int buffer = -1;
    std::vector<ExprPtr> sizes, strides;
    bool meta = true;  // laid out as the graph's output
    CType type = CType::kF32;
  };
  Pieces pieces_buffer(const Tensor& out);
  void store_piece(const Pieces& b, const std::vector<ExprPtr>& sizes, const std::vector<int>& out_dim,
                   const std::vector<ExprPtr>& start, const std::function<SExpr(const std::vector<ExprPtr>&)>& value);
  void finish_pieces(const Tensor& out, const Pieces& b);
  bool lower_concat(const Node& n);
  bool lower_pad(const Node& n);
  bool lower_lazy_view(const Node& n, int in, bool any_view);
  ExprPtr slice_start(const Value& start, const ExprPtr& size) const;
  bool merge_map(const std::vector<ExprPtr>& isz, const std::vector<ExprPtr>& osz,
                 std::function<std::vector<ExprPtr>(const std::vector<ExprPtr>&)>& map) const;
  bool lower_reduction(const Node& n);
  bool lower_gemm(const Node& n);
  bool rows_view(const std::vector<ExprPtr>& sizes, const std::vector<ExprPtr>& strides, ExprPtr& m,
                 ExprPtr& rs) const;
  void lower_extern(const Node& n);
  void define_lazy(const Node& n, std::function<SExpr(const std::vector<ExprPtr>&)> fn);
  int new_buffer(const Tensor& proxy, int producer);

  const Graph& g_;
  LowerOptions opt_;
  Target target_;
  LoopProgram p_;
  sym::SymbolValues hints_;
  std::deque<LValue> values_;
  std::unordered_map<const TensorImpl*, int> value_of_;
  std::unordered_map<const TensorImpl*, int> uses_;
  std::unordered_map<int, ExprPtr> base_;  // buffer -> storage offset of the tensor that defines it
  std::deque<Tensor> products_;            // proxies of GEMM products (values the graph does not name)
  std::string origin_;
  bool evaluating_ = false;                                    // a lazy value's function is running
  std::vector<std::pair<int, std::vector<ExprPtr>>> needs_;  // operands it found unknown
  std::vector<std::vector<std::string>> value_names_;  // print_graph's names of g_'s values
  mutable std::unordered_map<ExprPtr, bool> ones_;  // is_one's answers (expressions are hash-consed)
  std::set<const Node*> strided_views_;  // views read from memory: see mark_strided_views()
};

}  // namespace sinter::inductor
