// Helpers for tests of views and strides of computed values: inputs of several layouts, and a check that runs a
// function eagerly and compiled under each backend and dynamic-shape policy, comparing values, sizes and the
// strides of every output.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "sinter/sinter.h"

namespace sinter::view_checks {

// How an input's elements are laid out in memory. The values are the same whatever the layout.
enum class Layout { kContiguous, kTransposed, kPermuted, kSlicedStep, kExpanded };
inline const std::vector<Layout> kAllLayouts = {Layout::kContiguous, Layout::kTransposed, Layout::kPermuted,
                                                Layout::kSlicedStep, Layout::kExpanded};
std::string layout_name(Layout layout);

// A random float32 tensor of `sizes` in `layout`: transposed swaps the last two dims in memory, permuted reverses
// all dims in memory, sliced-step takes every second element of the last dim, expanded broadcasts dim 0 from
// size 1 (every row equal, stride 0).
Tensor make_input(const std::vector<int64_t>& sizes, Layout layout, uint64_t seed);

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// The policies a check runs: static (kNever), symbolic from the start (kAlways), and kAuto, whose second size
// recompiles with the changed dims symbolic.
struct Policy {
  const char* name;
  Dynamic dynamic;
};
inline const std::vector<Policy> kPolicies = {
    {"static", Dynamic::kNever}, {"kAlways", Dynamic::kAlways}, {"kAuto", Dynamic::kAuto}};
inline const std::vector<std::string> kBackends = {"inductor", "aot_eager"};

// Empty when `got` has `want`'s dtype, sizes, strides (of dims longer than 1: a size-1 dim's stride addresses
// nothing) and values (aot_eager exactly, the inductor within the dtype's tolerance); else what differs.
std::string compare_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want, bool exact);

// A named function of a call's inputs.
struct Case {
  std::string name;
  Fn fn;
};
// Builds one call's inputs from (sizes, layout, seed).
using MakeInputs = std::function<std::vector<Tensor>(const std::vector<int64_t>&, Layout, uint64_t)>;
// One input of each size and layout.
std::vector<Tensor> one_input(const std::vector<int64_t>& sizes, Layout layout, uint64_t seed);

// For each backend and policy: one compiled function runs every case on the inputs of every layout (so a table
// costs one C++ compile per entry), called once per entry of `sizes`, in order (kAuto compiles static on the
// first and symbolic on the second); each call is compared with eager on the same inputs. When the table fails
// to compile, each case is compiled alone to name the ones that fail. Failures are reported through gtest with
// the case, backend, policy, layout and sizes.
void check_cases(const std::vector<Case>& cases, const std::vector<std::vector<int64_t>>& sizes,
                 const std::vector<Layout>& layouts = kAllLayouts, const MakeInputs& make = one_input);

}  // namespace sinter::view_checks
