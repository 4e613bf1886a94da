// The end-to-end function corpus: functions of tensors that the capture and inductor tests compile, with their
// example inputs and, where the CPU inductor promises one, the kernels a call launches. The CPU tests
// (tests/inductor/inductor_test.cpp, tests/capture/compile_ops_test.cpp, tests/capture/breaks_test.cpp) and the
// CUDA corpus (tests/cuda/cuda_corpus_test.cpp) iterate the same tables.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sinter/sinter.h"

namespace sinter::corpus {

using Ts = std::vector<Tensor>;
using Fn = std::function<Ts(const Ts&)>;

struct FunctionCase {
  std::string name;
  Fn fn;
  // Example inputs: the floating ones of the given dtype, integer and bool ones as the case needs them.
  std::function<Ts(DType)> inputs;
  DType dtype = kFloat32;     // the dtype the CPU tests run the case in
  int kernels = -1;           // launches per call the CPU inductor promises in `dtype` (-1: not counted)
  bool at_most = false;       // `kernels` is an upper bound
  bool fixed_dtypes = false;  // the inputs ignore the dtype asked for (integer, bool or mixed inputs)
  bool gemm = false;          // has a GEMM or convolution (whose epilogues fuse on the CPU only)
};

// The fused functions of tests/inductor/inductor_test.cpp, with their kernel counts.
std::vector<FunctionCase> inductor_cases();
// Functions of tests/capture/compile_ops_test.cpp: views, reductions, pointwise chains, dtypes, indexing.
std::vector<FunctionCase> capture_cases();
// Functions of tests/capture/breaks_test.cpp that read tensor data in the middle (item(), a branch on a value):
// `seeded(dt, i)` gives the i-th inputs of a series.
struct BreakCase {
  std::string name;
  Fn fn;
  std::function<Ts(DType, uint64_t)> seeded;
  int max_compiles;  // segments compiled over the series, at most
};
std::vector<BreakCase> break_cases();

// Functions compiled for several sizes: `sized(dt, n)` gives inputs of size n; under Dynamic::kAlways every size
// in `sizes` is served by one compile.
struct SizedCase {
  std::string name;
  Fn fn;
  std::function<Ts(DType, int64_t)> sized;
  std::vector<int64_t> sizes;
};
std::vector<SizedCase> dynamic_cases();

// A copy of the case named `name` of `cases`; throws when there is none.
template <class C>
C named(const std::vector<C>& cases, const std::string& name) {
  for (const C& c : cases)
    if (c.name == name) return c;
  throw std::runtime_error("no corpus case named '" + name + "'");
}

}  // namespace sinter::corpus
