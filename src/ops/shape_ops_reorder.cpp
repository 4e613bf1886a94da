// flip, roll, repeat, tril and triu: ops that move elements to new places without computing on them. Each kernel
// is a few strided copies (a flipped view, the two halves of each rolled dim, a view with zero strides for
// repeats) or, for tril/triu, one pass over rows that copies the kept part and zeroes the rest.
#include <fmt/format.h>

#include <set>

#include "ops/index_loop.h"
#include "ops/index_ops.h"
#include "ops/shape_util.h"

namespace sinter {
namespace {

// ---- flip ----

std::vector<int64_t> unique_dims(const std::vector<int64_t>& dims, int64_t ndim) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim);
    SINTER_CHECK(seen.insert(w).second, "dim {} appears multiple times in the list of dims", w);
    out.push_back(w);
  }
  return out;
}

ShapeResult flip_shape(OpId, const Args& args) {
  const Tensor& self = args[0].tensor();
  unique_dims(args[1].to_int_list(), self.dim());
  return dense_meta_like(self.sizes(), self.dtype(), self);
}

void flip_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  if (self.numel().hint() == 0) return;
  // Reading from the last element of each flipped dim with a negated stride is a flipped view.
  StridedRef src = strided_ref(self);
  // A 0-dim tensor accepts dims 0 and -1, which name its one element: flipping it is a copy.
  const std::vector<int64_t> dims =
      self.dim() == 0 ? std::vector<int64_t>{} : unique_dims(args[1].to_int_list(), self.dim());
  for (int64_t d : dims) {
    src.data += (src.sizes[d] - 1) * src.strides[d];
    src.strides[d] = -src.strides[d];
  }
  copy_ref(strided_ref(outs[0]), src);
}

// ---- roll ----

ShapeResult roll_shape(OpId, const Args& args) {
  const Tensor& self = args[0].tensor();
  const SymIntList& shifts = args[1].int_list();
  const std::vector<int64_t> dims = args[2].to_int_list();
  if (dims.empty()) {
    SINTER_CHECK(shifts.size() == 1, "shifts and dimensions must align. shifts: {}, dims:{}", shifts.size(),
                 dims.size());
  } else {
    SINTER_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: {}, dims:{}",
                 shifts.size(), dims.size());
    // PyTorch takes the size of each rolled dim, which a 0-dim tensor does not have (only a flat roll, without
    // dims, applies to it).
    SINTER_CHECK(self.dim() > 0, "roll(): dimension specified as {} but tensor has no dimensions", dims[0]);
    for (int64_t d : dims) wrap_dim(d, self.dim());
  }
  return dense_meta(self.sizes(), self.dtype(), self.device());
}

void roll_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  const Tensor& out = outs[0];
  const int64_t numel = self.numel().hint();
  if (numel == 0) return;
  const std::vector<int64_t> shifts = args[1].to_int_list(), dims = args[2].to_int_list();
  if (dims.empty()) {
    // Without dims the tensor is rolled as if flattened: two contiguous pieces of the flat order.
    const Tensor flat = self.is_contiguous() ? self : contiguous_copy(self);
    const int64_t s = SymInt::pymod(shifts[0], numel), es = static_cast<int64_t>(self.element_size());
    char* o = static_cast<char*>(out.data_ptr());
    char* f = static_cast<char*>(flat.data_ptr());
    std::vector<CopyJob> jobs;
    if (numel - s > 0) jobs.push_back({{o + s * es, {numel - s}, {es}, out.dtype()}, {f, {numel - s}, {es}, out.dtype()}});
    if (s > 0) jobs.push_back({{o, {s}, {es}, out.dtype()}, {f + (numel - s) * es, {s}, {es}, out.dtype()}});
    copy_refs(jobs);
    return;
  }
  // Shifts of a repeated dim add up. Each rolled dim splits into two ranges, so 2^k strided copies in all.
  std::vector<int64_t> shift(self.dim(), 0);
  for (size_t i = 0; i < dims.size(); ++i) shift[wrap_dim(dims[i], self.dim())] += shifts[i];
  const StridedRef src = strided_ref(self), dst = strided_ref(out);
  std::vector<int64_t> rolled;
  for (int64_t d = 0; d < self.dim(); ++d) {
    shift[d] = SymInt::pymod(shift[d], src.sizes[d]);
    if (shift[d] != 0) rolled.push_back(d);
  }
  std::vector<CopyJob> jobs;
  for (uint64_t mask = 0; mask < (uint64_t{1} << rolled.size()); ++mask) {
    StridedRef s = src, o = dst;
    for (size_t j = 0; j < rolled.size(); ++j) {
      const int64_t d = rolled[j], n = src.sizes[d], k = shift[d];
      if (mask >> j & 1) {  // out[0, k) <- in[n - k, n)
        s.data += (n - k) * s.strides[d];
        s.sizes[d] = o.sizes[d] = k;
      } else {              // out[k, n) <- in[0, n - k)
        o.data += k * o.strides[d];
        s.sizes[d] = o.sizes[d] = n - k;
      }
    }
    jobs.push_back({o, s});
  }
  copy_refs(jobs);
}

// ---- repeat ----

ShapeResult repeat_shape(OpId, const Args& args) {
  const Tensor& self = args[0].tensor();
  const SymIntList& repeats = args[1].int_list();
  SINTER_CHECK(static_cast<int64_t>(repeats.size()) >= self.dim(),
               "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  const int64_t lead = static_cast<int64_t>(repeats.size()) - self.dim();
  SymIntList sizes;
  for (size_t i = 0; i < repeats.size(); ++i) {
    SINTER_CHECK(repeats[i] >= 0, "Trying to create tensor with negative dimension {}: {}", repeats[i].str(),
                 repeats.str());
    const int64_t d = static_cast<int64_t>(i) - lead;
    sizes.push_back(d < 0 ? repeats[i] : repeats[i] * self.size(d));
  }
  return dense_meta(sizes, self.dtype(), self.device());
}

void repeat_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  const Tensor& out = outs[0];
  if (out.numel().hint() == 0) return;
  const std::vector<int64_t> repeats = args[1].to_int_list();
  const StridedRef s = strided_ref(self), o = strided_ref(out);
  const int64_t lead = static_cast<int64_t>(repeats.size()) - self.dim();
  // Out viewed as [r0, n0, r1, n1, ...]: the repeat dims read the same source (stride 0).
  StridedRef src{s.data, {}, {}, s.dtype}, dst{o.data, {}, {}, o.dtype};
  for (size_t i = 0; i < repeats.size(); ++i) {
    const int64_t d = static_cast<int64_t>(i) - lead;
    const int64_t n = d < 0 ? 1 : s.sizes[d], ss = d < 0 ? 0 : s.strides[d];
    dst.sizes.insert(dst.sizes.end(), {repeats[i], n});
    dst.strides.insert(dst.strides.end(), {n * o.strides[i], o.strides[i]});
    src.sizes.insert(src.sizes.end(), {repeats[i], n});
    src.strides.insert(src.strides.end(), {0, ss});
  }
  copy_ref(dst, src);
}

// ---- tril / triu ----

ShapeResult tri_shape(OpId op, const Args& args) {
  const Tensor& self = args[0].tensor();
  SINTER_CHECK(self.dim() >= 2, "{}: input tensor must have at least 2 dimensions", op == OpId::tril ? "tril" : "triu");
  return dense_meta(self.sizes(), self.dtype(), self.device());
}

void tri_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  const Tensor& out = outs[0];
  if (out.numel().hint() == 0) return;
  const bool lower = op == OpId::tril;
  const int64_t diagonal = args[1].to_int();
  const StridedRef s = strided_ref(self), o = strided_ref(out);
  const int64_t nd = self.dim(), rows = s.sizes[nd - 2], cols = s.sizes[nd - 1];
  const int64_t batch_nd = nd - 2, total_rows = out.numel().hint() / cols;
  const size_t es = self.element_size();
  visit_element_size(es, [&]<class E>() {
    parallel_for(0, total_rows, std::max<int64_t>(1, kGrainElementwise / cols), [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const int64_t batch = q / rows, i = q % rows;
        const char* sp = s.data + offset_of(batch, s.sizes.data(), s.strides.data(), batch_nd) + i * s.strides[nd - 2];
        char* op_ = o.data + offset_of(batch, o.sizes.data(), o.strides.data(), batch_nd) + i * o.strides[nd - 2];
        // tril keeps columns j <= i + diagonal, triu keeps j >= i + diagonal; the rest is zero (all bits clear
        // is zero in every dtype).
        const int64_t keep_begin = lower ? 0 : std::clamp<int64_t>(i + diagonal, 0, cols);
        const int64_t keep_end = lower ? std::clamp<int64_t>(i + diagonal + 1, 0, cols) : cols;
        const int64_t ss = s.strides[nd - 1], os = o.strides[nd - 1];
        CopyRow<E>{}(op_ + keep_begin * os, os, sp + keep_begin * ss, ss, keep_end - keep_begin);
        auto zero = [&](int64_t j0, int64_t j1) {
          if (os == static_cast<int64_t>(es)) std::memset(op_ + j0 * os, 0, (j1 - j0) * es);
          else for (int64_t j = j0; j < j1; ++j) std::memset(op_ + j * os, 0, es);
        };
        if (keep_begin > 0) zero(0, keep_begin);
        if (keep_end < cols) zero(keep_end, cols);
      }
    });
  });
}

}  // namespace

void register_reorder_ops(OpTable& t) {
  t.set(OpId::flip, flip_shape, flip_kernel);
  t.set(OpId::roll, roll_shape, roll_kernel);
  t.set(OpId::repeat, repeat_shape, repeat_kernel);
  t.set(OpId::tril, tri_shape, tri_kernel);
  t.set(OpId::triu, tri_shape, tri_kernel);
}

}  // namespace sinter
