// Tiered compilation (tiered.h).
#include "capture/tiered.h"

#include <fmt/format.h>

#include <chrono>
#include <exception>
#include <thread>

#include "support/log.h"
#include "support/warning.h"

namespace sinter::capture {

namespace {

struct Tiers {
  std::atomic<std::shared_ptr<const CompiledGraph>> current;
  std::atomic<bool> swapped{false};
  std::shared_ptr<const std::exception_ptr> failure;  // set once, before `failed`
  std::atomic<bool> failed{false};
  bool rethrow = false;  // fallback = false: a background failure throws at every later call
  std::shared_ptr<TierCounters> counters;
  std::thread worker;
  ~Tiers() {
    if (worker.joinable()) worker.join();
  }
};

}  // namespace

CompiledGraph start_tiered(const Graph& graph, const std::vector<Tensor>& example_inputs, const CompileContext& context,
                           const std::string& backend, std::shared_ptr<TierCounters> counters) {
  auto tiers = std::make_shared<Tiers>();
  tiers->current.store(std::make_shared<const CompiledGraph>(find_backend("aot_eager")(graph, example_inputs)));
  tiers->rethrow = context.options.fallback == false;
  tiers->counters = counters ? std::move(counters) : std::make_shared<TierCounters>();
  SINTER_LOG(kRecompiles, "tiered: a graph of {} ops runs on aot_eager while '{}' compiles it in the background",
             graph.num_ops(), backend);
  // The worker holds its own copy of the graph and a plain pointer to the tiers, which wait for it to finish.
  tiers->worker = std::thread([t = tiers.get(), g = graph.clone(), examples = example_inputs, context, backend] {
    auto start = std::chrono::steady_clock::now();
    try {
      CompiledGraph fn = find_backend(backend)(g, examples, context);
      if (!fn) throw Error(fmt::format("backend '{}' returned an empty CompiledGraph", backend));
      int kernels = fn.kernels();
      t->current.store(std::make_shared<const CompiledGraph>(std::move(fn)));
      t->swapped.store(true);
      ++t->counters->swaps;
      t->counters->kernels.store(kernels);
      SINTER_LOG(kRecompiles, "tiered: '{}' code replaced aot_eager after {:.3f} s ({} call(s) on aot_eager)", backend,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                 t->counters->first_tier_calls.load());
    } catch (const std::exception& e) {
      t->failure = std::make_shared<const std::exception_ptr>(std::current_exception());
      t->failed.store(true);
      log_warning(fmt::format("tiered: backend '{}' failed to compile a graph in the background; {}. The failure: {}",
                              backend,
                              t->rethrow ? "every later call throws it (CompileOptions::fallback = false)"
                                         : "it keeps running on aot_eager",
                              e.what()));
      SINTER_LOG(kPerfHints, "tiered: backend '{}' failed in the background: {}", backend, e.what());
    }
  });
  return CompiledGraph([tiers](const std::vector<Tensor>& inputs) {
    if (tiers->rethrow && tiers->failed.load()) std::rethrow_exception(*tiers->failure);
    std::shared_ptr<const CompiledGraph> fn = tiers->current.load();
    if (!tiers->swapped.load()) ++tiers->counters->first_tier_calls;
    return (*fn)(inputs);
  });
}

}  // namespace sinter::capture
