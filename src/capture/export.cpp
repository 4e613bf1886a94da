// export_graph(): one call captured as a whole functional graph for an ahead-of-time artifact (aot.h), with the
// tensors that feed it. Nothing is compiled or cached; what an artifact cannot hold is an Error saying so.
#include <fmt/format.h>

#include "capture/engine_state.h"
#include "capture/output_views.h"
#include "passes/functionalize.h"
#include "support/check.h"

namespace sinter::capture {

ExportedGraph Engine::export_graph(std::vector<CallArg> args, const Invoke& invoke) {
  State& s = *state_;
  SINTER_CHECK(!current_hook(), "aot::save cannot run while another function is being captured");
  for (const CallArg& a : args)
    SINTER_CHECK(std::holds_alternative<Tensor>(a) || std::holds_alternative<std::vector<Tensor>>(a),
                 "aot::save: the function takes an integer, double or bool argument; an artifact's inputs are "
                 "tensors (make the number a constant of the function, or a 0-d tensor)");
  std::vector<Tensor> flat;
  flatten_tensors(args, flat);
  for (const Tensor& t : flat)
    SINTER_CHECK(t.defined(), "aot::save: an argument is an undefined tensor (std::nullopt); an artifact's inputs "
                              "are defined tensors");
  std::set<DynKey> dynamic;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    dynamic = s.auto_dynamic;
  }
  TracerConfig config = s.tracer_config();
  config.fullgraph = true;  // a break throws GraphBreakError: an artifact is one graph
  auto no_segments = [](Segment&) -> std::vector<Tensor> {
    throw Error("aot::save: the function has a graph break; an artifact holds one whole graph");
  };
  WholeCapture w = s.capture_whole(args, flat, dynamic, invoke, config, no_segments);
  SINTER_CHECK(!w.tracer->broke(), "aot::save: the function has a graph break; an artifact holds one whole graph");
  SINTER_CHECK(!w.joint && w.eager_reason.empty(),
               "aot::save: the call computes gradients (an input requires grad and grad mode is on); artifacts are "
               "for inference: save under NoGradGuard");
  SINTER_CHECK(w.int_args.empty(), "aot::save: the function takes integer arguments; an artifact's inputs are tensors");
  for (const InputSource& src : w.tracer->input_sources())
    SINTER_CHECK(src.kind == InputSource::kLifted,
                 "aot::save: the function reads a host number at every call (host_scalar) or a .grad(); an artifact "
                 "reads only its inputs and its weights");
  ExportedGraph out;
  out.graph = std::move(w.tracer->segment().graph);
  out.inputs = std::move(w.inputs);
  out.num_args = static_cast<int>(flat.size());
  SINTER_INTERNAL_ASSERT(out.inputs.size() >= flat.size(), "export: {} graph inputs for {} argument tensors",
                         out.inputs.size(), flat.size());
  for (size_t i = 0; i < w.plan.size(); ++i)
    SINTER_CHECK(w.plan[i] == static_cast<int>(i),
                 "aot::save: result {} of the function is not computed by the graph (an argument returned as it "
                 "is, or a tensor made outside the capture); an artifact returns what its graph computes", i);
  const int num_outputs = static_cast<int>(out.graph.output_node().args.size());
  FunctionalizeResult f = functionalize(out.graph);
  SINTER_CHECK(f.mutations.empty(), "aot::save: the function writes its input {} in place; an artifact's graph is "
                                    "functional (return the new value instead)", f.mutations.empty() ? 0 :
                                    f.mutations.front().input_index);
  for (int alias : f.outputs_aliasing_inputs)
    SINTER_CHECK(alias < 0, "aot::save: a result is the input {} itself; an artifact returns new tensors", alias);
  SINTER_CHECK(plan_output_views(out.graph, num_outputs).empty(),
               "aot::save: a result is a view of an input or of another result; an artifact returns tensors of "
               "their own (add .contiguous() or .clone())");
  return out;
}

}  // namespace sinter::capture
