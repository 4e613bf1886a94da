// Scans: cumsum and cumprod along one dim. Floating scans accumulate in double (as PyTorch's CPU kernels do:
// a running sum has no pairwise trick), integer and bool scans in int64 with a default int64 result.
#include "ops/reduce_engine.h"
#include "ops/reduce_internal.h"

namespace sinter {

namespace {

using namespace reduce;

DType scan_dtype(const Tensor& self, const Value& dtype) {
  if (!dtype.is_none()) return dtype.dtype();
  return is_integral(self.dtype(), /*include_bool=*/true) ? kInt64 : self.dtype();
}

ShapeResult scan_shape(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  reduce_wrap_dim(a[1].to_int(), self.dim());
  return dense_meta(self.sizes(), scan_dtype(self, a[2]), self.device());
}

// Scans [O, N, I] (contiguous) into `out` of the same layout. C: the element type read, A: the accumulator.
template <bool kProd, class C, class A>
void scan(const ReducePlan& plan, const Tensor& out) {
  const int64_t O = plan.O, N = plan.R, I = plan.I;
  if (O * N * I == 0) return;
  const int64_t esz = static_cast<int64_t>(element_size(plan.dtype)),
                osz = static_cast<int64_t>(out.element_size());
  const LoadFn<C> load = load_fn<C>(plan.dtype);
  const StoreFn<A> store = store_fn<A>(out.dtype());
  char* obase = static_cast<char*>(out.data_ptr());
  auto step = [](A acc, C x) {
    return kProd ? mul<A>(acc, static_cast<A>(x)) : add<A>(acc, static_cast<A>(x));
  };
  // Converts a chunk in, scans it from `acc` into `ybuf`, writes it out (direct when the output is A
  // already).
  if (I == 1) {
    parallel_for(0, O, std::max<int64_t>(1, kGrainElementwise / N), [&](int64_t b, int64_t e) {
      C xbuf[kChunk];
      A ybuf[kChunk];
      for (int64_t o = b; o < e; ++o) {
        A acc = kProd ? A(1) : A(0);
        for (int64_t k = 0; k < N; k += kChunk) {
          const int64_t m = std::min(kChunk, N - k);
          const char* src = plan.data + (o * N + k) * esz;
          const C* x = reinterpret_cast<const C*>(src);
          if (load) {
            load(src, xbuf, m);
            x = xbuf;
          }
          char* dst = obase + (o * N + k) * osz;
          A* y = store ? ybuf : reinterpret_cast<A*>(dst);
          for (int64_t j = 0; j < m; ++j) y[j] = acc = step(acc, x[j]);
          if (store) store(ybuf, dst, m);
        }
      }
    });
    return;
  }
  const int64_t ntile = (I + kTile - 1) / kTile;
  parallel_for(0, O * ntile, std::max<int64_t>(1, kGrainElementwise / (N * std::min(I, kTile))),
               [&](int64_t b, int64_t e) {
                 const size_t tw = static_cast<size_t>(std::min(I, kTile));
                 std::vector<C> xbuf(load ? tw : 0);
                 std::vector<A> acc(tw), ybuf(store ? tw : 0);
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t o = t / ntile, i0 = (t % ntile) * kTile, w = std::min(kTile, I - i0);
                   for (int64_t j = 0; j < w; ++j) acc[j] = kProd ? A(1) : A(0);
                   for (int64_t r = 0; r < N; ++r) {
                     const int64_t off = (o * N + r) * I + i0;
                     const C* x = reinterpret_cast<const C*>(plan.data + off * esz);
                     if (load) {
                       load(plan.data + off * esz, xbuf.data(), w);
                       x = xbuf.data();
                     }
                     for (int64_t j = 0; j < w; ++j) acc[j] = step(acc[j], x[j]);
                     if (store) {
                       for (int64_t j = 0; j < w; ++j) ybuf[j] = acc[j];
                       store(ybuf.data(), obase + off * osz, w);
                     } else {
                       A* y = reinterpret_cast<A*>(obase + off * osz);
                       for (int64_t j = 0; j < w; ++j) y[j] = acc[j];
                     }
                   }
                 }
               });
}

void scan_kernel(OpId op, const Args& a, std::vector<Tensor>& outs) {
  Tensor self = a[0].tensor();
  const DType out_dtype = outs[0].dtype();
  // A dtype argument casts the input first, as in PyTorch.
  if (!a[2].is_none() && self.dtype() != out_dtype) self = self.to(out_dtype);
  ReducePlan plan = make_dim_plan(self, reduce_wrap_dim(a[1].to_int(), self.dim()));
  const bool prod = op == OpId::cumprod;
  visit_compute(self.dtype(), [&]<class C>() {
    using A = std::conditional_t<std::is_floating_point_v<C>, double, int64_t>;
    if (prod)
      scan<true, C, A>(plan, outs[0]);
    else
      scan<false, C, A>(plan, outs[0]);
  });
}

}  // namespace

void register_reduce_scan(OpTable& t) {
  t.set(OpId::cumsum, scan_shape, scan_kernel);
  t.set(OpId::cumprod, scan_shape, scan_kernel);
}

}  // namespace sinter
