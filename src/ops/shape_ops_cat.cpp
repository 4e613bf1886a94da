// cat and stack: shape rules with PyTorch's checks (legacy empty inputs skipped, dtypes promoted, sizes matched
// outside the joined dim) and kernels that copy each input into its slice of the output.
#include <fmt/format.h>

#include "ops/index_loop.h"
#include "ops/index_ops.h"
#include "ops/shape_util.h"

namespace sinter {
namespace {

// PyTorch still accepts 1-D empty tensors ([0]) in cat whatever the other inputs' shapes, and skips them.
bool legacy_empty(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

// The promoted dtype and the common device of a tensor list, checking that every entry is defined.
std::pair<DType, Device> list_dtype_device(const std::vector<Tensor>& ts) {
  std::vector<PromotionOperand> ops;
  const Device device = ts[0].device();
  for (size_t i = 0; i < ts.size(); ++i) {
    SINTER_CHECK(ts[i].defined(), "tensor {} of the list is undefined", i);
    SINTER_CHECK(ts[i].device() == device,
                 "Expected all tensors to be on the same device, but found at least two devices, {} and {}",
                 device.str(), ts[i].device().str());
    ops.push_back(operand_of(ts[i]));
  }
  return {result_type(ops), device};
}

ShapeResult cat_shape(OpId, const Args& args) {
  const std::vector<Tensor>& ts = args[0].tensor_list();
  SINTER_CHECK(!ts.empty(), "expected a non-empty list of Tensors");
  auto [dtype, device] = list_dtype_device(ts);
  for (size_t i = 0; i < ts.size(); ++i)
    SINTER_CHECK(ts[i].dim() > 0, "zero-dimensional tensor (at position {}) cannot be concatenated", i);
  int ref = -1;
  for (size_t i = 0; i < ts.size() && ref < 0; ++i)
    if (!legacy_empty(ts[i])) ref = static_cast<int>(i);
  if (ref < 0) return dense_meta({0}, dtype, device);

  const Tensor& first = ts[ref];
  const int64_t nd = first.dim(), dim = wrap_dim(args[1].to_int(), nd);
  SymInt total = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    if (legacy_empty(t)) continue;
    SINTER_CHECK(t.dim() == nd, "Tensors must have same number of dimensions: got {} and {}", nd, t.dim());
    for (int64_t d = 0; d < nd; ++d) {
      if (d == dim) continue;
      SINTER_CHECK(t.size(d) == first.size(d),
                   "Sizes of tensors must match except in dimension {}. Expected size {} but got size {} in "
                   "dimension {} for tensor number {} in the list.",
                   dim, first.size(d).str(), t.size(d).str(), d, i);
    }
    total += t.size(dim);
  }
  SymIntList sizes = first.sizes();
  sizes[dim] = total;
  // PyTorch keeps channels-last when every input suggests it (cat_compute_output_memory_format).
  bool channels_last = true;
  for (const Tensor& t : ts) channels_last = channels_last && strides_like_channels_last(t);
  return dense_meta(sizes, dtype, device, channels_last ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
}

void cat_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const std::vector<Tensor>& ts = args[0].tensor_list();
  const Tensor& out = outs[0];
  if (out.numel().hint() == 0) return;
  const int64_t dim = wrap_dim(args[1].to_int(), out.dim());
  const StridedRef o = strided_ref(out);
  std::vector<CopyJob> jobs;
  int64_t offset = 0;
  for (const Tensor& t : ts) {
    if (legacy_empty(t)) continue;
    StridedRef part = o;
    part.sizes[dim] = t.size(dim).hint();
    part.data += offset * o.strides[dim];
    offset += part.sizes[dim];
    if (t.numel().hint() > 0) jobs.push_back({part, strided_ref(t)});
  }
  copy_refs(jobs);
}

ShapeResult stack_shape(OpId, const Args& args) {
  const std::vector<Tensor>& ts = args[0].tensor_list();
  SINTER_CHECK(!ts.empty(), "stack expects a non-empty TensorList");
  auto [dtype, device] = list_dtype_device(ts);
  for (size_t i = 1; i < ts.size(); ++i) {
    SINTER_CHECK(ts[i].sizes() == ts[0].sizes(),
                 "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
                 ts[0].sizes().str(), ts[i].sizes().str(), i);
  }
  const int64_t dim = wrap_dim(args[1].to_int(), ts[0].dim() + 1);
  SymIntList sizes = ts[0].sizes();
  sizes.insert(sizes.begin() + dim, SymInt(static_cast<int64_t>(ts.size())));
  return dense_meta(sizes, dtype, device);
}

void stack_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  const std::vector<Tensor>& ts = args[0].tensor_list();
  const Tensor& out = outs[0];
  if (out.numel().hint() == 0) return;
  const int64_t dim = wrap_dim(args[1].to_int(), out.dim());
  const StridedRef o = strided_ref(out);
  std::vector<CopyJob> jobs;
  for (size_t i = 0; i < ts.size(); ++i) {
    StridedRef part = o;
    part.data += static_cast<int64_t>(i) * o.strides[dim];
    part.sizes.erase(part.sizes.begin() + dim);
    part.strides.erase(part.strides.begin() + dim);
    jobs.push_back({part, strided_ref(ts[i])});
  }
  copy_refs(jobs);
}

}  // namespace

void register_cat_ops(OpTable& t) {
  t.set(OpId::cat, cat_shape, cat_kernel);
  t.set(OpId::stack, stack_shape, stack_kernel);
}

}  // namespace sinter
