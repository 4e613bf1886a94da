// einsum: parses the equation (letters, repeated indices, implicit or explicit '->' output, '...'
// broadcasting), takes diagonals as strided views, then contracts the operands left to right, each step a
// permute/reshape into one batched GEMM (matmul_into). A single operand is contracted with a scalar 1, so
// sums and permutations take the same path.
#include <algorithm>

#include "ops/linalg_util.h"

namespace sinter {
namespace {

constexpr int kLetters = 52;  // 'A'-'Z' are labels 0-25, 'a'-'z' 26-51; ellipsis dims come after

char label_char(int id) { return id < 26 ? static_cast<char>('A' + id) : static_cast<char>('a' + id - 26); }
std::string label_name(int id) { return id < kLetters ? std::string(1, label_char(id)) : "..."; }

struct Equation {
  std::vector<std::vector<int>> inputs;  // per operand, per dim: the label id
  std::vector<int> output;
  int num_labels = kLetters;
};

// One side of the arrow for one operand: label ids, with -1 marking the ellipsis.
std::vector<int> parse_term(const std::string& term, bool& has_ellipsis) {
  std::vector<int> out;
  has_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == '.') {
      SINTER_CHECK(term.compare(i, 3, "...") == 0,
                   "einsum(): found '.' that is not part of an ellipsis ('...')");
      SINTER_CHECK(!has_ellipsis, "einsum(): found more than one ellipsis ('...') in one term");
      has_ellipsis = true;
      out.push_back(-1);
      i += 2;
    } else if (c >= 'A' && c <= 'Z') {
      out.push_back(c - 'A');
    } else if (c >= 'a' && c <= 'z') {
      out.push_back(c - 'a' + 26);
    } else {
      SINTER_CHECK(false, "einsum(): invalid subscript '{}' (subscripts must be letters in [a-zA-Z])", c);
    }
  }
  return out;
}

Equation parse(const std::string& equation, const std::vector<Tensor>& ts) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  SINTER_CHECK(!ts.empty(), "einsum(): must provide at least one operand");
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  SINTER_CHECK(terms.size() == ts.size(), "einsum(): the equation has {} operands but {} tensors were given",
               terms.size(), ts.size());
  Equation e;
  // Ellipsis dims: as many as the operand with the most, right-aligned (they broadcast like a batch).
  std::vector<std::vector<int>> raw(ts.size());
  std::vector<int64_t> ellipsis_dims(ts.size(), 0);
  int64_t max_ellipsis = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    bool ell;
    raw[i] = parse_term(terms[i], ell);
    int64_t named = static_cast<int64_t>(raw[i].size()) - (ell ? 1 : 0);
    SINTER_CHECK(
        ell ? ts[i].dim() >= named : ts[i].dim() == named,
        "einsum(): the number of subscripts in the equation ({}) does not match the number of dimensions "
        "({}) for operand {}{}",
        named, ts[i].dim(), i, ell ? " and no ellipsis can cover the difference" : "");
    ellipsis_dims[i] = ell ? ts[i].dim() - named : 0;
    max_ellipsis = std::max(max_ellipsis, ellipsis_dims[i]);
  }
  e.num_labels = kLetters + static_cast<int>(max_ellipsis);
  std::vector<int> count(e.num_labels, 0);
  e.inputs.assign(ts.size(), {});
  for (size_t i = 0; i < ts.size(); ++i) {
    for (int id : raw[i]) {
      if (id >= 0) {
        e.inputs[i].push_back(id);
        ++count[id];
      } else {
        for (int64_t j = 0; j < ellipsis_dims[i]; ++j) {
          int eid = kLetters + static_cast<int>(max_ellipsis - ellipsis_dims[i] + j);
          e.inputs[i].push_back(eid);
          ++count[eid];
        }
      }
    }
  }
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis dims, then the letters used exactly once, in alphabetical order.
    for (int id = kLetters; id < e.num_labels; ++id) e.output.push_back(id);
    for (int id = 0; id < kLetters; ++id)
      if (count[id] == 1) e.output.push_back(id);
  } else {
    bool ell;
    std::vector<int> rhs = parse_term(eq.substr(arrow + 2), ell);
    std::vector<bool> seen(e.num_labels, false);
    for (int id : rhs) {
      if (id < 0) {
        for (int eid = kLetters; eid < e.num_labels; ++eid) e.output.push_back(eid);
        continue;
      }
      SINTER_CHECK(count[id] > 0,
                   "einsum(): output subscript {} does not appear in the equation for any input operand",
                   label_char(id));
      SINTER_CHECK(!seen[id], "einsum(): output subscript {} appears more than once in the output",
                   label_char(id));
      seen[id] = true;
      e.output.push_back(id);
    }
  }
  return e;
}

// Each label's size across operands: equal, or 1 where it broadcasts.
std::vector<SymInt> label_sizes(const Equation& e, const std::vector<Tensor>& ts) {
  std::vector<SymInt> size(e.num_labels, SymInt(1));
  std::vector<int> from(e.num_labels, -1);
  for (size_t i = 0; i < ts.size(); ++i) {
    for (size_t d = 0; d < e.inputs[i].size(); ++d) {
      int id = e.inputs[i][d];
      const SymInt& s = ts[i].sizes()[d];
      if (s == 1) continue;
      if (from[id] >= 0 && size[id] != s) {
        bool same_operand = from[id] == static_cast<int>(i);
        SINTER_CHECK(false, "einsum(): subscript {} has size {} for operand {}{} but size {} for operand {}",
                     label_name(id), size[id].str(), from[id], same_operand ? " (repeated)" : "", s.str(), i);
      }
      size[id] = s;
      from[id] = static_cast<int>(i);
    }
  }
  return size;
}

ShapeResult einsum_shape(OpId, const Args& args) {
  const std::vector<Tensor>& ts = args[1].tensor_list();
  Equation e = parse(args[0].str_value(), ts);
  std::vector<SymInt> size = label_sizes(e, ts);
  for (size_t i = 1; i < ts.size(); ++i)
    check_same_dtype(ts[0], ts[i], "operand 0", fmt::format("operand {}", i));
  SINTER_CHECK(ts[0].dtype() != kBool, "bool tensors are not supported (use an integer or floating dtype)");
  SymIntList out;
  for (int id : e.output) out.push_back(size[id]);
  return dense_meta(out, ts[0].dtype(), common_device(args));
}

// A tensor whose dims carry labels (unique within it).
struct Labeled {
  Tensor t;
  std::vector<int> labels;
  std::vector<int64_t> sizes, strides;
};

// Repeated labels of one operand become one dim whose stride is the sum of theirs (a diagonal view).
Labeled take_diagonals(const Tensor& t, const std::vector<int>& labels) {
  Labeled l{t, {}, {}, {}};
  std::vector<int64_t> sizes = sizes_of(t), strides = strides_of(t);
  for (size_t d = 0; d < labels.size(); ++d) {
    auto it = std::find(l.labels.begin(), l.labels.end(), labels[d]);
    if (it == l.labels.end()) {
      l.labels.push_back(labels[d]);
      l.sizes.push_back(sizes[d]);
      l.strides.push_back(strides[d]);
    } else {
      l.strides[it - l.labels.begin()] += strides[d];
    }
  }
  return l;
}

// Collapses dims `ds` of (sizes, strides) into one dim when memory allows; false otherwise.
bool collapse(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t& size,
              int64_t& stride) {
  size = 1, stride = 1;
  bool any = false;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (!any) {
      stride = strides[i];
      any = true;
    } else if (strides[i] != stride * size) {
      return false;
    }
    size *= sizes[i];
  }
  return true;
}

// A [groups...] view of `l` reordered as `order`, collapsed into one dim per group; a dense copy when the
// layout cannot be collapsed. Labels missing from `l` get stride 0 (broadcast), sizes come from `size`.
Tensor grouped(const Labeled& l, const std::vector<std::vector<int>>& groups,
               const std::vector<int64_t>& size, DType cd) {
  std::vector<int64_t> full_sizes, full_strides, gsizes, gstrides;
  std::vector<size_t> bounds;
  for (const auto& g : groups) {
    for (int id : g) {
      auto it = std::find(l.labels.begin(), l.labels.end(), id);
      full_sizes.push_back(size[id]);
      full_strides.push_back(
          it == l.labels.end() || l.sizes[it - l.labels.begin()] == 1 ? 0 : l.strides[it - l.labels.begin()]);
    }
    bounds.push_back(full_sizes.size());
  }
  Tensor view = strided_view(l.t, full_sizes, full_strides);
  auto try_collapse = [&](const std::vector<int64_t>& st) {
    gsizes.clear(), gstrides.clear();
    size_t start = 0;
    for (size_t end : bounds) {
      int64_t s, str;
      std::vector<int64_t> sz(full_sizes.begin() + start, full_sizes.begin() + end);
      std::vector<int64_t> sd(st.begin() + start, st.begin() + end);
      if (!collapse(sz, sd, s, str)) return false;
      gsizes.push_back(s);
      gstrides.push_back(str);
      start = end;
    }
    return true;
  };
  if (view.dtype() == cd && try_collapse(full_strides)) return strided_view(l.t, gsizes, gstrides);
  Tensor dense = contiguous_as(view, cd);
  SINTER_INTERNAL_ASSERT(try_collapse(strides_of(dense)), "einsum: dense copy does not collapse");
  return strided_view(dense, gsizes, gstrides);
}

bool contains(const std::vector<int>& v, int id) { return std::find(v.begin(), v.end(), id) != v.end(); }

// a (x) b summed over the labels not in `keep`: one batched GEMM [batch, left, sum] @ [batch, sum, right].
Labeled contract(const Labeled& a, const Labeled& b, const std::vector<bool>& keep,
                 const std::vector<int64_t>& size, DType cd) {
  std::vector<int> batch, left, sum, right;
  for (int id : a.labels) {
    if (!keep[id])
      sum.push_back(id);
    else if (contains(b.labels, id))
      batch.push_back(id);
    else
      left.push_back(id);
  }
  for (int id : b.labels) {
    if (contains(a.labels, id)) continue;
    if (keep[id])
      right.push_back(id);
    else
      sum.push_back(id);
  }
  Tensor A = grouped(a, {batch, left, sum}, size, cd);
  Tensor B = grouped(b, {batch, sum, right}, size, cd);
  std::vector<int64_t> as = sizes_of(A), bs = sizes_of(B);
  Tensor C = empty_from_meta(dense_meta({as[0], as[1], bs[2]}, cd, kCPU));
  matmul_into(A, B, C);
  Labeled out{C, {}, {}, {}};
  for (const auto* g : {&batch, &left, &right})
    for (int id : *g) out.labels.push_back(id), out.sizes.push_back(size[id]);
  out.strides = contiguous_strides(SymIntList(out.sizes)).hints();
  out.t = strided_view(C, out.sizes, out.strides);
  return out;
}

void einsum_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const std::vector<Tensor>& ts = args[1].tensor_list();
  Equation e = parse(args[0].str_value(), ts);
  std::vector<int64_t> size;
  for (const SymInt& s : label_sizes(e, ts)) size.push_back(s.hint());
  DType cd = compute_dtype(outs[0].dtype());

  std::vector<Labeled> ops;
  for (size_t i = 0; i < ts.size(); ++i) ops.push_back(take_diagonals(ts[i], e.inputs[i]));
  if (ops.size() == 1) {  // contract with a scalar 1, so sums, diagonals and permutations share the GEMM path
    Tensor one = empty_from_meta(dense_meta({}, cd, kCPU));
    visit_dtype(cd, [&]<class T>() { *one.data_ptr<T>() = T(1); });
    ops.push_back(Labeled{one, {}, {}, {}});
  }
  Labeled cur = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    // Keep a label while the output or a later operand still needs it.
    std::vector<bool> keep(e.num_labels, false);
    for (int id : e.output) keep[id] = true;
    for (size_t j = i + 1; j < ops.size(); ++j)
      for (int id : ops[j].labels) keep[id] = true;
    cur = contract(cur, ops[i], keep, size, cd);
  }
  // Permute into the output's order (every output label survived the contractions).
  std::vector<int64_t> sizes, strides;
  for (int id : e.output) {
    auto it = std::find(cur.labels.begin(), cur.labels.end(), id);
    SINTER_INTERNAL_ASSERT(it != cur.labels.end(), "einsum: output label lost");
    sizes.push_back(size[id]);
    strides.push_back(cur.strides[it - cur.labels.begin()]);
  }
  write_into(outs[0], strided_view(cur.t, sizes, strides));
}

}  // namespace

void register_einsum_ops(OpTable& t) { t.set(OpId::einsum, einsum_shape, einsum_kernel); }

}  // namespace sinter
