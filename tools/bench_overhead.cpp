// `sinter bench --suite overhead`: the host time a compiled call adds on top of the kernels it runs (issue 3
// item 12). Graphs of 10, 50 and 200 tiny ops ([4] float adds and multiplies, so kernels cost almost nothing):
// - without breaks: a compiled call (guard check + the compiled graph) minus the same compiled graph called
//   directly (a backend that stashes aot_eager's or the inductor's compiled graph hands it to the bench).
//   Target: at most 5 us + 0.1 us per op.
// - with one break (an item() in the middle): every call re-runs the host code, re-recording each op and
//   looking its segments up by structure; a compiled call minus the same ops run eagerly back to back, divided
//   by the ops re-recorded (segments run on aot_eager, so kernels are eager's). Target: at most 1 us per op.
// Times are this thread's CPU time (the ops on [4] tensors run inline, never on the pool), the minimum over
// several batches of the mean per call: the least disturbed by other processes on a shared machine.
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <string>

#include "bench_util.h"
#include "sinter/compile.h"
#include "sinter/sinter.h"
#include "tools.h"

namespace sinter::tools {
namespace {

// A chain of n tiny pointwise ops.
Tensor chain(const Tensor& x, int n) {
  Tensor y = x;
  for (int i = 0; i < n; ++i) y = (i % 2) ? y * 0.999 : y + 0.001;
  return y;
}

// The function with one break: n ops around an item(); n + 2 ops in all (sum, and the multiply by the value).
Tensor chain_with_break(const Tensor& x, int n) {
  Tensor y = chain(x, n / 2);
  double s = y.sum().item<double>();
  return chain(y * s, n - n / 2);
}

double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// CPU seconds per call: the minimum over `batches` batches of the mean over a batch of about 20 ms.
template <class F>
double seconds_per_call(F&& fn, int batches) {
  for (int i = 0; i < 50; ++i) fn();
  double best = 1e9;
  for (int b = 0; b < batches; ++b) {
    int n = 0;
    double start = thread_seconds(), elapsed = 0;
    do {
      for (int i = 0; i < 10; ++i) fn();
      n += 10;
      elapsed = thread_seconds() - start;
    } while (elapsed < 0.02);
    best = std::min(best, elapsed / n);
  }
  return best;
}

struct Row {
  std::string backend = "aot_eager";
  int ops = 0;
  int breaks = 0;
  double eager_us = 0, direct_us = 0, compiled_us = 0;  // direct: the graph's kernels run without the engine
  int ops_recorded = 0;                                  // per call (break path only)
  double overhead_us() const { return compiled_us - direct_us; }
  double target_us() const { return breaks ? 1.0 * ops_recorded : 5.0 + 0.1 * ops; }
};

}  // namespace

int bench_overhead(const BenchOptions& opt) {
  const int batches = opt.quick ? 3 : 9;
  // The wrapped backend's compiled graph for the last compile, so the bench can call it without the engine.
  auto stash = std::make_shared<CompiledGraph>();
  auto wrapped = std::make_shared<std::string>();
  register_backend("bench_overhead_stash", [stash, wrapped](const Graph& g, const std::vector<Tensor>& examples) {
    *stash = find_backend(*wrapped)(g, examples);
    return *stash;
  }, {.replace = true});
  Tensor x = randn({4});
  std::vector<Row> rows;
  for (const char* backend : {"aot_eager", "inductor"}) {
    *wrapped = backend;
    for (int n : {10, 50, 200}) {
      Row r;
      r.backend = backend;
      r.ops = n;
      auto f = [n](const Tensor& t) { return chain(t, n); };
      auto c = compile(f, {.backend = "bench_overhead_stash"});
      try {
        (void)c(x);
      } catch (const std::exception& e) {  // no C++ compiler for the inductor, say: report and go on
        fmt::print("{} with {} ops: {}\n", backend, n, e.what());
        continue;
      }
      CompiledGraph direct = *stash;
      std::vector<Tensor> inputs{x};
      r.eager_us = 1e6 * seconds_per_call([&] { (void)f(x); }, batches);
      r.direct_us = 1e6 * seconds_per_call([&] { (void)direct(inputs); }, batches);
      r.compiled_us = 1e6 * seconds_per_call([&] { (void)c(x); }, batches);
      if (c.stats().compiles != 1)
        throw Error(fmt::format("overhead bench: {} ops compiled {} times", n, c.stats().compiles));
      rows.push_back(r);
    }
  }
  for (int n : {10, 50, 200}) {
    Row r;
    r.ops = n;
    r.breaks = 1;
    r.ops_recorded = n + 2;
    auto f = [n](const Tensor& t) { return chain_with_break(t, n); };
    auto c = compile(f, {.backend = "aot_eager"});
    (void)c(x);
    (void)c(x);
    r.eager_us = 1e6 * seconds_per_call([&] { (void)f(x); }, batches);
    r.direct_us = r.eager_us;
    r.compiled_us = 1e6 * seconds_per_call([&] { (void)c(x); }, batches);
    if (c.stats().compiles > 3)
      throw Error(fmt::format("overhead bench: {} ops with a break compiled {} segments", n, c.stats().compiles));
    rows.push_back(r);
  }

  fmt::print("{:<10} {:<6} {:<7} {:>10} {:>11} {:>12} {:>12} {:>10} {:>10}  {}\n", "backend", "ops", "breaks",
             "eager us", "direct us", "compiled us", "overhead us", "per op us", "target us", "");
  std::vector<std::string> items;
  bool all_met = true;
  for (const Row& r : rows) {
    double per_op = r.breaks ? r.overhead_us() / r.ops_recorded : r.overhead_us() / r.ops;
    bool met = r.overhead_us() <= r.target_us();
    all_met = all_met && met;
    fmt::print("{:<10} {:<6} {:<7} {:>10.2f} {:>11.2f} {:>12.2f} {:>12.2f} {:>10.3f} {:>10.1f}  {}\n", r.backend,
               r.ops, r.breaks, r.eager_us, r.direct_us, r.compiled_us, r.overhead_us(), per_op, r.target_us(),
               met ? "meets target" : "ABOVE TARGET");
    Json j;
    j.add("workload", fmt::format("chain{}{}", r.ops, r.breaks ? "_one_break" : ""));
    j.add("backend", r.backend).add("shape", "[4] f32").add("ops", r.ops).add("breaks", r.breaks);
    j.add("eager_us", r.eager_us);
    j.add(r.breaks ? "eager_ops_us" : "graph_direct_us", r.direct_us);
    j.add("compiled_us", r.compiled_us).add("overhead_us", r.overhead_us());
    if (r.breaks) j.add("ops_recorded_per_call", r.ops_recorded);
    j.add("overhead_us_per_op", per_op).add("target_us", r.target_us());
    j.add_raw("meets_target", met ? "true" : "false");
    items.push_back(j.str());
  }
  fmt::print("{}\n", all_met ? "all targets met" : "some targets missed");
  if (!opt.json.empty()) {
    Json env;
    env.add("machine", machine_name()).add("date", today()).add("device", "cpu").add("threads", get_num_threads());
    env.add("sinter_commit", git_commit()).add("suite", "overhead");
    env.add("definition",
            "overhead_us: without breaks, a compiled call minus its compiled graph called directly; with one "
            "break, a compiled call minus the same ops run eagerly (ops_recorded_per_call ops re-recorded per "
            "call). Times: thread CPU time, minimum over batches of the mean per call.");
    env.add_raw("results", json_array(items));
    write_file(opt.json, env.str());
    fmt::print("wrote {}\n", opt.json);
  }
  return 0;
}

}  // namespace sinter::tools
