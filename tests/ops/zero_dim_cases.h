// The table of dim-taking ops applied to a 0-dim tensor, with what PyTorch does for each: a value (every
// output's sizes, dtype and value) or an error. tests/ops/zero_dim_test.cpp checks eager against it;
// tests/inductor/zero_dim_compiled_test.cpp checks inductor and aot_eager against eager.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "sinter/sinter.h"

namespace sinter::zero_dim {

// One output as PyTorch gives it: sizes, dtype, and the value of every element (NaN matches NaN).
struct Out {
  SymIntList sizes;
  DType dtype;
  double value;
};

struct Case {
  std::string name;
  std::function<std::vector<Tensor>(const Tensor& x)> fn;  // x: a 0-dim float32 tensor holding kValue
  std::vector<Out> want;                                   // empty: PyTorch raises an error
  std::string error = {};                                  // a part of sinter's message when it raises
};

inline constexpr double kValue = 2.5;

std::vector<Case> cases();

}  // namespace sinter::zero_dim
