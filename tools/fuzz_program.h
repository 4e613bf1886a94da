// The differential fuzzer's programs (`sinter fuzz`, tools/fuzz.cpp): a small straight-line tensor program over a
// few input tensors, with a readable text form (one line per input, size class and step) that replays exactly,
// an interpreter that runs it on real or traced tensors (so the same program runs eagerly and under compile()),
// and a printer that writes it as a C++ program a developer can paste into a test.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sinter/sinter.h"
#include "support/check.h"

namespace sinter::tools::fuzz {

// A size shared by input dims (broadcasting partners have the same class). Variant k of a run gives every class
// its k-th size; a class whose sizes are all equal is static.
struct SizeClass {
  std::vector<int64_t> sizes;  // one per variant; sizes[0] is the size the program was generated for
};

// How an input's memory is laid out under its logical shape (non-contiguous inputs).
enum class Layout : uint8_t { kContiguous, kTranspose, kPermute, kStep, kExpand, kOffset };

struct InputSpec {
  DType dtype = kFloat32;
  std::vector<int> dims;  // per dim: a size class index, or -1 for a literal 1 (a broadcasting dim)
  Layout layout = Layout::kContiguous;
  std::vector<int64_t> layout_args;  // transpose: a, b; permute: the permutation; step: dim, step; expand: dim
  std::vector<int> dynamic;          // dims passed to mark_dynamic before the first compiled call
  bool is_param = false;             // a free tensor captured by the function (lifted; a constant under freeze)
  int64_t index_bound = 0;           // int64 index data in [0, bound) when > 0 (index_select, gather)
};

// One step: `v<k> = op args... [ints] [reals]`. Every step makes one tensor value; an in-place step's value is
// the tensor it wrote (the same storage).
struct Step {
  std::string op;
  std::vector<int> args;  // value ids: inputs first (0..n_inputs-1), then one per earlier step
  std::vector<int64_t> ints;
  std::vector<double> reals;
};

// A small nn module used by a step (weights drawn from the program's data seed).
struct ModuleSpec {
  std::string kind;  // "Linear" (ints: in, out, bias) or "LayerNorm" (ints: normalized size, affine)
  std::vector<int64_t> ints;
};

struct Program {
  uint64_t seed = 0;   // the run's seed and case number, for the record; data comes from data_seed
  uint64_t case_id = 0;
  uint64_t data_seed = 0;
  bool specials = false;  // input data includes inf, nan, -0 and large values
  bool freeze = false;
  std::vector<SizeClass> classes;
  std::vector<InputSpec> inputs;  // arguments first, then params (is_param)
  std::vector<ModuleSpec> modules;
  std::vector<Step> steps;
  std::vector<int> outputs;  // value ids returned

  int num_variants() const { return classes.empty() ? 1 : static_cast<int>(classes[0].sizes.size()); }
  int num_args() const;  // inputs that are arguments (not params)
  int num_values() const { return static_cast<int>(inputs.size() + steps.size()); }
};

std::string to_text(const Program& p);
Program parse_program(const std::string& text);  // throws Error naming the line
std::string to_cpp(const Program& p, const std::string& backend, bool dynamic_always);
// The program without size classes that no input uses (renumbered).
Program compact_classes(const Program& p);

// The logical sizes of input `i` under variant `v`.
std::vector<int64_t> input_sizes(const Program& p, size_t i, int v);
// Fresh input tensors for variant v (arguments then params), deterministic in the data seed; the same data the
// printed C++ program makes.
std::vector<Tensor> make_inputs(const Program& p, int v, Device device = kCPU);

// Modules and params a program's function closes over; built once per program and variant.
struct Context {
  std::vector<std::shared_ptr<nn::Module>> modules;
  std::vector<Tensor> params;
};
Context make_context(const Program& p, Device device = kCPU);  // params have static sizes

// Runs the steps on `args` (real or traced tensors) and returns the outputs.
// `values`, when given, receives every value (inputs, then one per step). `after`, when given, replaces each
// step's result (value id, result) before later steps read it: the float64 reference's rounding jitter.
using StepHook = std::function<Tensor(size_t, const Tensor&)>;
std::vector<Tensor> run_program(const Program& p, const Context& ctx, const std::vector<Tensor>& args,
                                std::vector<Tensor>* values = nullptr, const StepHook& after = {});
// Runs one step on values already computed (the generator's oracle and the interpreter share it).
Tensor run_step(const Step& s, const std::vector<Tensor>& values, const Context& ctx);
// The step as a C++ expression over value names.
std::string step_cpp(const Step& s, const std::vector<std::string>& names);
bool is_known_op(const std::string& op);
std::string dtype_enum_name(DType t);  // "kFloat32"

// The generator (tools/fuzz_gen.cpp). Features are names such as "inplace", "break", "conv"; a disabled feature
// is never generated.
struct GenOptions {
  std::vector<std::string> disabled;
  int max_steps = 8;
  // Called with the program so far and the step about to run eagerly (the driver saves it, so a crash of eager
  // while generating leaves a replayable program whose last step is the culprit).
  std::function<void(const Program& so_far, const Step& next)> on_try;
};
bool feature_enabled(const GenOptions& o, const std::string& feature);
std::vector<std::string> all_features();
// The program of case `case_id` of the run with `seed`: always the same for the same (seed, case_id, options).
// Every step ran eagerly on the first variant without sinter::Error while generating.
Program generate(uint64_t seed, uint64_t case_id, const GenOptions& options);

}  // namespace sinter::tools::fuzz
