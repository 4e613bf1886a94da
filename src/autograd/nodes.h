// The backward nodes: OpBackward (a recorded op of the op table, run by its derivative row), AccumulateGrad (a
// leaf's sink), and the saved tensors they hold. Internal to src/autograd.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "autograd/derivatives.h"

namespace sinter::autograd {

// A tensor kept for the backward. An input is held as it is; an output is held as an alias without grad_fn (the
// node is its grad_fn: holding it would be a cycle) and given the node back when unpacked under create_graph.
// Unpacking checks the storage's version against the one at saving.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output);
  // `node` is the owner (for the message, and as the grad_fn of an unpacked output).
  Tensor unpack(Node& node, uint32_t output_nr) const;
  bool defined() const { return defined_; }
  void reset() { data_ = Tensor(); }

 private:
  Tensor data_;
  uint64_t version_ = 0;
  bool defined_ = false;
  bool is_output_ = false;
  bool requires_grad_ = false;
};

// A recorded op: its saved arguments, saved outputs, and the row that differentiates it.
class OpBackward final : public Node {
 public:
  // `row` null: backward throws that the derivative is not implemented.
  OpBackward(OpId op, const DerivativeRow* row);
  std::string name() const override;
  std::vector<Tensor> apply(std::vector<Tensor> grads) override;
  void release() override;

  // Set up by the recorder: per schema argument, the non-tensor value or the saved tensors; edges per input.
  struct ArgSlot {
    Value value;                     // non-tensor arguments
    std::vector<SavedTensor> saved;  // tensor arguments the row saves (one per list element)
    std::vector<GradMeta> metas;     // every tensor argument's metas (one per list element)
    size_t first_edge = 0;           // its elements' edges in next_edges()
    size_t edge_count = 0;
    bool is_list = false;
  };
  std::vector<ArgSlot>& slots() { return slots_; }
  std::vector<SavedTensor>& saved_results() { return saved_results_; }
  OpId op() const { return op_; }
  int arg_index(std::string_view name) const;  // an Error naming the row when absent

 private:
  OpId op_;
  const DerivativeRow* row_;
  std::vector<ArgSlot> slots_;
  std::vector<SavedTensor> saved_results_;
  bool released_ = false;
  friend class BackwardContext;
};

// A leaf's gradient sink: adds what reaches it into the leaf's .grad().
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor> grads) override;
  const std::shared_ptr<TensorImpl>& leaf() const { return leaf_; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

// The edge a gradient of `t` flows into: its grad_fn, its leaf accumulator (made on first use), or none.
Edge gradient_edge(const Tensor& t);
// Adds `grad` into `*slot` (the first gradient is kept as it is; under create_graph the sum is recorded).
void accumulate_into(std::shared_ptr<TensorImpl>& slot, const Tensor& grad, bool create_graph);
// The tensor as a Tensor without its grad_fn (same storage and layout; under capture, a view recorded in the graph).
Tensor alias_without_history(const Tensor& t);

}  // namespace sinter::autograd
