// The public joining, indexing and reordering functions of ops.h: each packs its arguments in its row's
// schema order and dispatches. Index lists (`Tensor?[]`) keep undefined tensors in place: each one means `:`.
#include "ops/dispatch.h"
#include "sinter/ops.h"

namespace sinter {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, Loc loc) {
  return dispatch1(OpId::cat, {tensors, dim}, loc);
}
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim, Loc loc) {
  return dispatch1(OpId::stack, {tensors, dim}, loc);
}
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, Loc loc) {
  return dispatch1(OpId::gather, {self, dim, index}, loc);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Loc loc) {
  return dispatch1(OpId::scatter_src, {self, dim, index, src}, loc);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, Loc loc) {
  return dispatch1(OpId::scatter_value, {self, dim, index, value}, loc);
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Loc loc) {
  return dispatch1(OpId::scatter_add, {self, dim, index, src}, loc);
}
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index, Loc loc) {
  return dispatch1(OpId::index_select, {self, dim, index}, loc);
}
Tensor index(const Tensor& self, const std::vector<Tensor>& indices, Loc loc) {
  return dispatch1(OpId::index_Tensor, {self, indices}, loc);
}
Tensor index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate, Loc loc) {
  return dispatch1(OpId::index_put, {self, indices, values, accumulate}, loc);
}
Tensor masked_select(const Tensor& self, const Tensor& mask, Loc loc) {
  return dispatch1(OpId::masked_select, {self, mask}, loc);
}
Tensor nonzero(const Tensor& self, Loc loc) { return dispatch1(OpId::nonzero, {self}, loc); }
Tensor tril(const Tensor& self, int64_t diagonal, Loc loc) {
  return dispatch1(OpId::tril, {self, diagonal}, loc);
}
Tensor triu(const Tensor& self, int64_t diagonal, Loc loc) {
  return dispatch1(OpId::triu, {self, diagonal}, loc);
}
Tensor pad(const Tensor& self, const SymIntList& pad, const std::string& mode, std::optional<double> value,
           Loc loc) {
  return dispatch1(OpId::pad, {self, pad, mode, value}, loc);
}
Tensor repeat(const Tensor& self, const SymIntList& repeats, Loc loc) {
  return dispatch1(OpId::repeat, {self, repeats}, loc);
}
Tensor roll(const Tensor& self, const SymIntList& shifts, const DimList& dims, Loc loc) {
  return dispatch1(OpId::roll, {self, shifts, dims}, loc);
}
Tensor flip(const Tensor& self, const DimList& dims, Loc loc) {
  return dispatch1(OpId::flip, {self, dims}, loc);
}

}  // namespace sinter
