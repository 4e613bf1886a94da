// Tables of ops for tests/inductor/inductor_ops_test.cpp: each case is a named function of the test's inputs.
// A table is compiled as one graph (one output per case), so a whole table costs one C++ compile.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sinter/sinter.h"

namespace sinter::inductor_ops {

using Inputs = std::vector<Tensor>;
struct Case {
  std::string name;
  std::function<Tensor(const Inputs&)> fn;
};

// A backend running the inductor pipeline (as "inductor" does) that counts graphs and remembers the kernel
// launches of the last one; registered (again) by each Probe.
inline constexpr const char* kProbeBackend = "inductor_ops_probe";
struct Probe {
  std::shared_ptr<int> launches = std::make_shared<int>(-1);
  std::shared_ptr<int> graphs = std::make_shared<int>(0);
  Probe();
};

std::vector<Tensor> run_all(const std::vector<Case>& cases, const Inputs& in);
// Same dtypes, and values within rtol (default: the dtype's tolerance; integers and bools exact).
void compare(const std::vector<Case>& cases, const std::vector<Tensor>& got, const std::vector<Tensor>& want,
             double rtol = -1);
// Compiles all cases as one graph, runs it on `in` moved to `device` and compares with eager on the CPU. Returns
// the graph's launches (-1 when it failed; the cases are then compiled one by one so the failure names the op).
int check_cases(const std::vector<Case>& cases, const Inputs& in, double rtol = -1, Device device = kCPU);

// Floating inputs of the unary and binary tables: {x normal, p positive, u in (-0.9, 0.9), y normal (of y_shape
// when given), x * 3, halves (round ties), exp(100 x) (infs)}; the last three are computed eagerly, so that ops
// that are discontinuous get inputs that need no arithmetic first.
Inputs float_inputs(const SymIntList& shape, DType dt, const SymIntList& y_shape = {});
// Integer inputs: {a in [-10, 10), b the same without zeros (of b_shape when given), e in [0, 4)}.
Inputs int_inputs(const SymIntList& shape, DType dt, const SymIntList& b_shape = {});

// Inputs {x normal, p positive, u in (-0.9, 0.9), y normal, x * 3, halves (round ties), exp(100 x) (infs)}.
std::vector<Case> unary_float_cases();
std::vector<Case> binary_float_cases();
// Inputs {a, b without zeros, e in [0, 4)} of integer dtype `dt`.
std::vector<Case> int_cases(DType dt);
// Inputs {x, u near 1, x non-contiguous}, rank 3.
std::vector<Case> reduction_cases();
// composite_inputs(dt): rank-3 activations, a rank-4 NCHW batch and their parameters.
std::vector<Case> composite_cases();
Inputs composite_inputs(DType dt);
// Input {x [4, 6, 10]}.
std::vector<Case> view_cases();
// Inputs {x, y} holding NaN and +-inf.
std::vector<Case> nan_cases();
// {x, y} [4, 6] of floating dtype `dt`: NaN, +-inf, zeros and finite values in every pairing.
Inputs nan_inputs(DType dt);
// Inputs {a, b}: divisions, remainders and rounding modes.
std::vector<Case> division_cases();
// {a, b} of dtype `dt`: for integers every sign combination, exact multiples and INT_MIN / -1 (which traps in C);
// for floats also 1 // 0.1 (9 in PyTorch, not floor(1 / 0.1) = 10), division by +-inf and by zero.
Inputs division_inputs(DType dt);
// Inputs {x [m, n] f32, v [n] f32, h [m, n] bf16, k [m, n] int64} with symbolic m, n.
std::vector<Case> symbolic_cases();

}  // namespace sinter::inductor_ops
