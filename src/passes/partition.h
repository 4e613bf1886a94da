// Partitioning a joint forward + backward graph for compiled training (AOTAutograd's partitioner): the forward
// runs at the call and keeps some values for the backward, the backward runs at loss.backward() and recomputes the
// rest. Which values are kept is a minimum cut of the bytes kept: element-wise ops and views may be recomputed in
// the backward from kept values, everything else (GEMMs, convolutions, reductions, random draws) runs in the
// forward only and is kept when the backward reads it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sinter/graph.h"

namespace sinter::passes {

struct JointSpec {
  std::vector<bool> tangent;         // per joint input: a tangent (the gradient of a forward output)
  std::vector<bool> free_to_keep;    // per joint input: kept alive anyway (a parameter), so keeping it costs nothing
  std::vector<int> forward_outputs;  // positions in joint.outputs() the forward returns (the user's, write-backs)
  std::vector<int> backward_outputs;  // positions in joint.outputs() the backward returns (the gradients)
};

struct PartitionResult {
  // Inputs: the joint's inputs that are not tangents, in order. Outputs: forward_outputs, then the kept values.
  Graph forward;
  // Inputs: the kept values, then the tangents (in joint order), then one size carrier (int64 [s], stride 0) per
  // symbol in `carried_symbols`. Outputs: backward_outputs.
  Graph backward;
  int num_kept = 0;
  std::vector<int64_t> carried_symbols;
  // Bytes the forward keeps for the backward (at the example's sizes; parameters, alive anyway, count 0), and what
  // keeping every forward value the backward reads would have kept.
  int64_t kept_bytes = 0;
  int64_t kept_bytes_naive = 0;
  int recomputed_ops = 0;       // forward ops the backward recomputes
  std::string summary;          // what was kept and what recomputed, for SINTER_LOGS=aot and explain()
};

// `joint` must be functional (no mutation). Throws InternalError when a forward output depends on a tangent.
PartitionResult partition_joint(const Graph& joint, const JointSpec& spec);

}  // namespace sinter::passes
