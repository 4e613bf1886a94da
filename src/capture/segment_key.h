// The identity of a segment of a function with graph breaks: what it computes (ops, arguments, input metas)
// and how its real inputs alias each other. Hashing and comparing the recorded graph directly is what lets a
// segment be looked up on every call without printing it. Internal to src/capture.
#pragma once
#include <cstdint>
#include <vector>

#include "sinter/graph.h"

namespace sinter::capture {

// A hash of the graph's structure: node kinds, ops, non-tensor arguments (doubles by their bits), which value
// each tensor argument is, the inputs' metas and wrapped-number flags, and the outputs.
uint64_t structure_hash(const Graph& g);
// Whether two graphs have the same structure in the sense of structure_hash (and so compute the same thing).
bool same_structure(const Graph& a, const Graph& b);

// Per input: the first earlier input sharing its storage (or -1), and requires_grad; part of a segment's key.
struct InputAliasing {
  std::vector<int32_t> alias_of;
  std::vector<bool> requires_grad;
  friend bool operator==(const InputAliasing&, const InputAliasing&) = default;
};
InputAliasing input_aliasing(const std::vector<Tensor>& inputs);

}  // namespace sinter::capture
