// Helpers shared by the nn tests.
#pragma once
#include <string>
#include <vector>

#include "sinter/nn.h"

namespace sinter::testing {

using Names = std::vector<std::string>;

// The names of named tensors (named_parameters, named_buffers, state_dict items), in order.
inline Names names_of(const nn::NamedTensors& named) {
  Names out;
  for (const auto& [name, t] : named) out.push_back(name);
  return out;
}

}  // namespace sinter::testing
