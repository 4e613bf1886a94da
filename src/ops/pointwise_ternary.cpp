// Pointwise ops of three operands: where, clamp (Scalar and Tensor bounds), lerp, addcmul/addcdiv and
// masked_fill; their in-place forms run these kernels with self as the output.
#include <cmath>
#include <bit>
#include <cstring>

#include "ops/pointwise_common.h"
#include "ops/pointwise_math.h"

namespace sinter::pointwise {
namespace {

void check_same_dtype(const Tensor& self, const Tensor& other, std::string_view what) {
  SINTER_CHECK(self.dtype() == other.dtype(), "expected dtype {} for `{}` but got dtype {}", dtype_name(self.dtype()),
               what, dtype_name(other.dtype()));
}

// Result dtype of the non-None operands at `indices` (tensors and Scalars).
DType common_dtype(const Args& args, std::initializer_list<int> indices) {
  std::vector<PromotionOperand> ops;
  for (int i : indices) {
    if (args[i].is_none()) continue;
    ops.push_back(args[i].is_tensor() ? operand_of(args[i].tensor()) : operand_of(args[i].scalar()));
  }
  return result_type(ops);
}

DType ternary_dtype(OpId op, const Args& args) {
  switch (op) {
    case OpId::where_self:
    case OpId::where_ScalarOther:
    case OpId::where_ScalarSelf:
    case OpId::where_Scalar: {
      const DType c = args[0].tensor().dtype();
      SINTER_CHECK(c == kBool, "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
                   dtype_name(c));
      return result_type_of(args, {1, 2});
    }
    case OpId::clamp:
    case OpId::clamp_Tensor: {
      SINTER_CHECK(!args[1].is_none() || !args[2].is_none(),
                   "torch.clamp: At least one of 'min' or 'max' must not be None");
      const DType self = args[0].tensor().dtype();
      DType d = is_floating(self) ? self : common_dtype(args, {0, 1, 2});
      if (op == OpId::clamp_Tensor) d = common_dtype(args, {0, 1, 2});
      if (d == kBool) unsupported_dtype(op, d, "numbers, not bool");
      return d;
    }
    case OpId::lerp_Scalar:
    case OpId::lerp_Tensor: {
      const Tensor& self = args[0].tensor();
      if (!is_floating(self.dtype())) unsupported_dtype(op, self.dtype(), "floating tensors");
      check_same_dtype(self, args[1].tensor(), "end");
      if (op == OpId::lerp_Tensor) check_same_dtype(self, args[2].tensor(), "weight");
      return self.dtype();
    }
    case OpId::addcmul:
    case OpId::addcdiv: {
      if (op == OpId::addcdiv)
        SINTER_CHECK(!(is_integral(args[1].tensor().dtype(), true) && is_integral(args[2].tensor().dtype(), true)),
                     "Integer division with addcdiv is no longer supported; use (input + value * "
                     "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs");
      const DType d = result_type_of(args, {0, 1, 2});
      const Scalar value = args[3].scalar();
      SINTER_CHECK(is_floating(d) || !value.is_floating(),
                   "For integral input tensors, argument value must not be a floating point number.");
      return d;
    }
    case OpId::masked_fill_Scalar:
    case OpId::masked_fill_Tensor: {
      const DType m = args[1].tensor().dtype();
      SINTER_CHECK(m == kBool, "masked_fill_ only supports boolean masks, but got mask with dtype {}", dtype_name(m));
      if (op == OpId::masked_fill_Tensor) {
        const int64_t dim = args[2].tensor().dim();
        SINTER_CHECK(dim == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} "
                     "dimension(s).", dim);
      }
      return args[0].tensor().dtype();
    }
    default: break;
  }
  SINTER_INTERNAL_ASSERT(false, "{} is not a ternary pointwise op", op_name(op));
  return kFloat32;
}

ShapeResult ternary_shape(OpId op, const Args& args) {
  const DType d = ternary_dtype(op, args);
  switch (op) {
    case OpId::where_self:
    case OpId::where_ScalarOther:
    case OpId::where_ScalarSelf:
    case OpId::where_Scalar: return output_meta(args, {1, 2, 0}, broadcast_args(args, {0, 1, 2}), d);
    case OpId::masked_fill_Scalar:
    case OpId::masked_fill_Tensor: return pointwise_result(args, {0, 1}, d);
    default: return pointwise_result(args, {0, 1, 2}, d);  // None bounds of clamp are skipped
  }
}

// c ? a : b for a mask loaded from a bool tensor. Reading the bool's byte as an integer lets g++ vectorize the
// loop; with the bool itself it stays scalar. The byte then becomes an all-ones or all-zeros mask that picks
// bits: a conditional expression instead compiles, in the AVX-512 clone, to masked loads of a and b, which
// from memory ran at half speed on a Zen 4 host (where(mask, a, b) on 2^25 floats: 15 -> 11 ms, one thread;
// and 26 ms with streaming stores).
template <class C>
inline C pick(bool c, C a, C b) {
  uint8_t u;
  std::memcpy(&u, &c, 1);
  if constexpr (std::is_same_v<C, bool>) {
    return u ? a : b;
  } else {
    using U = std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>;
    const U m = U(0) - static_cast<U>(u);
    return std::bit_cast<C>((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & ~m));
  }
}

void ternary_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& out = outs[0];
  const DType dt = ternary_dtype(op, args);
  loops::Loop loop(out);
  auto operand = [&](int i) { add_operand(loop, out, args[i]); };

  switch (op) {
    case OpId::where_self:
    case OpId::where_ScalarOther:
    case OpId::where_ScalarSelf:
    case OpId::where_Scalar:
      operand(0);
      operand(1);
      operand(2);
      return loops::visit_compute(dt, [&]<class C>() {
        loop.run<C, bool, C, C>([](bool c, C a, C b) { return pick(c, a, b); });
      });
    case OpId::masked_fill_Scalar:
    case OpId::masked_fill_Tensor:
      operand(0);
      operand(1);
      operand(2);
      return loops::visit_compute(dt, [&]<class C>() {
        loop.run<C, C, bool, C>([](C x, bool m, C v) { return pick(m, v, x); });
      });
    case OpId::clamp:
    case OpId::clamp_Tensor: {
      operand(0);
      const bool has_min = !args[1].is_none(), has_max = !args[2].is_none();
      if (has_min) operand(1);
      if (has_max) operand(2);
      return loops::visit_compute(dt, [&]<class C>() {
        if constexpr (!std::is_same_v<C, bool>) {
          using pmath::max_nan, pmath::min_nan;
          if (has_min && has_max)
            loop.run<C, C, C, C>([](C x, C lo, C hi) { return min_nan(max_nan(x, lo), hi); });
          else if (has_min)
            loop.run<C, C, C>([](C x, C lo) { return max_nan(x, lo); });
          else
            loop.run<C, C, C>([](C x, C hi) { return min_nan(x, hi); });
        }
      });
    }
    case OpId::lerp_Scalar:
    case OpId::lerp_Tensor:
      operand(0);
      operand(1);
      operand(2);
      // PyTorch's form: from the nearer end, for accuracy when the weight is close to 1.
      return loops::visit_compute_floating(dt, [&]<class C>() {
        loop.run<C, C, C, C>([](C a, C b, C w) {
          return std::fabs(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
        });
      });
    case OpId::addcmul:
    case OpId::addcdiv: {
      operand(0);
      operand(1);
      operand(2);
      const Scalar value = args[3].scalar();
      return loops::visit_compute(dt, [&]<class C>() {
        const C v = scalar_as<C>(value);
        if (op == OpId::addcmul) {
          loop.run<C, C, C, C>([v](C a, C b, C c) { return pmath::add_(a, pmath::mul_(pmath::mul_(v, b), c)); });
        } else if constexpr (pmath::kIsFloat<C>) {
          loop.run<C, C, C, C>([v](C a, C b, C c) { return a + v * b / c; });
        }
      });
    }
    default: break;
  }
  SINTER_INTERNAL_ASSERT(false, "{} is not a ternary pointwise op", op_name(op));
}

}  // namespace

void register_pointwise_ternary(OpTable& t) {
  for (OpId op : {OpId::where_self, OpId::where_ScalarOther, OpId::where_ScalarSelf, OpId::where_Scalar, OpId::clamp,
                  OpId::clamp_Tensor, OpId::lerp_Scalar, OpId::lerp_Tensor, OpId::addcmul, OpId::addcdiv,
                  OpId::masked_fill_Scalar, OpId::masked_fill_Tensor})
    t.set(op, ternary_shape, ternary_kernel);
  for (OpId op : {OpId::clamp_, OpId::masked_fill__Scalar}) t.set(op, inplace_shape, inplace_kernel);
}

}  // namespace sinter::pointwise
