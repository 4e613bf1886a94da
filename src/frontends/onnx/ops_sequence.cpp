// Sequence operators, resolved while importing: a sequence is a list of the values it holds (Val::seq), so
// SequenceConstruct/Empty/Insert/Erase/At, SplitToSequence and ConcatFromSequence become plain tensor ops on its
// elements (or nothing at all), and SequenceLength is a constant. Positions and split sizes are read on the
// host: constants and initializers cost nothing; values computed from graph inputs are read like Reshape's
// computed shape (a graph break under compile()). Sequences that are graph inputs or outputs, or cross into or
// out of a subgraph's declared inputs/outputs, are unsupported (load() and the executor say so).
#include <fmt/format.h>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

using Items = std::vector<Val>;

// A position in [-n, n - 1] (or [-n, n] for inserting), as ONNX's sequence operators take it.
int64_t position(NodeCtx& c, size_t input, int64_t n, bool insert) {
  int64_t p = c.int_at(input);
  int64_t hi = insert ? n : n - 1;
  if (p < -n || p > hi)
    c.fail(fmt::format("position {} is out of range [{}, {}] for a sequence of {} tensors", p, -n, hi, n));
  return p < 0 ? p + n : p;
}

std::vector<Tensor> seq_out(NodeCtx& c, Items items) {
  c.set_seq_out(0, std::move(items));
  return {Tensor()};
}

std::vector<Tensor> sequence_construct(NodeCtx& c) {
  Items items;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const Tensor& t = c.in(i);
    if (!items.empty() && items[0].t.dtype() != t.dtype())
      c.fail(fmt::format("input {} is {}, input 0 {}: a sequence holds one dtype", i, dtype_name(t.dtype()),
                         dtype_name(items[0].t.dtype())));
    items.push_back(c.val(i));
  }
  return seq_out(c, std::move(items));
}

std::vector<Tensor> sequence_insert(NodeCtx& c) {
  Items items = c.seq(0);
  const Tensor& t = c.in(1);
  if (!items.empty() && items[0].t.dtype() != t.dtype())
    c.fail(fmt::format("inserts {} into a sequence of {}", dtype_name(t.dtype()), dtype_name(items[0].t.dtype())));
  int64_t n = static_cast<int64_t>(items.size());
  int64_t p = c.has(2) ? position(c, 2, n, true) : n;
  items.insert(items.begin() + p, c.val(1));
  return seq_out(c, std::move(items));
}

std::vector<Tensor> sequence_erase(NodeCtx& c) {
  Items items = c.seq(0);
  int64_t n = static_cast<int64_t>(items.size());
  if (n == 0) c.fail("erases from an empty sequence");
  int64_t p = c.has(1) ? position(c, 1, n, false) : n - 1;
  items.erase(items.begin() + p);
  return seq_out(c, std::move(items));
}

std::vector<Tensor> sequence_at(NodeCtx& c) {
  const Items& items = c.seq(0);
  int64_t n = static_cast<int64_t>(items.size());
  if (n == 0) c.fail("reads from an empty sequence");
  const Val& v = items[position(c, 1, n, false)];
  if (v.type != 0) c.set_out_type(0, v.type);
  return {v.t};
}

// SplitToSequence: no split gives pieces of 1 along axis (squeezed unless keepdims); a scalar split gives pieces
// of that size (the last one shorter); a 1-D split gives those sizes.
std::vector<Tensor> split_to_sequence(NodeCtx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = norm_axis(c.attr_int("axis", 0), x.dim(), c);
  int64_t len = static_cast<int64_t>(x.size(axis));
  std::vector<int64_t> sizes;
  bool squeeze_axis = false;
  if (!c.has(1)) {
    sizes.assign(static_cast<size_t>(len), 1);
    squeeze_axis = c.attr_int("keepdims", 1) == 0;
  } else if (c.in(1).dim() == 0) {
    int64_t chunk = c.int_at(1);
    if (chunk <= 0) c.fail(fmt::format("split {} must be positive", chunk));
    for (int64_t at = 0; at < len; at += chunk) sizes.push_back(std::min(chunk, len - at));
  } else {
    if (c.in(1).dim() != 1) c.fail("split must be a scalar or 1-D");
    sizes = c.ints(1);
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) c.fail(fmt::format("split sizes must not be negative, got {}", s));
      total += s;
    }
    if (total != len) c.fail(fmt::format("split sizes sum to {}, but axis {} has {} elements", total, axis, len));
  }
  Items items;
  int64_t start = 0;
  for (int64_t s : sizes) {
    Tensor piece = narrow(x, axis, start, s);
    if (squeeze_axis) piece = squeeze(piece, DimList{axis});
    items.push_back(Val{piece, c.known(0), emulated_type(c.type(0)) ? c.type(0) : 0});
    start += s;
  }
  return seq_out(c, std::move(items));
}

// ConcatFromSequence: cat along axis, or stack into a new axis (axis in [-r-1, r]) with new_axis=1.
std::vector<Tensor> concat_from_sequence(NodeCtx& c) {
  const Items& items = c.seq(0);
  if (items.empty()) c.fail("concatenates an empty sequence");
  if (!c.has_attr("axis")) c.fail("attribute 'axis' is required");
  bool new_axis = c.attr_int("new_axis", 0) != 0;
  std::vector<Tensor> ts;
  for (const Val& v : items) ts.push_back(v.t);
  int64_t rank = ts[0].dim() + (new_axis ? 1 : 0);
  int64_t axis = norm_axis(c.attr_int("axis", 0), rank, c);
  if (items[0].type != 0) c.set_out_type(0, items[0].type);
  return {new_axis ? stack(ts, axis) : cat(ts, axis)};
}

}  // namespace

void register_sequence_ops(OpTable& t) {
  t["SequenceEmpty"] = {[](NodeCtx& c) { return seq_out(c, {}); }};
  t["SequenceConstruct"] = {sequence_construct};
  t["SequenceInsert"] = {sequence_insert};
  t["SequenceErase"] = {sequence_erase};
  t["SequenceAt"] = {sequence_at};
  // The length is known whatever the elements hold.
  t["SequenceLength"] = {[](NodeCtx& c) {
    int64_t n = static_cast<int64_t>(c.seq(0).size());
    return std::vector<Tensor>{on_host([&] { return scalar_tensor(Scalar(n), kInt64); })};
  }, false, false, true};
  t["SplitToSequence"] = {split_to_sequence};
  t["ConcatFromSequence"] = {concat_from_sequence};
}

}  // namespace sinter::onnx
