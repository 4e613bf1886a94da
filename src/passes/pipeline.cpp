// The inductor pass pipeline (see pipeline.h): one flat list of named passes, run in order, each timed, logged
// and switchable off by name.
#include "passes/pipeline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <set>
#include <string_view>

#include "ops/sgemm.h"
#include "passes/decompose.h"
#include "passes/layout.h"
#include "passes/patterns.h"
#include "passes/simplify.h"
#include "support/check.h"
#include "support/log.h"

namespace sinter::passes {
namespace {

struct Pass {
  const char* name;
  std::function<bool(Graph&, const PassContext&)> run;
};

// Capture hands over functional graphs, so this step normally finds nothing to do. When the graph still
// mutates, the writes into its inputs are reported through ctx.functionalized (the caller copies them back).
bool functionalize_step(Graph& g, const PassContext& ctx) {
  if (!has_mutations(g)) return false;
  FunctionalizeResult r = functionalize(g);
  SINTER_CHECK(r.mutations.empty() || ctx.functionalized,
               "the graph writes into {} of its inputs; functionalize it before the inductor passes (or pass "
               "PassContext::functionalized to receive the write-backs)",
               r.mutations.size());
  if (ctx.functionalized) *ctx.functionalized = r;
  return r.changed;
}

// THE pipeline, in the order docs/ARCHITECTURE.md (section 6) describes.
const std::vector<Pass>& pipeline() {
  static const std::vector<Pass> list = {
      {"functionalize", functionalize_step},
      // Before decomposition: patterns see linear, conv2d, softmax and matmul as captured.
      {"patterns", [](Graph& g, const PassContext& ctx) { return apply_patterns(g, ctx); }},
      {"decompose", [](Graph& g, const PassContext& ctx) { return decompose(g, ctx.exact_recompute); }},
      {"simplify", [](Graph& g, const PassContext&) { return simplify(g); }},
      // Last: layouts chosen for the ops that are left.
      {"layout", [](Graph& g, const PassContext& ctx) { return ctx.channels_last_convs && convs_channels_last(g); }},
  };
  return list;
}

// SINTER_DISABLE_PASSES=name,name (read on every run, so tests and users can change it between compiles).
std::set<std::string> disabled_passes() {
  std::set<std::string> names;
  const char* env = std::getenv("SINTER_DISABLE_PASSES");
  if (!env) return names;
  std::string_view rest(env);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string name(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (name.empty()) continue;
    bool known = false;
    for (const Pass& p : pipeline()) known = known || name == p.name;
    SINTER_CHECK(known, "SINTER_DISABLE_PASSES names '{}', which is not a pass; the passes are {}", name,
                 fmt::join(inductor_pass_names(), ", "));
    names.insert(name);
  }
  return names;
}

bool verify_enabled() {
#ifndef NDEBUG
  return true;
#else
  const char* env = std::getenv("SINTER_VERIFY_PASSES");
  return env && std::string_view(env) == "1";
#endif
}

void verify_around(const Graph& g, const char* when, const char* pass) {
  try {
    verify(g);
  } catch (const Error& e) {
    SINTER_INTERNAL_ASSERT(false, "the graph is invalid {} pass '{}': {}\n{}", when, pass, e.what(), print_graph(g));
  }
}

}  // namespace

PassContext PassContext::from(const CompileContext& ctx) {
  PassContext p;
  p.freeze = ctx.options.freeze;
  p.training = ctx.training;
  p.exact_recompute = ctx.target.kind == TargetKind::kCuda;
  p.channels_last_convs = ctx.target.kind == TargetKind::kCpu && blas::sgemm_available();
  return p;
}

std::vector<std::string> inductor_pass_names() {
  std::vector<std::string> names;
  for (const Pass& p : pipeline()) names.push_back(p.name);
  return names;
}

std::vector<PassRecord> run_inductor_passes(Graph& g, const PassContext& ctx) {
  std::set<std::string> disabled = disabled_passes();
  bool check = verify_enabled();
  std::vector<PassRecord> records;
  for (const Pass& pass : pipeline()) {
    if (disabled.count(pass.name)) {
      SINTER_LOG(kPasses, "{}: disabled by SINTER_DISABLE_PASSES", pass.name);
      continue;
    }
    if (check) verify_around(g, "before", pass.name);
    auto start = std::chrono::steady_clock::now();
    bool changed = pass.run(g, ctx);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (check) verify_around(g, "after", pass.name);
    records.push_back({pass.name, changed, ms});
    if (ctx.after_pass) ctx.after_pass(records.back(), g);
    if (changed)
      SINTER_LOG(kPasses, "{}: changed ({:.3f} ms)\n{}", pass.name, ms, print_graph(g));
    else
      SINTER_LOG(kPasses, "{}: (unchanged) ({:.3f} ms)", pass.name, ms);
  }
  return records;
}

}  // namespace sinter::passes
