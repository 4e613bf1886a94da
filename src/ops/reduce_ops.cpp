// The reduction family: dim-list rules shared by its shape rules, the basic reductions (sum, mean, prod,
// amax, amin, max, min, all, any), and register_reduction_ops, which attaches every row of the family. The
// other files: reduce_stats (var/std/norm/logsumexp), reduce_arg, reduce_scan, reduce_softmax, sort_ops,
// norm_ops.
#include <algorithm>

#include "ops/reduce_engine.h"
#include "ops/reduce_internal.h"

namespace sinter {

int64_t reduce_wrap_dim(int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  SINTER_CHECK(dim >= -n && dim < n,
               "dim {} is out of range for a tensor of rank {} (expected a dim in [{}, {}])", dim, ndim, -n,
               n - 1);
  return dim < 0 ? dim + n : dim;
}

std::vector<bool> reduce_dim_mask(const std::vector<int64_t>& dims, int64_t ndim, bool empty_is_none) {
  std::vector<bool> mask(static_cast<size_t>(ndim), false);
  if (dims.empty()) {
    if (!empty_is_none) mask.assign(static_cast<size_t>(ndim), true);
    return mask;
  }
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(ndim, 1)), false);
  for (int64_t d : dims) {
    int64_t w = reduce_wrap_dim(d, ndim);
    SINTER_CHECK(!seen[w], "dim {} appears more than once in the list of dims", w);
    seen[w] = true;
    if (ndim > 0) mask[w] = true;
  }
  return mask;
}

std::vector<bool> reduce_dim_mask(const Value& dim, int64_t ndim, bool empty_is_none) {
  if (dim.is_none()) return std::vector<bool>(static_cast<size_t>(ndim), true);
  if (dim.is_int()) return reduce_dim_mask(std::vector<int64_t>{dim.to_int()}, ndim, empty_is_none);
  return reduce_dim_mask(dim.to_int_list(), ndim, empty_is_none);
}

SymIntList reduced_sizes(const SymIntList& sizes, const std::vector<bool>& mask, bool keepdim) {
  SymIntList out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!mask[d])
      out.push_back(sizes[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

SymInt reduced_count(const SymIntList& sizes, const std::vector<bool>& mask) {
  SymInt n = 1;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (mask[d]) n = n * sizes[d];
  return n;
}

void check_nonempty_dims(const Tensor& self, const std::vector<bool>& mask) {
  for (size_t d = 0; d < mask.size(); ++d)
    SINTER_CHECK(!mask[d] || self.sizes()[d] != 0,
                 "expected reduction dim {} to have a non-zero size (this reduction has no identity)", d);
}

std::optional<DType> opt_dtype(const Value& v) {
  if (v.is_none()) return std::nullopt;
  return v.dtype();
}

namespace {

using namespace reduce;

// The arguments of the basic reductions, whichever overload.
struct Reduction {
  Tensor self;
  std::vector<bool> mask;
  bool keepdim = false;
  std::optional<DType> dtype;
};

Reduction parse(OpId op, const Args& a) {
  Reduction r;
  r.self = a[0].tensor();
  const int64_t nd = r.self.dim();
  switch (op) {
    case OpId::sum:
    case OpId::mean:
    case OpId::prod:
      r.mask.assign(static_cast<size_t>(nd), true);
      r.dtype = opt_dtype(a[1]);
      break;
    case OpId::sum_dim_IntList:
    case OpId::mean_dim:
    case OpId::prod_dim_int:
      r.mask = reduce_dim_mask(a[1], nd);
      r.keepdim = a[2].to_bool();
      r.dtype = opt_dtype(a[3]);
      break;
    case OpId::amax:
    case OpId::amin:
      r.mask = reduce_dim_mask(a[1], nd);
      r.keepdim = a[2].to_bool();
      break;
    case OpId::all_dims:
    case OpId::any_dims:
      r.mask = reduce_dim_mask(a[1], nd, /*empty_is_none=*/true);
      r.keepdim = a[2].to_bool();
      break;
    default:  // max, min, all, any: every dim
      r.mask.assign(static_cast<size_t>(nd), true);
      break;
  }
  return r;
}

bool is_sum_like(OpId op) {
  return op == OpId::sum || op == OpId::sum_dim_IntList || op == OpId::prod || op == OpId::prod_dim_int;
}
bool is_mean(OpId op) { return op == OpId::mean || op == OpId::mean_dim; }
bool is_all_any(OpId op) {
  return op == OpId::all || op == OpId::all_dims || op == OpId::any || op == OpId::any_dims;
}

DType output_dtype(OpId op, const Reduction& r) {
  const DType in = r.self.dtype();
  if (is_sum_like(op)) return r.dtype ? *r.dtype : is_integral(in, /*include_bool=*/true) ? kInt64 : in;
  if (is_mean(op)) {
    SINTER_CHECK(!r.dtype || is_floating(*r.dtype), "mean needs a floating dtype, got dtype={}",
                 dtype_name(*r.dtype));
    SINTER_CHECK(
        r.dtype || is_floating(in),
        "mean of a {} tensor is not defined: pass a floating dtype (dtype=float32) or convert the input",
        dtype_name(in));
    return r.dtype ? *r.dtype : in;
  }
  // all/any give bool, except for uint8 inputs, which keep uint8 (PyTorch keeps that for compatibility).
  if (is_all_any(op)) return in == kUInt8 ? kUInt8 : kBool;
  return in;
}

ShapeResult basic_shape(OpId op, const Args& args) {
  Reduction r = parse(op, args);
  if (op == OpId::max || op == OpId::min) {
    SINTER_CHECK(r.self.numel() != 0,
                 "cannot take {} of an empty tensor: the reduction has no identity (give a non-empty dim)",
                 op == OpId::max ? "max" : "min");
  }
  if (op == OpId::amax || op == OpId::amin) check_nonempty_dims(r.self, r.mask);
  return dense_meta(reduced_sizes(r.self.sizes(), r.mask, r.keepdim), output_dtype(op, r), r.self.device());
}

void basic_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  Reduction r = parse(op, args);
  const Tensor& out = outs[0];
  if (is_all_any(op)) {
    ReducePlan plan = make_plan(r.self, r.mask);
    auto truth = [](uint8_t v, int64_t) { return static_cast<uint8_t>(v != 0); };
    if (op == OpId::any || op == OpId::any_dims)
      reduce_to(ExtremeOp<uint8_t, true>{}, plan, out, truth);
    else
      reduce_to(ExtremeOp<uint8_t, false>{}, plan, out, truth);
    return;
  }
  Tensor in = r.self;
  // A dtype argument casts the input first, as in PyTorch.
  if (r.dtype && *r.dtype != in.dtype()) in = in.to(*r.dtype);
  ReducePlan plan = make_plan(in, r.mask);
  visit_compute(in.dtype(), [&]<class C>() {
    if (op == OpId::prod || op == OpId::prod_dim_int) {
      reduce_to(ProdOp<C>{}, plan, out, AsIs{});
    } else if (op == OpId::amax || op == OpId::max) {
      reduce_to(ExtremeOp<C, true>{}, plan, out, AsIs{});
    } else if (op == OpId::amin || op == OpId::min) {
      reduce_to(ExtremeOp<C, false>{}, plan, out, AsIs{});
    } else if (is_mean(op)) {
      // 0 / 0 = NaN is the mean of an empty set, as in PyTorch.
      const C n = static_cast<C>(plan.R);
      reduce_to(SumOp<C>{}, plan, out, [n](C v, int64_t) { return v / n; });
    } else {
      reduce_to(SumOp<C>{}, plan, out, AsIs{});
    }
  });
}

}  // namespace

void register_reduce_basic(OpTable& t) {
  for (OpId op :
       {OpId::sum, OpId::sum_dim_IntList, OpId::mean, OpId::mean_dim, OpId::prod, OpId::prod_dim_int,
        OpId::amax, OpId::amin, OpId::max, OpId::min, OpId::all, OpId::all_dims, OpId::any, OpId::any_dims})
    t.set(op, basic_shape, basic_kernel);
}

void register_reduction_ops(OpTable& t) {
  register_reduce_basic(t);
  register_reduce_stats(t);
  register_reduce_arg(t);
  register_reduce_scan(t);
  register_softmax_ops(t);
  register_sort_ops(t);
  register_norm_ops(t);
}

}  // namespace sinter
