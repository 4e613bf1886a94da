// The names print_graph gives values, for text that must match a printed graph (the inductor's fusion log,
// kernel comments and profile name graph values this way).
#pragma once
#include <string>
#include <vector>

#include "sinter/graph.h"

namespace sinter::graph_detail {

// Per node id, per output: "%x" for a named input or constant, else "%<running count of values>".
std::vector<std::vector<std::string>> printed_value_names(const Graph& g);

}  // namespace sinter::graph_detail
