// Helpers shared by the inductor pass tests: random inputs for a graph, running a graph before and after a pass
// on the same inputs, counting ops.
#pragma once
#include <string>
#include <vector>

#include "ops/op_table.h"
#include "sinter/graph.h"
#include "testing.h"

namespace sinter::testing {

// Random inputs of the graph's input metas (symbolic sizes at their example values), seeded per input.
inline std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed = 1) {
  std::vector<Tensor> inputs;
  for (const Node* n : g.input_nodes()) {
    const TensorMeta& m = n->meta();
    inputs.push_back(random(SymIntList(m.sizes.hints()), m.dtype, seed++));
  }
  return inputs;
}

inline int count_ops(const Graph& g, OpId op) {
  int count = 0;
  for (const Node& n : g.nodes()) count += n.is_op(op);
  return count;
}

// Runs both graphs on `inputs`; every output of `after` is within `rtol` of `before`'s (relative error, as
// tests/testing.h measures it), with the same dtype and sizes.
inline void expect_same_results(const Graph& before, const Graph& after, const std::vector<Tensor>& inputs,
                                double rtol) {
  std::vector<Tensor> want = interpret(before, inputs), got = interpret(after, inputs);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    EXPECT_CLOSE(got[i], want[i], rtol) << "output " << i << "\nbefore:\n" << before << "after:\n" << after;
  }
}

}  // namespace sinter::testing
