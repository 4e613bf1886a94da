// LibTorch's tensor indexing: x.index({Slice(), 0, None, Ellipsis, mask}) and x.index_put_({...}, value), with
// Python's x[:, 0, None, ..., mask] semantics. Integers select, slices narrow, None inserts a dim, Ellipsis
// stands for the dims not named, and tensors (integer or bool) index as advanced indexing does.
#pragma once
#include <concepts>
#include <optional>
#include <string_view>

#include "sinter/tensor.h"

namespace sinter::indexing {

struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};
inline constexpr std::nullopt_t None = std::nullopt;

// start:stop:step; an empty bound is the end of the dim, as in Python.
struct Slice {
  Slice(std::optional<SymInt> start = {}, std::optional<SymInt> stop = {}, std::optional<SymInt> step = {})
      : start(std::move(start)), stop(std::move(stop)), step(std::move(step)) {}
  std::optional<SymInt> start, stop, step;
};

class TensorIndex {
 public:
  enum class Kind : uint8_t { kNone, kEllipsis, kInteger, kBool, kSlice, kTensor };
  TensorIndex(std::nullopt_t) : kind_(Kind::kNone) {}                 // NOLINT: converts, as in LibTorch
  TensorIndex(EllipsisIndexType) : kind_(Kind::kEllipsis) {}           // NOLINT
  TensorIndex(const char* ellipsis);                                    // NOLINT: "..." only
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  TensorIndex(T index) : kind_(Kind::kInteger), integer_(static_cast<int64_t>(index)) {}  // NOLINT
  TensorIndex(const SymInt& index) : kind_(Kind::kInteger), integer_(index) {}           // NOLINT
  TensorIndex(bool value) : kind_(Kind::kBool), bool_(value) {}                          // NOLINT
  TensorIndex(Slice slice) : kind_(Kind::kSlice), slice_(std::move(slice)) {}            // NOLINT
  TensorIndex(Tensor tensor) : kind_(Kind::kTensor), tensor_(std::move(tensor)) {}       // NOLINT

  Kind kind() const { return kind_; }
  const SymInt& integer() const { return integer_; }
  bool boolean() const { return bool_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  SymInt integer_ = 0;
  bool bool_ = false;
  Slice slice_;
  Tensor tensor_;
};

}  // namespace sinter::indexing
