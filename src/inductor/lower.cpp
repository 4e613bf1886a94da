#include "inductor/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "graph/graph_util.h"
#include "graph/value_names.h"
#include "inductor/lower_pointwise.h"
#include "ops/op_table.h"
#include "support/check.h"
#include "support/log.h"
#include "symbolic/shape_env.h"
#include "tensor/dtype_dispatch.h"

namespace sinter::inductor {
namespace {

ExprPtr ex(const SymInt& s) { return s.is_symbolic() ? s.expr() : sym::make_const(s.hint()); }
std::vector<ExprPtr> exs(const SymIntList& l) {
  std::vector<ExprPtr> r;
  for (const SymInt& s : l) r.push_back(ex(s));
  return r;
}
ExprPtr c0() { return sym::make_const(0); }

std::vector<ExprPtr> dense_strides(const std::vector<ExprPtr>& sizes) {
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
std::string origin_of(const Node& n, const std::vector<std::vector<std::string>>& names) {
  std::string outs;
  for (const std::string& v : names.at(n.id)) outs += (outs.empty() ? "" : ", ") + v;
  return fmt::format("{} = {}", outs.empty() ? "_" : outs, n.op_name());
}

}  // namespace

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

// A graph output whose layout has gaps or overlaps (a slice or an expand of a computed value) is, in eager, a view
// into its base with the base's strides. A lazy view stored on its own would come out contiguous, so the views on
// the way from such an output back to its base read from memory instead: the base is stored in its own (dense)
// layout and the output is a view of that buffer with eager's strides.
void Lowerer::mark_strided_views() {
  for (const Tensor& t : g_.outputs()) {
    if (dense_layout(exs(t.sizes()), exs(t.strides()))) continue;
    for (const Node* n = &g_.producer(t); n->is_op() && op_def(n->op).schema.is_view() && n->args[0].is_tensor();
         n = &g_.producer(n->args[0].tensor()))
      strided_views_.insert(n);
  }
}

int Lowerer::new_buffer(const Tensor& proxy, int producer) {
  Buffer b;
  b.dtype = proxy.dtype();
  b.sizes = exs(proxy.sizes());
  b.strides = exs(proxy.strides());
  b.producer = producer;
  int bid = p_.add_buffer(std::move(b));
  base_[bid] = ex(proxy.storage_offset());
  LValue L;
  L.sizes = p_.buffers[bid].sizes;
  L.dtype = proxy.dtype();
  L.buffer = bid;
  L.strides = p_.buffers[bid].strides;
  L.offset = c0();
  add_value(proxy, std::move(L));
  return bid;
}

void Lowerer::lower_input(const Node& n) {
  int bid = new_buffer(n.output(), -1);
  Buffer& b = p_.buffers[bid];
  b.name = n.name;
  if (n.kind == NodeKind::kInput) {
    b.kind = BufferKind::kInput;
    b.graph_input = static_cast<int>(p_.buffers.size()) - 1;
    int k = 0;
    for (const Node* in : g_.input_nodes()) {
      if (in == &n) break;
      ++k;
    }
    b.graph_input = k;
  } else {
    b.kind = BufferKind::kConstant;
    b.constant = n.constant;
  }
}

void Lowerer::define_lazy(const Node& n, std::function<SExpr(const std::vector<ExprPtr>&)> fn) {
  LValue L;
  L.sizes = exs(n.meta().sizes);
  L.dtype = n.meta().dtype;
  L.fn = std::move(fn);
  L.dense_by_rule = true;
  // The size bound: this op's node plus its operands' (a buffer operand is one load).
  graph_detail::for_each_tensor(n.args, [&](const Tensor& t) {
    auto it = value_of_.find(t.impl());
    if (it != value_of_.end()) L.size += values_[it->second].buffer >= 0 ? 1 : values_[it->second].size;
  });
  int v = add_value(n.output(), std::move(L));
  auto u = uses_.find(n.output().impl());
  int uses = u == uses_.end() ? 0 : u->second;
  auto expression_size = [&] {
    std::vector<ExprPtr> idx;
    for (size_t d = 0; d < values_[v].sizes.size(); ++d) idx.push_back(loop_var(static_cast<int>(d)));
    return dag_size(load(v, idx));
  };
  std::vector<ExprPtr> layout = exs(n.meta().strides);
  if (uses >= 2) {
    int size = expression_size();
    values_[v].size = size;
    if (size > opt_.recompute_limit) {
      materialize(v, &layout,
                  fmt::format("{} users, expression of {} nodes > {} (storing is cheaper than recomputing)", uses,
                              size, opt_.recompute_limit));
      return;
    }
  }
  // A long chain of pointwise ops would become one expression (one kernel body) as long as the chain: it is cut
  // into stored pieces of at most max_expression nodes, so the generated C++ stays a size its compiler handles
  // quickly. The bound is checked against the real size only when it passes the limit (then it is exact again).
  if (values_[v].buffer < 0 && values_[v].size > opt_.max_expression) {
    int size = expression_size();
    values_[v].size = size;
    if (size > opt_.max_expression)
      materialize(v, &layout,
                  fmt::format("expression of {} nodes > {} (a long chain is split into kernels of bounded size)",
                              size, opt_.max_expression));
  }
}

// A view of a lazy value composes index maps (transposes, expands, splits of dims) where that keeps the
// value fused. Other views (slices, chunks, merges of dims) read the value from memory: it is stored in its graph
// layout, and the view's own meta addresses it. Where the value cannot be stored so (a lazy view with gaps, whose
// meta layout is not dense, or a value already stored in another layout), every view is an index map over it.
bool Lowerer::lower_view(const Node& n) {
  const Schema& s = op_def(n.op).schema;
  if (!s.is_view()) return false;
  int in = value_id(n.args[0].tensor());
  if (values_[in].buffer < 0 && !strided_views_.count(&n) && lower_lazy_view(n, in, /*any_view=*/false)) return true;
  std::vector<ExprPtr> layout = exs(n.args[0].tensor().strides());
  bool storable = values_[in].buffer < 0 ? storable_in(in, layout) : values_[in].meta_layout;
  if (!storable && lower_lazy_view(n, in, /*any_view=*/true)) return true;
  if (values_[in].buffer < 0) materialize(in, &layout, "a view the index algebra cannot follow reads it");
  SINTER_CHECK(values_[in].meta_layout, "inductor: {} of a value whose layout differs from the graph's", n.op_name());
  const LValue& I = values_[in];
  int bid = I.buffer;
  for (const Tensor& out : n.outputs) {
    LValue L;
    L.sizes = exs(out.sizes());
    L.dtype = out.dtype();
    L.buffer = bid;
    L.strides = exs(out.strides());
    L.offset = sym::make_sub(ex(out.storage_offset()), base_[bid]);
    add_value(out, std::move(L));
  }
  return true;
}

// slice's start as its shape rule clamps it: the rule decided each comparison on the example and guarded it.
ExprPtr Lowerer::slice_start(const Value& start, const ExprPtr& size) const {
  if (start.is_none()) return c0();
  ExprPtr e = ex(start.sym_int());
  if (hint(e) < 0) e = sym::make_add(e, size);
  if (hint(e) < 0) return c0();
  if (hint(e) > hint(size)) return size;
  return e;
}

// Views of lazy values compose index maps; the view's own meta says nothing about memory there. With any_view,
// every view op but as_strided is followed (slices, chunks and merges of dims too), over a lazy or a stored value.
bool Lowerer::lower_lazy_view(const Node& n, int in, bool any_view) {
  if (n.outputs.size() != 1 && !any_view) return false;
  std::vector<ExprPtr> isz = values_[in].sizes;
  std::vector<ExprPtr> osz = exs(n.meta().sizes);
  int64_t r_in = static_cast<int64_t>(isz.size());
  auto norm = [](int64_t d, int64_t rank) { return d < 0 ? d + rank : d; };
  using Map = std::function<std::vector<ExprPtr>(const std::vector<ExprPtr>&)>;
  Map map;
  std::vector<Map> maps;  // one per output, for the ops that make several
  switch (n.op) {
    case OpId::slice_Tensor: {
      if (!any_view) return false;
      int64_t d = norm(n.arg("dim").to_int(), r_in);
      ExprPtr start = slice_start(n.args[2], isz[d]), step = ex(n.args[4].sym_int());
      map = [d, start, step](std::vector<ExprPtr> idx) {
        idx[d] = sym::make_add(start, sym::make_mul(idx[d], step));
        return idx;
      };
      break;
    }
    case OpId::split_Tensor:
    case OpId::split_with_sizes:
    case OpId::chunk: {
      if (!any_view) return false;
      int64_t d = norm(n.arg("dim").to_int(), r_in);
      ExprPtr start = c0();
      for (const Tensor& out : n.outputs) {
        maps.push_back([d, start](std::vector<ExprPtr> idx) {
          idx[d] = sym::make_add(start, idx[d]);
          return idx;
        });
        start = sym::make_add(start, ex(out.sizes()[d]));
      }
      break;
    }
    case OpId::unbind_int: {
      if (!any_view) return false;
      int64_t d = norm(n.arg("dim").to_int(), r_in);
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        ExprPtr i = sym::make_const(static_cast<int64_t>(k));
        maps.push_back([d, i](std::vector<ExprPtr> idx) {
          idx.insert(idx.begin() + d, i);
          return idx;
        });
      }
      break;
    }
    case OpId::permute: {
      std::vector<int64_t> dims = n.arg("dims").to_int_list();
      map = [dims, r_in, norm](const std::vector<ExprPtr>& idx) {
        std::vector<ExprPtr> o(idx.size());
        for (size_t i = 0; i < dims.size(); ++i) o[norm(dims[i], r_in)] = idx[i];
        return o;
      };
      break;
    }
    case OpId::transpose_int: {
      if (r_in == 0) {  // a 0-dim value's dims 0 and -1 (rank wrapped as 1) have nothing to swap
        map = [](const std::vector<ExprPtr>& idx) { return idx; };
        break;
      }
      int64_t a = norm(n.arg("dim0").to_int(), r_in), b = norm(n.arg("dim1").to_int(), r_in);
      map = [a, b](std::vector<ExprPtr> idx) {
        std::swap(idx[a], idx[b]);
        return idx;
      };
      break;
    }
    case OpId::expand: {
      size_t r = osz.size();
      map = [this, isz, osz, r](const std::vector<ExprPtr>& idx) {
        std::vector<ExprPtr> o(isz.size());
        for (size_t j = 0; j < isz.size(); ++j) o[j] = broadcast_index(isz[j], osz[j + r - isz.size()], idx[j + r - isz.size()]);
        return o;
      };
      break;
    }
    case OpId::unsqueeze: {
      int64_t d = norm(n.arg("dim").to_int(), r_in + 1);
      map = [d](std::vector<ExprPtr> idx) {
        idx.erase(idx.begin() + d);
        return idx;
      };
      break;
    }
    case OpId::select_int: {
      int64_t d = norm(n.arg("dim").to_int(), r_in);
      SymInt index = n.arg("index").sym_int();
      ExprPtr i = ex(index);
      if (index.hint() < 0) i = sym::make_add(i, isz[d]);
      map = [d, i](std::vector<ExprPtr> idx) {
        idx.insert(idx.begin() + d, i);
        return idx;
      };
      break;
    }
    case OpId::squeeze_dims:
    case OpId::view: {
      // Walks input and output dims together: equal sizes map 1:1, size-1 dims take index 0, and an input dim
      // that is the product of several output dims (a split: [B, S, 3D] -> [B, S, 3, H, Dh]) is their row-major
      // combination. A merge of input dims is not affine: the caller materialises instead.
      std::vector<std::pair<int, std::vector<int>>> groups;  // input dim -> output dims
      size_t j = 0;
      bool merges = false;
      for (size_t i = 0; i < isz.size(); ++i) {
        if (is_one(isz[i])) {
          groups.push_back({static_cast<int>(i), {}});
          continue;
        }
        while (j < osz.size() && is_one(osz[j])) ++j;
        std::vector<int> outs;
        ExprPtr prod = sym::make_const(1);
        while (j < osz.size() && !same(prod, isz[i])) {
          prod = sym::make_mul(prod, osz[j]);
          outs.push_back(static_cast<int>(j++));
          if (hint(prod) > hint(isz[i])) break;
        }
        if (!same(prod, isz[i])) {
          merges = true;
          break;
        }
        groups.push_back({static_cast<int>(i), outs});
      }
      for (; j < osz.size() && !merges; ++j)
        if (!is_one(osz[j])) return false;
      if (merges) {
        if (!any_view || !merge_map(isz, osz, map)) return false;
        break;
      }
      map = [groups, osz](const std::vector<ExprPtr>& idx) {
        std::vector<ExprPtr> o(groups.size());
        for (const auto& [i, outs] : groups) {
          ExprPtr e = c0();
          for (int k : outs) e = sym::make_add(sym::make_mul(e, osz[k]), idx[k]);
          o[i] = e;
        }
        return o;
      };
      break;
    }
    default:
      return false;
  }
  if (maps.empty()) maps.push_back(map);
  SINTER_INTERNAL_ASSERT(maps.size() == n.outputs.size(), "inductor lower: {} index maps for {} outputs of {}",
                         maps.size(), n.outputs.size(), n.op_name());
  for (size_t k = 0; k < maps.size(); ++k) {
    LValue L;
    L.sizes = exs(n.outputs[k].sizes());
    L.dtype = n.outputs[k].dtype();
    L.size = values_[in].size;
    L.fn = [this, in, m = maps[k]](const std::vector<ExprPtr>& idx) { return load(in, m(idx)); };
    add_value(n.outputs[k], std::move(L));
  }
  return true;
}

// view/reshape of `isz` as `osz` as an index map, merges of dims included: the dims form groups of equal element
// counts, and within a group the output index's row-major position is taken apart row-major over the input dims
// (divisions and remainders). False when a group's counts are not provably equal.
bool Lowerer::merge_map(const std::vector<ExprPtr>& isz, const std::vector<ExprPtr>& osz,
                        std::function<std::vector<ExprPtr>(const std::vector<ExprPtr>&)>& map) const {
  struct Group {
    std::vector<int> in, out;
  };
  std::vector<Group> groups;
  size_t i = 0, j = 0;
  for (const ExprPtr& e : isz)
    if (hint(e) == 0) return false;
  while (i < isz.size() || j < osz.size()) {
    Group g;
    if (i < isz.size() && isz[i]->is_const(1)) {
      ++i;  // its index is 0
      continue;
    }
    if (j < osz.size() && osz[j]->is_const(1)) {
      ++j;
      continue;
    }
    if (i == isz.size() || j == osz.size()) return false;
    ExprPtr pi = isz[i], po = osz[j];
    g.in.push_back(static_cast<int>(i++));
    g.out.push_back(static_cast<int>(j++));
    while (!same(pi, po)) {
      if (hint(pi) < hint(po) && i < isz.size()) {
        pi = sym::make_mul(pi, isz[i]);
        g.in.push_back(static_cast<int>(i++));
      } else if (hint(po) < hint(pi) && j < osz.size()) {
        po = sym::make_mul(po, osz[j]);
        g.out.push_back(static_cast<int>(j++));
      } else {
        return false;  // equal at the example but not provably, or out of dims
      }
    }
    groups.push_back(std::move(g));
  }
  map = [groups, isz, osz](const std::vector<ExprPtr>& idx) {
    std::vector<ExprPtr> o(isz.size(), c0());
    for (const Group& g : groups) {
      ExprPtr pos = c0();
      for (int k : g.out) pos = sym::make_add(sym::make_mul(pos, osz[k]), idx[k]);
      ExprPtr inner = sym::make_const(1);  // the elements of the group's input dims after the current one
      for (size_t m = g.in.size(); m-- > 0;) {
        int d = g.in[m];
        ExprPtr q = inner->is_const(1) ? pos : sym::make_floordiv(pos, inner);
        o[d] = m == 0 ? q : sym::make_mod(q, isz[d]);
        inner = sym::make_mul(inner, isz[d]);
      }
    }
    return o;
  };
  return true;
}

bool Lowerer::lower_reduction(const Node& n) {
  std::string_view name = n.op_name();
  ReduceOp op;
  if (name == "sum" || name == "sum.dim_IntList") op = ReduceOp::sum;
  else if (name == "mean" || name == "mean.dim") op = ReduceOp::mean;
  else if (name == "amax") op = ReduceOp::amax;
  else if (name == "amin") op = ReduceOp::amin;
  else if (name == "prod" || name == "prod.dim_int") op = ReduceOp::prod;
  else return false;
  const Tensor& x = n.args[0].tensor();
  int64_t r = x.dim();
  std::vector<bool> reduced(r, false);
  bool keepdim = false;
  const Schema& s = op_def(n.op).schema;
  int di = s.find_arg("dim"), ki = s.find_arg("keepdim");
  if (ki >= 0) keepdim = n.args[ki].to_bool();
  if (di < 0 || n.args[di].is_none() || (n.args[di].is_int_list() && n.args[di].int_list().empty())) {
    reduced.assign(r, true);
  } else if (r > 0) {  // a 0-dim input accepts dims 0 and -1, which reduce nothing (the value itself)
    std::vector<int64_t> dims =
        n.args[di].is_int() ? std::vector<int64_t>{n.args[di].to_int()} : n.args[di].to_int_list();
    for (int64_t d : dims) reduced[d < 0 ? d + r : d] = true;
  }
  int v = value_id(x);
  std::vector<ExprPtr> isz = values_[v].sizes;
  std::vector<ExprPtr> domain;
  std::vector<int> kept, red;
  for (int64_t d = 0; d < r; ++d) (reduced[d] ? red : kept).push_back(static_cast<int>(d));
  std::vector<ExprPtr> idx(r);
  int k = 0;
  for (int d : kept) {
    idx[d] = loop_var(k++);
    domain.push_back(isz[d]);
  }
  for (int d : red) {
    idx[d] = loop_var(k++);
    domain.push_back(isz[d]);
  }
  CType acc = compute_type(n.meta().dtype);
  SExpr body = p_.pool.cast(load(v, idx), acc);
  int node_id = static_cast<int>(p_.nodes.size());
  int bid = new_buffer(n.output(), node_id);
  // The output's index: kept dims walk the outer variables, reduced ones (kept with keepdim) are 0.
  const std::vector<ExprPtr>& ost = p_.buffers[bid].strides;
  ExprPtr off = c0();
  int od = 0, ov = 0;
  // Size-1 dims contribute nothing, as in load(): equal positions must give equal offset expressions.
  const std::vector<ExprPtr>& osz = p_.buffers[bid].sizes;
  for (int64_t d = 0; d < r; ++d) {
    if (reduced[d]) {
      if (keepdim) ++od;
      continue;
    }
    if (!is_one(osz[od])) off = sym::make_add(off, sym::make_mul(loop_var(ov), ost[od]));
    ++ov, ++od;
  }
  add_loop_node(LoopKind::kReduction, domain, static_cast<int>(kept.size()), body, bid, off, op);
  return true;
}

// The rows of x[..., K] as one [M, K] matrix view, when its leading dims collapse.
bool Lowerer::rows_view(const std::vector<ExprPtr>& sizes, const std::vector<ExprPtr>& strides, ExprPtr& m,
                        ExprPtr& rs) const {
  size_t r = sizes.size();
  if (r < 2) return false;
  m = sym::make_const(1);
  for (size_t d = 0; d + 1 < r; ++d) m = sym::make_mul(m, sizes[d]);
  rs = strides[r - 2];
  for (size_t d = 0; d + 2 < r; ++d)
    if (!is_one(sizes[d]) && !same(strides[d], sym::make_mul(strides[d + 1], sizes[d + 1])))
      return false;
  return true;
}

bool Lowerer::lower_gemm(const Node& n) {
  bool linear = n.op == OpId::linear, mm = n.op == OpId::mm, addmm = n.op == OpId::addmm,
       matmul = n.op == OpId::matmul;
  if (!linear && !mm && !addmm && !matmul) return false;
  const Tensor& a = n.args[addmm ? 1 : 0].tensor();
  const Tensor& b = n.args[addmm ? 2 : 1].tensor();
  if (b.dim() != 2 || a.dim() < 2) return false;
  const DType dt = n.meta().dtype;
  if (!target_.runs_on(a.device()) || a.dtype() != dt || b.dtype() != dt || !target_.provides(ExternKind::kGemm, dt)) {
    SINTER_LOG(kFusion, "{} runs as a library call without fused epilogues: the target's gemm does not take {} "
               "on {} (capability gemm.dtype.{})",
               origin_, dtype_name(dt), a.device().str(), dtype_name(dt));
    return false;
  }
  if ((mm || addmm) && a.dim() != 2) return false;
  int va = value_id(a), vb = value_id(b);
  std::vector<ExprPtr> la = exs(a.strides()), lb = exs(b.strides());
  materialize(va, &la, "a GEMM operand");
  materialize(vb, &lb, "a GEMM operand");
  ExprPtr m, rs;
  if (!rows_view(values_[va].sizes, values_[va].strides, m, rs)) return false;
  BufferView A{values_[va].buffer, {m, values_[va].sizes.back()}, {rs, values_[va].strides.back()},
               values_[va].offset};
  BufferView B = view_of(vb);
  if (linear) {  // weight [N, K] used as [K, N]
    B.sizes = {B.sizes[1], B.sizes[0]};
    B.strides = {B.strides[1], B.strides[0]};
  }
  // The product itself; bias and scaling stay lazy on top, for the scheduler to fuse as an epilogue.
  Tensor proxy = empty_from_meta(n.meta(), false);
  proxy.impl()->meta.strides = contiguous_strides(n.meta().sizes);
  proxy.impl()->meta.offset = 0;
  products_.push_back(proxy);
  int node_id = static_cast<int>(p_.nodes.size());
  int bid = new_buffer(products_.back(), node_id);
  LoopNode ln;
  ln.id = node_id;
  ln.kind = LoopKind::kExtern;
  ln.origin = origin_;
  ln.op = n.op;
  ln.loc = n.loc;
  ln.gemm = true;
  ln.tensor_args = {A, B};
  ln.outs = {bid};
  p_.nodes.push_back(std::move(ln));
  int vp = value_id(products_.back());
  CType t = CType::kF32;
  if (linear && n.args[2].is_tensor()) {
    const Tensor bias = n.args[2].tensor();
    std::vector<ExprPtr> osz = exs(n.meta().sizes);
    define_lazy(n, [this, vp, bias, osz, t](const std::vector<ExprPtr>& idx) {
      return p_.pool.op(SOp::add, {load(vp, idx), p_.pool.cast(load_arg(bias, osz, idx), t)}, t);
    });
  } else if (addmm) {
    const Tensor self = n.args[0].tensor();
    double beta = n.arg("beta").to_double(), alpha = n.arg("alpha").to_double();
    std::vector<ExprPtr> osz = exs(n.meta().sizes);
    define_lazy(n, [this, vp, self, osz, t, beta, alpha](const std::vector<ExprPtr>& idx) {
      SExpr prod = load(vp, idx);
      if (alpha != 1) prod = p_.pool.op(SOp::mul, {prod, p_.pool.constant(alpha, t)}, t);
      if (beta == 0) return prod;
      SExpr s = p_.pool.cast(load_arg(self, osz, idx), t);
      if (beta != 1) s = p_.pool.op(SOp::mul, {s, p_.pool.constant(beta, t)}, t);
      return p_.pool.op(SOp::add, {s, prod}, t);
    });
  } else {
    value_of_[n.output().impl()] = vp;
  }
  return true;
}

void Lowerer::lower_extern(const Node& n) {
  SINTER_CHECK(!op_def(n.op).schema.is_inplace(), "inductor: in-place op {} in a functional graph", n.op_name());
  LoopNode ln;
  ln.id = static_cast<int>(p_.nodes.size());
  ln.kind = LoopKind::kExtern;
  ln.origin = origin_;
  ln.op = n.op;
  ln.loc = n.loc;
  ln.args = n.args;
  auto use = [&](const Tensor& t) {
    int v = value_id(t);
    std::vector<ExprPtr> layout = exs(t.strides());
    materialize(v, &layout, fmt::format("an input of the library call {}", n.op_name()));
    // as_strided_scatter writes its window into a copy of self laid out as self: the window's strides are the
    // graph's, so self must be in the graph's layout, or the write lands on other elements.
    SINTER_CHECK(n.op != OpId::as_strided_scatter || ln.tensor_args.size() != 0 || values_[v].meta_layout,
                 "inductor: as_strided_scatter into a value whose layout differs from the graph's ({})",
                 origin_);
    ln.tensor_args.push_back(view_of(v));
  };
  for (const Value& a : n.args) {
    if (a.is_tensor()) use(a.tensor());
    else if (a.is_tensor_list())
      for (const Tensor& t : a.tensor_list()) use(t);
  }
  int node_id = static_cast<int>(p_.nodes.size());  // after the materialisations above
  ln.id = node_id;
  if ((n.op == OpId::conv2d || n.op == OpId::conv2d_padding) && target_.runs_on(n.meta().device) &&
      target_.provides(ExternKind::kConv, n.meta().dtype) && n.arg("groups").to_int() == 1 &&
      n.meta().sizes.size() == 4)
    ln.conv = n.outputs[0].is_contiguous(MemoryFormat::kChannelsLast) && !n.outputs[0].is_contiguous();
  p_.nodes.push_back(std::move(ln));
  for (const Tensor& out : n.outputs) p_.nodes[node_id].outs.push_back(new_buffer(out, node_id));
}

void Lowerer::lower_op(const Node& n) {
  origin_ = origin_of(n, value_names_);
  if (lower_view(n)) return;
  if (n.outputs.size() == 1 && is_lowerable_pointwise(n.op) && target_.runs_on(n.meta().device)) {
    const Node* np = &n;
    std::vector<ExprPtr> osz = exs(n.meta().sizes);
    define_lazy(n, [this, np, osz](const std::vector<ExprPtr>& idx) { return lower_pointwise(*this, *np, osz, idx); });
    return;
  }
  if ((n.op == OpId::full || n.op == OpId::zeros || n.op == OpId::ones) && target_.runs_on(n.meta().device)) {
    Scalar v = n.op == OpId::full ? n.arg("fill_value").scalar() : Scalar(n.op == OpId::ones ? 1 : 0);
    CType t = compute_type(n.meta().dtype);
    define_lazy(n, [this, v, t](const std::vector<ExprPtr>&) {
      return v.is_floating() ? p_.pool.constant(v.to_double(), t) : p_.pool.iconstant(v.to_int(), t);
    });
    return;
  }
  if (lower_concat(n) || lower_pad(n)) return;
  if (lower_reduction(n)) return;
  if (lower_gemm(n)) return;
  lower_extern(n);
}

// A buffer written in parts by several pointwise nodes (cat, stack, constant pad), laid out as the graph's output
// when that is dense. It has no single producer: readers load it from memory.
Lowerer::Pieces Lowerer::pieces_buffer(const Tensor& out) {
  Pieces b;
  b.sizes = exs(out.sizes());
  b.strides = exs(out.strides());
  b.meta = dense_layout(b.sizes, b.strides);
  if (!b.meta) b.strides = dense_strides(b.sizes);
  Buffer buf;
  buf.dtype = out.dtype();
  buf.sizes = b.sizes;
  buf.strides = b.strides;
  buf.producer = -1;
  b.buffer = p_.add_buffer(std::move(buf));
  b.type = compute_type(out.dtype());
  return b;
}

// One part: a pointwise node over `sizes` (piece dim j is the output's dim out_dim[j]) storing value(idx) at output
// index start + idx, its loops in the output's memory order. Output dims no piece dim maps to sit at their start.
void Lowerer::store_piece(const Pieces& b, const std::vector<ExprPtr>& sizes, const std::vector<int>& out_dim,
                          const std::vector<ExprPtr>& start,
                          const std::function<SExpr(const std::vector<ExprPtr>&)>& value) {
  const size_t r = sizes.size();
  std::vector<ExprPtr> mapped(r);  // the piece dims' strides in the output, for the loop order
  for (size_t j = 0; j < r; ++j) mapped[j] = b.strides[out_dim[j]];
  std::vector<int> perm = memory_order(sizes, mapped);
  std::vector<ExprPtr> idx(r), domain(r), at(b.sizes.size(), c0());
  for (size_t j = 0; j < r; ++j) {
    idx[perm[j]] = loop_var(static_cast<int>(j));
    domain[j] = sizes[perm[j]];
  }
  for (size_t j = 0; j < r; ++j) at[out_dim[j]] = idx[j];
  ExprPtr off = c0();
  for (size_t d = 0; d < b.sizes.size(); ++d)
    if (!is_one(b.sizes[d])) off = sym::make_add(off, sym::make_mul(sym::make_add(at[d], start[d]), b.strides[d]));
  add_loop_node(LoopKind::kPointwise, domain, static_cast<int>(r), p_.pool.cast(value(idx), b.type), b.buffer, off);
}

void Lowerer::finish_pieces(const Tensor& out, const Pieces& b) {
  LValue L;
  L.sizes = b.sizes;
  L.dtype = out.dtype();
  L.buffer = b.buffer;
  L.strides = b.strides;
  L.offset = c0();
  L.meta_layout = b.meta;
  const int id = add_value(out, std::move(L));
  base_[b.buffer] = b.meta ? values_[id].meta_offset : c0();
}

// cat and stack: one pointwise node per input, each storing that input's value (lazy, so its producers fuse into
// it) straight into its part of one output buffer.
bool Lowerer::lower_concat(const Node& n) {
  if ((n.op != OpId::cat && n.op != OpId::stack) || !target_.runs_on(n.meta().device)) return false;
  const std::vector<Tensor>& ins = n.args[0].tensor_list();
  const Tensor& out = n.output();
  const bool stack = n.op == OpId::stack;
  const int64_t rank = out.dim();
  int64_t d = n.arg("dim").to_int();
  if (d < 0) d += rank;
  if (ins.empty() || d < 0 || d >= rank) return false;
  for (const Tensor& t : ins)  // cat's legacy empty 1-D operands, and mixed dtypes, stay with the eager kernel
    if (t.dtype() != out.dtype() || t.dim() != (stack ? rank - 1 : rank)) return false;
  const Pieces b = pieces_buffer(out);
  std::vector<ExprPtr> start(static_cast<size_t>(rank), c0());  // where the input's part begins
  for (size_t k = 0; k < ins.size(); ++k) {
    const int v = value_id(ins[k]);
    const std::vector<ExprPtr> isz = values_[v].sizes;
    std::vector<int> out_dim(isz.size());
    for (size_t j = 0; j < isz.size(); ++j) out_dim[j] = stack && static_cast<int64_t>(j) >= d ? j + 1 : j;
    if (stack) start[d] = sym::make_const(static_cast<int64_t>(k));
    store_piece(b, isz, out_dim, start, [this, v](const std::vector<ExprPtr>& idx) { return load(v, idx); });
    if (!stack) start[d] = sym::make_add(start[d], isz[d]);
  }
  SINTER_LOG(kFusion, "{}: {} inputs stored straight into {}", origin_, ins.size(), p_.buffers[b.buffer].name);
  finish_pieces(out, b);
  return true;
}

// Constant pad: the input's overlap with the output (lazy, so its producers fuse into it), and per padded dim the
// slabs before and after it filled with the value, within the overlap of the dims done before (so no element is
// written twice). A negative pad crops. Pads that are symbolic, and a crop of a symbolic size (whose overlap
// could vanish), stay with the eager kernel, as do the reflect and replicate modes.
bool Lowerer::lower_pad(const Node& n) {
  if (n.op != OpId::pad || n.arg("mode").str_value() != "constant" || !target_.runs_on(n.meta().device)) return false;
  const Tensor& x = n.args[0].tensor();
  const SymIntList& pad = n.args[1].int_list();
  const size_t rank = static_cast<size_t>(x.dim());
  if (pad.empty()) return false;  // a copy (of a 0-dim value too): the eager kernel's
  const int v = value_id(x);
  const std::vector<ExprPtr> isz = values_[v].sizes;
  std::vector<int64_t> before(rank, 0), after(rank, 0);
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const size_t d = rank - 1 - i;
    if (pad[2 * i].is_symbolic() || pad[2 * i + 1].is_symbolic()) return false;
    before[d] = pad[2 * i].hint();
    after[d] = pad[2 * i + 1].hint();
    if ((before[d] < 0 || after[d] < 0) && !isz[d]->is_const()) return false;
  }
  const Pieces b = pieces_buffer(n.output());
  std::vector<ExprPtr> inner(rank), start(rank);  // the overlap: its sizes and where it starts in the output
  bool empty = false;
  for (size_t d = 0; d < rank; ++d) {
    inner[d] = sym::make_add(isz[d], sym::make_const(-std::max<int64_t>(-before[d], 0) - std::max<int64_t>(-after[d], 0)));
    start[d] = sym::make_const(std::max<int64_t>(before[d], 0));
    empty = empty || (inner[d]->is_const() && inner[d]->value() <= 0);
  }
  std::vector<int> dims(rank);
  for (size_t d = 0; d < rank; ++d) dims[d] = static_cast<int>(d);
  const double fill = n.args[3].is_none() ? 0.0 : n.args[3].to_double();
  const SExpr value = is_float(b.type) ? p_.pool.constant(fill, b.type)
                      : b.type == CType::kBool ? p_.pool.iconstant(fill != 0, b.type)
                                               : p_.pool.iconstant(cast_to<int64_t>(fill), b.type);
  auto constant = [value](const std::vector<ExprPtr>&) { return value; };
  if (empty) {
    store_piece(b, b.sizes, dims, std::vector<ExprPtr>(rank, c0()), constant);
  } else {
    store_piece(b, inner, dims, start, [&](const std::vector<ExprPtr>& idx) {
      std::vector<ExprPtr> at(rank);
      for (size_t d = 0; d < rank; ++d) at[d] = sym::make_add(idx[d], sym::make_const(std::max<int64_t>(-before[d], 0)));
      return load(v, at);
    });
    std::vector<ExprPtr> sizes = b.sizes, from(rank, c0());
    for (size_t d = rank; d-- > 0;) {
      if (before[d] > 0) {
        sizes[d] = sym::make_const(before[d]);
        from[d] = c0();
        store_piece(b, sizes, dims, from, constant);
      }
      if (after[d] > 0) {
        sizes[d] = sym::make_const(after[d]);
        from[d] = sym::make_add(b.sizes[d], sym::make_const(-after[d]));
        store_piece(b, sizes, dims, from, constant);
      }
      sizes[d] = inner[d];
      from[d] = start[d];
    }
  }
  SINTER_LOG(kFusion, "{}: the input and the padding stored straight into {}", origin_, p_.buffers[b.buffer].name);
  finish_pieces(n.output(), b);
  return true;
}

LoopProgram Lowerer::run() {
  mark_strided_views();
  for (const Node& n : g_.nodes()) {
    auto count = [&](const Value& a) {
      if (a.is_tensor()) ++uses_[a.tensor().impl()];
      else if (a.is_tensor_list())
        for (const Tensor& t : a.tensor_list()) ++uses_[t.impl()];
    };
    for (const Value& a : n.args) count(a);
  }
  for (const Node& n : g_.nodes()) {
    switch (n.kind) {
      case NodeKind::kInput:
      case NodeKind::kConstant: lower_input(n); break;
      case NodeKind::kOp: lower_op(n); break;
      case NodeKind::kOutput:
        origin_ = "output";
        for (const Value& a : n.args) {
          const Tensor& t = a.tensor();
          int v = value_id(t);
          std::vector<ExprPtr> layout = exs(t.strides());
          materialize(v, &layout, "a graph output");
          p_.outputs.push_back(view_of(v));
        }
        break;
    }
  }
  return std::move(p_);
}

LoopProgram lower(const Graph& graph, const LowerOptions& options) {
  Lowerer l(graph, options);
  return l.run();
}

}  // namespace sinter::inductor
