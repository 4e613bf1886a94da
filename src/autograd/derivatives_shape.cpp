// Derivative rows of the views, joins, indexing and reordering ops.
#include <algorithm>

#include "autograd/derivatives.h"
#include "ops/dispatch.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter::autograd {
namespace {

using C = BackwardContext;

TensorOptions options_of(const Tensor& g) { return TensorOptions(g.dtype(), g.device()); }

int64_t norm_dim(int64_t d, size_t rank) { return d < 0 ? d + static_cast<int64_t>(rank) : d; }

std::vector<int64_t> dense_strides(const SymIntList& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * std::max<int64_t>(sizes[d + 1].guard_int(), 1);
  return strides;
}

// The gradient of a view that picks elements of its input: `g` written at the view's place in a zero tensor of the
// input's sizes (the geometry is that of the view over a contiguous input).
Tensor into_zeros(const Tensor& g, const SymIntList& input_sizes, const SymIntList& sizes,
                  const std::vector<int64_t>& strides, int64_t offset) {
  Tensor base = zeros(input_sizes, options_of(g));
  SymIntList st;
  for (int64_t s : strides) st.push_back(s);
  return dispatch1(OpId::as_strided_scatter, {base, g, sizes, st, Value(SymInt(offset))}, Loc::current());
}

Tensor slice_grad(const C& c) {
  const SymIntList& in = c.meta("self").sizes;
  const Tensor g = c.grad();
  const int64_t dim = norm_dim(c.i("dim"), in.size());
  const int64_t n = in[dim].guard_int();
  const int64_t step = c.arg("step").to_int();
  auto clamp_index = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  const int64_t start = c.arg("start").is_none() ? 0 : clamp_index(c.arg("start").to_int());
  std::vector<int64_t> strides = dense_strides(in);
  const int64_t offset = start * strides[dim];
  strides[dim] *= step;
  return into_zeros(g, in, g.sizes(), strides, offset);
}

Tensor select_grad(const C& c) {
  const SymIntList& in = c.meta("self").sizes;
  const int64_t dim = norm_dim(c.i("dim"), in.size());
  int64_t index = c.arg("index").to_int();
  if (index < 0) index += in[dim].guard_int();
  std::vector<int64_t> strides = dense_strides(in);
  const int64_t offset = index * strides[dim];
  strides.erase(strides.begin() + dim);
  return into_zeros(c.grad(), in, c.grad().sizes(), strides, offset);
}

// Gradients of every output of a split, undefined ones as zeros, joined back along dim.
Tensor join_grads(const C& c, int64_t dim, bool stacked) {
  std::vector<Tensor> parts;
  for (int i = 0; i < c.num_outputs(); ++i) parts.push_back(c.grad(i));
  if (parts.empty()) return zeros(c.meta("self").sizes, TensorOptions(c.meta("self").dtype, c.meta("self").device));
  return stacked ? stack(parts, dim) : cat(parts, dim);
}

// as_strided: the gradient laid out in a buffer covering both geometries, gathered at the input's.
Tensor as_strided_grad(const C& c) {
  Tensor x = c.t("self"), g = c.grad();
  const SymIntList& size = c.arg("size").int_list();
  const SymIntList& stride = c.arg("stride").int_list();
  const int64_t out_offset = c.arg("storage_offset").is_none() ? x.storage_offset().guard_int()
                                                               : c.arg("storage_offset").to_int();
  const int64_t n = std::max(storage_extent(size, stride, out_offset),
                             storage_extent(x.sizes(), x.strides(), x.storage_offset().guard_int()));
  Tensor buffer = zeros({n}, options_of(g));
  Tensor written = dispatch1(OpId::as_strided_scatter, {buffer, g, size, stride, Value(SymInt(out_offset))},
                             Loc::current());
  return as_strided(written, x.sizes(), x.strides(), x.storage_offset());
}

// pad in any mode: pad the element numbers of the input the same way, then add each gradient element into the
// input element it was copied from (constant padding copies none).
Tensor pad_grad(const C& c) {
  const GradMeta& m = c.meta("self");
  Tensor g = c.grad();
  const int64_t numel = sym_product(m.sizes).guard_int();
  Tensor ids = arange(0, numel, 1, TensorOptions(kFloat64, g.device())).reshape(m.sizes);
  std::optional<double> fill;
  const std::string mode = c.arg("mode").str_value();
  if (mode == "constant") fill = -1.0;
  Tensor padded = pad(ids, c.arg("pad").int_list(), mode, fill);
  Tensor index = (padded + 1.0).to(kInt64).reshape({-1});
  Tensor flat = zeros({numel + 1}, options_of(g));
  Tensor summed = scatter_add(flat, 0, index, g.reshape({-1}));
  return summed.narrow(0, 1, numel).reshape(m.sizes);
}

Tensor repeat_grad(const C& c) {
  const SymIntList& in = c.meta("self").sizes;
  std::vector<int64_t> repeats = c.arg("repeats").to_int_list();
  const size_t lead = repeats.size() - in.size();
  SymIntList split;
  std::vector<int64_t> sum_dims;
  for (size_t d = 0; d < repeats.size(); ++d) {
    const int64_t size = d < lead ? 1 : in[d - lead].guard_int();
    sum_dims.push_back(static_cast<int64_t>(split.size()));
    split.push_back(repeats[d]);
    split.push_back(size);
  }
  Tensor g = c.grad().reshape(split);
  return sum(g, DimList(sum_dims), false).reshape(in);
}

// index_put's masked gradient for self: zero where values were written.
Tensor indexed_out(const Tensor& g, const std::vector<Tensor>& indices) {
  return index_put(g, indices, zeros({}, options_of(g)), false);
}

}  // namespace

void add_shape_rows(std::vector<DerivativeRow>& rows) {
  auto row = [&](OpId op, const char* saves, BackwardFormula f) { rows.push_back({op, saves, f}); };
  auto back_to_shape = [](C& c) { c.set("self", c.grad().reshape(c.meta("self").sizes)); };
  row(OpId::view, "", back_to_shape);
  row(OpId::squeeze_dims, "", back_to_shape);
  row(OpId::unsqueeze, "", back_to_shape);
  row(OpId::expand, "", [](C& c) { c.set("self", c.grad()); });  // the node sums it back to the input's sizes
  row(OpId::permute, "", [](C& c) {
    std::vector<int64_t> dims = c.arg("dims").to_int_list();
    const size_t rank = dims.size();
    std::vector<int64_t> inverse(rank);
    for (size_t d = 0; d < rank; ++d) inverse[norm_dim(dims[d], rank)] = static_cast<int64_t>(d);
    c.set("self", c.grad().permute(DimList(inverse)));
  });
  row(OpId::transpose_int, "", [](C& c) { c.set("self", c.grad().transpose(c.i("dim0"), c.i("dim1"))); });
  row(OpId::slice_Tensor, "", [](C& c) { c.set("self", slice_grad(c)); });
  row(OpId::select_int, "", [](C& c) { c.set("self", select_grad(c)); });
  row(OpId::as_strided, "self", [](C& c) { c.set("self", as_strided_grad(c)); });
  for (OpId op : {OpId::split_Tensor, OpId::split_with_sizes, OpId::chunk})
    row(op, "", [](C& c) { c.set("self", join_grads(c, norm_dim(c.i("dim"), c.meta("self").sizes.size()), false)); });
  row(OpId::unbind_int, "", [](C& c) {
    c.set("self", join_grads(c, norm_dim(c.i("dim"), c.meta("self").sizes.size()), true));
  });
  row(OpId::cat, "", [](C& c) {
    Tensor g = c.grad();
    const int64_t dim = norm_dim(c.i("dim"), g.dim());
    std::vector<Tensor> parts;
    int64_t at = 0;
    for (size_t k = 0; k < c.count("tensors"); ++k) {
      const GradMeta* m = &c.meta("tensors", k);
      // A legacy empty 1-D tensor joins nothing.
      if (m->sizes.size() == 1 && m->sizes[0].guard_int() == 0 && g.dim() != 1) {
        parts.push_back(zeros(m->sizes, options_of(g)));
        continue;
      }
      const int64_t len = m->sizes[dim].guard_int();
      parts.push_back(g.narrow(dim, at, len));
      at += len;
    }
    c.set_list("tensors", std::move(parts));
  });
  row(OpId::stack, "", [](C& c) {
    Tensor g = c.grad();
    c.set_list("tensors", unbind(g, norm_dim(c.i("dim"), g.dim())));
  });
  row(OpId::gather, "index", [](C& c) {
    const GradMeta& m = c.meta("self");
    c.set("self", scatter_add(zeros(m.sizes, options_of(c.grad())), c.i("dim"), c.t("index"), c.grad()));
  });
  row(OpId::scatter_src, "index", [](C& c) {
    Tensor index = c.t("index");
    if (c.needs("self")) c.set("self", scatter(c.grad(), c.i("dim"), index, Scalar(0.0)));
    if (c.needs("src")) c.set("src", gather(c.grad(), c.i("dim"), index));
  });
  row(OpId::scatter_value, "index", [](C& c) {
    c.set("self", scatter(c.grad(), c.i("dim"), c.t("index"), Scalar(0.0)));
  });
  row(OpId::scatter_add, "index", [](C& c) {
    c.set("self", c.grad());
    if (c.needs("src")) c.set("src", gather(c.grad(), c.i("dim"), c.t("index")));
  });
  row(OpId::index_select, "index", [](C& c) {
    const GradMeta& m = c.meta("self");
    const int64_t dim = norm_dim(c.i("dim"), m.sizes.size());
    std::vector<Tensor> indices(dim);
    indices.push_back(c.t("index").reshape({-1}));
    Tensor g = c.grad();
    if (m.sizes.empty()) return c.set("self", g.reshape({}));
    c.set("self", index_put(zeros(m.sizes, options_of(g)), indices, g, /*accumulate=*/true));
  });
  row(OpId::index_Tensor, "indices", [](C& c) {
    const GradMeta& m = c.meta("self");
    Tensor g = c.grad();
    c.set("self", index_put(zeros(m.sizes, options_of(g)), c.list("indices"), g, /*accumulate=*/true));
  });
  row(OpId::index_put, "indices", [](C& c) {
    std::vector<Tensor> indices = c.list("indices");
    Tensor g = c.grad();
    if (c.needs("self")) c.set("self", c.b("accumulate") ? g : indexed_out(g, indices));
    if (c.needs("values")) c.set("values", index(g, indices));
  });
  row(OpId::masked_select, "mask", [](C& c) {
    const GradMeta& m = c.meta("self");
    Tensor mask = c.t("mask"), g = c.grad();
    Tensor base = zeros(m.sizes, options_of(g)) + zeros_like(mask, g.dtype());  // the broadcast shape
    c.set("self", index_put(base, {mask.expand(base.sizes())}, g, /*accumulate=*/true));
  });
  row(OpId::tril, "", [](C& c) { c.set("self", tril(c.grad(), c.i("diagonal"))); });
  row(OpId::triu, "", [](C& c) { c.set("self", triu(c.grad(), c.i("diagonal"))); });
  row(OpId::pad, "", [](C& c) { c.set("self", pad_grad(c)); });
  row(OpId::repeat, "", [](C& c) { c.set("self", repeat_grad(c)); });
  row(OpId::roll, "", [](C& c) {
    SymIntList shifts;
    for (const SymInt& s : c.arg("shifts").int_list()) shifts.push_back(-s);
    c.set("self", roll(c.grad(), shifts, DimList(c.arg("dims").to_int_list())));
  });
  row(OpId::flip, "", [](C& c) { c.set("self", flip(c.grad(), DimList(c.arg("dims").to_int_list()))); });
}

}  // namespace sinter::autograd
