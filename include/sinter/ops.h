// The ops, as free functions with PyTorch's names and arguments (torch::add, torch::softmax, ...).
// Every function takes the caller's source location as its last, defaulted argument: errors name that line.
// Each one is a thin wrapper over the op table's dispatch point (src/ops/api_*.cpp).
#pragma once
#include <concepts>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "sinter/op_names.h"
#include "sinter/random.h"
#include "sinter/tensor.h"

namespace sinter {

using OptScalar = std::optional<Scalar>;
using OptDType = std::optional<DType>;
using OptDims = std::optional<DimList>;
using TensorPair = std::tuple<Tensor, Tensor>;

// ---- pointwise unary ----
#define SINTER_DECLARE_UNARY(X, name) Tensor name(const Tensor& self, Loc loc = Loc::current());
SINTER_UNARY_NAMES(SINTER_DECLARE_UNARY, _)
Tensor relu6(const Tensor& self, Loc loc = Loc::current());
#undef SINTER_DECLARE_UNARY
// approximate: "none" (erf form) or "tanh".
Tensor gelu(const Tensor& self, const std::string& approximate = "none", Loc loc = Loc::current());
Tensor softplus(const Tensor& self, const Scalar& beta = 1, const Scalar& threshold = 20, Loc loc = Loc::current());
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope = 0.01, Loc loc = Loc::current());
// elu(x) = scale * (x > 0 ? x : alpha * (exp(x * input_scale) - 1)); selu is elu with fixed alpha and scale.
Tensor elu(const Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1, const Scalar& input_scale = 1,
           Loc loc = Loc::current());
Tensor celu(const Tensor& self, const Scalar& alpha = 1.0, Loc loc = Loc::current());
Tensor hardtanh(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1, Loc loc = Loc::current());
Tensor threshold(const Tensor& self, const Scalar& threshold, const Scalar& value, Loc loc = Loc::current());
Tensor logit(const Tensor& self, std::optional<double> eps = {}, Loc loc = Loc::current());
Tensor nan_to_num(const Tensor& self, std::optional<double> nan = {}, std::optional<double> posinf = {},
                  std::optional<double> neginf = {}, Loc loc = Loc::current());

// ---- pointwise binary ----
Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current());
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current());
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current());
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current());
Tensor rsub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current());
#define SINTER_DECLARE_BINARY(X, name)                                               \
  Tensor name(const Tensor& self, const Tensor& other, Loc loc = Loc::current()); \
  Tensor name(const Tensor& self, const Scalar& other, Loc loc = Loc::current());
SINTER_BINARY_TS_NAMES(SINTER_DECLARE_BINARY, _)
#undef SINTER_DECLARE_BINARY
// rounding_mode: none (true division), "trunc" or "floor".
Tensor div(const Tensor& self, const Tensor& other, const std::optional<std::string>& rounding_mode,
           Loc loc = Loc::current());
Tensor div(const Tensor& self, const Scalar& other, const std::optional<std::string>& rounding_mode,
           Loc loc = Loc::current());
Tensor pow(const Tensor& self, const Tensor& exponent, Loc loc = Loc::current());
Tensor pow(const Tensor& self, const Scalar& exponent, Loc loc = Loc::current());
Tensor pow(const Scalar& self, const Tensor& exponent, Loc loc = Loc::current());
#define SINTER_DECLARE_BINARY_T(X, name) \
  Tensor name(const Tensor& self, const Tensor& other, Loc loc = Loc::current());
SINTER_BINARY_T_NAMES(SINTER_DECLARE_BINARY_T, _)
#undef SINTER_DECLARE_BINARY_T

// ---- pointwise ternary ----
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other, Loc loc = Loc::current());
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other, Loc loc = Loc::current());
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other, Loc loc = Loc::current());
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other, Loc loc = Loc::current());
// where(condition) is nonzero(condition) split into one index tensor per dim (data-dependent).
std::vector<Tensor> where(const Tensor& condition, Loc loc = Loc::current());
Tensor clamp(const Tensor& self, const OptScalar& min, const OptScalar& max = {}, Loc loc = Loc::current());
Tensor clamp(const Tensor& self, const Tensor& min, const Tensor& max, Loc loc = Loc::current());
Tensor clamp_min(const Tensor& self, const Scalar& min, Loc loc = Loc::current());
Tensor clamp_max(const Tensor& self, const Scalar& max, Loc loc = Loc::current());
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight, Loc loc = Loc::current());
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight, Loc loc = Loc::current());
Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1,
               Loc loc = Loc::current());
Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1,
               Loc loc = Loc::current());
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value, Loc loc = Loc::current());
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value, Loc loc = Loc::current());

// ---- copies, conversions, factories of the same shape ----
Tensor clone(const Tensor& self, std::optional<MemoryFormat> memory_format = {}, Loc loc = Loc::current());
Tensor to_copy(const Tensor& self, OptDType dtype, std::optional<Device> device = {},
               std::optional<MemoryFormat> memory_format = {}, Loc loc = Loc::current());
Tensor empty(const SymIntList& size, const TensorOptions& options = {}, Loc loc = Loc::current());
Tensor empty(const SymIntList& size, const TensorOptions& options, MemoryFormat memory_format,
             Loc loc = Loc::current());
Tensor zeros(const SymIntList& size, const TensorOptions& options = {}, Loc loc = Loc::current());
Tensor ones(const SymIntList& size, const TensorOptions& options = {}, Loc loc = Loc::current());
// Without options the dtype follows fill_value (int64, bool or float32), as torch.full.
Tensor full(const SymIntList& size, const Scalar& fill_value, Loc loc = Loc::current());
Tensor full(const SymIntList& size, const Scalar& fill_value, const TensorOptions& options, Loc loc = Loc::current());
// arange(end), arange(start, end, step). Without options the dtype is int64 when every bound is an integer,
// else float32.
Tensor arange(const Scalar& end, Loc loc = Loc::current());
Tensor arange(const Scalar& end, const TensorOptions& options, Loc loc = Loc::current());
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, Loc loc = Loc::current());
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options,
              Loc loc = Loc::current());
// arange with SymInt bounds, such as a size read from a tensor (arange(x.size(1))): under capture the length
// stays symbolic (one compiled entry serves every length) instead of specialising the size. Integer bounds;
// the dtype is int64 unless options give one. Plain integer bounds take the Scalar forms above.
template <class T>
concept SymIntArg = std::same_as<std::remove_cvref_t<T>, SymInt>;
template <class T>
concept IntOrSymIntArg =
    SymIntArg<T> || (std::integral<std::remove_cvref_t<T>> && !std::same_as<std::remove_cvref_t<T>, bool>);
Tensor arange_symint(const SymInt& start, const SymInt& end, const SymInt& step, const TensorOptions* options,
                     Loc loc);
template <SymIntArg E>
Tensor arange(const E& end, Loc loc = Loc::current()) {
  return arange_symint(0, end, 1, nullptr, loc);
}
template <SymIntArg E>
Tensor arange(const E& end, const TensorOptions& options, Loc loc = Loc::current()) {
  return arange_symint(0, end, 1, &options, loc);
}
template <IntOrSymIntArg A, IntOrSymIntArg B, IntOrSymIntArg C = int64_t>
  requires(SymIntArg<A> || SymIntArg<B> || SymIntArg<C>)
Tensor arange(const A& start, const B& end, const C& step = 1, Loc loc = Loc::current()) {
  return arange_symint(start, end, step, nullptr, loc);
}
template <IntOrSymIntArg A, IntOrSymIntArg B, IntOrSymIntArg C>
  requires(SymIntArg<A> || SymIntArg<B> || SymIntArg<C>)
Tensor arange(const A& start, const B& end, const C& step, const TensorOptions& options, Loc loc = Loc::current()) {
  return arange_symint(start, end, step, &options, loc);
}
// `steps` may be symbolic (a size read from a tensor) and stays so under capture.
Tensor linspace(const Scalar& start, const Scalar& end, const SymInt& steps, const TensorOptions& options = {},
                Loc loc = Loc::current());
// The values torch::tensor takes: a number, nested braces of numbers ({{1, 2}, {3, 4}}) or a std::vector. As in
// LibTorch, integers make int64, floating numbers float32 (the default dtype) and bools bool; a list mixing them
// takes the promoted kind (int with float: float32), as torch.tensor in Python. {} is an empty 1-d tensor.
class TensorData {
 public:
  TensorData() : sizes_{0} {}
  template <class T>
    requires std::is_arithmetic_v<T>
  TensorData(T value) : values_{Scalar(value)}, kind_(kind_of(values_[0])) {}  // NOLINT: converts
  TensorData(std::initializer_list<TensorData> items);
  template <class T>
    requires std::is_arithmetic_v<T>
  TensorData(const std::vector<T>& values) : sizes_{static_cast<int64_t>(values.size())} {  // NOLINT
    values_.reserve(values.size());
    for (const T& v : values) values_.push_back(Scalar(v));
    kind_ = values.empty() ? 2 : kind_of(values_[0]);
  }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<Scalar>& values() const { return values_; }  // row-major
  DType dtype() const { return kind_ == 0 ? kBool : kind_ == 1 ? kInt64 : kFloat32; }
  // Not empty when the braces are ragged ({{1, 2}, {3}}): what tensor() reports.
  const std::string& error() const { return error_; }

 private:
  static int kind_of(const Scalar& v) { return v.is_bool() ? 0 : v.is_integral() ? 1 : 2; }
  std::vector<int64_t> sizes_;
  std::vector<Scalar> values_;
  int kind_ = 2;  // 0 bool, 1 integer, 2 floating (an empty list is float32, as torch.tensor([]))
  std::string error_;
};
Tensor tensor(const TensorData& data, const TensorOptions& options = {}, Loc loc = Loc::current());
// A 0-dim tensor holding one number.
Tensor scalar_tensor(const Scalar& value, std::optional<DType> dtype = {}, Device device = kCPU);
Tensor eye(const SymInt& n, std::optional<SymInt> m = {}, const TensorOptions& options = {},
           Loc loc = Loc::current());
Tensor rand(const SymIntList& size, const TensorOptions& options = {}, Loc loc = Loc::current());
Tensor randn(const SymIntList& size, const TensorOptions& options = {}, Loc loc = Loc::current());
Tensor randint(const SymInt& low, const SymInt& high, const SymIntList& size,
               const TensorOptions& options = TensorOptions(kInt64), Loc loc = Loc::current());
Tensor randint(const SymInt& high, const SymIntList& size, const TensorOptions& options = TensorOptions(kInt64),
               Loc loc = Loc::current());
Tensor normal(double mean, double std, const SymIntList& size, const TensorOptions& options = {},
              Loc loc = Loc::current());
Tensor bernoulli(const Tensor& self, double p, Loc loc = Loc::current());
Tensor empty_like(const Tensor& self, std::optional<DType> dtype = {}, Loc loc = Loc::current());
Tensor zeros_like(const Tensor& self, std::optional<DType> dtype = {}, Loc loc = Loc::current());
Tensor ones_like(const Tensor& self, std::optional<DType> dtype = {}, Loc loc = Loc::current());
Tensor full_like(const Tensor& self, const Scalar& fill_value, std::optional<DType> dtype = {},
                 Loc loc = Loc::current());
Tensor rand_like(const Tensor& self, std::optional<DType> dtype = {}, Loc loc = Loc::current());
Tensor randn_like(const Tensor& self, std::optional<DType> dtype = {}, Loc loc = Loc::current());

// ---- views (and the composite spellings of them) ----
Tensor view(const Tensor& self, const SymIntList& size, Loc loc = Loc::current());
Tensor reshape(const Tensor& self, const SymIntList& shape, Loc loc = Loc::current());
Tensor permute(const Tensor& self, const DimList& dims, Loc loc = Loc::current());
Tensor movedim(const Tensor& self, const DimList& source, const DimList& destination, Loc loc = Loc::current());
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1, Loc loc = Loc::current());
Tensor t(const Tensor& self, Loc loc = Loc::current());
Tensor expand(const Tensor& self, const SymIntList& size, Loc loc = Loc::current());
Tensor squeeze(const Tensor& self, Loc loc = Loc::current());
Tensor squeeze(const Tensor& self, const DimList& dims, Loc loc = Loc::current());
Tensor unsqueeze(const Tensor& self, int64_t dim, Loc loc = Loc::current());
Tensor narrow(const Tensor& self, int64_t dim, const SymInt& start, const SymInt& length, Loc loc = Loc::current());
Tensor slice(const Tensor& self, int64_t dim = 0, std::optional<SymInt> start = {}, std::optional<SymInt> end = {},
             const SymInt& step = 1, Loc loc = Loc::current());
Tensor select(const Tensor& self, int64_t dim, const SymInt& index, Loc loc = Loc::current());
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1, Loc loc = Loc::current());
Tensor unflatten(const Tensor& self, int64_t dim, const SymIntList& sizes, Loc loc = Loc::current());
Tensor as_strided(const Tensor& self, const SymIntList& size, const SymIntList& stride,
                  std::optional<SymInt> storage_offset = {}, Loc loc = Loc::current());
std::vector<Tensor> split(const Tensor& self, const SymInt& split_size, int64_t dim = 0, Loc loc = Loc::current());
// A plain integer is a split size, not a list of one size (x.split(2) as x.split(SymInt(2))).
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0, Loc loc = Loc::current());
std::vector<Tensor> split(const Tensor& self, const SymIntList& split_sizes, int64_t dim = 0,
                          Loc loc = Loc::current());
// Braces are always a list of sizes (split(x, {2, 3}), split(x, {4})), as in PyTorch.
std::vector<Tensor> split(const Tensor& self, std::initializer_list<SymInt> split_sizes, int64_t dim = 0,
                          Loc loc = Loc::current());
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0, Loc loc = Loc::current());
std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0, Loc loc = Loc::current());
Tensor contiguous(const Tensor& self, MemoryFormat memory_format = MemoryFormat::kContiguous,
                  Loc loc = Loc::current());
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors, Loc loc = Loc::current());

// ---- reductions and scans ----
Tensor sum(const Tensor& self, OptDType dtype = {}, Loc loc = Loc::current());
Tensor sum(const Tensor& self, const OptDims& dim, bool keepdim = false, OptDType dtype = {}, Loc loc = Loc::current());
Tensor mean(const Tensor& self, OptDType dtype = {}, Loc loc = Loc::current());
Tensor mean(const Tensor& self, const OptDims& dim, bool keepdim = false, OptDType dtype = {},
            Loc loc = Loc::current());
// Braced dims (sum(x, {0, 1}), mean(x, {-1}, true)) for the functions whose dim is optional; {} is every dim.
Tensor sum(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim = false, OptDType dtype = {},
           Loc loc = Loc::current());
Tensor mean(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim = false, OptDType dtype = {},
            Loc loc = Loc::current());
Tensor prod(const Tensor& self, OptDType dtype = {}, Loc loc = Loc::current());
Tensor prod(const Tensor& self, int64_t dim, bool keepdim = false, OptDType dtype = {}, Loc loc = Loc::current());
Tensor amax(const Tensor& self, const DimList& dim = {}, bool keepdim = false, Loc loc = Loc::current());
Tensor amin(const Tensor& self, const DimList& dim = {}, bool keepdim = false, Loc loc = Loc::current());
Tensor max(const Tensor& self, Loc loc = Loc::current());
Tensor min(const Tensor& self, Loc loc = Loc::current());
TensorPair max(const Tensor& self, int64_t dim, bool keepdim = false, Loc loc = Loc::current());
TensorPair min(const Tensor& self, int64_t dim, bool keepdim = false, Loc loc = Loc::current());
Tensor argmax(const Tensor& self, std::optional<int64_t> dim = {}, bool keepdim = false, Loc loc = Loc::current());
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = {}, bool keepdim = false, Loc loc = Loc::current());
// correction: 1 is Bessel's (unbiased), 0 the population variance.
Tensor var(const Tensor& self, const OptDims& dim = {}, const OptScalar& correction = {}, bool keepdim = false,
           Loc loc = Loc::current());
Tensor std(const Tensor& self, const OptDims& dim = {}, const OptScalar& correction = {}, bool keepdim = false,
           Loc loc = Loc::current());
Tensor var(const Tensor& self, std::initializer_list<int64_t> dim, const OptScalar& correction = {},
           bool keepdim = false, Loc loc = Loc::current());
Tensor std(const Tensor& self, std::initializer_list<int64_t> dim, const OptScalar& correction = {},
           bool keepdim = false, Loc loc = Loc::current());
Tensor norm(const Tensor& self, const OptScalar& p = 2, const DimList& dim = {}, bool keepdim = false,
            Loc loc = Loc::current());
Tensor logsumexp(const Tensor& self, const DimList& dim, bool keepdim = false, Loc loc = Loc::current());
Tensor all(const Tensor& self, Loc loc = Loc::current());
Tensor all(const Tensor& self, const DimList& dim, bool keepdim = false, Loc loc = Loc::current());
Tensor any(const Tensor& self, Loc loc = Loc::current());
Tensor any(const Tensor& self, const DimList& dim, bool keepdim = false, Loc loc = Loc::current());
Tensor cumsum(const Tensor& self, int64_t dim, OptDType dtype = {}, Loc loc = Loc::current());
Tensor cumprod(const Tensor& self, int64_t dim, OptDType dtype = {}, Loc loc = Loc::current());
Tensor softmax(const Tensor& self, int64_t dim, OptDType dtype = {}, Loc loc = Loc::current());
Tensor log_softmax(const Tensor& self, int64_t dim, OptDType dtype = {}, Loc loc = Loc::current());
TensorPair sort(const Tensor& self, int64_t dim = -1, bool descending = false, Loc loc = Loc::current());
Tensor argsort(const Tensor& self, int64_t dim = -1, bool descending = false, Loc loc = Loc::current());
TensorPair topk(const Tensor& self, const SymInt& k, int64_t dim = -1, bool largest = true, bool sorted = true,
                Loc loc = Loc::current());

// ---- normalisation ----
Tensor layer_norm(const Tensor& input, const SymIntList& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5, Loc loc = Loc::current());
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5, Loc loc = Loc::current());
// eps: none means the dtype's machine epsilon, as torch.nn.functional.rms_norm.
Tensor rms_norm(const Tensor& input, const SymIntList& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = {}, Loc loc = Loc::current());
// In training, running_mean/running_var (when given) are updated in place with `momentum`.
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5,
                  Loc loc = Loc::current());

// ---- linear algebra, convolution, pooling, attention, losses ----
Tensor mm(const Tensor& self, const Tensor& mat2, Loc loc = Loc::current());
Tensor bmm(const Tensor& self, const Tensor& mat2, Loc loc = Loc::current());
Tensor matmul(const Tensor& self, const Tensor& other, Loc loc = Loc::current());
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1, Loc loc = Loc::current());
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, Loc loc = Loc::current());
Tensor einsum(const std::string& equation, const std::vector<Tensor>& tensors, Loc loc = Loc::current());
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, const SymIntList& stride = {1},
              const SymIntList& padding = {0}, const SymIntList& dilation = {1}, int64_t groups = 1,
              Loc loc = Loc::current());
// Padding by mode, as torch::kValid / torch::kSame ("same" needs stride 1).
enum class Padding : uint8_t { kValid, kSame };
inline constexpr Padding kValid = Padding::kValid, kSame = Padding::kSame;
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, const SymIntList& stride,
              Padding padding, const SymIntList& dilation = {1}, int64_t groups = 1, Loc loc = Loc::current());
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, const SymIntList& stride = {1},
              const SymIntList& padding = {0}, const SymIntList& dilation = {1}, int64_t groups = 1,
              Loc loc = Loc::current());
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const SymIntList& stride,
              Padding padding, const SymIntList& dilation = {1}, int64_t groups = 1, Loc loc = Loc::current());
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        const SymIntList& stride = {1}, const SymIntList& padding = {0},
                        const SymIntList& output_padding = {0}, int64_t groups = 1, const SymIntList& dilation = {1},
                        Loc loc = Loc::current());
// The gradient of conv2d(input, w, {}, stride, padding, dilation, groups) with respect to a weight w of
// `weight_size`, given the output's gradient (torch.nn.grad.conv2d_weight): input [N, C, H, W], grad_output
// [N, O, OH, OW]. On CUDA, cuDNN's backward filter where it serves the call.
Tensor conv2d_weight_grad(const Tensor& input, const SymIntList& weight_size, const Tensor& grad_output,
                          const SymIntList& stride = {1}, const SymIntList& padding = {0},
                          const SymIntList& dilation = {1}, int64_t groups = 1, Loc loc = Loc::current());
Tensor max_pool2d(const Tensor& self, const DimList& kernel_size, const DimList& stride = {},
                  const DimList& padding = {0}, const DimList& dilation = {1}, bool ceil_mode = false,
                  Loc loc = Loc::current());
Tensor avg_pool2d(const Tensor& self, const DimList& kernel_size, const DimList& stride = {},
                  const DimList& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = {}, Loc loc = Loc::current());
Tensor adaptive_avg_pool2d(const Tensor& self, const SymIntList& output_size, Loc loc = Loc::current());
// mode: "nearest" or "bilinear"; give either `size` or `scale_factor`.
Tensor interpolate(const Tensor& input, std::optional<SymIntList> size = {},
                   std::optional<std::vector<double>> scale_factor = {}, const std::string& mode = "nearest",
                   std::optional<bool> align_corners = {}, Loc loc = Loc::current());
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = {}, bool enable_gqa = false,
                                    Loc loc = Loc::current());
// The gradients {query, key, value} of scaled_dot_product_attention(query, key, value, {}, 0, is_causal, scale)
// for the output's gradient `grad` (no mask, dropout or grouped heads; q, k and v of one batch shape). On CUDA,
// flash attention's backward for bfloat16 and float16 with a head dim that is a multiple of 16 up to 64.
std::vector<Tensor> scaled_dot_product_attention_backward(const Tensor& grad, const Tensor& query, const Tensor& key,
                                                          const Tensor& value, bool is_causal, double scale,
                                                          Loc loc = Loc::current());
// reduction: "mean", "sum" or "none".
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                     const std::string& reduction = "mean", int64_t ignore_index = -100,
                     double label_smoothing = 0.0, Loc loc = Loc::current());
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                const std::string& reduction = "mean", int64_t ignore_index = -100, Loc loc = Loc::current());
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                Loc loc = Loc::current());
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1, Loc loc = Loc::current());
Tensor dropout(const Tensor& input, double p = 0.5, bool train = true, Loc loc = Loc::current());

// ---- joining, indexing, reordering ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0, Loc loc = Loc::current());
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0, Loc loc = Loc::current());
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, Loc loc = Loc::current());
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Loc loc = Loc::current());
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, Loc loc = Loc::current());
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                   Loc loc = Loc::current());
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index, Loc loc = Loc::current());
// Advanced indexing: one optional index tensor per leading dim (an undefined Tensor is `:`); integer or bool.
Tensor index(const Tensor& self, const std::vector<Tensor>& indices, Loc loc = Loc::current());
Tensor index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false,
                 Loc loc = Loc::current());
Tensor masked_select(const Tensor& self, const Tensor& mask, Loc loc = Loc::current());
Tensor nonzero(const Tensor& self, Loc loc = Loc::current());
Tensor tril(const Tensor& self, int64_t diagonal = 0, Loc loc = Loc::current());
Tensor triu(const Tensor& self, int64_t diagonal = 0, Loc loc = Loc::current());
// pad: (left, right, top, bottom, ...) from the last dim backwards; mode "constant", "reflect" or "replicate".
Tensor pad(const Tensor& self, const SymIntList& pad, const std::string& mode = "constant",
           std::optional<double> value = {}, Loc loc = Loc::current());
Tensor repeat(const Tensor& self, const SymIntList& repeats, Loc loc = Loc::current());
Tensor roll(const Tensor& self, const SymIntList& shifts, const DimList& dims = {}, Loc loc = Loc::current());
Tensor flip(const Tensor& self, const DimList& dims, Loc loc = Loc::current());


}  // namespace sinter
