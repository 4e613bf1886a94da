// Patterns: rewrites of recognisable subgraphs of captured ops into better ones, before anything is decomposed.
// Declarative: each rule (patterns.cpp) names the subgraph it matches and its replacement, with its identity as
// a comment: conv2d + batch_norm (eval, frozen) -> conv2d with folded weights; matmul -> scale -> [mask] ->
// softmax -> matmul -> scaled_dot_product_attention.
#pragma once
#include "passes/pipeline.h"
#include "sinter/graph.h"

namespace sinter::passes {

// Applies every rule wherever it matches; returns whether the graph changed.
bool apply_patterns(Graph& g, const PassContext& ctx);

}  // namespace sinter::passes
