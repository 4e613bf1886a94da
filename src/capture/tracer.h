// The tracer: the dispatch hook that records ops into a graph instead of running them. It lifts real tensors
// that reach an op as graph inputs, and turns host reads of traced data (item(), printing, ...) and
// data-dependent ops into graph breaks: the graph so far runs on the real inputs, the user's proxies receive
// real data, and recording goes on in a new segment. Internal to src/capture.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ops/dispatch.h"
#include "sinter/graph.h"
#include "symbolic/shape_env.h"

namespace sinter::capture {

// Why and where a graph ended early.
struct BreakRecord {
  std::string reason;    // "item()", "printing", "nonzero (data-dependent output)"
  std::string location;  // "file.cpp:12" or "unknown location"
};

// One graph being recorded, with the real tensors that feed its inputs (inputs[i] feeds graph input i).
struct Segment {
  Graph graph;
  std::vector<Tensor> inputs;
  int index = 0;         // 0 for the first segment of a call
  bool one_off = false;  // recorded with the arguments as symbolic proxies (the first capture): run it once
  bool has_writes = false;  // records an op that writes an argument (reads of real tensors must flush first)
};

// What feeds a graph input after the arguments and integer carriers of a whole-function capture, in input order.
struct InputSource {
  enum Kind : uint8_t { kLifted, kGrad, kHostScalar, kTangent } kind = kLifted;
  int index = 0;  // kLifted: the lifted tensor; kGrad: the lifted tensor whose .grad() it is; kHostScalar: the read
};

// A host number the graph reads at every call (host_scalar in compile.h).
struct HostRead {
  std::function<double()> read;
  TensorOptions options;
};

// After each call, lifted tensor `owner`'s .grad() becomes graph output `output` (-1: undefined), because the
// function replaced it (loss.backward() made it, zero_grad() dropped it).
struct GradEffect {
  int owner = -1;
  int output = -1;
};

// A .grad() the function read: its owner's, defined or not when captured (a guard).
struct GradRead {
  int owner = -1;
  bool defined = false;
};

// Runs a finished segment (its output node set) on its real inputs and returns its outputs.
using SegmentRunner = std::function<std::vector<Tensor>(Segment& segment)>;

// The graph breaks a compiled function has logged: a function with breaks re-runs its host code on every call,
// and each distinct break is logged once per compiled function, not once per call. Thread-safe.
class BreakLog {
 public:
  // True the first time this break (what, where, in which segment) is seen.
  bool first(const BreakRecord& record, int segment);

 private:
  std::mutex mutex_;
  std::set<std::string> seen_;
};

struct TracerConfig {
  bool fullgraph = false;  // a break throws GraphBreakError
  bool allow_breaks =
      true;             // false: a break throws BreakDuringVerify (the verify re-trace must not run anything)
  bool freeze = false;  // lifted tensors become constants
  const std::unordered_map<const TensorImpl*, std::string>* names = nullptr;  // lifted tensors' names
  BreakLog* break_log = nullptr;  // logs each distinct break once (null: log every one)
};

// Thrown (only) by a tracer with allow_breaks = false when host code reads traced data.
struct BreakDuringVerify {
  BreakRecord record;
};
// Thrown by a tracer that records a backward (set_tracing_backward) when a derivative formula reads traced data:
// the joint graph cannot hold the break, so the capture gives the joint graph up.
struct BreakInBackward {
  BreakRecord record;
};

class Tracer final : public DispatchHook {
 public:
  // A tracer that starts with an empty segment; `runner` runs each segment at a break and at finish().
  Tracer(TracerConfig config, SegmentRunner runner);
  ~Tracer() override;

  // ---- whole-function capture: the caller adds the arguments as inputs before running the function ----
  // Records under `env` (symbolic sizes, guards from host comparisons) until the first break; segments after
  // a break record concrete sizes, since host code re-runs on every call and needs no guards.
  void use_shape_env(std::shared_ptr<sym::ShapeEnv> env);
  Tensor add_argument(const Tensor& real, TensorMeta meta, std::string name);
  // An integer argument made symbolic: a size-carrier input (an int64 tensor of sizes [value], stride 0) lets
  // the graph read the symbol's value at run time.
  void add_int_argument(const SymInt& symbol, int64_t value, std::string name);
  // Marks this as a whole-function capture (arguments are symbolic proxies, freeze applies, reading a real
  // tensor's data breaks): its first segment runs once if the function breaks, and is never cached.
  void mark_whole_capture() { segment_.one_off = true; }

  // ---- DispatchHook ----
  std::vector<Tensor> call(OpId op, const Args& args, const Loc& loc) override;
  Tensor materialize(const Tensor& t, std::string_view what, const Loc& loc) override;
  // A whole capture makes a real tensor's .grad() a graph input when read (guarded as defined or not, and by its
  // layout) and records replacements as grad effects; after a break host code re-runs, so both act directly.
  Tensor read_grad(const Tensor& owner) override;
  void write_grad(const Tensor& owner, const Tensor& grad) override;

  // ---- host state (compile.h) ----
  Tensor host_scalar(std::function<double()> read, TensorOptions options);
  void guard_host_state(std::function<bool()> holds, std::string what);

  // ---- after the function returned ----
  // Without breaks: sets the graph's outputs to `outputs` (lifting real tensors; undefined ones are skipped)
  // and returns, per output, its graph output index or -1 for an undefined tensor. With breaks: flushes the
  // last segment, so every tensor in `outputs` holds real data, and returns an empty plan.
  std::vector<int> finish(std::vector<Tensor>& outputs);

  // ---- compiled training (training.cpp), after finish() of a capture without breaks ----
  // An input for the gradient of a forward output, after every input so far; `example` feeds it at compile time.
  Tensor add_tangent(TensorMeta meta, std::string name, Tensor example);
  // Appends `t` (a graph value, or a real tensor, lifted) to the graph's outputs; returns its position.
  int add_output(const Tensor& t);
  // While on, a break throws BreakInBackward instead of ending the segment.
  void set_tracing_backward(bool on) { tracing_backward_ = on; }

  // What a whole capture without breaks recorded besides the graph (see the structs above).
  const std::vector<InputSource>& input_sources() const { return sources_; }
  const std::vector<HostRead>& host_reads() const { return host_reads_; }
  const std::vector<std::pair<std::function<bool()>, std::string>>& host_guards() const { return host_guards_; }
  const std::vector<GradRead>& grad_reads() const { return grad_reads_; }
  const std::vector<GradEffect>& grad_effects() const { return grad_effects_; }
  bool wrote_grads() const;  // some .grad() was replaced (a backward ran inside the function)

  bool broke() const { return !breaks_.empty(); }
  const std::vector<BreakRecord>& breaks() const { return breaks_; }
  Segment& segment() { return segment_; }
  // Real tensors lifted as inputs of the current segment, in input order (whole capture: after the
  // arguments).
  const std::vector<Tensor>& lifted() const { return lifted_real_; }
  int num_argument_inputs() const { return num_argument_inputs_; }
  int segments_run() const { return segments_run_; }

 private:
  Tensor to_graph(const Tensor& t, const char* what);
  Value to_graph(const Value& v, bool concretize);
  Tensor lift(const Tensor& t);
  void rewrite_scalars(OpId& op, Args& args);
  Tensor scalar_input(const Scalar& s, Device device);
  [[noreturn]] void fail_fullgraph(const BreakRecord& record);
  void take_break(BreakRecord record);
  void flush();
  bool tracing_backward_ = false;
  void start_segment();
  bool all_passthrough(const Args& args) const;
  Tensor hand_out(const Tensor& t);
  std::string user_message(const std::string& message, const Loc& loc) const;

  TracerConfig config_;
  SegmentRunner runner_;
  Segment segment_;
  std::shared_ptr<sym::ShapeEnv> env_;
  std::optional<sym::ShapeEnvScope> env_scope_;
  std::unordered_map<const TensorImpl*, Tensor> lifted_;  // real tensor -> its input proxy in this segment
  std::vector<Tensor> lifted_real_;
  // Tensors handed to host code by a read (and views host code made of them, e.g. printing's select()s):
  // views and copies of them alone run eagerly instead of being recorded, so printing a tensor is one break,
  // not one per element.
  std::unordered_map<const TensorImpl*, std::shared_ptr<TensorImpl>> passthrough_;
  std::vector<BreakRecord> breaks_;
  Loc last_loc_{};  // the last op recorded with a location (names where operators and conversions are)
  int num_argument_inputs_ = 0;
  int segments_run_ = 0;
  // Scalar inputs of this segment by (dtype, value bits): a value used twice is one input.
  std::map<std::tuple<int, uint64_t, std::string>, int> scalar_inputs_;  // (kind, bits, device)
  // Whole capture: what feeds the inputs after the arguments, host reads and guards, and the .grad() fields the
  // function touched (by owner, in first-touch order).
  struct GradState {
    int owner = -1;  // lifted index
    Tensor current;  // what host code sees now
    bool written = false;
    bool read = false;  // the real field was read (its gradient is an input, or it was undefined: a guard)
  };
  int lifted_index(const Tensor& real);
  // The state of owner's .grad(); `read`: host code reads the field (a first read makes the real gradient a graph
  // input and records a guard; a field written before any read needs neither).
  GradState& grad_state(const Tensor& owner, bool read);
  void read_real_grad(const Tensor& owner, GradState& st);
  std::vector<InputSource> sources_;
  std::vector<HostRead> host_reads_;
  std::vector<std::pair<std::function<bool()>, std::string>> host_guards_;
  std::vector<GradRead> grad_reads_;
  std::vector<GradEffect> grad_effects_;
  std::vector<GradState> grad_states_;
  std::unordered_map<const TensorImpl*, size_t> grad_index_;
};

// The run-time input that carries a symbolic integer argument's value: an int64 tensor of sizes [value],
// stride 0.
Tensor size_carrier(int64_t value);

// "file.cpp:12", or "unknown location" for line 0 (operators and conversions cannot take a source_location).
std::string location_str(const Loc& loc);

}  // namespace sinter::capture
