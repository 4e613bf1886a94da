// Outputs that alias each other or an input in eager alias them after a compiled call too. A backend makes its own
// buffers: given `s` and `s.t()` as outputs, inductor writes two, and a later write through the transpose would not
// reach `s`. So, as AOTAutograd does, the outputs that are views are rebuilt after the backend runs: each from the real
// tensor it is a view of (an input, or the output that holds their common computed base), by running the recorded view
// ops on it. The backend is given the base in their place and computes nothing for them. Internal to src/capture.
#pragma once
#include <memory>
#include <vector>

#include "sinter/graph.h"

namespace sinter::capture {

struct OutputViews {
  // The view chains: inputs are the graph's inputs (for the symbols' values) followed by one per base; outputs are the
  // rebuilt outputs. Null when no output needs rebuilding.
  std::shared_ptr<const Graph> views;
  std::vector<int> base_outputs;  // per base input of `views`: the program output that holds it
  std::vector<int> rebuilt;       // per output of `views`: the user output it replaces
  // Outputs that are the same value as an earlier one: {output, earlier output}.
  std::vector<std::pair<int, int>> repeats;
  bool empty() const { return !views && repeats.empty(); }
};

// Plans the rebuilding for the first `num_user_outputs` outputs of a functional graph, and replaces each rebuilt output
// of `graph` by its base (an input, or a computed value the backend then returns once).
OutputViews plan_output_views(Graph& graph, int num_user_outputs);

// After the backend ran and the write-backs are done: replaces the planned outputs in `outs` by views of the real
// inputs and outputs they alias.
void rebuild_output_views(const OutputViews& plan, const std::vector<Tensor>& inputs, std::vector<Tensor>& outs);

}  // namespace sinter::capture
