// Reverse-mode automatic differentiation, as LibTorch's: a tensor made by an op from inputs that require
// gradients records a backward node (its grad_fn); Tensor::backward() and autograd::grad() walk those nodes from
// the outputs to the leaves. The formulas are one derivative table (src/autograd/derivatives.cpp), a row per
// differentiable op, written with sinter ops, so a backward can itself be recorded (create_graph) and
// differentiated again.
//
// Semantics follow PyTorch:
// - A leaf is a tensor the user made (requires_grad_(true), a Parameter); its .grad() accumulates over backward
//   calls until zeroed. A non-leaf (made by an op) has a grad_fn and no .grad() unless retain_grad() was called.
// - Saved tensors are checked on use: one modified in place after it was saved is an Error that names the node and
//   the versions. A leaf that requires grad cannot be modified in place while grad mode is on.
// - backward() frees the graph's saved tensors unless retain_graph (default: create_graph); a second backward
//   through freed nodes is an Error.
// - Grad mode is per thread: NoGradGuard and InferenceMode turn recording off for their scope (InferenceMode is
//   NoGradGuard here: sinter has no separate inference tensors), AutoGradMode sets it either way.
// - Ops run under a capture (compile()) are not recorded: a compiled function's results carry no grad_fn.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sinter/tensor.h"

namespace sinter {
namespace autograd {

class Node;

// Where a gradient goes: input `input_nr` of node `fn` (input = one of the forward op's outputs).
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// What a node needs to know of each forward output to make a zero gradient for it.
struct GradMeta {
  SymIntList sizes;
  DType dtype = kFloat32;
  Device device = kCPU;
};

// One backward function: takes the gradients of the forward op's outputs, returns those of its inputs, one per
// next edge (undefined where no gradient flows).
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::string name() const = 0;
  virtual std::vector<Tensor> apply(std::vector<Tensor> grads) = 0;
  // Drops saved tensors (backward without retain_graph); a later apply throws.
  virtual void release() {}
  // Called before apply when release() follows it: apply may then hand its saved tensors on (a compiled backward
  // frees each after its last use).
  virtual void prepare_release() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<Edge>& next_edges() { return next_edges_; }
  uint64_t sequence_nr() const { return sequence_nr_; }
  std::vector<GradMeta>& input_metas() { return input_metas_; }
  const std::vector<GradMeta>& input_metas() const { return input_metas_; }
  // Non-leaf tensors whose .grad() is kept (retain_grad): input number -> tensor.
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>>& retained() { return retained_; }

 private:
  std::vector<Edge> next_edges_;
  std::vector<GradMeta> input_metas_;
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained_;
  uint64_t sequence_nr_;
};

// Gradient recording on this thread (LibTorch's GradMode).
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Sets grad mode for its scope and restores the previous mode after.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : previous_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

// The gradients of `outputs` with respect to `inputs` (each must require grad), without touching any .grad().
// grad_outputs: one per output (undefined: ones for a one-element output, else an Error). retain_graph defaults
// to create_graph. An input the outputs do not depend on is an Error unless allow_unused (then undefined).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = {},
                         bool create_graph = false, bool allow_unused = false);

// What Optimizer::zero_grad and Module::zero_grad do to each tensor's .grad(): drop it (set_to_none), or zero it
// in place, outside any graph.
void zero_grad(const std::vector<Tensor>& tensors, bool set_to_none = true);

// backward over several roots at once (torch.autograd.backward); `inputs`, when given, limits accumulation to
// those leaves.
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              std::optional<bool> retain_graph = {}, bool create_graph = false,
              const std::vector<Tensor>& inputs = {});

}  // namespace autograd

// LibTorch's spellings at namespace sinter.
struct NoGradGuard {
  autograd::AutoGradMode mode{false};
};
using AutoGradMode = autograd::AutoGradMode;
using GradMode = autograd::GradMode;
struct InferenceMode {
  explicit InferenceMode(bool enabled = true) : mode(!enabled && GradMode::is_enabled()) {}
  autograd::AutoGradMode mode;
};

}  // namespace sinter
