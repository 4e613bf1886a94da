// max-autotune for generated CUDA kernels: on its first launch, a kernel that may run again on the same buffers
// is launched with each candidate configuration (block size for flat kernels, the grid's cap per multiprocessor
// for every kernel), each timed with CUDA events (best of three rounds of a few launches), and the fastest is kept
// for the life of the compiled graph and in the disk cache (AutotuneStore), so the next process reads it instead
// of measuring again. Each measured kernel prints one progress line on stderr. A configuration never changes an
// answer (LaunchConfig); on the simulated device, where times mean nothing, every candidate runs once and its
// outputs must equal the default's byte for byte, or the launch fails as sinter's bug.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "runtime/cuda_launcher.h"
#include "sinter/cuda.h"
#include "support/check.h"
#include "tensor/cuda_driver.h"

namespace sinter::runtime {

namespace {

constexpr int kRounds = 3;

std::string encode(const LaunchConfig& c) { return fmt::format("{} {}", c.block, c.blocks_per_sm); }

std::optional<LaunchConfig> decode(const std::string& text) {
  LaunchConfig c;
  unsigned long long block = 0;
  long long per_sm = 0;
  if (std::sscanf(text.c_str(), "%llu %lld", &block, &per_sm) != 2 || block > 1024 || per_sm < 0) return {};
  c.block = static_cast<unsigned>(block);
  c.blocks_per_sm = per_sm;
  return c;
}

// The candidates for `e` (the default first): block sizes a flat kernel may take within its launch bounds, and
// grid caps; on the simulator, a few small grids (each candidate still maps the work to threads differently).
std::vector<LaunchConfig> candidates(const CudaKernelEntry& e) {
  std::vector<LaunchConfig> out = {LaunchConfig{}};
  const bool sim = cuda::is_simulated();
  std::vector<unsigned> blocks = {0};
  if (e.rows_per_block == 0)  // a flat kernel reads blockDim: smaller blocks than its bounds launch it too
    for (unsigned b : {64u, 128u})
      if (b < e.block) blocks.push_back(b);
  std::vector<int64_t> caps = sim ? std::vector<int64_t>{1, 3} : std::vector<int64_t>{8, 16, 32, 64, 128};
  if (e.rows_per_block > 0 && !sim) caps = {2, 4, 8, 16, 32};
  for (unsigned b : blocks)
    for (int64_t cap : caps) out.push_back(LaunchConfig{b, cap});
  for (unsigned b : blocks)
    if (b != 0) out.push_back(LaunchConfig{b, 0});
  return out;
}

// The buffers kernel k stores (not its local ones), in the launch's memory, as byte spans; `sole`: no other
// kernel of the schedule writes that buffer (a concatenation's parts may be stored by several kernels, an extern
// may fill what a kernel then partly overwrites).
struct Span {
  void* data;
  size_t bytes;
  bool sole;
};
std::vector<Span> stored_spans(const CompiledGraphParts& parts, const RunState& r, int k) {
  const std::vector<inductor::Kernel>& kernels = parts.schedule.kernels;
  const inductor::Kernel& kernel = kernels[k];
  auto local = [&](int b) {
    return std::find(kernel.local_buffers.begin(), kernel.local_buffers.end(), b) != kernel.local_buffers.end();
  };
  std::vector<Span> spans;
  for (int id : kernel.nodes) {
    int out = parts.program->nodes[id].out;
    if (out < 0 || local(out)) continue;
    bool sole = true;  // no other kernel, loops or extern, writes it
    for (size_t other = 0; other < kernels.size() && sole; ++other)
      if (static_cast<int>(other) != k)
        for (int n : kernels[other].nodes) {
          const inductor::LoopNode& node = parts.program->nodes[n];
          sole = sole && node.out != out && std::find(node.outs.begin(), node.outs.end(), out) == node.outs.end();
        }
    const Tensor& t = r.bufs[out];
    spans.push_back({t.storage()->data(), t.storage()->nbytes(), sole});
  }
  return spans;
}

}  // namespace

std::string LaunchConfig::str() const {
  std::string b = block > 0 ? fmt::format("{} threads", block) : "default threads";
  std::string g = blocks_per_sm > 0 ? fmt::format("{} blocks per SM", blocks_per_sm) : "default grid";
  return b + ", " + g;
}

LaunchConfig CudaLauncher::config_for(RunState& r, int k) const {
  const CudaKernelEntry& e = kernels_[k];
  if (!autotune_ || !e.tuned) return {};
  // After the first call only the flag is read: `best` is written once, before `done` is released.
  if (e.tuned->done.load(std::memory_order_acquire)) return e.tuned->best;
  std::lock_guard<std::mutex> lock(e.tuned->mutex);
  if (!e.tuned->done.load(std::memory_order_relaxed)) {
    std::optional<LaunchConfig> cached;
    if (!cuda::is_simulated() && autotune_->load)
      if (std::optional<std::string> text = autotune_->load(e.tune_key)) cached = decode(*text);
    e.tuned->best = cached ? *cached : tune(r, k);
    e.tuned->done.store(true, std::memory_order_release);
  }
  return e.tuned->best;
}

LaunchConfig CudaLauncher::tune(RunState& r, int k) const {
  const CudaKernelEntry& e = kernels_[k];
  std::vector<LaunchConfig> configs = candidates(e);
  if (cuda::is_simulated()) {  // every candidate must compute what the default does
    // Before each launch, a buffer only this kernel stores is poisoned, so that an element a candidate leaves out
    // shows; one that other kernels store parts of (a concatenation) starts as it was.
    const std::vector<Span> spans = stored_spans(*parts_, r, k);
    std::vector<std::string> before, want;
    for (const Span& sp : spans) before.emplace_back(static_cast<const char*>(sp.data), sp.bytes);
    auto reset = [&] {
      for (size_t i = 0; i < spans.size(); ++i)
        if (spans[i].sole) std::memset(spans[i].data, 0xff, spans[i].bytes);
        else std::memcpy(spans[i].data, before[i].data(), spans[i].bytes);
    };
    reset();
    launch(r, k, configs[0]);
    for (const Span& sp : spans) want.emplace_back(static_cast<const char*>(sp.data), sp.bytes);
    for (size_t c = 1; c < configs.size(); ++c) {
      reset();
      launch(r, k, configs[c]);
      for (size_t i = 0; i < spans.size(); ++i)
        SINTER_INTERNAL_ASSERT(std::memcmp(spans[i].data, want[i].data(), spans[i].bytes) == 0,
                               "max-autotune: {} with {} computes other values than with the default launch",
                               e.name, configs[c].str());
    }
    std::fprintf(stderr, "[sinter] max-autotune %s %s: %zu configurations compute the same values (simulated "
                 "device: not timed; the default kept)\n", autotune_->graph.c_str(), e.name.c_str(), configs.size());
    return {};
  }
  cuda::driver::use_device(device_.index);
  cuda::driver::Event start, stop;
  auto time_ms = [&](const LaunchConfig& c, int launches) {
    start.record(nullptr);
    for (int i = 0; i < launches; ++i) launch(r, k, c);
    stop.record(nullptr);
    stop.synchronize();
    return static_cast<double>(stop.elapsed_ms_since(start)) / launches;
  };
  launch(r, k, configs[0]);  // warm: the scalar path, if this call takes it, is compiled now
  const double once = time_ms(configs[0], 1);
  const int launches = static_cast<int>(std::clamp(1.0 / std::max(once, 1e-3), 2.0, 20.0));  // about 1 ms each
  std::vector<double> best(configs.size(), 1e300);
  for (int round = 0; round < kRounds; ++round)
    for (size_t c = 0; c < configs.size(); ++c) best[c] = std::min(best[c], time_ms(configs[c], launches));
  size_t win = static_cast<size_t>(std::min_element(best.begin(), best.end()) - best.begin());
  std::fprintf(stderr, "[sinter] max-autotune %s %s: %zu configurations, best %s: %.4f ms (default %.4f ms)\n",
               autotune_->graph.c_str(), e.name.c_str(), configs.size(), configs[win].str().c_str(), best[win],
               best[0]);
  if (autotune_->store) autotune_->store(e.tune_key, encode(configs[win]));
  return configs[win];
}

}  // namespace sinter::runtime
