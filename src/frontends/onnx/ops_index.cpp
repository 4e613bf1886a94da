// Indexing ONNX operators: Gather/GatherElements/GatherND, ScatterElements/ScatterND, OneHot, NonZero, Compress,
// Trilu, ReverseSequence. ONNX indices may be negative (counted from the end) and of any shape; they are
// normalised and flattened onto sinter's index_select/gather/scatter/index_put.
#include <fmt/format.h>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

// Negative indices count from the end of a dim of size n.
Tensor wrap_index(const Tensor& idx, const SymInt& n) {
  Tensor i = cast_to(idx, kInt64);
  return where(lt(i, Scalar(0)), add(i, Scalar(n.hint())), i);
}

Tensor gather_onnx(NodeCtx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = norm_axis(c.attr_int("axis", 0), x.dim(), c);
  Tensor idx = wrap_index(c.in(1), x.size(axis));
  Tensor flat = index_select(x, axis, reshape(idx, {-1}));
  SymIntList shape;
  for (int64_t k = 0; k < axis; ++k) shape.push_back(x.size(k));
  for (const SymInt& s : idx.sizes()) shape.push_back(s);
  for (int64_t k = axis + 1; k < x.dim(); ++k) shape.push_back(x.size(k));
  return reshape(flat, shape);
}

// Linear offsets of the index tuples in the last dim of `idx` into the first k dims (after `batch` batch dims)
// of data; returns data flattened to [batch..., prod(k dims), rest...] and the offsets.
std::pair<Tensor, Tensor> nd_offsets(const Tensor& data, const Tensor& indices, int64_t batch, NodeCtx& c) {
  int64_t k = static_cast<int64_t>(indices.size(-1));
  if (batch + k > data.dim()) c.fail("index tuples are longer than the data's rank");
  Tensor idx = cast_to(indices, kInt64);
  Tensor offset;
  int64_t stride = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    int64_t n = static_cast<int64_t>(data.size(batch + j));
    Tensor ij = select(idx, -1, j);
    ij = where(lt(ij, Scalar(0)), add(ij, Scalar(n)), ij);
    Tensor term = mul(ij, Scalar(stride));
    offset = offset.defined() ? add(offset, term) : term;
    stride *= n;
  }
  if (!offset.defined()) offset = zeros_like(select(idx, -1, 0));
  SymIntList shape;
  for (int64_t b = 0; b < batch; ++b) shape.push_back(data.size(b));
  shape.push_back(stride);
  for (int64_t r = batch + k; r < data.dim(); ++r) shape.push_back(data.size(r));
  return {reshape(data, shape), offset};
}

Tensor gather_nd(NodeCtx& c) {
  const Tensor& data = c.in(0);
  const Tensor& indices = c.in(1);
  int64_t batch = c.attr_int("batch_dims", 0);
  auto [flat, offset] = nd_offsets(data, indices, batch, c);
  // Fold the batch dims into the offsets too: one index_select over [prod(batch) * prod(k dims), rest...].
  int64_t per_batch = static_cast<int64_t>(flat.size(batch));
  int64_t nb = 1;
  for (int64_t b = 0; b < batch; ++b) nb *= static_cast<int64_t>(data.size(b));
  Tensor off = offset;
  if (batch > 0) {
    Tensor base = mul(arange(Scalar(nb), c.options(kInt64)), Scalar(per_batch));
    SymIntList bshape;
    for (int64_t b = 0; b < batch; ++b) bshape.push_back(data.size(b));
    for (int64_t r = batch; r < offset.dim(); ++r) bshape.push_back(1);
    off = add(offset, reshape(base, bshape));
  }
  SymIntList rest;
  for (int64_t r = batch + 1; r < flat.dim(); ++r) rest.push_back(flat.size(r));
  SymIntList all{-1};
  all.insert(all.end(), rest.begin(), rest.end());
  Tensor picked = index_select(reshape(flat, all), 0, reshape(off, {-1}));
  SymIntList out(offset.sizes().begin(), offset.sizes().end());
  out.insert(out.end(), rest.begin(), rest.end());
  return reshape(picked, out);
}

// Rows of `flat` [P, rest...] combined with the updates [U, rest...] aimed at them (`targets` [U] in [0, P)) by
// reduction mul, max or min, duplicates included; rows no update hits stay. sinter has no scatter_reduce, so a
// one-hot [U, P] of the targets picks each row's updates (a row's own value stands in for the others, the
// neutral element of max/min); its size is bounded so a hostile model cannot make it unbounded.
Tensor scatter_reduce_rows(NodeCtx& c, const Tensor& flat, const Tensor& targets, const Tensor& updates,
                           const std::string& red) {
  if (red != "mul" && red != "max" && red != "min") c.fail(fmt::format("unknown reduction '{}'", red));
  int64_t rows = static_cast<int64_t>(flat.size(0)), u = static_cast<int64_t>(targets.numel());
  int64_t row_elems = rows == 0 ? 0 : static_cast<int64_t>(flat.numel()) / rows;
  constexpr int64_t kMaxDense = int64_t{1} << 26;
  if (u > 0 && rows > 0 && (u > kMaxDense / rows || u * rows > kMaxDense / std::max<int64_t>(1, row_elems)))
    c.unsupported(fmt::format("a reduction '{}' of {} updates into {} rows of {} elements (too large)", red, u, rows, row_elems));
  SymIntList hot_shape{u, rows};
  for (int64_t r = 1; r < flat.dim(); ++r) hot_shape.push_back(1);
  Tensor hot = reshape(eq(unsqueeze(reshape(targets, {-1}), 1), arange(Scalar(rows), c.options(kInt64))), hot_shape);
  Tensor upd = unsqueeze(updates, 1);  // [U, 1, rest...]
  if (red == "mul") {
    Tensor factor = prod(where(hot, upd, Scalar(1)), 0, false, flat.dtype());
    return cast_to(mul(flat, factor), flat.dtype());
  }
  Tensor picked = where(hot, upd, unsqueeze(flat, 0));  // [U, P, rest...]
  DimList first{0};
  return red == "max" ? maximum(flat, amax(picked, first)) : minimum(flat, amin(picked, first));
}

Tensor scatter_nd(NodeCtx& c) {
  const Tensor& data = c.in(0);
  std::string red = c.attr_str("reduction", "none");
  auto [flat, offset] = nd_offsets(data, c.in(1), 0, c);
  SymIntList rest;
  for (int64_t r = 1; r < flat.dim(); ++r) rest.push_back(flat.size(r));
  SymIntList vshape{-1};
  vshape.insert(vshape.end(), rest.begin(), rest.end());
  Tensor values = reshape(c.in(2), vshape);
  if (red != "none" && red != "add") return reshape(scatter_reduce_rows(c, flat, offset, values, red), data.sizes());
  Tensor r = index_put(flat, {reshape(offset, {-1})}, values, red == "add");
  return reshape(r, data.sizes());
}

Tensor scatter_elements(NodeCtx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = norm_axis(c.attr_int("axis", 0), x.dim(), c);
  Tensor idx = wrap_index(c.in(1), x.size(axis));
  std::string red = c.attr_str("reduction", "none");
  if (red == "none") return scatter(x, axis, idx, c.in(2));
  if (red == "add") return scatter_add(x, axis, idx, c.in(2));
  // The flat target of every update element: its own coordinates, with the index in place of the axis one.
  Tensor target;
  int64_t stride = 1;
  for (int64_t k = x.dim() - 1; k >= 0; --k) {
    Tensor coord = idx;
    if (k != axis) {
      std::vector<int64_t> shape(idx.dim(), 1);
      shape[k] = static_cast<int64_t>(idx.size(k));
      coord = reshape(arange(Scalar(shape[k]), c.options(kInt64)), SymIntList(shape.begin(), shape.end()));
    }
    Tensor term = mul(coord, Scalar(stride));
    target = target.defined() ? add(target, term) : term;
    stride *= static_cast<int64_t>(x.size(k));
  }
  target = expand(target, idx.sizes());
  Tensor r = scatter_reduce_rows(c, reshape(x, {-1}), target, reshape(c.in(2), {-1}), red);
  return reshape(r, x.sizes());
}

Tensor one_hot(NodeCtx& c) {
  Tensor idx = c.in(0);
  int64_t depth = static_cast<int64_t>(c.double_at(1));
  Tensor values = c.in(2);
  int64_t out_rank = idx.dim() + 1;
  int64_t axis = norm_axis(c.attr_int("axis", -1), out_rank, c);
  Tensor i = cast_to(idx, kInt64);
  if (!is_integral(idx.dtype(), false)) i = cast_to(trunc(idx), kInt64);
  i = where(lt(i, Scalar(0)), add(i, Scalar(depth)), i);
  std::vector<int64_t> shape(out_rank, 1);
  shape[axis] = depth;
  Tensor pos = reshape(arange(Scalar(depth), c.options(kInt64)), SymIntList(shape));
  Tensor hot = eq(unsqueeze(i, axis), pos);
  return where(hot, select(values, 0, 1), select(values, 0, 0));
}

Tensor reverse_sequence(NodeCtx& c) {
  const Tensor& x = c.in(0);
  int64_t batch_axis = c.attr_int("batch_axis", 1), time_axis = c.attr_int("time_axis", 0);
  std::vector<int64_t> lens = c.ints(1);
  int64_t nb = static_cast<int64_t>(x.size(batch_axis)), nt = static_cast<int64_t>(x.size(time_axis));
  if (static_cast<int64_t>(lens.size()) != nb) c.fail("sequence_lens must have one entry per batch");
  // Source time index of each (batch, time): reversed inside the sequence length, unchanged after it.
  std::vector<int64_t> src(nb * nt);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t t = 0; t < nt; ++t) src[b * nt + t] = t < lens[b] ? lens[b] - 1 - t : t;
  Tensor idx = c.here(on_host([&] { return from_vector(src, {nb, nt}); }));
  // Arrange idx to x's rank: batch and time axes in place, size 1 elsewhere, then expand and gather.
  std::vector<int64_t> shape(x.dim(), 1);
  shape[batch_axis] = nb, shape[time_axis] = nt;
  Tensor i2 = batch_axis < time_axis ? idx : transpose(idx, 0, 1);
  i2 = reshape(contiguous(i2), SymIntList(shape));
  return gather(x, time_axis, expand(i2, x.sizes()));
}

}  // namespace

void register_index_ops(OpTable& t) {
  t["Gather"] = {[](NodeCtx& c) { return std::vector<Tensor>{gather_onnx(c)}; }};
  t["GatherElements"] = {[](NodeCtx& c) {
    const Tensor& x = c.in(0);
    int64_t axis = norm_axis(c.attr_int("axis", 0), x.dim(), c);
    return std::vector<Tensor>{gather(x, axis, wrap_index(c.in(1), x.size(axis)))};
  }};
  t["GatherND"] = {[](NodeCtx& c) { return std::vector<Tensor>{gather_nd(c)}; }};
  t["ScatterND"] = {[](NodeCtx& c) { return std::vector<Tensor>{scatter_nd(c)}; }};
  t["ScatterElements"] = {[](NodeCtx& c) { return std::vector<Tensor>{scatter_elements(c)}; }};
  t["Scatter"] = t["ScatterElements"];
  t["OneHot"] = {[](NodeCtx& c) { return std::vector<Tensor>{one_hot(c)}; }};
  t["NonZero"] = {[](NodeCtx& c) { return std::vector<Tensor>{transpose(nonzero(c.in(0)), 0, 1)}; }};
  t["Compress"] = {[](NodeCtx& c) {
    Tensor x = c.in(0);
    std::vector<int64_t> cond = c.ints(1);
    std::vector<int64_t> keep;
    for (size_t i = 0; i < cond.size(); ++i)
      if (cond[i]) keep.push_back(static_cast<int64_t>(i));
    int64_t axis = 0;
    if (c.has_attr("axis")) {
      axis = norm_axis(c.attr_int("axis", 0), x.dim(), c);
    } else {
      x = reshape(x, {-1});
    }
    Tensor idx = c.here(on_host([&] { return from_vector(keep, {static_cast<int64_t>(keep.size())}, kInt64); }));
    return std::vector<Tensor>{index_select(x, axis, idx)};
  }};
  t["Trilu"] = {[](NodeCtx& c) {
    int64_t k = c.has(1) ? c.int_at(1) : 0;
    bool upper = c.attr_int("upper", 1) != 0;
    return std::vector<Tensor>{upper ? triu(c.in(0), k) : tril(c.in(0), k)};
  }};
  t["ReverseSequence"] = {[](NodeCtx& c) { return std::vector<Tensor>{reverse_sequence(c)}; }};
}

}  // namespace sinter::onnx
