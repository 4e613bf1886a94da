// Whole-function capture: the call's tensors become graph inputs (symbolic where the dynamic policy says so),
// its integers follow the same policy, doubles and bools are specialised; the function runs on the proxies;
// the guards are collected. Also SINTER_VERIFY_CAPTURE's re-trace, which must record exactly the cached
// graph.
#include <fmt/format.h>

#include <bit>

#include "capture/engine_state.h"
#include "ops/autocast.h"
#include "sinter/autograd.h"
#include "support/check.h"

namespace sinter::capture {

namespace {

// Per dim of an argument tensor: symbolic (with its range) or static.
std::vector<std::optional<DynamicRange>> dims_policy(const Tensor& real, int arg, int element,
                                                     Dynamic dynamic, const std::set<DynKey>& auto_dynamic) {
  std::vector<std::optional<DynamicRange>> dims(real.defined() ? real.dim() : 0);
  if (dynamic == Dynamic::kNever) return dims;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dynamic == Dynamic::kAlways || auto_dynamic.count({arg, element, static_cast<int>(d)}))
      dims[d] = DynamicRange{};
  for (const DynamicDim& m : real.impl()->dynamic_dims)
    if (m.dim >= 0 && m.dim < static_cast<int64_t>(dims.size())) dims[m.dim] = DynamicRange{m.min, m.max};
  return dims;
}

// The first line where two printed graphs differ, as "op #k: cached `...`, now `...`".
std::string first_difference(const std::string& cached, const std::string& now) {
  auto lines = [](const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < s.size()) {
      size_t end = s.find('\n', start);
      if (end == std::string::npos) end = s.size();
      std::string line = s.substr(start, end - start);
      size_t first = line.find_first_not_of(' ');
      out.push_back(first == std::string::npos ? "" : line.substr(first));
      start = end + 1;
    }
    return out;
  };
  std::vector<std::string> a = lines(cached), b = lines(now);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    std::string x = i < a.size() ? a[i] : "(nothing)", y = i < b.size() ? b[i] : "(nothing)";
    if (x == y) continue;
    if (i == 0) return fmt::format("the graph's inputs differ: cached `{}`, now `{}`", x, y);
    return fmt::format("op #{} differs: cached `{}`, now `{}`", i, x, y);
  }
  return "";
}

}  // namespace

TracerConfig Engine::State::tracer_config() const {
  TracerConfig c;
  c.fullgraph = options.fullgraph;
  c.freeze = options.freeze;
  c.names = &names;
  c.break_log = &break_log;
  return c;
}

WholeCapture Engine::State::capture_whole(const std::vector<CallArg>& args, const std::vector<Tensor>& flat,
                                          const std::set<DynKey>& dynamic, const Invoke& invoke,
                                          TracerConfig config, SegmentRunner runner) {
  WholeCapture w;
  w.tracer = std::make_unique<Tracer>(config, std::move(runner));
  Tracer& tracer = *w.tracer;
  tracer.mark_whole_capture();
  auto env = std::make_shared<sym::ShapeEnv>();
  tracer.use_shape_env(env);
  GuardSet& gs = w.guards;
  std::vector<CallArg> traced = args;

  auto add_tensor = [&](const Tensor& real, int arg, int element, std::string name, std::string input_name) {
    TensorGuard g;
    g.name = std::move(name);
    g.arg = arg;
    g.element = element;
    if (!real.defined()) {
      g.defined = false;
      gs.tensors.push_back(std::move(g));
      return real;
    }
    TensorMeta meta =
        input_meta(real, dims_policy(real, arg, element, options.dynamic, dynamic), env.get(), g);
    gs.tensors.push_back(std::move(g));
    return tracer.add_argument(real, std::move(meta), std::move(input_name));
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const int arg = static_cast<int>(i);
    ArgGuard ag;
    if (const Tensor* t = std::get_if<Tensor>(&args[i])) {
      ag.kind = ArgGuard::kTensor;
      traced[i] = add_tensor(*t, arg, -1, fmt::format("arg{}", i), fmt::format("arg{}", i));
    } else if (const auto* list = std::get_if<std::vector<Tensor>>(&args[i])) {
      ag.kind = ArgGuard::kTensorList;
      ag.count = static_cast<int>(list->size());
      std::vector<Tensor> proxies;
      for (size_t k = 0; k < list->size(); ++k)
        proxies.push_back(add_tensor((*list)[k], arg, static_cast<int>(k), fmt::format("arg{}[{}]", i, k),
                                     fmt::format("arg{}_{}", i, k)));
      traced[i] = std::move(proxies);
    } else if (const SymInt* v = std::get_if<SymInt>(&args[i])) {
      ag.kind = ArgGuard::kInt;
      ag.value = v->hint();
      bool want = options.dynamic == Dynamic::kAlways ||
                  (options.dynamic == Dynamic::kAuto && dynamic.count({arg, -1, -1}));
      if (want) {
        SymInt s = env->create_symbol(v->hint(), 2, sym::kInf, fmt::format("arg{}", i));
        if (s.is_symbolic()) {
          ag.kind = ArgGuard::kSymInt;
          ag.value = s.expr()->symbol_id();
          traced[i] = s;
          w.int_args.push_back(arg);
        }
      }
    } else if (const double* d = std::get_if<double>(&args[i])) {
      ag.kind = ArgGuard::kDouble;
      ag.value = std::bit_cast<int64_t>(*d);
    } else {
      ag.kind = ArgGuard::kBool;
      ag.value = std::get<bool>(args[i]);
    }
    gs.args.push_back(ag);
  }
  gs.num_arg_tensors = static_cast<int>(flat.size());
  // Integer symbols reach the graph through size-carrier inputs, after the tensors.
  for (int arg : w.int_args)
    tracer.add_int_argument(std::get<SymInt>(traced[arg]), std::get<SymInt>(args[arg]).hint(),
                            fmt::format("int{}", arg));

  {
    HookScope hook(&tracer);
    w.outputs = invoke(traced);
    w.plan = tracer.finish(w.outputs);
    // A function that ran a backward itself (a training step) returns values the caller does not differentiate.
    if (!tracer.broke() && !tracer.wrote_grads()) {
      try {
        w.joint = trace_backward(tracer);
      } catch (const BreakInBackward& b) {
        w.eager_reason = fmt::format("a derivative reads tensor data on the host ({} at {})", b.record.reason,
                                     b.record.location);
      }
    }
  }
  if (tracer.broke()) return w;

  // Lifted tensors: the same tensor must come back (identity), with the same meta.
  for (const Tensor& t : tracer.lifted()) {
    TensorGuard g;
    auto n = names.find(t.impl());
    g.name = n != names.end() ? n->second : fmt::format("lifted{}", gs.lifted.size());
    static_guard(t, g);
    gs.tensors.push_back(std::move(g));
    gs.lifted.push_back(t);
  }
  // The .grad() fields it read: whether each was defined, and its layout.
  for (const GradRead& r : tracer.grad_reads()) {
    GradGuard g;
    g.owner = r.owner;
    g.defined = r.defined;
    g.tensor.name = gs.tensors[gs.num_arg_tensors + r.owner].name + ".grad";
    if (r.defined) static_guard(Tensor(gs.lifted[r.owner].impl()->grad), g.tensor);
    gs.grads.push_back(std::move(g));
  }
  gs.host = tracer.host_guards();
  std::vector<Tensor> guarded = flat;
  guarded.insert(guarded.end(), gs.lifted.begin(), gs.lifted.end());
  set_alias_pattern(gs, guarded);
  if (module)
    for (nn::Module* m : module->modules()) gs.training.emplace_back(m, m->is_training());
  // Autograd records (and the entry compiles a backward) only under grad mode: where a tensor requires grad the
  // mode is part of what the graph means.
  for (const TensorGuard& g : gs.tensors)
    if (g.defined && g.requires_grad) gs.grad_mode = GradMode::is_enabled() ? 1 : 0;
  gs.autocast = autocast_state_key();
  if (env->num_symbols() > 0) {
    gs.env = env;
    gs.num_symbols = static_cast<int>(env->num_symbols());
  }
  w.inputs = tracer.segment().inputs;
  return w;
}

void Engine::State::verify_capture(const Entry& entry, const std::vector<CallArg>& args,
                                   const std::vector<Tensor>& flat, const Invoke& invoke) {
  TracerConfig config = tracer_config();
  config.allow_breaks = false;
  config.fullgraph = false;
  WholeCapture w;
  try {
    w = capture_whole(args, flat, entry.dynamic, invoke, config, nullptr);
  } catch (const BreakDuringVerify& b) {
    throw Error(fmt::format(
        "SINTER_VERIFY_CAPTURE: the function now reads tensor data ({} at {}), which it did not when it was "
        "captured: its host code depends on state that is not an argument (unsupported; pass it as an "
        "argument)",
        b.record.reason, b.record.location));
  }
  std::string now = print_graph(w.tracer->segment().graph);
  std::string diff = first_difference(entry.program.text, now);
  if (!diff.empty())
    throw Error(
        fmt::format("SINTER_VERIFY_CAPTURE: re-running the function's host code recorded a different graph "
                    "than the cached one: "
                    "{}. The function depends on state that is not an argument (a captured variable that "
                    "changed?), which "
                    "compiled functions do not support; pass it as an argument",
                    diff));
  for (size_t j = 0; j < entry.guards.lifted.size() && j < w.guards.lifted.size(); ++j)
    if (!entry.guards.lifted[j].is_same(w.guards.lifted[j]))
      throw Error(fmt::format(
          "SINTER_VERIFY_CAPTURE: the function now reads a different tensor as {} than when it was captured "
          "(the cached graph would use the old one); pass it as an argument",
          entry.guards.tensors[entry.guards.num_arg_tensors + j].name));
}

}  // namespace sinter::capture
