// Simplification: the clean-up after decomposition and patterns. Dead code elimination, common subexpression
// elimination (never of random or side-effecting ops), folding of small ops over constants, and algebraic
// identities (x*1, x+0, x-0, x/1, a cast or copy to the same dtype and layout, views that change nothing,
// double negation), applied until nothing changes. Rewrites never make a graph output alias a graph input or
// another output where the original did not.
#pragma once
#include "sinter/graph.h"

namespace sinter::passes {

// Runs the rules to a fixed point; returns whether the graph changed.
bool simplify(Graph& g);

}  // namespace sinter::passes
