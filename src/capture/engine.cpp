// The engine behind compile(): on each call, check the guards of the cached entries (a flat list of cheap
// comparisons under one mutex) and run the hit; on a miss, say why, apply automatic dynamic shapes, capture,
// compile and add an entry; past the recompile limit, run eagerly. Functions with breaks go to breaks.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <chrono>
#include <cstdlib>

#include "capture/engine_state.h"
#include "support/check.h"
#include "support/log.h"

namespace sinter {

Mode parse_mode(std::string_view name) {
  if (name == "default") return Mode::kDefault;
  if (name == "reduce-overhead") return Mode::kReduceOverhead;
  if (name == "max-autotune") return Mode::kMaxAutotune;
  throw Error(
      fmt::format("unknown compile mode '{}'; known modes: default, reduce-overhead, max-autotune", name));
}

void mark_dynamic(const Tensor& t, int64_t dim, DynamicRange range) {
  SINTER_CHECK(t.defined(), "mark_dynamic: the tensor is undefined");
  SINTER_CHECK(dim >= -t.dim() && dim < t.dim(),
               "mark_dynamic: dim {} is out of range for a tensor of rank {}", dim, t.dim());
  if (dim < 0) dim += t.dim();
  SINTER_CHECK(range.min <= range.max, "mark_dynamic: the range [{}, {}] is empty", range.min, range.max);
  SINTER_CHECK(range.max >= 2,
               "mark_dynamic: sizes 0 and 1 are always specialised; the range [{}, {}] has no other",
               range.min, range.max);
  auto& dims = t.impl()->dynamic_dims;
  for (DynamicDim& d : dims) {
    if (d.dim == dim) {
      d.min = range.min;
      d.max = range.max;
      return;
    }
  }
  dims.push_back(DynamicDim{dim, range.min, range.max});
}

namespace capture {

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string_view(v) != "0";
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs an entry: the graph's inputs are the arguments' tensors, the integer symbols' carriers, then the
// lifted tensors. `inputs` arrives holding the arguments' tensors.
std::vector<Tensor> run_entry(const Entry& e, const std::vector<CallArg>& args, std::vector<Tensor>& inputs) {
  for (int a : e.int_args) inputs.push_back(size_carrier(std::get<SymInt>(args[a]).hint()));
  inputs.insert(inputs.end(), e.guards.lifted.begin(), e.guards.lifted.end());
  std::vector<Tensor> outs = run_program(e.program, inputs);
  std::vector<Tensor> result(e.output_plan.size());
  for (size_t i = 0; i < e.output_plan.size(); ++i)
    if (e.output_plan[i] >= 0) result[i] = std::move(outs[e.output_plan[i]]);
  return result;
}

}  // namespace

Engine::Engine(CompileOptions options, const nn::Module* module) : state_(std::make_unique<State>()) {
  State& s = *state_;
  SINTER_CHECK(options.recompile_limit >= 1, "compile: recompile_limit must be at least 1, got {}",
               options.recompile_limit);
  find_backend(options.backend);  // an unknown name fails here, listing the known ones
  s.options = std::move(options);
  s.module = const_cast<nn::Module*>(module);  // compile(module) takes it non-const; we only read it
  s.verify = env_flag("SINTER_VERIFY_CAPTURE");
  s.stats.mode = s.options.mode;
  if (s.module) {
    // Graph value names start with a letter or '_': a Sequential's "0.weight" becomes "_0.weight".
    auto graph_name = [](const std::string& name) {
      return std::isdigit(static_cast<unsigned char>(name[0])) ? "_" + name : name;
    };
    for (const auto& [name, t] : s.module->named_parameters())
      if (t.defined()) s.names.emplace(t.impl(), graph_name(name));
    for (const auto& [name, t] : s.module->named_buffers())
      if (t.defined()) s.names.emplace(t.impl(), graph_name(name));
  }
}

Engine::~Engine() = default;

CompileStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stats;
}

void Engine::reset() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.entries.clear();
  s.auto_dynamic.clear();
  s.has_breaks = false;
  s.limit_logged = false;
  s.segments.clear();
  s.segments_per_index.clear();
  s.kernels_by_segment.clear();
}

std::vector<Tensor> Engine::call(std::vector<CallArg> args, const Invoke& invoke) {
  State& s = *state_;
  // Inside another capture (a compiled function calling this one) the ops are traced by the outer one.
  if (current_hook()) return invoke(args);
  if (s.options.backend == "eager") return invoke(args);
  if (s.has_breaks.load(std::memory_order_acquire)) return s.call_with_breaks(args, invoke);

  std::vector<Tensor> flat;
  flat.reserve(args.size() + 4);
  flatten_tensors(args, flat);
  thread_local std::vector<int64_t> values(64);
  std::shared_ptr<const Entry> hit;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    for (const auto& e : s.entries) {
      if (values.size() < static_cast<size_t>(e->guards.num_symbols)) values.resize(e->guards.num_symbols);
      if (e->guards.check(args, flat, values.data())) {
        hit = e;
        ++s.stats.guard_hits;
        break;
      }
    }
  }
  if (hit) {
    if (s.verify) s.verify_capture(*hit, args, flat, invoke);
    return run_entry(*hit, args, flat);
  }

  // A miss: say why, widen the dynamic set, and capture (or give up past the limit).
  std::set<DynKey> dynamic;
  bool run_eagerly = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    std::string reason;
    if (!s.entries.empty()) {
      // Explain the miss against the closest entry: the one with the fewest failed guards (the latest on a
      // tie).
      std::vector<GuardFailure> failures;
      for (const auto& e : s.entries) {
        std::vector<GuardFailure> f = e->guards.diagnose(args, flat);
        if (failures.empty() || f.size() <= failures.size()) failures = std::move(f);
      }
      std::vector<std::string> texts;
      for (const GuardFailure& f : failures) texts.push_back(f.text);
      reason = texts.empty() ? "a guard failed" : fmt::format("{}", fmt::join(texts, "; "));
      if (s.options.dynamic == Dynamic::kAuto) {
        for (const GuardFailure& f : failures) {
          DynKey key = f.dim >= 0 ? DynKey{f.arg, f.element, f.dim} : DynKey{f.arg, -1, -1};
          if (f.arg < 0 || (f.dim < 0 && !f.int_changed) || !s.auto_dynamic.insert(key).second) continue;
          SINTER_LOG(kDynamic, "{}: making it dynamic (automatic dynamic shapes)", f.text);
        }
      }
    }
    if (static_cast<int>(s.entries.size()) >= s.options.recompile_limit) {
      if (!s.limit_logged) {
        s.limit_logged = true;
        SINTER_LOG(kRecompiles,
                   "recompile limit ({}) reached: calls that match no compiled entry now run eagerly. Last "
                   "failure: {}",
                   s.options.recompile_limit, reason);
      }
      ++s.stats.eager_fallbacks;
      run_eagerly = true;
    } else if (!s.entries.empty()) {
      ++s.stats.recompiles;
      s.stats.recompile_reasons.push_back({reason});
      SINTER_LOG(kRecompiles, "recompiling (entry {} of at most {}): {}", s.entries.size() + 1,
                 s.options.recompile_limit, reason);
    }
    dynamic = s.auto_dynamic;
  }
  if (run_eagerly) return invoke(args);

  auto start = std::chrono::steady_clock::now();
  WholeCapture w = s.capture_whole(args, flat, dynamic, invoke, s.tracer_config(),
                                   [&s](Segment& seg) { return s.run_segment(seg); });
  if (w.tracer->broke()) {
    // The call already ran, segment by segment; from now on every call re-runs the host code.
    std::lock_guard<std::mutex> lock(s.mutex);
    s.has_breaks = true;
    s.stats.graph_breaks += static_cast<int>(w.tracer->breaks().size());
    s.stats.compile_seconds += seconds_since(start);
    return w.outputs;
  }
  auto entry = std::make_shared<Entry>();
  entry->dynamic = dynamic;
  entry->output_plan = w.plan;
  entry->int_args = w.int_args;
  bool fell_back = false;
  entry->program = compile_program(std::move(w.tracer->segment().graph), w.inputs, s.options, &fell_back);
  entry->guards = std::move(w.guards);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (log_enabled(LogChannel::kGuards))
      log_message(LogChannel::kGuards, fmt::format("guards of entry {}:\n  {}", s.entries.size() + 1,
                                                   fmt::join(entry->guards.describe(), "\n  ")));
    s.entries.push_back(entry);
    ++s.stats.compiles;
    if (fell_back) ++s.stats.eager_fallbacks;
    s.stats.compile_seconds += seconds_since(start);
    s.stats.kernels_per_call = entry->program.fn.kernels();
  }
  return run_entry(*entry, args, flat);
}

}  // namespace capture
}  // namespace sinter
