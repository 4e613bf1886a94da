// Tiered compilation (CompileOptions::tiered): a graph runs on aot_eager at once while its backend compiles it
// on a thread of its own, and the backend's code replaces aot_eager for every later call once it is ready.
// Internal to src/capture.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "sinter/compile.h"

namespace sinter::capture {

// What the tiers of one compiled function did, summed over its graphs (read by CompileStats).
struct TierCounters {
  std::atomic<int64_t> first_tier_calls{0};  // calls aot_eager served while a backend compiled
  std::atomic<int> swaps{0};                 // graphs switched to their backend's code
  std::atomic<int> kernels{-1};              // kernels per call of the graph swapped last
};

// A compiled graph that runs `graph` (functional) on aot_eager until `backend` has compiled it in the
// background with `context`, then on the backend's code (the switch is one atomic store; a call runs entirely on
// one tier). A background failure is said once on stderr and the graph stays on aot_eager, unless
// context.options.fallback is false: then every later call throws it. The background compile is waited for
// when the last copy of the result is destroyed.
CompiledGraph start_tiered(const Graph& graph, const std::vector<Tensor>& example_inputs, const CompileContext& context,
                           const std::string& backend, std::shared_ptr<TierCounters> counters);

}  // namespace sinter::capture
