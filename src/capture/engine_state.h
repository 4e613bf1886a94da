// The engine's state and the steps shared by engine.cpp (calls, guards, recompiles), capture.cpp
// (whole-function capture and SINTER_VERIFY_CAPTURE), breaks.cpp (functions with graph breaks) and
// explain.cpp. Internal to src/capture.
#pragma once
#include <atomic>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "capture/guards.h"
#include "capture/program.h"
#include "capture/segment_key.h"
#include "capture/tracer.h"
#include "capture/training.h"
#include "sinter/compile.h"
#include "sinter/nn.h"

namespace sinter::capture {

// A dimension (arg, element of a tensor list or -1, dim) or an integer argument (arg, -1, -1) that automatic
// dynamic shapes made symbolic after it changed.
using DynKey = std::tuple<int, int, int>;

// One compiled version of a function without breaks.
struct Entry {
  GuardSet guards;
  Program program;
  std::vector<int> output_plan;  // per user output: the program output, or -1 for an undefined tensor
  std::vector<int> int_args;     // symbolic integer arguments, in input order (their size carriers)
  std::vector<InputSource> sources;  // what feeds the inputs after the arguments and carriers (tracer.h)
  std::vector<HostRead> host_reads;
  std::vector<GradEffect> grad_effects;
  std::vector<bool> grad_read;  // per lifted tensor: the graph reads its .grad() (an input)
  std::set<DynKey> dynamic;      // the automatic-dynamic set it was captured with (for verification)
  // Compiled training (training.h): the forward runs with an autograd node on its outputs. `program` is then a
  // copy of the forward program, for stats and verification.
  std::shared_ptr<const TrainingProgram> training;
  bool run_eagerly = false;  // the entry's graph could not be compiled for training: the call runs eagerly
};

// What capturing a whole function produced.
struct WholeCapture {
  std::unique_ptr<Tracer> tracer;
  std::vector<Tensor> outputs;  // the function's result: proxies, or real tensors when it broke
  std::vector<int> plan;        // per output: graph output index or -1 (no breaks)
  GuardSet guards;              // no breaks
  std::vector<int> int_args;
  std::vector<Tensor> inputs;  // the real inputs of the graph, in order (no breaks)
  std::optional<JointInfo> joint;  // the backward was traced too (compiled training)
  std::string eager_reason;        // non-empty: the backward could not be traced, the entry runs eagerly
};

// A compile under way. Compiles of one function are serialised: a call that misses while one runs waits for it
// and then checks the guards again, so concurrent callers of one missing entry share a single compile (and
// under kAuto the symbolic entry one compile makes serves the callers of other sizes, which would otherwise
// each compile a static entry of their own). `key` is the call's signature (call_signature): callers with the
// same key see the compile's failure instead of retrying it.
struct Flight {
  std::vector<int64_t> key;
  std::thread::id owner;  // the compiling thread (a backend calling the function it compiles must not wait)
  bool done = false;
  std::exception_ptr error;
};

struct Engine::State {
  CompileOptions options;
  nn::Module* module = nullptr;
  bool training() const { return module && module->is_training(); }  // CompileContext::training
  bool verify = false;                                       // SINTER_VERIFY_CAPTURE=1
  std::unordered_map<const TensorImpl*, std::string> names;  // the module's parameters and buffers

  // The entry list is read on every call under a shared lock (the hot path takes no exclusive lock); it is
  // written, under `mutex` and then this lock held exclusively, only when a compile adds an entry.
  std::shared_mutex entries_mutex;
  std::vector<std::shared_ptr<const Entry>> entries;
  std::atomic<int> guard_hits{0};  // calls served by an entry (stats.guard_hits is filled from it)

  std::mutex mutex;  // guards everything below
  std::shared_ptr<Flight> flight;  // the compile under way, or null
  std::condition_variable flight_done;
  std::set<DynKey> auto_dynamic;
  std::atomic<bool> has_breaks{false};
  bool limit_logged = false;    // the recompile limit was said (once per compiled function, on stderr)
  bool fallback_warned = false;  // a backend fallback was said (likewise)
  mutable BreakLog break_log;    // each distinct graph break is logged once
  CompileStats stats;
  std::shared_ptr<TierCounters> tiers = std::make_shared<TierCounters>();  // CompileOptions::tiered
  // Functions with breaks: compiled segments by structure (the recorded graph, input metas included, and the
  // inputs' aliasing), and how many were compiled at each segment position (bounded by recompile_limit).
  struct SegmentEntry {
    Graph graph;  // as recorded, to compare new recordings with
    InputAliasing aliasing;
    Program program;
  };
  std::unordered_multimap<uint64_t, std::shared_ptr<const SegmentEntry>> segments;
  std::map<uint64_t, std::shared_ptr<Flight>> segment_flights;  // segment compiles under way, by structure hash
  std::map<int, int> segments_per_index;
  std::map<int, int> kernels_by_segment;  // kernels per call of the latest compile at each segment position

  // Whole-function capture of one call (capture.cpp). `runner` runs segments if the function breaks.
  WholeCapture capture_whole(const std::vector<CallArg>& args, const std::vector<Tensor>& flat,
                             const std::set<DynKey>& dynamic, const Invoke& invoke, TracerConfig config,
                             SegmentRunner runner);
  // Re-traces a call that hit `entry` and throws Error naming the first op that differs (capture.cpp).
  void verify_capture(const Entry& entry, const std::vector<CallArg>& args, const std::vector<Tensor>& flat,
                      const Invoke& invoke);
  // A call of a function with breaks (breaks.cpp).
  std::vector<Tensor> call_with_breaks(std::vector<CallArg>& args, const Invoke& invoke);
  // Says once per compiled function, on stderr, that a backend failed and aot_eager runs instead (under mutex).
  void warn_fallback(const Program& program);
  // Runs a segment from the cache, compiling it on a miss (breaks.cpp).
  std::vector<Tensor> run_segment(Segment& segment);
  TracerConfig tracer_config() const;
  // The first entry whose guards pass (counted as a guard hit), or null. Takes the entry list's shared lock.
  std::shared_ptr<const Entry> find_entry(const std::vector<CallArg>& args, const std::vector<Tensor>& flat);
};

}  // namespace sinter::capture
