// Compiled training, the way torch.compile's AOTAutograd does it: when a compiled function is called with grad
// mode on and some input that requires grad, capture also records the backward of its outputs (autograd runs
// above the tracer, so its formulas are recorded like any op) into one joint graph. The joint graph is
// functionalized and split by the min-cut partitioner (passes/partition.h) into a forward graph, which runs at the
// call and returns the user's outputs plus the values kept for the backward, and a backward graph, compiled by the
// same backend on the first backward. The outputs get one autograd node, CompiledFunctionBackward, whose edges are
// the inputs' own, so loss.backward() outside the compiled function runs the compiled backward. Internal to
// src/capture.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "capture/program.h"
#include "capture/tracer.h"

namespace sinter::capture {

// What tracing the backward added to a capture's graph.
struct JointInfo {
  int num_user_outputs = 0;
  std::vector<int> diff_inputs;     // graph input index of each input the gradients are for (the node's edges)
  std::vector<int> tangent_of;      // per user output: its tangent's graph input index, or -1 (no gradient flows)
  std::vector<int> grad_outputs;    // per diff input: the graph output of its gradient, or -1 (unused)
  int num_argument_inputs = 0;      // inputs before the lifted tensors (arguments, integer carriers)
};

// After the forward was recorded (tracer.finish() set the user's outputs): when grad mode is on and an output
// requires grad, records the backward of those outputs with respect to every input that requires grad into the same
// graph, with one tangent input per differentiable output. Null when there is nothing to differentiate. Throws
// BreakInBackward when a derivative formula reads traced data (the graph is then unusable).
std::optional<JointInfo> trace_backward(Tracer& tracer);

struct TrainingProgram;

// Compiles a joint graph: functionalize, partition, compile the forward (the backward waits for the first backward
// call). Null when the graph cannot be split (a write into inputs that share memory): the caller runs the function
// eagerly then, and says why in `why_not`.
std::shared_ptr<const TrainingProgram> compile_training(Graph joint, const JointInfo& info,
                                                        const std::vector<Tensor>& example_inputs,
                                                        const CompileOptions& options, bool training,
                                                        bool* fell_back, std::vector<bool> static_inputs,
                                                        std::shared_ptr<TierCounters> tiers, std::string* why_not);

// The forward program (for stats, logs and explain).
const Program& forward_program(const TrainingProgram& t);
// One line on the partition: what the forward keeps and what the backward recomputes.
const std::string& partition_summary(const TrainingProgram& t);
// The two graphs the partition made, printed.
const std::string& forward_graph_text(const TrainingProgram& t);
std::string backward_graph_text(const TrainingProgram& t);

// Runs the forward on real inputs (graph input order: arguments, carriers, lifted) and returns the program's user
// outputs with the autograd node attached to those that require grad.
std::vector<Tensor> run_training(const std::shared_ptr<const TrainingProgram>& program,
                                 const std::vector<Tensor>& inputs);

}  // namespace sinter::capture
