// compile(): capture an eager function's tensor ops into graphs, guard them, hand them to a backend, and reuse the
// result while the guards hold. The templates here only adapt typed C++ callables to the engine in src/capture,
// which works on type-erased arguments; docs/ARCHITECTURE.md (sections 1, 4 and 5) describes that engine.
//
// What a compiled function may and may not do:
// - Everything that should change the computation must be an argument (a tensor, an integer, a double, a
//   bool) or a tensor reached through the module (its parameters and buffers are graph inputs, so changing
//   their values in place is seen by the next call without recompiling).
// - Host side effects and hidden state are NOT supported in a function without graph breaks: its host code
//   runs only when it is captured, not on every call (as with jax.jit). Printing a string or bumping a
//   counter happens once per capture, and a captured variable that changes later (a lambda capturing an int
//   by reference, a global) is not seen: the cached graph keeps the value it had. SINTER_VERIFY_CAPTURE=1
//   (read when compile() is called) finds such state: every call re-runs the host code and throws Error
//   naming the first op that differs from the cached graph.
// - Inputs that share memory: the sharing pattern is guarded; when the function writes one of several inputs
//   that share memory, or any input has elements that share memory (an expanded tensor: fill_, zero_, copy_
//   into it, or a write through a view of it), that entry runs its graph as recorded (in-place, in program
//   order, with eager's results and errors) instead of functionalized and compiled; SINTER_LOGS=perf_hints
//   says so.
// - A read of tensor data (item(), to_vector(), bool(tensor), printing) or a data-dependent op (nonzero,
//   boolean masks) is a graph break: the function then re-runs its host code on every call, recording lazily,
//   and each segment between two reads runs compiled. Host values fed back into ops after a break (x * v) are
//   run-time inputs of the segment, so new values do not recompile. With fullgraph = true a break throws
//   GraphBreakError.
// - Reading a tensor's memory directly (data_ptr()) during capture is not seen by the tracer: use item() etc.
// - A tensor reached without being an argument (a parameter, a tensor captured by a lambda) is guarded by
//   identity: the entry keeps using the tensor it captured. Change its values in place (copy_, an optimiser
//   step); assigning a different tensor to the variable is hidden state (SINTER_VERIFY_CAPTURE catches it).
// - Fields of a compiled module are hidden state too: compile(module) guards every module's training flag and
//   its parameters and buffers, but a plain C++ member that forward reads (a flag, a head count) is a constant
//   of the cached graph. After changing one, call reset() (SINTER_VERIFY_CAPTURE finds a forgotten one).
// - A std::optional<Tensor> argument (or std::nullopt) is guarded on being set: each case has its own entry.
// - Integer arguments follow the dynamic policy (symbolic under kAlways, or after they changed under kAuto);
//   a plain integer parameter (int64_t) specialises the value with a guard, a SymInt parameter keeps it
//   symbolic. Doubles and bools are specialised (one entry per value).
// - Calls from many threads at once are safe. A call served by an entry takes only a shared lock; calls that
//   miss while another thread compiles wait for that compile and then check the guards again, so concurrent
//   callers of one missing entry share a single compile (and its failure, when it fails). Compiles of one
//   compiled function run one at a time.
// - Factories take SymInt sizes (zeros({x.size(0), n}), arange(x.size(1)), eye, linspace's steps, the *_like
//   functions), so sizes read from tensors stay symbolic. Converting a SymInt to int64_t specialises it: the
//   guard says where ("s0 == 7 (specialised by int64_t(SymInt) in host code after relu at model.cpp:41)"),
//   and SINTER_LOGS=dynamic logs it when it happens.
// - mode is recorded (CompileStats::mode, ExplainOutput::mode) and handed to the backend in
//   CompileContext::options. reduce-overhead: the inductor's graphs on CUDA tensors run as CUDA graphs (the
//   first call of an input layout runs as compiled, the second captures, later ones replay; inputs other than
//   parameters and buffers are copied into the graph's buffers, outputs copied out, so results stay valid;
//   SINTER_LOGS=cudagraphs shows captures, evictions and why a graph does without); on CPU tensors it is the
//   default mode. backend "cudagraphs" does the same over aot_eager. max-autotune: each generated CUDA kernel
//   is timed on its first launch in several launch configurations (block size, grid), which never change its
//   results, and the fastest is kept (also on disk, for the next process), with a progress line on stderr; GEMM
//   algorithms are cuBLAS's own choice. On CPU tensors it is the default mode. CompileStats::str() and
//   ExplainOutput::str() say what each mode does.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sinter/graph.h"
#include "sinter/nn.h"
#include "sinter/target.h"
#include "sinter/tensor.h"

namespace sinter {

enum class Mode : uint8_t { kDefault, kReduceOverhead, kMaxAutotune };
// kAuto: static first; a dimension (or integer argument) that changes between calls becomes symbolic on the
// recompile it causes. kAlways: every dimension and integer argument starts symbolic. kNever: all specialised.
// Under every policy sizes 0 and 1 are specialised (as in PyTorch: broadcasting and contiguity depend on them),
// so a call with batch size 1 gets its own entry even under kAlways: a function called with batches 1 and 7
// compiles twice, once for 1 and once for every size >= 2.
enum class Dynamic : uint8_t { kAuto, kAlways, kNever };
Mode parse_mode(std::string_view name);  // "default", "reduce-overhead", "max-autotune"; Error otherwise

struct CompileOptions {
  std::string backend = "inductor";  // "inductor" (generated kernels) | "aot_eager" | "eager" | a registered one
  Mode mode = Mode::kDefault;
  Dynamic dynamic = Dynamic::kAuto;
  bool fullgraph = false;   // a graph break throws GraphBreakError instead of splitting the function
  bool freeze = false;      // lifted tensors (module weights) become constants of the graph
  // Entries per function; beyond it calls that match no entry run eagerly. Said once per compiled function on
  // stderr ("[sinter:warning] ..."), whatever SINTER_LOGS says.
  int recompile_limit = 8;
  // What a backend failure does. Unset (the default): when the host C++ compiler fails on the generated code
  // (CompilerError: an error, an internal compiler error or a crash, also after the retry at -O1 that every
  // failed build gets), that graph runs on aot_eager instead, with a warning on stderr once per compiled function
  // and a perf_hints log line for each such graph (both with the compiler's message); any other failure throws.
  // true: every backend failure runs aot_eager instead (logged under perf_hints). false: every failure throws,
  // a CompilerError included.
  std::optional<bool> fallback;
  // The first call of each graph runs it on aot_eager at once while the backend compiles it on a thread of its
  // own; calls before the compile is done run on aot_eager too, and once it is done the graph switches to the
  // backend's code for every later call. Results agree between the tiers within the usual tolerance (aot_eager
  // is eager's arithmetic). CompileStats counts the calls aot_eager served and the switches; SINTER_LOGS=
  // recompiles says when each switch happened. A background failure keeps aot_eager (said on stderr), or with
  // fallback = false is thrown by every later call. Off by default.
  bool tiered = false;
};

// Thrown under fullgraph = true when host code reads tensor data; names the read and where it happened.
class GraphBreakError : public Error {
 public:
  using Error::Error;
};

// The host C++ compiler failed on code sinter generated (an error, an internal compiler error or a crash of the
// compiler), also when retried at -O1: a bug of sinter's code generator or of the compiler, not of the user's
// program. Under CompileOptions::fallback's default the graph then runs on aot_eager instead.
class CompilerError : public Error {
 public:
  using Error::Error;
};

// Declares a dimension symbolic before the first compile: every size in [min, max] is served by one entry.
struct DynamicRange {
  int64_t min = 2;
  int64_t max = std::numeric_limits<int64_t>::max();
};
void mark_dynamic(const Tensor& t, int64_t dim, DynamicRange range = {});

// ---- backends ----
// A compiled graph: given the graph's inputs (real tensors, in Graph::inputs() order), returns its outputs.
// Any such callable converts to one; a backend may also say how many kernels one call launches.
class CompiledGraph {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;
  CompiledGraph() = default;
  template <class F>
    requires(std::is_constructible_v<Fn, F> && !std::is_same_v<std::decay_t<F>, CompiledGraph>)
  CompiledGraph(F fn, int kernels = -1) : fn_(std::move(fn)), kernels_(kernels) {}
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const { return fn_(inputs); }
  explicit operator bool() const { return static_cast<bool>(fn_); }
  int kernels() const { return kernels_; }  // launched per call (generated loop nests + library calls); -1: unknown

  // Optionally, a run that takes ownership of the inputs, so the backend may free each after its last use (the
  // activations a compiled backward reads); without one, consume() runs the graph as operator() does.
  using ConsumingFn = std::function<std::vector<Tensor>(std::vector<Tensor>&& inputs)>;
  void set_consuming(ConsumingFn fn) { consume_ = std::move(fn); }
  std::vector<Tensor> consume(std::vector<Tensor>&& inputs) const {
    return consume_ ? consume_(std::move(inputs)) : fn_(inputs);
  }

 private:
  Fn fn_;
  ConsumingFn consume_;
  int kernels_ = -1;
};
// A backend compiles a captured (functional) graph; `example_inputs` are real tensors matching its inputs.
// What a registered (custom) backend's compiled graph returns is checked on every call against the graph's
// outputs: their number, and each one's dtype, device and sizes (symbolic sizes at this call's values); a
// mismatch throws Error naming the backend. Returning an empty CompiledGraph is an Error naming it too (with
// `fallback`, aot_eager runs instead).
using Backend = std::function<CompiledGraph(const Graph& graph, const std::vector<Tensor>& example_inputs)>;

// One compilation's context, built by capture and handed to the backend: the options, the target the code is for,
// the graph's ShapeEnv (its symbols' ranges and guards) and the log/debug settings in force. The inductor's
// pass pipeline, lowering, scheduler and code generator take it (or what they need of it) explicitly.
struct CompileContext {
  CompileOptions options;
  Target target;
  std::shared_ptr<sym::ShapeEnv> shape_env;  // null when every size is static
  bool training = false;  // compile(module) of a module in training mode (guarded; no pass depends on it yet)
  std::string debug_dir;                     // SINTER_DEBUG_DIR at compile time; empty: no dumps
  // Per graph input: whether it is the same tensor at every call (a parameter, a buffer, any tensor the function
  // read without taking it as an argument; capture guards their identity). Empty when not known. CUDA graphs
  // read these in place and copy the other inputs into buffers of their own.
  std::vector<bool> static_inputs;
  // (graph output, graph input) pairs: after each run the caller copies the output into the input (a write the
  // function made, functionalized). A backend may compute such an output straight into the input's memory and
  // return the input itself, where nothing it reads later needs the old values.
  std::vector<std::pair<int, int>> write_backs;
  // Ahead-of-time artifacts (aot.h): a directory of the inductor's CPU kernel objects, each named by its source's
  // SHA-256. aot::save compiles as usual and copies each object there; with aot_prebuilt (aot::load) they are
  // loaded from there and nothing is compiled. Empty otherwise.
  std::string aot_object_dir;
  bool aot_prebuilt = false;
  // The context capture builds for `graph`: these options, the host CPU (or, for CUDA inputs, an sm_90 GPU
  // description), the graph's ShapeEnv, SINTER_DEBUG_DIR.
  static CompileContext for_graph(const Graph& graph, const CompileOptions& options = {});
};
// A backend that takes the context too (the built-in ones do).
using ContextBackend = std::function<CompiledGraph(const Graph& graph, const std::vector<Tensor>& example_inputs,
                                                   const CompileContext& context)>;
// A registered backend of either form. Called without a context, it gets CompileContext::for_graph(graph).
class BackendFn {
 public:
  BackendFn() = default;
  BackendFn(Backend simple);
  BackendFn(ContextBackend full);
  CompiledGraph operator()(const Graph& graph, const std::vector<Tensor>& example_inputs) const;
  CompiledGraph operator()(const Graph& graph, const std::vector<Tensor>& example_inputs,
                           const CompileContext& context) const;
  explicit operator bool() const { return static_cast<bool>(fn_); }

 private:
  ContextBackend fn_;
};

struct RegisterOptions {
  // Registering a name that is already registered is an Error unless `replace` is set (then the new backend
  // serves later compiles; entries compiled before keep the old one). The built-in names ("eager",
  // "aot_eager", "inductor") cannot be replaced.
  bool replace = false;
};
void register_backend(const std::string& name, Backend backend, RegisterOptions options = {});
void register_backend(const std::string& name, ContextBackend backend, RegisterOptions options = {});
void register_backend(const std::string& name, const BackendFn& backend, RegisterOptions options = {});
std::vector<std::string> backend_names();
// "eager", "aot_eager", "inductor": registered by sinter, trusted (their outputs are not checked per call) and
// never replaced.
bool is_builtin_backend(const std::string& name);
// Throws Error listing the known backends when `name` is not one of them.
const BackendFn& find_backend(const std::string& name);

// ---- host state inside compiled functions (what an optimiser step needs; usable by any code) ----
// Whether a capture is recording on this thread (torch.compiler.is_compiling()).
bool is_compiling();
// Ops in its scope run eagerly on real tensors even while a function is being captured, and are not part of the
// graph: for host state a compiled function creates once and keeps across calls (an optimiser's buffers, made
// the first time a compiled step runs). The tensors it makes are real; the graph reads them as lifted tensors.
class CaptureSuspended {
 public:
  CaptureSuspended();
  ~CaptureSuspended();
  CaptureSuspended(const CaptureSuspended&) = delete;
  CaptureSuspended& operator=(const CaptureSuspended&) = delete;

 private:
  void* previous_;
};
// A number of host state that a compiled function reads on every call (an optimiser's learning rate, which a
// scheduler changes between calls): eagerly a 0-dim tensor of read()'s value; under capture a run-time input of
// the graph that calls read() at every call, so a new value needs no recompile. read() must stay callable as long
// as the compiled function lives (hold what it reads by shared or weak pointer).
Tensor host_scalar(std::function<double()> read, TensorOptions options = TensorOptions(kFloat64));
// Host state a compiled function was specialised on: under capture, `holds` becomes a guard of the entry, called on
// every call; when it returns false the call recompiles, with `what` as the reason. Eagerly nothing.
void guard_host_state(std::function<bool()> holds, std::string what);

// ---- what a compiled function reports ----
struct RecompileEvent {
  std::string reason;  // the guard that failed, with old and new value
};
struct CompileStats {
  int compiles = 0;         // graphs captured and compiled (segments of a function with breaks count each)
  int guard_hits = 0;       // calls served by an existing entry
  int recompiles = 0;       // captures caused by a failed guard
  int eager_fallbacks = 0;  // calls run eagerly (recompile limit reached, or a backend failure with fallback)
  int graph_breaks = 0;     // breaks seen while capturing
  double compile_seconds = 0;
  // Kernels one call launches with the most recently compiled entry (its graphs summed when the function has
  // breaks); -1 when the backend does not say (eager, aot_eager).
  int kernels_per_call = -1;
  // CompileOptions::tiered: calls served by aot_eager while a backend compiled, and graphs switched to the
  // backend's code so far.
  int64_t first_tier_calls = 0;
  int tier_switches = 0;
  std::vector<RecompileEvent> recompile_reasons;
  Mode mode = Mode::kDefault;  // as given in the options (see above for what each does)
  std::string str() const;
};

struct GraphBreak {
  std::string reason;  // "item()", "to_vector()", "bool(tensor)", "printing", "nonzero (data-dependent output)"
  std::string location;  // "file.cpp:12", or "unknown location"
};
struct ExplainOutput {
  int graph_count = 0;
  int graph_break_count = 0;
  std::vector<GraphBreak> breaks;
  std::vector<std::string> graphs;  // each captured graph, printed
  std::vector<int> ops_per_graph;
  std::vector<std::string> guards;
  double compile_seconds = 0;
  Mode mode = Mode::kDefault;  // as given; str() says what it does
  // Compiled training (grad mode on and an input that requires grad): the graph above is the joint forward and
  // backward graph; the partition (what the forward keeps for the backward, what the backward recomputes, in
  // bytes) and the two graphs it made.
  std::string partition;
  std::string forward_graph, backward_graph;
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const ExplainOutput& e);

// ---- the engine's type-erased interface (src/capture); users do not call it directly ----
namespace capture {

// One argument of a compiled call.
using CallArg = std::variant<Tensor, std::vector<Tensor>, SymInt, double, bool>;
// Runs the user's function on (possibly traced) arguments and returns its tensors, flattened.
using Invoke = std::function<std::vector<Tensor>(std::vector<CallArg>& args)>;

// What aot::save keeps of one capture (Engine::export_graph): the functional graph and its real inputs, the
// call's tensors first (num_args of them), then the tensors the function read without taking them as arguments
// (a module's parameters and buffers: the weights). Its ShapeEnv holds the symbols' ranges and the guards.
struct ExportedGraph {
  Graph graph;
  std::vector<Tensor> inputs;
  int num_args = 0;
};

class Engine {
 public:
  Engine(CompileOptions options, const nn::Module* module);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  std::vector<Tensor> call(std::vector<CallArg> args, const Invoke& invoke);
  ExplainOutput explain(std::vector<CallArg> args, const Invoke& invoke);
  // Captures one call as a whole graph for an ahead-of-time artifact, without compiling or caching it. Throws
  // Error naming what an artifact cannot hold: a graph break, integer or host-number arguments, training (a
  // backward), writes to the inputs, outputs that alias inputs.
  ExportedGraph export_graph(std::vector<CallArg> args, const Invoke& invoke);
  CompileStats stats() const;
  void reset();  // forgets every compiled entry

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// An integer argument converts to whatever the function's parameter is: a SymInt parameter keeps a dynamic
// integer symbolic; a plain integer parameter specialises it (a guard on its value).
struct IntArg {
  const CallArg* arg;
  template <class T>
    requires(std::is_integral_v<T> || std::is_same_v<T, SymInt>)
  operator T() const {
    if constexpr (std::is_same_v<T, SymInt>) return std::get<SymInt>(*arg);
    else return static_cast<T>(static_cast<int64_t>(std::get<SymInt>(*arg)));
  }
};
template <class T>
struct ArgTraits {
  static_assert(sizeof(T) == 0,
                "a compiled function takes Tensor, std::optional<Tensor>, std::vector<Tensor>, integers, SymInt, "
                "double, float or bool");
};
template <>
struct ArgTraits<Tensor> {
  static CallArg to(const Tensor& t) { return t; }
  static Tensor from(const CallArg& a) { return std::get<Tensor>(a); }
};
template <>
struct ArgTraits<std::vector<Tensor>> {
  static CallArg to(const std::vector<Tensor>& t) { return t; }
  static std::vector<Tensor> from(const CallArg& a) { return std::get<std::vector<Tensor>>(a); }
};
template <>
struct ArgTraits<SymInt> {
  static CallArg to(const SymInt& v) { return v; }
  static IntArg from(const CallArg& a);
};
inline IntArg ArgTraits<SymInt>::from(const CallArg& a) { return IntArg{&a}; }
// An optional tensor travels as a tensor that is undefined for nullopt (guarded: a call with the other case
// compiles again).
template <>
struct ArgTraits<std::optional<Tensor>> {
  static CallArg to(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }
  static std::optional<Tensor> from(const CallArg& a) {
    const Tensor& t = std::get<Tensor>(a);
    return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
  }
};
template <>
struct ArgTraits<std::nullopt_t> {  // f(x, std::nullopt) for a std::optional<Tensor> parameter
  static CallArg to(std::nullopt_t) { return Tensor(); }
  static std::nullopt_t from(const CallArg&) { return std::nullopt; }
};
template <>
struct ArgTraits<bool> {
  static CallArg to(bool v) { return v; }
  static bool from(const CallArg& a) { return std::get<bool>(a); }
};
template <class T>
  requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
struct ArgTraits<T> {
  static CallArg to(T v) { return SymInt(static_cast<int64_t>(v)); }
  static IntArg from(const CallArg& a) { return IntArg{&a}; }
};
template <class T>
  requires std::is_floating_point_v<T>
struct ArgTraits<T> {
  static CallArg to(T v) { return static_cast<double>(v); }
  static T from(const CallArg& a) { return static_cast<T>(std::get<double>(a)); }
};

// A compiled function returns a Tensor, a std::optional<Tensor>, a std::tuple/std::pair of those or a
// std::vector<Tensor>.
template <class R>
struct ResultTraits {};
template <>
struct ResultTraits<Tensor> {
  static std::vector<Tensor> flatten(Tensor r) { return {std::move(r)}; }
  static Tensor unflatten(std::vector<Tensor>& v) { return std::move(v.at(0)); }
};
// One result tensor, or an undefined one standing for nullopt.
inline Tensor flatten_one(const Tensor& t) { return t; }
inline Tensor flatten_one(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }
template <class T>
T unflatten_one(Tensor t) {
  if constexpr (std::is_same_v<T, Tensor>) return t;
  else return t.defined() ? std::optional<Tensor>(std::move(t)) : std::nullopt;
}
template <class T>
concept ResultTensor = std::is_same_v<T, Tensor> || std::is_same_v<T, std::optional<Tensor>>;
template <>
struct ResultTraits<std::optional<Tensor>> {
  static std::vector<Tensor> flatten(const std::optional<Tensor>& r) { return {flatten_one(r)}; }
  static std::optional<Tensor> unflatten(std::vector<Tensor>& v) {
    return unflatten_one<std::optional<Tensor>>(std::move(v.at(0)));
  }
};
template <>
struct ResultTraits<std::vector<Tensor>> {
  static std::vector<Tensor> flatten(std::vector<Tensor> r) { return r; }
  static std::vector<Tensor> unflatten(std::vector<Tensor>& v) { return std::move(v); }
};
template <class... T>
  requires(ResultTensor<T> && ...)
struct ResultTraits<std::tuple<T...>> {
  static std::vector<Tensor> flatten(std::tuple<T...> r) {
    return std::apply([](auto&... t) { return std::vector<Tensor>{flatten_one(t)...}; }, r);
  }
  static std::tuple<T...> unflatten(std::vector<Tensor>& v) {
    return [&]<size_t... I>(std::index_sequence<I...>) { return std::tuple<T...>{unflatten_one<T>(v.at(I))...}; }(
               std::index_sequence_for<T...>{});
  }
};
template <ResultTensor A, ResultTensor B>
struct ResultTraits<std::pair<A, B>> {
  static std::vector<Tensor> flatten(std::pair<A, B> r) { return {flatten_one(r.first), flatten_one(r.second)}; }
  static std::pair<A, B> unflatten(std::vector<Tensor>& v) {
    return {unflatten_one<A>(v.at(0)), unflatten_one<B>(v.at(1))};
  }
};

// What a compiled function may take and return; a call outside these does not compile.
template <class T>
concept CompilableArg = std::is_same_v<T, Tensor> || std::is_same_v<T, std::optional<Tensor>> ||
                        std::is_same_v<T, std::nullopt_t> ||
                        std::is_same_v<T, std::vector<Tensor>> || std::is_same_v<T, SymInt> ||
                        std::is_arithmetic_v<T>;
template <class R>
concept CompilableResult = requires(R r, std::vector<Tensor>& v) {
  { ResultTraits<R>::flatten(r) } -> std::same_as<std::vector<Tensor>>;
  ResultTraits<R>::unflatten(v);
};

}  // namespace capture

// The callable compile() returns. Copies share one engine (one cache).
template <class Fn>
class Compiled {
 public:
  Compiled(Fn fn, CompileOptions options, const nn::Module* module = nullptr)
      : fn_(std::make_shared<Fn>(std::move(fn))), engine_(std::make_shared<capture::Engine>(std::move(options), module)) {}

  template <class... A>
    requires(capture::CompilableArg<std::decay_t<A>> && ...) && std::is_invocable_v<Fn&, A&&...> &&
            capture::CompilableResult<std::decay_t<std::invoke_result_t<Fn&, A&&...>>>
  auto operator()(A&&... args) const {
    using R = std::decay_t<std::invoke_result_t<Fn&, A&&...>>;
    std::vector<capture::CallArg> call_args{capture::ArgTraits<std::decay_t<A>>::to(args)...};
    std::vector<Tensor> out = engine_->call(std::move(call_args), invoker<R, std::decay_t<A>...>());
    return capture::ResultTraits<R>::unflatten(out);
  }

  // What capturing these arguments produces: graphs, breaks with their reasons and lines, guards, ops.
  template <class... A>
    requires(capture::CompilableArg<std::decay_t<A>> && ...) && std::is_invocable_v<Fn&, A&&...>
  ExplainOutput explain(A&&... args) const {
    using R = std::decay_t<std::invoke_result_t<Fn&, A&&...>>;
    std::vector<capture::CallArg> call_args{capture::ArgTraits<std::decay_t<A>>::to(args)...};
    return engine_->explain(std::move(call_args), invoker<R, std::decay_t<A>...>());
  }

  // One call captured for an ahead-of-time artifact (aot::save); see Engine::export_graph.
  template <class... A>
    requires(capture::CompilableArg<std::decay_t<A>> && ...) && std::is_invocable_v<Fn&, A&&...>
  capture::ExportedGraph export_graph(A&&... args) const {
    using R = std::decay_t<std::invoke_result_t<Fn&, A&&...>>;
    std::vector<capture::CallArg> call_args{capture::ArgTraits<std::decay_t<A>>::to(args)...};
    return engine_->export_graph(std::move(call_args), invoker<R, std::decay_t<A>...>());
  }

  CompileStats stats() const { return engine_->stats(); }
  void reset() { engine_->reset(); }

 private:
  template <class R, class... A>
  capture::Invoke invoker() const {
    return [fn = fn_](std::vector<capture::CallArg>& a) {
      return [&]<size_t... I>(std::index_sequence<I...>) {
        return capture::ResultTraits<R>::flatten((*fn)(capture::ArgTraits<A>::from(a[I])...));
      }(std::index_sequence_for<A...>{});
    };
  }

  std::shared_ptr<Fn> fn_;
  std::shared_ptr<capture::Engine> engine_;
};

// A SINTER_MODULE holder (nn.h), compiled as the module it holds.
template <class T>
concept ModuleHolderType =
    requires { typename T::ContainedType; } && std::is_base_of_v<nn::ModuleHolder<typename T::ContainedType>, T>;

// compile(fn): any callable (lambda, function, functor).
template <class Fn>
  requires(!std::is_base_of_v<nn::Module, std::decay_t<Fn>> && !ModuleHolderType<std::decay_t<Fn>>)
auto compile(Fn fn, CompileOptions options = {}) {
  return Compiled<std::decay_t<Fn>>(std::move(fn), std::move(options));
}

// compile(module): calls module.forward(...). The module is referenced, not copied; it must outlive the result.
// Its parameters and buffers become graph inputs (constants with freeze), and its training flags are guarded.
template <class M>
  requires std::is_base_of_v<nn::Module, M>
auto compile(M& module, CompileOptions options = {}) {
  auto call = [m = &module](auto&&... args) { return m->forward(std::forward<decltype(args)>(args)...); };
  return Compiled<decltype(call)>(std::move(call), std::move(options), &module);
}

// compile(holder): as compile(*holder), and the result shares ownership of the module.
template <ModuleHolderType H>
auto compile(const H& holder, CompileOptions options = {}) {
  auto call = [m = holder.ptr()](auto&&... args) { return m->forward(std::forward<decltype(args)>(args)...); };
  return Compiled<decltype(call)>(std::move(call), std::move(options), holder.get());
}

// explain(fn, args...): capture once (no cache) and report what happened. A function without breaks is only
// traced; one with breaks runs its segments (host code needs their values), so its writes to arguments
// happen.
template <class Fn, class... A>
ExplainOutput explain(Fn&& fn, A&&... args) {
  if constexpr (std::is_base_of_v<nn::Module, std::decay_t<Fn>>) {
    return compile(fn).explain(std::forward<A>(args)...);
  } else {
    return compile(std::forward<Fn>(fn)).explain(std::forward<A>(args)...);
  }
}

}  // namespace sinter
