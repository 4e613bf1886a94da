// The custom ops of custom_ops_testing.h.
#include "custom_ops_testing.h"

#include <cmath>
#include <mutex>

#include "sinter/error.h"

namespace sinter::testing {

std::atomic<int> rms_gate_kernel_calls{0};
std::atomic<int> rms_gate_decomposed_kernel_calls{0};

namespace {

template <class T>
void rms_gate_rows(const Tensor& x, const Tensor& w, double eps, Tensor& out) {
  const int64_t d = x.dim() == 0 ? 1 : x.size(-1).hint(), rows = d == 0 ? 0 : x.numel().hint() / d;
  const T* xp = x.data_ptr<T>();
  const T* wp = w.data_ptr<T>();
  T* op = out.data_ptr<T>();
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(xp[r * d + i]) * xp[r * d + i];
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
    for (int64_t i = 0; i < d; ++i) op[r * d + i] = static_cast<T>(xp[r * d + i] * scale * wp[i]);
  }
}

std::vector<TensorMeta> rms_gate_shape(const library::OpArgs& a) {
  const Tensor& x = a.tensor("x");
  const Tensor& w = a.tensor("w");
  if (x.dim() < 1 || w.dim() != 1 || w.size(0) != x.size(-1) || x.dtype() != w.dtype())
    throw Error("rms_gate: x must be [..., D] and w [D], of one dtype");
  return {library::dense_meta(x)};
}

std::vector<Tensor> rms_gate_cpu(const library::OpArgs& a) {
  ++rms_gate_kernel_calls;
  Tensor x = a.tensor("x").contiguous(), w = a.tensor("w").contiguous();
  Tensor out = empty(x.sizes(), TensorOptions(x.dtype(), x.device()));  // on the simulated device, host memory
  if (x.dtype() == kFloat64) rms_gate_rows<double>(x, w, a["eps"].to_double(), out);
  else if (x.dtype() == kFloat32) rms_gate_rows<float>(x, w, a["eps"].to_double(), out);
  else out = rms_gate_reference(x, w, a["eps"].to_double());
  return {out};
}

// y = x * r * w with r = rsqrt(mean(x^2) + eps):
//   dx = r * (g * w) - x * r^3 * mean(g * w * x),  dw = sum over the leading dims of g * x * r.
std::vector<Tensor> rms_gate_backward(const std::vector<Tensor>& grads, const library::OpArgs& a) {
  const Tensor& x = a.tensor("x");
  const Tensor& w = a.tensor("w");
  const Tensor& g = grads[0];
  Tensor r = rsqrt(mean(x * x, {-1}, true) + a["eps"].to_double());
  Tensor gw = g * w;
  Tensor dx = r * gw - x * (r * r * r) * mean(gw * x, {-1}, true);
  Tensor dw = g * x * r;
  while (dw.dim() > 1) dw = sum(dw, {0});
  return {dx, dw};
}

}  // namespace

Tensor rms_gate_reference(const Tensor& x, const Tensor& w, double eps) {
  return x * rsqrt(mean(x * x, {-1}, true) + eps) * w;
}

void define_test_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    library::define("testlib::rms_gate(Tensor x, Tensor w, float eps=1e-6) -> Tensor",
                    {.shape = rms_gate_shape, .cpu = rms_gate_cpu, .backward = rms_gate_backward});
    library::define("testlib::rms_gate_decomposed(Tensor x, Tensor w, float eps=1e-6) -> Tensor",
                    {.shape = rms_gate_shape,
                     .cpu = [](const library::OpArgs& a) {
                       ++rms_gate_decomposed_kernel_calls;
                       return std::vector<Tensor>{rms_gate_reference(a.tensor("x"), a.tensor("w"), a["eps"].to_double())};
                     },
                     .decomposition = [](const library::OpArgs& a) {
                       return std::vector<Tensor>{rms_gate_reference(a.tensor("x"), a.tensor("w"), a["eps"].to_double())};
                     }});
    library::define("testlib::scale_shift(Tensor x, *, float scale=1.0, int shift=0) -> Tensor",
                    {.shape = [](const library::OpArgs& a) { return std::vector{library::dense_meta(a.tensor("x"))}; },
                     .cpu = [](const library::OpArgs& a) {
                       return std::vector<Tensor>{a.tensor("x") * a["scale"].to_double() + a["shift"].to_int()};
                     }});
  });
}

}  // namespace sinter::testing
