// The default CPU generator (src/tensor/generator.cpp): Philox 4x32-10, counter based. Its state is (seed,
// offset); every draw of n numbers advances offset, so generated code given the same state reproduces eager's
// numbers. The random ops (rand, randn, dropout, ...) are in sinter/ops.h.
#pragma once
#include <cstdint>

namespace sinter {

void manual_seed(uint64_t seed);
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};
GeneratorState get_rng_state();
void set_rng_state(const GeneratorState& state);

}  // namespace sinter
