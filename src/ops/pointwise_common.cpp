// Shared helpers of the pointwise family: broadcast output metas, the generic in-place rule and kernel, dtype
// errors and the divisor check of integer division.
#include "ops/pointwise_common.h"

#include <fmt/format.h>

#include <array>

namespace sinter::pointwise {

SymIntList broadcast_args(const Args& args, std::initializer_list<int> indices) {
  std::vector<const SymIntList*> shapes;
  for (int i : indices)
    if (args[i].is_tensor()) shapes.push_back(&args[i].tensor().sizes());
  if (shapes.empty()) return {};
  if (shapes.size() == 1) return *shapes[0];
  return broadcast_all(shapes);
}

TensorMeta output_meta(const Args& args, std::initializer_list<int> indices, const SymIntList& sizes, DType dtype) {
  Device device = common_device(args);
  std::array<const Tensor*, 8> operands;
  size_t count = 0;
  for (int i : indices)
    if (args[i].is_tensor() && !args[i].tensor().impl()->wrapped_number && count < operands.size())
      operands[count++] = &args[i].tensor();
  return layout_of_operands(sizes, dtype, device, std::span<const Tensor* const>(operands.data(), count));
}

void add_operand(loops::Loop& loop, const Tensor& out, const Value& v) {
  if (v.is_tensor())
    loop.input(loops::unalias_input(out, v.tensor()));
  else
    loop.constant(v.scalar());
}

OpId functional_of(OpId op) {
  switch (op) {
    case OpId::add__Tensor: return OpId::add_Tensor;
    case OpId::add__Scalar: return OpId::add_Scalar;
    case OpId::sub__Tensor: return OpId::sub_Tensor;
    case OpId::sub__Scalar: return OpId::sub_Scalar;
    case OpId::mul__Tensor: return OpId::mul_Tensor;
    case OpId::mul__Scalar: return OpId::mul_Scalar;
    case OpId::div__Tensor: return OpId::div_Tensor;
    case OpId::div__Scalar: return OpId::div_Scalar;
    case OpId::pow__Scalar: return OpId::pow_Tensor_Scalar;
    case OpId::clamp_: return OpId::clamp;
#define SINTER_UNARY_INPLACE_CASE(X, name) \
  case OpId::name##_: return OpId::name;
    SINTER_UNARY_INPLACE_NAMES(SINTER_UNARY_INPLACE_CASE, _)
#undef SINTER_UNARY_INPLACE_CASE
    case OpId::masked_fill__Scalar: return OpId::masked_fill_Scalar;
    default: return op;
  }
}

ShapeResult inplace_shape(OpId op, const Args& args) {
  OpId base = functional_of(op);
  SINTER_INTERNAL_ASSERT(base != op, "{} has no functional row", op_name(op));
  const Tensor& self = args[0].tensor();
  ShapeResult r = op_def(base).shape(base, args);
  const TensorMeta& m = r.outputs.at(0);
  bool same = m.sizes.size() == self.sizes().size();
  for (size_t d = 0; same && d < m.sizes.size(); ++d) same = m.sizes[d] == self.sizes()[d];
  SINTER_CHECK(same, "output with shape {} doesn't match the broadcast shape {}", self.sizes().str(), m.sizes.str());
  SINTER_CHECK(can_cast(m.dtype, self.dtype()), "result type {} can't be cast to the desired output type {}",
               dtype_name(m.dtype), dtype_name(self.dtype()));
  // Only a zero stride over a dim longer than 1 makes two elements share memory; an empty tensor has no
  // elements to share it (sizes 0 are specialised, so the hint decides).
  bool empty = self.numel().hint() == 0;
  for (int64_t d = 0; d < self.dim() && !empty; ++d)
    SINTER_CHECK(!(self.strides()[d] == 0 && self.sizes()[d] > 1),
                 "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.");
  return ShapeResult(self.meta());
}

void inplace_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  OpId base = functional_of(op);
  KernelFn kernel = op_def(base).kernels[static_cast<int>(DeviceType::kCPU)];
  SINTER_INTERNAL_ASSERT(kernel != nullptr, "{} has no CPU kernel", op_name(base));
  kernel(base, args, outs);
}

std::string_view base_name(OpId op) {
  std::string_view name = op_name(op);
  return name.substr(0, name.find('.'));
}

void unsupported_dtype(OpId op, DType dtype, std::string_view wanted) {
  std::string msg = fmt::format("{} is not supported for {} tensors", base_name(op), dtype_name(dtype));
  if (!wanted.empty()) msg += fmt::format(" (it takes {})", wanted);
  detail::throw_user_error(msg);
}

bool has_zero(const Value& v) {
  if (!v.is_tensor()) return v.scalar().to_double() == 0;
  const Tensor& t = v.tensor();
  const int64_t ndim = t.dim();
  std::vector<int64_t> sizes = t.sizes().hints(), strides(ndim), idx(ndim, 0);
  int64_t numel = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    strides[d] = t.strides()[d].hint();
    numel *= sizes[d];
  }
  if (numel == 0) return false;
  return visit_dtype(t.dtype(), [&]<class T>() {
    const T* base = t.data_ptr<T>();
    const int64_t inner = ndim ? sizes[ndim - 1] : 1, step = ndim ? strides[ndim - 1] : 0;
    for (int64_t done = 0; done < numel; done += inner) {
      int64_t off = 0;
      for (int64_t d = 0; d + 1 < ndim; ++d) off += idx[d] * strides[d];
      for (int64_t k = 0; k < inner; ++k)
        if (cast_to<double>(base[off + k * step]) == 0) return true;
      for (int64_t d = ndim - 2; d >= 0; --d) {  // next row
        if (++idx[d] < sizes[d]) break;
        idx[d] = 0;
      }
    }
    return false;
  });
}

}  // namespace sinter::pointwise
