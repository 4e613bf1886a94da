// Functionalization: rewrites a captured graph that mutates (in-place ops, writes through views, ops that
// write an argument such as batch_norm's running stats) into one with no mutation at all and the same
// results. Graph inputs the program writes become extra outputs that the caller copies back after running the
// graph.
#pragma once
#include <vector>

#include "sinter/error.h"
#include "sinter/graph.h"

namespace sinter {

// After running the graph, copy graph output `output_index` into graph input `input_index`.
struct InputMutation {
  int input_index = -1;
  int output_index = -1;
};

struct FunctionalizeResult {
  bool changed = false;
  // One per written input, in input order; their outputs follow the user's outputs.
  std::vector<InputMutation> mutations;
  // For each user output: the index of the graph input it is (the caller returns that real input after the
  // write-backs, as eager's `return x.add_(1)` does), or -1.
  std::vector<int> outputs_aliasing_inputs;
};

// A write that has no functional form: into elements that share memory (fill_ into an expanded value). The
// caller may run the graph as recorded instead, where the write lands in real memory as in eager.
class OverlappingWriteError : public Error {
 public:
  using Error::Error;
};

// Replaces every in-place op by its functional op and every write through a view by an as_strided_scatter of
// the view's base, re-deriving later reads of the base's views from the new value. Views are kept: outputs
// that are views of inputs stay view chains from those inputs, so they alias the real inputs when the graph
// runs. Throws Error for writes that have no functional form (into a constant), and OverlappingWriteError for writes into
// elements that share memory.
FunctionalizeResult functionalize(Graph& graph);

// Whether any op of the graph writes into one of its arguments (in-place ops, batch_norm's running stats).
bool has_mutations(const Graph& graph);

}  // namespace sinter
