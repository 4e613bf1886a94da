// Guards: what must hold for a call to reuse a compiled entry. Built once per capture from the real arguments
// and the metas the tracer gave their proxies; checked on every call as a flat list of cheap comparisons (no
// strings, no allocations), with a slow path that explains a failure for the recompile log. Internal to
// src/capture.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sinter/compile.h"
#include "symbolic/shape_env.h"

namespace sinter::capture {

// How an input tensor's strides are checked: exactly (static inputs, or layouts with gaps), or as the dense
// layout of a dim order (contiguous, channels-last, a transpose), which is what a symbolic input's strides
// say.
enum class Layout : uint8_t { kExact, kDense };

struct TensorGuard {
  std::string name;  // "arg0", "arg1[2]", "fc1.weight"
  int arg = -1;      // the call argument it comes from (-1 for a lifted tensor)
  int element = -1;  // its index inside a tensor-list argument
  bool defined = true;
  DType dtype = kFloat32;
  Device device = kCPU;
  bool requires_grad = false;
  bool aligned = false;  // 16-byte aligned when captured: required again (generated code may assume it)
  Layout layout = Layout::kExact;
  int alias_of = -1;             // the first earlier guarded tensor sharing its storage, or -1
  std::vector<int64_t> sizes;    // per dim: the static size (unused for symbolic dims)
  std::vector<int32_t> symbols;  // per dim: the symbol id, or -1 for a static dim
  std::vector<int64_t> strides;  // kExact
  std::vector<int8_t> order;     // kDense: dims from outermost to innermost
};

struct ArgGuard {
  enum Kind : uint8_t { kTensor, kTensorList, kInt, kSymInt, kDouble, kBool } kind = kTensor;
  int count = 0;      // kTensorList: its length
  int64_t value = 0;  // kInt: the value; kSymInt: the symbol id; kDouble: the bits; kBool: 0/1
};

// One failed guard, for the recompile log and automatic dynamic shapes.
struct GuardFailure {
  std::string text;          // "arg0.size(0) is 8 in the cached entry, now 16"
  int arg = -1;              // the argument, when the failure is about one
  int element = -1;          // inside a tensor list
  int dim = -1;              // a static size that changed (arg/element/dim), or -1
  bool int_changed = false;  // a static integer argument that changed
};

// A .grad() the captured function read (a graph input fetched from its owner at each call).
struct GradGuard {
  int owner = -1;      // the lifted tensor whose .grad() it is
  bool defined = false;
  TensorGuard tensor;  // its layout, when defined
};

struct GuardSet {
  std::vector<ArgGuard> args;
  std::vector<TensorGuard>
      tensors;  // the arguments' tensors in order (lists flattened), then the lifted ones
  int num_arg_tensors = 0;
  std::vector<Tensor> lifted;                          // held, so their identity is the guard
  std::vector<std::pair<nn::Module*, bool>> training;  // every submodule's training flag
  int8_t grad_mode = -1;  // the grad mode it was captured under (1 or 0), when some guarded tensor requires grad
  uint32_t autocast = 0;  // the autocast state it was captured under (ops/autocast.h's key)
  std::vector<GradGuard> grads;
  std::vector<std::pair<std::function<bool()>, std::string>> host;  // guard_host_state (compile.h)
  std::shared_ptr<sym::ShapeEnv> env;  // symbols' ranges and guards; null when every size is static
  int num_symbols = 0;

  // The hot path: true when the call may reuse the entry. `flat` holds the arguments' tensors (lists
  // flattened); `values` has room for num_symbols values and receives them.
  bool check(const std::vector<CallArg>& args, const std::vector<Tensor>& flat, int64_t* values) const;
  // The slow path: every failure (empty when check() would pass).
  std::vector<GuardFailure> diagnose(const std::vector<CallArg>& args, const std::vector<Tensor>& flat) const;
  // One line per guard, for logs and explain().
  std::vector<std::string> describe() const;
};

// The arguments' tensors in order, lists flattened (the order of TensorGuard and of the graph's first
// inputs).
void flatten_tensors(const std::vector<CallArg>& args, std::vector<Tensor>& out);

// The meta of a real argument's proxy: sizes of the dims in `dynamic` become symbols of `env` (with the given
// ranges; sizes 0 and 1 stay concrete), strides follow as symbolic dense strides when the layout is dense,
// and stay exact otherwise. Fills `guard` to match.
TensorMeta input_meta(const Tensor& real, const std::vector<std::optional<DynamicRange>>& dynamic,
                      sym::ShapeEnv* env, TensorGuard& guard);
// Fills `guard` for a tensor whose sizes and strides are all static (a lifted tensor).
void static_guard(const Tensor& real, TensorGuard& guard);
// Sets alias_of for every guarded tensor from the real tensors (same order as GuardSet::tensors).
void set_alias_pattern(GuardSet& guards, const std::vector<Tensor>& real);

}  // namespace sinter::capture
