#include "inductor/lower.h"
#include "inductor/lowerer.h"

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

namespace sinter::inductor {

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

// The rows of x[..., K] as one [M, K] matrix view, when its leading dims collapse. Dims of size 1 are left out
// first: their strides say nothing, and comparing across one let [2, 1, 3] rows with strides [1, 1, 0] (an
// expanded view) pass as rows 1 apart (found by sinter fuzz, seed 2026120802 case 2920).
bool Lowerer::rows_view(const std::vector<ExprPtr>& sizes, const std::vector<ExprPtr>& strides, ExprPtr& m,
                        ExprPtr& rs) const {
  size_t r = sizes.size();
  if (r < 2) return false;
  m = sym::make_const(1);
  std::vector<size_t> rows;  // the leading dims of other sizes than 1, outermost first
  for (size_t d = 0; d + 1 < r; ++d) {
    m = sym::make_mul(m, sizes[d]);
    if (!is_one(sizes[d])) rows.push_back(d);
  }
  rs = rows.empty() ? strides[r - 2] : strides[rows.back()];
  for (size_t i = 0; i + 1 < rows.size(); ++i)
    if (!same(strides[rows[i]], sym::make_mul(strides[rows[i + 1]], sizes[rows[i + 1]]))) return false;
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
  // One group (an implicit GEMM), or depthwise: as many groups as input and output channels.
  auto conv_groups_fit = [&] {
    const int64_t groups = n.arg("groups").to_int();
    if (groups == 1) return true;
    // (The conv's own check made the input's channels groups * weight.size(1).)
    const SymIntList& ws = n.args[1].tensor().sizes();
    return ws.size() == 4 && !ws[0].is_symbolic() && !ws[1].is_symbolic() && ws[1].hint() == 1 &&
           ws[0].hint() == groups;
  };
  // Only where the target's conv takes an epilogue per tile (the CPU's): elsewhere (cuDNN) the conv's own output
  // serves as its buffer, with no copy into a planned one.
  if ((n.op == OpId::conv2d || n.op == OpId::conv2d_padding) && target_.runs_on(n.meta().device) &&
      target_.provides(ExternKind::kConv, n.meta().dtype) &&
      target_.accepts(ExternKind::kConv, EpilogueShape::kTile) && n.meta().sizes.size() == 4 && conv_groups_fit())
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
