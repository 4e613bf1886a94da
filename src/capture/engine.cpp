// The engine behind compile(): on each call, check the guards of the cached entries (a flat list of cheap
// comparisons under a shared lock) and run the hit; on a miss, wait for a compile under way, then say why,
// apply automatic dynamic shapes, capture, compile and add an entry; past the recompile limit, run eagerly.
// Functions with breaks go to breaks.cpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <chrono>
#include <cstdlib>

#include "capture/engine_state.h"
#include "support/check.h"
#include "support/log.h"
#include "support/warning.h"

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
// lifted tensors. `inputs` arrives holding the arguments' tensors; an undefined one (a std::nullopt argument) is
// no graph input (its guard is that it stays undefined).
std::vector<Tensor> run_entry(const Entry& e, std::vector<CallArg>& args, std::vector<Tensor>& inputs,
                              const Invoke& invoke) {
  if (e.run_eagerly) return invoke(args);
  std::erase_if(inputs, [](const Tensor& t) { return !t.defined(); });
  for (int a : e.int_args) inputs.push_back(size_carrier(std::get<SymInt>(args[a]).hint()));
  for (const InputSource& s : e.sources) {
    switch (s.kind) {
      case InputSource::kLifted:
        inputs.push_back(e.guards.lifted[s.index]);
        break;
      case InputSource::kGrad:
        inputs.push_back(Tensor(e.guards.lifted[s.index].impl()->grad));
        break;
      case InputSource::kHostScalar: {
        const HostRead& h = e.host_reads[s.index];
        inputs.push_back(full({}, h.read(), h.options));
        break;
      }
      case InputSource::kTangent:
        break;  // only the joint graph has them; its forward does not
    }
  }
  // A .grad() the function replaces without reading it (zero_grad() then backward()) is dropped before the
  // graph runs, as eagerly, so the old and the new gradients are not alive at once.
  for (const GradEffect& g : e.grad_effects)
    if (!e.grad_read[g.owner]) e.guards.lifted[g.owner].impl()->grad.reset();
  std::vector<Tensor> outs = e.training ? run_training(e.training, inputs) : run_program(e.program, inputs);
  for (const GradEffect& g : e.grad_effects) {
    Tensor grad = g.output >= 0 ? outs[g.output] : Tensor();
    // A gradient that is an input's memory (the function assigned one) is copied, as eager's accumulation does.
    if (grad.defined())
      for (const Tensor& in : inputs)
        if (in.defined() && in.has_storage() && in.storage() == grad.storage()) {
          grad = grad.clone();
          break;
        }
    e.guards.lifted[g.owner].impl()->grad = grad.defined() ? grad.impl_ptr() : nullptr;
  }
  std::vector<Tensor> result(e.output_plan.size());
  for (size_t i = 0; i < e.output_plan.size(); ++i)
    if (e.output_plan[i] >= 0) result[i] = std::move(outs[e.output_plan[i]]);
  return result;
}

// What identifies a call for a compile under way (see Flight): every argument's kind and value, and every
// tensor's dtype, device, sizes and strides.
std::vector<int64_t> call_signature(const std::vector<CallArg>& args, const std::vector<Tensor>& flat) {
  std::vector<int64_t> key;
  for (const CallArg& a : args) {
    key.push_back(static_cast<int64_t>(a.index()));
    if (const SymInt* v = std::get_if<SymInt>(&a)) key.push_back(v->hint());
    else if (const double* d = std::get_if<double>(&a)) key.push_back(std::bit_cast<int64_t>(*d));
    else if (const bool* b = std::get_if<bool>(&a)) key.push_back(*b);
    else if (const auto* list = std::get_if<std::vector<Tensor>>(&a)) key.push_back(static_cast<int64_t>(list->size()));
  }
  for (const Tensor& t : flat) {
    if (!t.defined()) {
      key.push_back(-1);
      continue;
    }
    key.push_back(static_cast<int64_t>(t.dtype()));
    key.push_back(static_cast<int64_t>(t.device().type));
    key.push_back(t.device().index);
    key.push_back(t.dim());
    for (const SymInt& v : t.sizes()) key.push_back(v.hint());
    for (const SymInt& v : t.strides()) key.push_back(v.hint());
  }
  return key;
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
  CompileStats out = state_->stats;
  out.guard_hits += state_->guard_hits.load(std::memory_order_relaxed);
  out.first_tier_calls = state_->tiers->first_tier_calls.load();
  out.tier_switches = state_->tiers->swaps.load();
  if (out.tier_switches > 0 && out.kernels_per_call < 0) out.kernels_per_call = state_->tiers->kernels.load();
  return out;
}

void Engine::reset() {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  {
    std::unique_lock<std::shared_mutex> write(s.entries_mutex);
    s.entries.clear();
  }
  s.auto_dynamic.clear();
  s.has_breaks = false;
  s.limit_logged = false;
  s.fallback_warned = false;
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
  if (std::shared_ptr<const Entry> hit = s.find_entry(args, flat)) {
    if (s.verify) s.verify_capture(*hit, args, flat, invoke);
    return run_entry(*hit, args, flat, invoke);
  }

  // A miss. Wait for a compile under way (it may add the entry this call needs), then say why, widen the
  // dynamic set, and capture (or give up past the limit).
  const std::vector<int64_t> key = call_signature(args, flat);
  std::set<DynKey> dynamic;
  bool run_eagerly = false;
  std::shared_ptr<Flight> flight;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    for (;;) {
      if (s.has_breaks.load(std::memory_order_acquire)) {
        lock.unlock();
        return s.call_with_breaks(args, invoke);
      }
      if (std::shared_ptr<const Entry> hit = s.find_entry(args, flat)) {
        lock.unlock();
        if (s.verify) s.verify_capture(*hit, args, flat, invoke);
        return run_entry(*hit, args, flat, invoke);
      }
      if (!s.flight) break;
      if (s.flight->owner == std::this_thread::get_id()) {
        // Called again by its own compile (a backend running the function): it has no entry yet.
        lock.unlock();
        return invoke(args);
      }
      std::shared_ptr<Flight> other = s.flight;
      s.flight_done.wait(lock, [&] { return other->done; });
      // The same call failed to compile a moment ago: report that failure rather than compiling again.
      if (other->error && other->key == key) std::rethrow_exception(other->error);
    }
    std::string reason;
    std::vector<std::shared_ptr<const Entry>> entries;
    {
      std::shared_lock<std::shared_mutex> read(s.entries_mutex);
      entries = s.entries;
    }
    if (!entries.empty()) {
      // Explain the miss against the closest entry: the one with the fewest failed guards (the latest on a
      // tie).
      std::vector<GuardFailure> failures;
      for (const auto& e : entries) {
        std::vector<GuardFailure> f = e->guards.diagnose(args, flat);
        if (failures.empty() || f.size() <= failures.size()) failures = std::move(f);
      }
      std::vector<std::string> texts;
      for (const GuardFailure& f : failures) texts.push_back(f.text);
      reason = texts.empty() ? "a guard failed" : fmt::format("{}", fmt::join(texts, "; "));
      if (s.options.dynamic == Dynamic::kAuto) {
        for (const GuardFailure& f : failures) {
          DynKey dk = f.dim >= 0 ? DynKey{f.arg, f.element, f.dim} : DynKey{f.arg, -1, -1};
          if (f.arg < 0 || (f.dim < 0 && !f.int_changed) || !s.auto_dynamic.insert(dk).second) continue;
          SINTER_LOG(kDynamic, "{}: making it dynamic (automatic dynamic shapes)", f.text);
        }
      }
    }
    if (static_cast<int>(entries.size()) >= s.options.recompile_limit) {
      if (!s.limit_logged) {
        s.limit_logged = true;
        // Whatever SINTER_LOGS says (the recompiles channel would only repeat it).
        log_warning(fmt::format(
            "recompile limit ({}) reached: calls of this compiled function that match none of its entries now "
            "run eagerly (raise CompileOptions::recompile_limit, or keep sizes symbolic; SINTER_LOGS=recompiles,"
            "dynamic says why each call recompiled). Last failed guard: {}",
            s.options.recompile_limit, reason));
      }
      ++s.stats.eager_fallbacks;
      run_eagerly = true;
    } else {
      if (!entries.empty()) {
        ++s.stats.recompiles;
        s.stats.recompile_reasons.push_back({reason});
        SINTER_LOG(kRecompiles, "recompiling (entry {} of at most {}): {}", entries.size() + 1,
                   s.options.recompile_limit, reason);
      }
      flight = std::make_shared<Flight>();
      flight->key = key;
      flight->owner = std::this_thread::get_id();
      s.flight = flight;
    }
    dynamic = s.auto_dynamic;
  }
  if (run_eagerly) return invoke(args);

  // Ends the flight whatever happens (an error is kept for the callers of the same key that wait on it).
  auto land = [&s, &flight](std::exception_ptr error) {
    flight->error = std::move(error);
    flight->done = true;
    s.flight.reset();
    s.flight_done.notify_all();
  };
  std::shared_ptr<Entry> entry;
  bool fell_back = false;
  auto start = std::chrono::steady_clock::now();
  try {
    WholeCapture w = s.capture_whole(args, flat, dynamic, invoke, s.tracer_config(),
                                     [&s](Segment& seg) { return s.run_segment(seg); });
    if (w.tracer->broke()) {
      // The call already ran, segment by segment; from now on every call re-runs the host code.
      std::lock_guard<std::mutex> lock(s.mutex);
      s.has_breaks = true;
      s.stats.graph_breaks += static_cast<int>(w.tracer->breaks().size());
      s.stats.compile_seconds += seconds_since(start);
      land(nullptr);
      return w.outputs;
    }
    entry = std::make_shared<Entry>();
    entry->dynamic = dynamic;
    entry->output_plan = w.plan;
    entry->int_args = w.int_args;
    for (const InputSource& src : w.tracer->input_sources())
      if (src.kind != InputSource::kTangent) entry->sources.push_back(src);
    entry->host_reads = w.tracer->host_reads();
    entry->grad_effects = w.tracer->grad_effects();
    entry->grad_read.assign(w.guards.lifted.size(), false);
    for (const InputSource& src : entry->sources)
      if (src.kind == InputSource::kGrad) entry->grad_read[src.index] = true;
    // The lifted tensors (parameters, buffers) are the same at every call the entry serves.
    std::vector<bool> static_inputs;
    for (const Tensor& in : w.inputs)
      static_inputs.push_back(std::any_of(w.guards.lifted.begin(), w.guards.lifted.end(),
                                          [&](const Tensor& t) { return t.is_same(in); }));
    if (!w.eager_reason.empty()) {
      entry->run_eagerly = true;
      log_warning(fmt::format("compiled training: this graph runs eagerly (with eager autograd) because {}",
                              w.eager_reason));
    } else if (w.joint) {
      std::string why_not;
      entry->training = compile_training(std::move(w.tracer->segment().graph), *w.joint, w.inputs, s.options,
                                         s.training(), &fell_back, std::move(static_inputs), s.tiers, &why_not);
      if (entry->training) {
        entry->program = forward_program(*entry->training);
      } else {
        entry->run_eagerly = true;
        log_warning(fmt::format("compiled training: this graph runs eagerly (with eager autograd) because {}",
                                why_not));
      }
    } else {
      entry->program = compile_program(std::move(w.tracer->segment().graph), w.inputs, s.options, s.training(),
                                       &fell_back, std::move(static_inputs), s.tiers);
    }
    entry->guards = std::move(w.guards);
  } catch (...) {
    std::lock_guard<std::mutex> lock(s.mutex);
    land(std::current_exception());
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    size_t count = 0;
    {
      std::unique_lock<std::shared_mutex> write(s.entries_mutex);
      s.entries.push_back(entry);
      count = s.entries.size();
    }
    if (log_enabled(LogChannel::kGuards))
      log_message(LogChannel::kGuards,
                  fmt::format("guards of entry {}:\n  {}", count, fmt::join(entry->guards.describe(), "\n  ")));
    ++s.stats.compiles;
    if (fell_back) {
      ++s.stats.eager_fallbacks;
      s.warn_fallback(entry->program);
    }
    s.stats.compile_seconds += seconds_since(start);
    s.stats.kernels_per_call = entry->program.fn.kernels();
    land(nullptr);
  }
  return run_entry(*entry, args, flat, invoke);
}

void Engine::State::warn_fallback(const Program& program) {
  if (fallback_warned) return;
  fallback_warned = true;
  log_warning(fmt::format("backend '{}' failed to compile a graph of this compiled function; running it with "
                          "aot_eager instead (CompileOptions::fallback). The failure: {}",
                          options.backend, program.fallback_reason));
}

std::shared_ptr<const Entry> Engine::State::find_entry(const std::vector<CallArg>& args,
                                                       const std::vector<Tensor>& flat) {
  thread_local std::vector<int64_t> values(64);
  std::shared_lock<std::shared_mutex> read(entries_mutex);
  for (const auto& e : entries) {
    if (values.size() < static_cast<size_t>(e->guards.num_symbols)) values.resize(e->guards.num_symbols);
    if (e->guards.check(args, flat, values.data())) {
      guard_hits.fetch_add(1, std::memory_order_relaxed);
      return e;
    }
  }
  return nullptr;
}

}  // namespace capture
}  // namespace sinter
