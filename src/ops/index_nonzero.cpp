// nonzero and masked_select: outputs whose size depends on the data. Both count the hits per block of
// elements in parallel, take a prefix sum, then write each block's hits at its offset, so the result is in
// row-major order whatever the thread count. Boolean-mask indexing uses nonzero_coords from here too.
#include <fmt/format.h>

#include "ops/index_loop.h"
#include "ops/index_ops.h"
#include "ops/shape_util.h"

namespace sinter {
namespace {

template <class T>
bool is_nonzero(T v) {
  if constexpr (std::is_same_v<T, bool>) return v;
  else return static_cast<opmath_t<T>>(v) != 0;
}

// The walked shape with dims merged where the mask and the payload both step through memory as one dim would,
// so a contiguous mask is one flat row.
struct FlatShape {
  std::vector<int64_t> sizes, mask_strides, payload_strides;
};

FlatShape flatten_shape(const std::vector<int64_t>& sizes, const std::vector<int64_t>& ms,
                        const std::vector<int64_t>& ps) {
  FlatShape f;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (!f.sizes.empty() && f.mask_strides.back() == ms[d] * sizes[d] &&
        f.payload_strides.back() == ps[d] * sizes[d]) {
      f.sizes.back() *= sizes[d];
      f.mask_strides.back() = ms[d];
      f.payload_strides.back() = ps[d];
      continue;
    }
    f.sizes.push_back(sizes[d]);
    f.mask_strides.push_back(ms[d]);
    f.payload_strides.push_back(ps[d]);
  }
  if (f.sizes.empty()) f = {{1}, {0}, {0}};
  return f;
}

// Calls seg(pos, mask_off, payload_off, n) for the row segments covering row-major positions [p0, p1).
template <class Seg>
void for_each_segment(const FlatShape& f, int64_t p0, int64_t p1, Seg&& seg) {
  const int64_t nd = static_cast<int64_t>(f.sizes.size()), inner = f.sizes[nd - 1];
  std::vector<int64_t> coords(nd);
  int64_t rest = p0;
  for (int64_t d = nd - 1; d >= 0; --d) {
    coords[d] = rest % f.sizes[d];
    rest /= f.sizes[d];
  }
  for (int64_t pos = p0; pos < p1;) {
    int64_t moff = 0, poff = 0;
    for (int64_t d = 0; d < nd; ++d) {
      moff += coords[d] * f.mask_strides[d];
      poff += coords[d] * f.payload_strides[d];
    }
    const int64_t n = std::min(inner - coords[nd - 1], p1 - pos);
    seg(pos, moff, poff, n);
    pos += n;
    coords[nd - 1] = 0;
    for (int64_t d = nd - 2; d >= 0; --d) {
      if (++coords[d] < f.sizes[d]) break;
      coords[d] = 0;
    }
  }
}

// Counts the nonzero mask elements, calls alloc(total) once, then hit(out_pos, pos, payload_off) for each, where
// pos is the row-major position in `sizes`. Each task works on its own copy of `hit`, told where each block of
// positions starts (hit.begin_block(pos)) when it wants to know.
template <class M, class Alloc, class Hit>
void compact(const std::vector<int64_t>& sizes, const M* mask, const std::vector<int64_t>& mask_strides,
             const std::vector<int64_t>& payload_strides, Alloc&& alloc, Hit&& hit) {
  const FlatShape f = flatten_shape(sizes, mask_strides, payload_strides);
  const int64_t msi = f.mask_strides.back(), psi = f.payload_strides.back();
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const int64_t block = 65536, nblocks = (numel + block - 1) / block;
  std::vector<int64_t> counts(nblocks + 1, 0);
  parallel_for(0, nblocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t c = 0;
      for_each_segment(f, k * block, std::min(numel, (k + 1) * block), [&](int64_t, int64_t moff, int64_t, int64_t n) {
        const M* m = mask + moff;
        if (msi == 1) for (int64_t j = 0; j < n; ++j) c += is_nonzero(m[j]) ? 1 : 0;
        else for (int64_t j = 0; j < n; ++j) c += is_nonzero(m[j * msi]) ? 1 : 0;
      });
      counts[k + 1] = c;
    }
  });
  for (int64_t k = 0; k < nblocks; ++k) counts[k + 1] += counts[k];
  alloc(counts[nblocks]);
  if (counts[nblocks] == 0) return;
  parallel_for(0, nblocks, 1, [&](int64_t b, int64_t e) {
    std::remove_cvref_t<Hit> task_hit = hit;
    for (int64_t k = b; k < e; ++k) {
      int64_t out = counts[k];
      if (out == counts[k + 1]) continue;
      if constexpr (requires { task_hit.begin_block(k); }) task_hit.begin_block(k * block);
      for_each_segment(f, k * block, std::min(numel, (k + 1) * block),
                       [&](int64_t pos, int64_t moff, int64_t poff, int64_t n) {
                         for (int64_t j = 0; j < n; ++j)
                           if (is_nonzero(mask[moff + j * msi])) task_hit(out++, pos + j, poff + j * psi);
                       });
    }
  });
}

std::vector<int64_t> elem_strides_nonempty(const Tensor& t) {
  std::vector<int64_t> s;
  for (const SymInt& x : t.strides()) s.push_back(x.hint());
  if (s.empty()) s.push_back(0);
  return s;
}

std::vector<int64_t> sizes_nonempty(const Tensor& t) {
  std::vector<int64_t> s = size_hints(t);
  if (s.empty()) s.push_back(1);
  return s;
}

void set_output(std::vector<Tensor>& outs, Tensor t) {
  if (outs.empty()) outs.push_back(std::move(t));
  else outs[0] = std::move(t);
}

// Writes the row-major coordinates of each hit: one full division at the start of a block of positions, then
// carries as the positions grow within it.
struct CoordWriter {
  const int64_t* const* out;  // set by alloc, after the count
  const std::vector<int64_t>* sizes;
  int64_t nd = 0;
  std::vector<int64_t> c;
  int64_t prev = 0;

  void begin_block(int64_t pos) {
    c.assign(nd, 0);
    prev = pos;
    for (int64_t d = nd - 1; d >= 0; --d) {
      c[d] = pos % (*sizes)[d];
      pos /= (*sizes)[d];
    }
  }
  void operator()(int64_t i, int64_t pos, int64_t) {
    if (nd == 0) return;
    c[nd - 1] += pos - prev;
    prev = pos;
    for (int64_t d = nd - 1; d > 0 && c[d] >= (*sizes)[d]; --d) {
      c[d - 1] += c[d] / (*sizes)[d];
      c[d] %= (*sizes)[d];
    }
    int64_t* dst = const_cast<int64_t*>(*out) + i * nd;
    for (int64_t d = 0; d < nd; ++d) dst[d] = c[d];
  }
};

// Counts the nonzero elements of `t`, calls alloc(n) for an int64 buffer of n * t.dim() and fills it with their
// coordinates in row-major order. Returns n.
template <class Alloc>
int64_t write_nonzero(const Tensor& t, Alloc&& alloc) {
  if (t.numel().hint() == 0) {
    alloc(0);
    return 0;
  }
  const std::vector<int64_t> sizes = sizes_nonempty(t), strides = elem_strides_nonempty(t);
  const std::vector<int64_t> no_payload(sizes.size(), 0);
  int64_t count = 0;
  const int64_t* buffer = nullptr;
  CoordWriter writer{&buffer, &sizes, t.dim(), {}, 0};
  visit_dtype(t.dtype(), [&]<class T>() {
    compact(sizes, t.data_ptr<T>(), strides, no_payload, [&](int64_t n) {
      count = n;
      buffer = alloc(n);
    }, writer);
  });
  return count;
}

ShapeResult nonzero_shape(OpId, const Args&) { return ShapeResult::unknown(); }

void nonzero_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  Tensor out;
  write_nonzero(self, [&](int64_t n) {
    out = empty_from_meta(dense_meta({n, self.dim()}, kInt64, self.device()));
    return out.data_ptr<int64_t>();
  });
  set_output(outs, std::move(out));
}

ShapeResult masked_select_shape(OpId, const Args& args) {
  const Tensor& self = args[0].tensor();
  const Tensor& mask = args[1].tensor();
  common_device(args);
  SINTER_CHECK(mask.dtype() == kBool, "masked_select: expected BoolTensor for mask, got {}", dtype_name(mask.dtype()));
  broadcast_shapes(self.sizes(), mask.sizes());
  return ShapeResult::unknown();
}

// Strides of `t` seen at the broadcast shape `sizes` (0 along broadcast dims), scaled by `scale`.
std::vector<int64_t> broadcast_strides(const Tensor& t, const std::vector<int64_t>& sizes, int64_t scale) {
  std::vector<int64_t> out(sizes.size(), 0);
  const int64_t lead = static_cast<int64_t>(sizes.size()) - t.dim();
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d).hint() != 1) out[lead + d] = t.stride(d).hint() * scale;
  return out;
}

void masked_select_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& self = args[0].tensor();
  const Tensor& mask = args[1].tensor();
  std::vector<int64_t> sizes = broadcast_shapes(self.sizes(), mask.sizes()).hints();
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const int64_t es = static_cast<int64_t>(self.element_size());
  std::vector<int64_t> mstrides = broadcast_strides(mask, sizes, 1), pstrides = broadcast_strides(self, sizes, es);
  if (sizes.empty()) {
    sizes = {1};
    mstrides = pstrides = {0};
  }
  Tensor out;
  char* dst = nullptr;
  auto alloc = [&](int64_t n) {
    out = empty_from_meta(dense_meta({n}, self.dtype(), self.device()));
    dst = static_cast<char*>(out.data_ptr());
  };
  if (numel == 0) {
    alloc(0);
  } else {
    const char* src = static_cast<const char*>(self.data_ptr());
    visit_element_size(es, [&]<class E>() {
      compact(sizes, mask.data_ptr<bool>(), mstrides, pstrides, alloc, [&](int64_t out, int64_t, int64_t off) {
        reinterpret_cast<E*>(dst)[out] = *reinterpret_cast<const E*>(src + off);
      });
    });
  }
  set_output(outs, std::move(out));
}

}  // namespace

std::vector<int64_t> nonzero_coords(const Tensor& t, int64_t* count) {
  std::vector<int64_t> coords;
  *count = write_nonzero(t, [&](int64_t n) {
    coords.resize(n * t.dim());
    return coords.data();
  });
  return coords;
}

void register_nonzero_ops(OpTable& t) {
  t.set(OpId::nonzero, nonzero_shape, nonzero_kernel);
  t.set(OpId::masked_select, masked_select_shape, masked_select_kernel);
}

}  // namespace sinter
