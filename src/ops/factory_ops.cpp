// Factories (empty, zeros, ones, full, arange, linspace, eye) and the random ops. Random numbers come from the
// counter-based Philox generator: element i of a draw uses counter `first + i`, so the work splits freely across
// threads and generated code can reproduce a draw from (seed, first) alone.
#include <cmath>
#include <optional>

#include "ops/copy.h"
#include "ops/kernel_util.h"
#include "ops/shape_util.h"
#include "tensor/cuda_device.h"
#include "tensor/generator.h"

namespace sinter {
namespace {

DType dtype_arg(const Value& v, DType fallback) { return v.is_none() ? fallback : v.dtype(); }
Device device_arg(const Value& v) { return v.is_none() ? kCPU : v.device(); }

TensorMeta factory_meta(const SymIntList& size, DType dtype, Device device) {
  for (const SymInt& s : size) SINTER_CHECK(s >= 0, "sizes must be non-negative, got {}", size.str());
  return dense_meta(size, dtype, device);
}

// empty.memory_format(size, dtype, device, memory_format); zeros/ones/rand/randn(size, dtype, device).
ShapeResult sized_rule(OpId op, const Args& a) {
  DType dtype = dtype_arg(a[1], kFloat32);
  if (op == OpId::rand || op == OpId::randn)
    SINTER_CHECK(is_floating(dtype), "{} needs a floating dtype, got {}", op == OpId::rand ? "rand" : "randn",
                 dtype_name(dtype));
  TensorMeta m = factory_meta(a[0].int_list(), dtype, device_arg(a[2]));
  if (op == OpId::empty && !a[3].is_none() && a[3].memory_format() == MemoryFormat::kChannelsLast) {
    SINTER_CHECK(m.sizes.size() == 4, "channels_last needs 4 sizes, got {}", m.sizes.str());
    m.strides = contiguous_strides(m.sizes, MemoryFormat::kChannelsLast);
  }
  return m;
}

void empty_kernel(OpId, const Args&, std::vector<Tensor>&) {}
void zeros_kernel(OpId, const Args&, std::vector<Tensor>& outs) { fill_strided(outs[0], Scalar(0)); }
// zeros on a CUDA device: one memset of the (dense) output in stream order.
void zeros_cuda_kernel(OpId, const Args&, std::vector<Tensor>& outs) {
  const Tensor& o = outs[0];
  cuda::zero_async(o.data_ptr(), static_cast<size_t>(o.numel().hint()) * o.element_size(), o.device().index);
}
void ones_kernel(OpId, const Args&, std::vector<Tensor>& outs) { fill_strided(outs[0], Scalar(1)); }

ShapeResult full_rule(OpId, const Args& a) {
  return factory_meta(a[0].int_list(), dtype_arg(a[2], a[1].scalar().default_dtype()), device_arg(a[3]));
}
void full_kernel(OpId, const Args& a, std::vector<Tensor>& outs) { fill_strided(outs[0], a[1].scalar()); }

int64_t arange_length(const Scalar& start, const Scalar& end, const Scalar& step) {
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  SINTER_CHECK(st != 0, "arange step must be nonzero");
  SINTER_CHECK(std::isfinite(s) && std::isfinite(e), "arange bounds must be finite, got {} and {}", s, e);
  SINTER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "arange: upper bound {} and step {} are inconsistent with "
               "start {}", end.str(), step.str(), start.str());
  if (start.is_integral() && end.is_integral() && step.is_integral()) {
    int64_t a = start.to_int(), b = end.to_int(), c = step.to_int();
    return c > 0 ? (b - a + c - 1) / c : (a - b - c - 1) / -c;
  }
  return static_cast<int64_t>(std::ceil((e - s) / st));
}

// arange's length when a bound is a symbolic integer (a size read under capture): an expression of it, so the
// graph serves every length. The step is specialised (a guard) when symbolic: it decides the formula.
std::optional<SymInt> symbolic_arange_length(const Args& a) {
  bool any_symbolic = false;
  for (int i = 0; i < 3; ++i) any_symbolic = any_symbolic || (a[i].is_int() && a[i].sym_int().is_symbolic());
  if (!any_symbolic) return std::nullopt;
  auto as_sym = [&](const Value& v, const char* name) {
    if (v.is_int()) return v.sym_int();
    Scalar s = v.scalar();
    SINTER_CHECK(s.is_integral(), "arange: {} is {} while another bound is a symbolic size; give integer bounds",
                 name, s.str());
    return SymInt(s.to_int());
  };
  SymInt start = as_sym(a[0], "start"), end = as_sym(a[1], "end");
  int64_t step = static_cast<int64_t>(as_sym(a[2], "step"));
  SINTER_CHECK(step != 0, "arange step must be nonzero");
  SINTER_CHECK(step > 0 ? end >= start : end <= start,
               "arange: upper bound {} and step {} are inconsistent with start {}", end.str(), step, start.str());
  // Both numerators are >= 0 here, so floor division is the ceiling PyTorch takes.
  return step > 0 ? (end - start + (step - 1)) / step : (start - end + (-step - 1)) / (-step);
}

ShapeResult arange_rule(OpId, const Args& a) {
  if (std::optional<SymInt> n = symbolic_arange_length(a))
    return factory_meta({*n}, dtype_arg(a[3], kInt64), device_arg(a[4]));
  Scalar start = a[0].scalar(), end = a[1].scalar(), step = a[2].scalar();
  bool all_int = !start.is_floating() && !end.is_floating() && !step.is_floating();
  DType dtype = dtype_arg(a[3], all_int ? kInt64 : kFloat32);
  return factory_meta({arange_length(start, end, step)}, dtype, device_arg(a[4]));
}

void arange_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  Scalar start = a[0].scalar(), step = a[2].scalar();
  const Tensor& out = outs[0];
  int64_t n = out.numel().hint();
  visit_dtype(out.dtype(), [&]<class T>() {
    T* p = out.data_ptr<T>();
    if (is_floating(out.dtype())) {
      double s = start.to_double(), st = step.to_double();
      parallel_for(0, n, kGrainElementwise, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = cast_to<T>(s + st * static_cast<double>(i));
      });
    } else {
      int64_t s = start.to_int(), st = step.to_int();
      if (start.is_floating() || step.is_floating()) {
        double ds = start.to_double(), dst = step.to_double();
        for (int64_t i = 0; i < n; ++i) p[i] = cast_to<T>(ds + dst * static_cast<double>(i));
      } else {
        for (int64_t i = 0; i < n; ++i) p[i] = cast_to<T>(s + st * i);
      }
    }
  });
}

ShapeResult linspace_rule(OpId, const Args& a) {
  const SymInt& steps = a[2].sym_int();
  SINTER_CHECK(steps >= 0, "number of steps must be non-negative, got {}", steps.str());
  return factory_meta({steps}, dtype_arg(a[3], kFloat32), device_arg(a[4]));
}

void linspace_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  double s = a[0].scalar().to_double(), e = a[1].scalar().to_double();
  const Tensor& out = outs[0];
  int64_t n = out.numel().hint();
  double step = n > 1 ? (e - s) / static_cast<double>(n - 1) : 0;
  visit_dtype(out.dtype(), [&]<class T>() {
    T* p = out.data_ptr<T>();
    // Symmetric formula (from both ends), as PyTorch, so the last element is exactly `end`.
    int64_t half = n / 2;
    for (int64_t i = 0; i < n; ++i)
      p[i] = cast_to<T>(i < half ? s + step * static_cast<double>(i) : e - step * static_cast<double>(n - 1 - i));
  });
}

ShapeResult eye_rule(OpId, const Args& a) {
  return factory_meta({a[0].sym_int(), a[1].sym_int()}, dtype_arg(a[2], kFloat32), device_arg(a[3]));
}

void eye_kernel(OpId, const Args&, std::vector<Tensor>& outs) {
  const Tensor& out = outs[0];
  fill_strided(out, Scalar(0));
  int64_t n = out.sizes()[0].hint(), m = out.sizes()[1].hint();
  visit_dtype(out.dtype(), [&]<class T>() {
    T* p = out.data_ptr<T>();
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = cast_to<T>(int64_t{1});
  });
}

// Fills `out` (any strides) with f(counter) for element i in row-major order, counter = first + i.
template <class F>
void fill_random(const Tensor& out, F&& f) {
  int64_t n = out.numel().hint();
  if (n == 0) return;
  uint64_t seed = default_generator().seed();
  uint64_t first = default_generator().reserve(static_cast<uint64_t>(n));
  Tensor dst = out.is_contiguous() ? out : empty_from_meta(dense_meta(out.sizes(), out.dtype(), out.device()));
  visit_dtype(dst.dtype(), [&]<class T>() {
    T* p = dst.data_ptr<T>();
    parallel_for(0, n, kGrainElementwise / 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = cast_to<T>(f(seed, first + static_cast<uint64_t>(i)));
    });
  });
  if (!dst.is_same(out)) copy_strided(out, dst);
}

double uniform01(const Tensor& out, uint64_t seed, uint64_t i) {
  return out.dtype() == kFloat64 ? philox_uniform_double(seed, i) : philox_uniform(seed, i);
}

void rand_kernel(OpId, const Args&, std::vector<Tensor>& outs) {
  const Tensor& out = outs[0];
  fill_random(out, [&](uint64_t s, uint64_t i) { return uniform01(out, s, i); });
}

void randn_kernel(OpId, const Args&, std::vector<Tensor>& outs) {
  fill_random(outs[0], [](uint64_t s, uint64_t i) { return philox_normal(s, i); });
}

ShapeResult randint_rule(OpId, const Args& a) {
  SINTER_CHECK(a[0].sym_int() < a[1].sym_int(), "randint: low ({}) must be less than high ({})",
               a[0].sym_int().str(), a[1].sym_int().str());
  return factory_meta(a[2].int_list(), dtype_arg(a[3], kInt64), device_arg(a[4]));
}

void randint_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  int64_t low = a[0].to_int(), range = a[1].to_int() - low;
  fill_random(outs[0], [&](uint64_t s, uint64_t i) {
    int64_t r = static_cast<int64_t>(philox_uniform_double(s, i) * static_cast<double>(range));
    return low + std::min(r, range - 1);
  });
}

ShapeResult normal_rule(OpId, const Args& a) {
  SINTER_CHECK(a[1].to_double() >= 0, "normal expects std >= 0, got {}", a[1].to_double());
  DType dtype = dtype_arg(a[3], kFloat32);
  SINTER_CHECK(is_floating(dtype), "normal needs a floating dtype, got {}", dtype_name(dtype));
  return factory_meta(a[2].int_list(), dtype, device_arg(a[4]));
}

void normal_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  double mean = a[0].to_double(), std = a[1].to_double();
  fill_random(outs[0], [&](uint64_t s, uint64_t i) { return mean + std * philox_normal(s, i); });
}

ShapeResult bernoulli_rule(OpId, const Args& a) {
  double p = a[1].to_double();
  SINTER_CHECK(p >= 0 && p <= 1, "bernoulli expects 0 <= p <= 1, got {}", p);
  const Tensor& self = a[0].tensor();
  return dense_meta_like(self.sizes(), self.dtype(), self);
}

void bernoulli_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  double p = a[1].to_double();
  fill_random(outs[0], [&](uint64_t s, uint64_t i) { return philox_uniform_double(s, i) < p ? 1.0 : 0.0; });
}

ShapeResult uniform_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  SINTER_CHECK(is_floating(self.dtype()), "uniform_ needs a floating tensor, got {}", dtype_name(self.dtype()));
  SINTER_CHECK(a[1].to_double() <= a[2].to_double(), "uniform_ expects from <= to, got from={} to={}",
               a[1].to_double(), a[2].to_double());
  return self.meta();
}

void uniform_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  const Tensor& out = outs[0];
  double from = a[1].to_double(), to = a[2].to_double();
  fill_random(out, [&](uint64_t s, uint64_t i) { return from + (to - from) * uniform01(out, s, i); });
}

ShapeResult normal_inplace_rule(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  SINTER_CHECK(is_floating(self.dtype()), "normal_ needs a floating tensor, got {}", dtype_name(self.dtype()));
  SINTER_CHECK(a[2].to_double() >= 0, "normal_ expects std >= 0, got {}", a[2].to_double());
  return self.meta();
}

void normal_inplace_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  double mean = a[1].to_double(), std = a[2].to_double();
  fill_random(outs[0], [&](uint64_t s, uint64_t i) { return mean + std * philox_normal(s, i); });
}

}  // namespace

void register_factory_ops(OpTable& t) {
  t.set(OpId::empty, sized_rule, empty_kernel);
  t.set(OpId::zeros, sized_rule, zeros_kernel);
  t.set(OpId::ones, sized_rule, ones_kernel);
  t.set_kernel(OpId::empty, kCUDA, empty_kernel);
  t.set_kernel(OpId::zeros, kCUDA, zeros_cuda_kernel);
  t.set(OpId::full, full_rule, full_kernel);
  t.set(OpId::arange, arange_rule, arange_kernel);
  t.set(OpId::linspace, linspace_rule, linspace_kernel);
  t.set(OpId::eye, eye_rule, eye_kernel);
  t.set(OpId::rand, sized_rule, rand_kernel);
  t.set(OpId::randn, sized_rule, randn_kernel);
  t.set(OpId::randint, randint_rule, randint_kernel);
  t.set(OpId::normal, normal_rule, normal_kernel);
  t.set(OpId::bernoulli_p, bernoulli_rule, bernoulli_kernel);
  t.set(OpId::uniform_, uniform_rule, uniform_kernel);
  t.set(OpId::normal_, normal_inplace_rule, normal_inplace_kernel);
}

}  // namespace sinter
