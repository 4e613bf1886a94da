// Lowering of the ops whose output is one buffer written in parts by several pointwise nodes: cat, stack and
// constant pad (each part stores a lazy value, so its producers fuse into the store).
#include <algorithm>

#include "inductor/lowerer.h"
#include "tensor/dtype_dispatch.h"

namespace sinter::inductor {

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

}  // namespace sinter::inductor
