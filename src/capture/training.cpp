// Compiled training (see training.h): the backward traced into the joint graph, the partition, the forward at
// each call and the CompiledFunctionBackward node that runs the backward graph, compiled on its first use.
#include "capture/training.h"

#include <fmt/format.h>

#include <mutex>
#include <utility>

#include "autograd/nodes.h"
#include "graph/graph_util.h"
#include "passes/functionalize.h"
#include "passes/partition.h"
#include "sinter/autograd.h"
#include "support/check.h"
#include "support/log.h"
#include "symbolic/expr.h"

namespace sinter::capture {

namespace {

// Where a symbol's value is read at run time: a dim (or stride) of a forward input.
struct SymbolSource {
  int input = -1, dim = -1;
  bool stride = false;
};

// The backward graph, compiled by the first backward that needs it (with that call's tensors as the examples).
struct BackwardState {
  Graph graph;
  CompileOptions options;
  std::once_flag once;
  Program program;
  std::exception_ptr error;

  const Program& compiled(const std::vector<Tensor>& examples) {
    std::call_once(once, [&] {
      try {
        SINTER_LOG(kAot, "compiling the backward graph:\n{}", print_graph(graph));
        program = compile_program(graph.clone(), examples, options, /*training=*/true);
      } catch (...) {
        error = std::current_exception();
      }
    });
    if (error) std::rethrow_exception(error);
    return program;
  }
};

}  // namespace

struct TrainingProgram {
  Program forward;  // outputs: the user's, then the kept values
  JointInfo info;
  int num_kept = 0;
  std::vector<int> tangent_output;  // per tangent (backward input order): the user output it is the gradient of
  std::vector<int> grad_position;   // per diff input: its gradient's backward output, or -1
  std::vector<SymbolSource> carried;
  std::shared_ptr<BackwardState> backward;
  std::string summary;
  std::string forward_text;
};

const Program& forward_program(const TrainingProgram& t) { return t.forward; }
const std::string& partition_summary(const TrainingProgram& t) { return t.summary; }
const std::string& forward_graph_text(const TrainingProgram& t) { return t.forward_text; }
std::string backward_graph_text(const TrainingProgram& t) { return print_graph(t.backward->graph); }

namespace {

// The autograd node of a compiled function's outputs: its next edges are the diff inputs' own edges.
class CompiledFunctionBackward final : public autograd::Node {
 public:
  CompiledFunctionBackward(std::shared_ptr<const TrainingProgram> program, std::vector<Tensor> kept,
                           std::vector<int64_t> symbols)
      : program_(std::move(program)), kept_(std::move(kept)), symbols_(std::move(symbols)) {
    for (const Tensor& t : kept_) versions_.push_back(t.version());
  }
  std::string name() const override { return "CompiledFunctionBackward"; }
  void release() override {
    kept_.clear();
    released_ = true;
  }
  void prepare_release() override { consume_ = true; }

  std::vector<Tensor> apply(std::vector<Tensor> grads) override {
    SINTER_CHECK(!released_,
                 "trying to backward through the graph a second time (or to use saved tensors after they were "
                 "freed): a compiled function's backward frees the values it kept; pass retain_graph=true to the "
                 "first backward");
    SINTER_CHECK(!GradMode::is_enabled(),
                 "the backward of a compiled function cannot itself be differentiated (create_graph=true); compile "
                 "the function whose higher derivatives you need with backend \"eager\", or call it uncompiled");
    for (size_t k = 0; k < kept_.size(); ++k)
      SINTER_CHECK(kept_[k].version() == versions_[k],
                   "one of the tensors needed for gradient computation has been modified by an in-place operation: "
                   "a [{} {}] kept by a compiled function's forward is at version {}; expected version {} instead",
                   dtype_name(kept_[k].dtype()), kept_[k].sizes().str(), kept_[k].version(), versions_[k]);
    const TrainingProgram& t = *program_;
    // When the engine frees this node after apply, the backward owns the kept values and drops each after its
    // last use, as eager autograd frees a node's saved tensors once it ran.
    std::vector<Tensor> in = consume_ ? std::exchange(kept_, {}) : kept_;
    for (int out : t.tangent_output) {
      const autograd::GradMeta& m = input_metas().at(out);
      Tensor g = grads.at(out);
      if (!g.defined()) g = zeros(m.sizes, TensorOptions(m.dtype, m.device));
      if (g.dtype() != m.dtype) g = g.to(m.dtype);
      if (!g.is_contiguous()) g = g.contiguous();  // the tangents were traced dense
      in.push_back(std::move(g));
    }
    for (int64_t v : symbols_) in.push_back(size_carrier(v));
    const Program& backward = t.backward->compiled(in);
    std::vector<Tensor> outs = run_program(backward, std::move(in));
    std::vector<Tensor> result(next_edges().size());
    for (size_t e = 0; e < result.size(); ++e)
      if (t.grad_position[e] >= 0) result[e] = outs.at(t.grad_position[e]);
    return result;
  }

 private:
  std::shared_ptr<const TrainingProgram> program_;
  std::vector<Tensor> kept_;
  std::vector<uint64_t> versions_;
  std::vector<int64_t> symbols_;
  bool released_ = false;
  bool consume_ = false;
};

// A dense (contiguous) layout of `m`'s sizes: what a tangent is traced with.
TensorMeta dense(const TensorMeta& m) {
  return TensorMeta{m.sizes, graph_detail::dense_strides(m.sizes), 0, m.dtype, m.device};
}

}  // namespace

std::optional<JointInfo> trace_backward(Tracer& tracer) {
  if (!GradMode::is_enabled()) return std::nullopt;
  Graph& g = tracer.segment().graph;
  const std::vector<Tensor> outs = g.outputs();
  std::vector<int> diff_outs;
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].requires_grad() && outs[i].grad_fn() && is_floating(outs[i].dtype()))
      diff_outs.push_back(static_cast<int>(i));
  if (diff_outs.empty()) return std::nullopt;

  JointInfo info;
  info.num_user_outputs = static_cast<int>(outs.size());
  info.num_argument_inputs = tracer.num_argument_inputs();
  std::vector<Tensor> wrt;
  const std::vector<Tensor> inputs = g.inputs();
  for (int i = 0; i < tracer.num_argument_inputs(); ++i)
    if (inputs[i].requires_grad() && is_floating(inputs[i].dtype())) {
      info.diff_inputs.push_back(i);
      wrt.push_back(inputs[i]);
    }
  const std::vector<Tensor> lifted = tracer.lifted();
  for (size_t k = 0; k < lifted.size(); ++k)
    if (lifted[k].requires_grad() && is_floating(lifted[k].dtype())) {
      info.diff_inputs.push_back(tracer.num_argument_inputs() + static_cast<int>(k));
      wrt.push_back(lifted[k]);  // autograd recorded edges to the real tensor's own accumulator or history
    }
  if (wrt.empty()) return std::nullopt;

  info.tangent_of.assign(outs.size(), -1);
  std::vector<Tensor> roots, tangents;
  for (int i : diff_outs) {
    TensorMeta m = dense(outs[i].meta());
    Tensor example = zeros(m.sizes.hints(), TensorOptions(m.dtype, m.device));
    info.tangent_of[i] = g.num_inputs();
    tangents.push_back(tracer.add_tangent(m, fmt::format("tangent{}", i), std::move(example)));
    roots.push_back(outs[i]);
  }
  struct BackwardScope {  // a derivative that reads traced data throws BreakInBackward
    Tracer& t;
    explicit BackwardScope(Tracer& tracer) : t(tracer) { t.set_tracing_backward(true); }
    ~BackwardScope() { t.set_tracing_backward(false); }
  } scope(tracer);
  std::vector<Tensor> grads = autograd::grad(roots, wrt, tangents, /*retain_graph=*/false, /*create_graph=*/false,
                                             /*allow_unused=*/true);
  for (const Tensor& grad : grads) info.grad_outputs.push_back(grad.defined() ? tracer.add_output(grad) : -1);
  return info;
}

std::shared_ptr<const TrainingProgram> compile_training(Graph joint, const JointInfo& info,
                                                        const std::vector<Tensor>& example_inputs,
                                                        const CompileOptions& options, bool training,
                                                        bool* fell_back, std::vector<bool> static_inputs,
                                                        std::shared_ptr<TierCounters> tiers, std::string* why_not) {
  auto t = std::make_shared<TrainingProgram>();
  t->info = info;
  Program& p = t->forward;
  p.text = print_graph(joint);
  SINTER_LOG(kAot, "joint forward and backward graph:\n{}", p.text);
  FunctionalizeResult f;
  try {
    f = functionalize(joint);
  } catch (const OverlappingWriteError& e) {
    *why_not = e.what();
    return nullptr;
  }
  for (const InputMutation& m : f.mutations)
    if (m.input_index < 0 || static_cast<size_t>(m.input_index) >= example_inputs.size() ||
        example_inputs[m.input_index].requires_grad()) {
      *why_not = "it writes in place into an input that requires grad";
      return nullptr;
    }

  // Split: the forward returns the user's outputs and the write-back values, the backward the gradients.
  const int num_inputs = joint.num_inputs();
  passes::JointSpec spec;
  spec.tangent.assign(num_inputs, false);
  spec.free_to_keep.assign(num_inputs, false);
  for (int i : info.tangent_of)
    if (i >= 0) spec.tangent[i] = true;
  for (int i = info.num_argument_inputs; i < num_inputs; ++i) spec.free_to_keep[i] = !spec.tangent[i];
  for (int i = 0; i < info.num_user_outputs; ++i) spec.forward_outputs.push_back(i);
  for (const InputMutation& m : f.mutations) spec.forward_outputs.push_back(m.output_index);
  for (int o : info.grad_outputs) {
    t->grad_position.push_back(o < 0 ? -1 : static_cast<int>(spec.backward_outputs.size()));
    if (o >= 0) spec.backward_outputs.push_back(o);
  }
  passes::PartitionResult part = passes::partition_joint(joint, spec);
  t->summary = part.summary;
  t->num_kept = part.num_kept;
  SINTER_LOG(kAot, "partition: {}", part.summary);
  SINTER_LOG(kAot, "forward graph:\n{}", print_graph(part.forward));
  SINTER_LOG(kAot, "backward graph:\n{}", print_graph(part.backward));

  // The forward's outputs, reordered: the user's, the kept values, then the write-back values.
  {
    std::vector<Tensor> outs = part.forward.outputs();
    const int users = info.num_user_outputs, writes = static_cast<int>(f.mutations.size());
    std::vector<Tensor> order(outs.begin(), outs.begin() + users);
    order.insert(order.end(), outs.begin() + users + writes, outs.end());
    order.insert(order.end(), outs.begin() + users, outs.begin() + users + writes);
    part.forward.set_outputs(std::move(order));
    p.num_outputs = users + part.num_kept;
    for (int w = 0; w < writes; ++w) p.write_backs.push_back({f.mutations[w].input_index, p.num_outputs + w});
    p.num_ops = part.forward.num_ops();
    p.output_is_input.assign(p.num_outputs, -1);
    for (int i = 0; i < users && i < static_cast<int>(f.outputs_aliasing_inputs.size()); ++i)
      p.output_is_input[i] = f.outputs_aliasing_inputs[i];
    p.output_views = plan_output_views(part.forward, p.num_outputs);
  }
  t->forward_text = print_graph(part.forward);
  // The forward's inputs are the joint's without the tangents.
  std::vector<Tensor> forward_examples;
  std::vector<bool> forward_static;
  for (int i = 0; i < num_inputs; ++i)
    if (!spec.tangent[i]) {
      forward_examples.push_back(example_inputs.at(i));
      if (static_cast<size_t>(i) < static_inputs.size()) forward_static.push_back(static_inputs[i]);
    }
  for (int i = 0; i < info.num_user_outputs; ++i)
    if (info.tangent_of[i] >= 0) t->tangent_output.push_back(i);

  // Where each carried symbol's value comes from at run time.
  const std::vector<Tensor> fwd_inputs = part.forward.inputs();
  for (int64_t id : part.carried_symbols) {
    SymbolSource src;
    for (size_t i = 0; i < fwd_inputs.size() && src.input < 0; ++i)
      for (int pass = 0; pass < 2 && src.input < 0; ++pass) {
        const SymIntList& dims = pass == 0 ? fwd_inputs[i].sizes() : fwd_inputs[i].strides();
        for (size_t d = 0; d < dims.size(); ++d)
          if (dims[d].is_symbolic() && dims[d].expr()->is_symbol() && dims[d].expr()->symbol_id() == id) {
            src = {static_cast<int>(i), static_cast<int>(d), pass == 1};
            break;
          }
      }
    SINTER_INTERNAL_ASSERT(src.input >= 0, "compiled training: symbol s{} appears in no input", id);
    t->carried.push_back(src);
  }

  compile_functional(p, part.forward, forward_examples, options, training, fell_back, std::move(forward_static),
                     std::move(tiers));
  auto bwd = std::make_shared<BackwardState>();
  bwd->graph = std::move(part.backward);
  bwd->options = options;
  bwd->options.tiered = false;  // the backward compiles at the first backward, which waits for it
  t->backward = std::move(bwd);
  return t;
}

std::vector<Tensor> run_training(const std::shared_ptr<const TrainingProgram>& program,
                                 const std::vector<Tensor>& inputs) {
  const TrainingProgram& t = *program;
  std::vector<Tensor> outs = run_program(t.forward, inputs);
  const int users = t.info.num_user_outputs;
  // The node keeps aliases without history (sharing the storage and its version counter): a kept value that is
  // also a user output would otherwise hold this node through its grad_fn, a cycle that leaks both when no
  // backward runs (or one throws) to release them.
  std::vector<Tensor> kept;
  for (auto it = outs.begin() + users; it != outs.end(); ++it) kept.push_back(it->defined() ? it->detach() : *it);
  outs.resize(users);
  std::vector<int64_t> symbols;
  for (const SymbolSource& s : t.carried) {
    const Tensor& in = inputs.at(s.input);
    symbols.push_back((s.stride ? in.stride(s.dim) : in.size(s.dim)).hint());
  }
  auto node = std::make_shared<CompiledFunctionBackward>(program, std::move(kept), std::move(symbols));
  for (int i : t.info.diff_inputs) node->next_edges().push_back(autograd::gradient_edge(inputs.at(i)));
  for (const Tensor& o : outs)
    node->input_metas().push_back(
        o.defined() ? autograd::GradMeta{o.sizes(), o.dtype(), o.device()} : autograd::GradMeta{});
  for (int i = 0; i < users; ++i) {
    if (t.info.tangent_of[i] < 0 || !outs[i].defined() || t.forward.output_is_input[i] >= 0) continue;
    TensorImpl* impl = outs[i].impl();
    impl->requires_grad = true;
    impl->grad_fn = node;
    impl->output_nr = static_cast<uint32_t>(i);
  }
  return outs;
}

}  // namespace sinter::capture
