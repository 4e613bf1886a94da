// Functions with graph breaks. C++ cannot resume a function in its middle, so every call re-runs the host
// code with the tracer recording lazily; each segment between two reads of tensor data is looked up by its
// structure (the recorded graph, input metas included, plus which inputs share storage: see segment_key.h)
// and runs compiled. Host values fed back into ops are run-time inputs of their segment (see the tracer), so
// new values reuse it.
#include <fmt/format.h>

#include <chrono>

#include "capture/engine_state.h"
#include "support/check.h"
#include "support/log.h"
#include "support/warning.h"

namespace sinter::capture {

std::vector<Tensor> Engine::State::call_with_breaks(std::vector<CallArg>& args, const Invoke& invoke) {
  Tracer tracer(tracer_config(), [this](Segment& seg) { return run_segment(seg); });
  std::vector<Tensor> outs;
  HookScope hook(&tracer);
  outs = invoke(args);
  tracer.finish(outs);
  return outs;
}

std::vector<Tensor> Engine::State::run_segment(Segment& seg) {
  // The first segment of a whole-function capture was recorded with symbolic arguments: it runs once, as
  // eager.
  if (seg.one_off) return interpret(seg.graph, seg.inputs);

  const uint64_t hash = structure_hash(seg.graph);
  InputAliasing aliasing = input_aliasing(seg.inputs);
  std::shared_ptr<const SegmentEntry> entry;
  std::shared_ptr<Flight> flight;
  {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      auto [begin, end] = segments.equal_range(hash);
      for (auto it = begin; it != end; ++it) {
        if (it->second->aliasing == aliasing && same_structure(seg.graph, it->second->graph)) {
          entry = it->second;
          ++stats.guard_hits;
          break;
        }
      }
      if (entry) break;
      // Another thread compiles a segment of this structure: wait for it rather than compile it twice (as
      // for whole functions, see Flight), then look again.
      auto busy = segment_flights.find(hash);
      if (busy == segment_flights.end()) break;
      std::shared_ptr<Flight> other = busy->second;
      if (other->owner == std::this_thread::get_id()) return interpret(seg.graph, seg.inputs);
      flight_done.wait(lock, [&] { return other->done; });
      if (other->error) std::rethrow_exception(other->error);
    }
    if (!entry) {
      int count = segments_per_index[seg.index];
      if (count >= options.recompile_limit) {
        if (!limit_logged) {
          limit_logged = true;
          log_warning(fmt::format(
              "recompile limit ({}) reached for segment {} of a function with graph breaks: new versions of it "
              "now run eagerly (raise CompileOptions::recompile_limit)",
              options.recompile_limit, seg.index));
        }
        ++stats.eager_fallbacks;
        return interpret(seg.graph, seg.inputs);
      }
      if (count > 0) {
        std::string reason = fmt::format(
            "segment {} of a function with graph breaks recorded a new graph or new input metas ({} versions "
            "compiled before)",
            seg.index, count);
        ++stats.recompiles;
        stats.recompile_reasons.push_back({reason});
        SINTER_LOG(kRecompiles, "recompiling: {}", reason);
      }
      flight = std::make_shared<Flight>();
      flight->owner = std::this_thread::get_id();
      segment_flights.emplace(hash, flight);
    }
  }
  if (!entry) {
    auto land = [&](std::exception_ptr error) {  // under `mutex`
      flight->error = std::move(error);
      flight->done = true;
      segment_flights.erase(hash);
      flight_done.notify_all();
    };
    auto start = std::chrono::steady_clock::now();
    std::shared_ptr<SegmentEntry> fresh;
    bool fell_back = false;
    try {
      // Copies: the recorded graph's proxies are about to become the user's real tensors.
      fresh = std::make_shared<SegmentEntry>(SegmentEntry{seg.graph.clone(), std::move(aliasing), {}});
      fresh->program = compile_program(seg.graph.clone(), seg.inputs, options, training(), &fell_back, {}, tiers);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      land(std::current_exception());
      throw;
    }
    SINTER_LOG(kGuards, "segment {}: reused by calls that record the same graph with the same input aliasing",
               seg.index);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(mutex);
    segments.emplace(hash, fresh);
    ++segments_per_index[seg.index];
    ++stats.compiles;
    if (fell_back) {
      ++stats.eager_fallbacks;
      warn_fallback(fresh->program);
    }
    stats.compile_seconds += seconds;
    // Per call: every segment runs once, so the latest compile of each segment index adds up.
    kernels_by_segment[seg.index] = fresh->program.fn.kernels();
    stats.kernels_per_call = 0;
    for (const auto& [index, k] : kernels_by_segment)
      stats.kernels_per_call = (k < 0 || stats.kernels_per_call < 0) ? -1 : stats.kernels_per_call + k;
    land(nullptr);
    entry = fresh;
  }
  return run_program(entry->program, seg.inputs);
}

}  // namespace sinter::capture
