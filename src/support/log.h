// Named log channels, switched on by SINTER_LOGS=graph,guards,... (like TORCH_LOGS); all off by default.
// Each message goes to stderr as "[sinter:channel] text". SINTER_LOGS=all turns every channel on.
#pragma once
#include <fmt/format.h>

#include <string>
#include <string_view>

namespace sinter {

enum class LogChannel : uint8_t {
  kGraph,        // each captured graph
  kGuards,       // the guards of each compiled entry
  kRecompiles,   // why a call recompiled (which guard failed, old and new value)
  kGraphBreaks,  // each break: what read data and where
  kDynamic,      // which dims/ints became symbolic and why
  kFusion,       // fusion decisions with reasons and scores
  kOutputCode,   // generated source
  kPerfHints,    // missed optimisations
  kPasses,       // the pass pipeline: each pass, changed or not, with its time
  kProfile,      // per-kernel time of compiled programs, summed over calls, printed when a program is freed
  kSchedule,     // the target each graph is compiled for, and the kernels the scheduler made
  kCudagraphs,   // CUDA graphs: each capture, eviction, and why a graph runs without them
  kAot,          // compiled training: the joint forward + backward graph, its partition, the two graphs
  kCount
};

bool log_enabled(LogChannel channel);
void log_message(LogChannel channel, std::string_view text);
std::string_view log_channel_name(LogChannel channel);
// Re-reads SINTER_LOGS (tests set it with setenv and call this).
void reload_log_settings();

}  // namespace sinter

#define SINTER_LOG(channel, ...)                                                         \
  do {                                                                                   \
    if (::sinter::log_enabled(::sinter::LogChannel::channel))                            \
      ::sinter::log_message(::sinter::LogChannel::channel, fmt::format(__VA_ARGS__));    \
  } while (0)
