#include "tensor/generator.h"

#include <cmath>

#include "sinter/random.h"

namespace sinter {

double philox_normal(uint64_t seed, uint64_t index) {
  Philox4x32 p = Philox4x32::compute(index, seed);
  // u1 in (0, 1] so the log is finite.
  double u1 = (static_cast<double>(p.out[0]) + 1.0) * (1.0 / 4294967296.0);
  double u2 = static_cast<double>(p.out[1]) * (1.0 / 4294967296.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().set_state(seed, 0); }
GeneratorState get_rng_state() { return {default_generator().seed(), default_generator().offset()}; }
void set_rng_state(const GeneratorState& s) { default_generator().set_state(s.seed, s.offset); }

}  // namespace sinter
