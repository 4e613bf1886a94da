// The parameter-free layers (dropout, activations, Flatten, pooling) and the containers (ModuleList,
// Sequential). Each forward is one call of the functional op; the containers name their members "0", "1", ...
// as PyTorch.
#include <fmt/format.h>

#include "nn/util.h"
#include "sinter/nn.h"
#include "support/check.h"

namespace sinter::nn {

namespace {
// An int when every entry is the same (MaxPool2d(2) prints kernel_size=2), else a tuple.
std::string int_or_tuple(const std::vector<int64_t>& v) {
  for (int64_t e : v)
    if (e != v[0]) return py_tuple(v);
  return v.empty() ? "()" : std::to_string(v[0]);
}
}  // namespace

// ---- dropout and activations ----
Dropout::Dropout(double p_) : p(p_) {
  SINTER_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got {}", p);
}
Tensor Dropout::forward(const Tensor& input) { return dropout(input, p, is_training(), call_site()); }
std::string Dropout::extra_repr() const { return fmt::format("p={}, inplace=False", py_float(p)); }

Tensor ReLU::forward(const Tensor& input) { return relu(input, call_site()); }
GELU::GELU(std::string approx) : approximate(std::move(approx)) {
  SINTER_CHECK(approximate == "none" || approximate == "tanh",
               "GELU: approximate must be \"none\" or \"tanh\", got \"{}\"", approximate);
}
Tensor GELU::forward(const Tensor& input) { return gelu(input, approximate, call_site()); }
std::string GELU::extra_repr() const { return "approximate='" + approximate + "'"; }
Tensor SiLU::forward(const Tensor& input) { return silu(input, call_site()); }
Tensor Tanh::forward(const Tensor& input) { return tanh(input, call_site()); }
Tensor Sigmoid::forward(const Tensor& input) { return sigmoid(input, call_site()); }
Tensor Hardswish::forward(const Tensor& input) { return hardswish(input, call_site()); }
Tensor Mish::forward(const Tensor& input) { return mish(input, call_site()); }

Softmax::Softmax(int64_t d) : dim(d) {}
Tensor Softmax::forward(const Tensor& input) { return softmax(input, dim, std::nullopt, call_site()); }
std::string Softmax::extra_repr() const { return fmt::format("dim={}", dim); }
LogSoftmax::LogSoftmax(int64_t d) : dim(d) {}
Tensor LogSoftmax::forward(const Tensor& input) { return log_softmax(input, dim, std::nullopt, call_site()); }
std::string LogSoftmax::extra_repr() const { return fmt::format("dim={}", dim); }

LeakyReLU::LeakyReLU(double slope) : negative_slope(slope) {}
Tensor LeakyReLU::forward(const Tensor& input) { return leaky_relu(input, negative_slope, call_site()); }
std::string LeakyReLU::extra_repr() const { return "negative_slope=" + py_float(negative_slope); }

Softplus::Softplus(double beta_, double threshold_) : beta(beta_), threshold(threshold_) {}
Tensor Softplus::forward(const Tensor& input) { return softplus(input, beta, threshold, call_site()); }
std::string Softplus::extra_repr() const {
  return fmt::format("beta={}, threshold={}", py_float(beta), py_float(threshold));
}

ELU::ELU(double alpha_) : alpha(alpha_) {}
Tensor ELU::forward(const Tensor& input) { return elu(input, alpha, 1, 1, call_site()); }
std::string ELU::extra_repr() const { return "alpha=" + py_float(alpha); }

Flatten::Flatten(int64_t start, int64_t end) : start_dim(start), end_dim(end) {}
Tensor Flatten::forward(const Tensor& input) { return flatten(input, start_dim, end_dim, call_site()); }
std::string Flatten::extra_repr() const {
  return fmt::format("start_dim={}, end_dim={}", start_dim, end_dim);
}

// ---- pooling ----
MaxPool2d::MaxPool2d(const DimList& kernel, std::optional<DimList> stride_, const DimList& padding_,
                     const DimList& dilation_, bool ceil)
    : ceil_mode(ceil) {
  kernel_size = expand_arg(kernel, 2, "kernel_size", "MaxPool2d");
  stride = stride_ && !stride_->empty() ? expand_arg(*stride_, 2, "stride", "MaxPool2d") : kernel_size;
  padding = expand_arg(padding_, 2, "padding", "MaxPool2d");
  dilation = expand_arg(dilation_, 2, "dilation", "MaxPool2d");
}
Tensor MaxPool2d::forward(const Tensor& input) {
  return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, call_site());
}
std::string MaxPool2d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
                     int_or_tuple(kernel_size), int_or_tuple(stride), int_or_tuple(padding),
                     int_or_tuple(dilation), py_bool(ceil_mode));
}

AvgPool2d::AvgPool2d(const DimList& kernel, std::optional<DimList> stride_, const DimList& padding_,
                     bool ceil, bool include_pad, std::optional<int64_t> divisor)
    : ceil_mode(ceil), count_include_pad(include_pad), divisor_override(divisor) {
  kernel_size = expand_arg(kernel, 2, "kernel_size", "AvgPool2d");
  stride = stride_ && !stride_->empty() ? expand_arg(*stride_, 2, "stride", "AvgPool2d") : kernel_size;
  padding = expand_arg(padding_, 2, "padding", "AvgPool2d");
}
Tensor AvgPool2d::forward(const Tensor& input) {
  return avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                    call_site());
}
std::string AvgPool2d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}", int_or_tuple(kernel_size), int_or_tuple(stride),
                     int_or_tuple(padding));
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(const DimList& size) {
  output_size = expand_arg(size, 2, "output_size", "AdaptiveAvgPool2d");
  for (int64_t s : output_size) check_size(s, "output_size", "AdaptiveAvgPool2d", true);
}
Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
  return adaptive_avg_pool2d(input, output_size, call_site());
}
std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + int_or_tuple(output_size); }

// ---- containers ----
ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) push_back(m);
}
void ModuleList::push_back(std::shared_ptr<Module> module) {
  SINTER_CHECK(module != nullptr, "{}.push_back got a null module", name());
  Module* raw = module.get();
  register_module(std::to_string(items_.size()), std::move(module));
  items_.push_back(raw);
}
void ModuleList::push_back(Module& module) {
  register_module(std::to_string(items_.size()), module);
  items_.push_back(&module);
}
Module& ModuleList::operator[](int64_t index) const {
  int64_t n = static_cast<int64_t>(items_.size());
  SINTER_CHECK(index >= -n && index < n, "index {} is out of range for {} of size {}", index, name(), n);
  return *items_[index < 0 ? index + n : index];
}
void ModuleList::throw_wrong_type(int64_t index) const {
  SINTER_CHECK(false, "{} entry {} is a {}, not the requested layer type", name(), index,
               (*this)[index].name());
  throw InternalError("unreachable");
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (Module* m : *this) x = m->forward(x);
  return x;
}

}  // namespace sinter::nn
