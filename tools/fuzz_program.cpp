// The fuzzer's programs: text form, inputs, the interpreter and the C++ printer (see fuzz_program.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <sstream>

#include "fuzz_program.h"

namespace sinter::tools::fuzz {
namespace {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kContiguous: return "contiguous";
    case Layout::kTranspose: return "transpose";
    case Layout::kPermute: return "permute";
    case Layout::kStep: return "step";
    case Layout::kExpand: return "expand";
    default: return "offset";
  }
}

Layout parse_layout(const std::string& s) {
  for (Layout l : {Layout::kContiguous, Layout::kTranspose, Layout::kPermute, Layout::kStep, Layout::kExpand,
                   Layout::kOffset}) {
    if (s == layout_name(l)) return l;
  }
  throw Error(fmt::format("fuzz: unknown layout '{}'", s));
}

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

int value_id(const std::string& name) {
  SINTER_CHECK(name.size() > 1 && name[0] == 'v', "fuzz: '{}' is not a value name (v<k>)", name);
  return std::stoi(name.substr(1));
}

// The data of input `input`'s element `i` (storage order): a hash, so the C++ printer can emit the same function.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr const char* kValueFunctionCpp = R"(// The fuzzer's input data (the same function as tools/fuzz_program.cpp's element_value).
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
static Tensor fuzz_input(uint64_t seed, int input, std::vector<int64_t> storage_sizes, DType dtype, int64_t bound,
                         bool specials) {
  int64_t n = 1;
  for (int64_t s : storage_sizes) n *= s;
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t h = mix(seed ^ mix(uint64_t(input) * 1000003ULL + uint64_t(i)));
    if (dtype == kBool) v[i] = double(h & 1);
    else if (bound > 0) v[i] = double(h % uint64_t(bound));
    else if (dtype == kInt64 || dtype == kInt32 || dtype == kInt8 || dtype == kUInt8) v[i] = double(int64_t(h % 11) - 5);
    else if (specials && h % 16 == 0) {
      static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e4, -1e-4, 65504.0};
      v[i] = sp[(h >> 8) % 8];
    } else v[i] = double(int64_t((h >> 16) % 2001) - 1000) / 256.0;
  }
  return from_vector<double>(v, SymIntList(storage_sizes), dtype);
}
)";

double element_value(uint64_t seed, int input, int64_t i, DType dtype, int64_t bound, bool specials) {
  uint64_t h = mix(seed ^ mix(uint64_t(input) * 1000003ULL + uint64_t(i)));
  if (dtype == kBool) return double(h & 1);
  if (bound > 0) return double(h % uint64_t(bound));
  if (is_integral(dtype)) return double(int64_t(h % 11) - 5);
  if (specials && h % 16 == 0) {
    static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e4, -1e-4, 65504.0};
    return sp[(h >> 8) % 8];
  }
  return double(int64_t((h >> 16) % 2001) - 1000) / 256.0;
}

// The storage's sizes for an input's logical sizes under its layout.
std::vector<int64_t> storage_sizes(const InputSpec& in, std::vector<int64_t> s) {
  const auto& a = in.layout_args;
  switch (in.layout) {
    case Layout::kContiguous: return s;
    case Layout::kTranspose: std::swap(s[a[0]], s[a[1]]); return s;
    case Layout::kPermute: {
      std::vector<int64_t> phys(s.size());
      for (size_t i = 0; i < s.size(); ++i) phys[a[i]] = s[i];
      return phys;
    }
    case Layout::kStep: s[a[0]] *= a[1]; return s;
    case Layout::kExpand: s[a[0]] = 1; return s;
    default: s[0] += 1; return s;
  }
}

Tensor apply_layout(const InputSpec& in, const Tensor& base, const std::vector<int64_t>& logical) {
  const auto& a = in.layout_args;
  switch (in.layout) {
    case Layout::kContiguous: return base;
    case Layout::kTranspose: return base.transpose(a[0], a[1]);
    case Layout::kPermute: return base.permute(DimList(a));
    case Layout::kStep: return base.slice(a[0], 0, INT64_MAX, a[1]);
    case Layout::kExpand: return base.expand(SymIntList(logical));
    default: return base.slice(0, 1);
  }
}

std::string layout_cpp(const InputSpec& in, const std::string& base, const std::string& logical) {
  const auto& a = in.layout_args;
  switch (in.layout) {
    case Layout::kContiguous: return base;
    case Layout::kTranspose: return fmt::format("{}.transpose({}, {})", base, a[0], a[1]);
    case Layout::kPermute: return fmt::format("{}.permute({{{}}})", base, fmt::join(a, ", "));
    case Layout::kStep: return fmt::format("{}.slice({}, 0, INT64_MAX, {})", base, a[0], a[1]);
    case Layout::kExpand: return fmt::format("{}.expand({})", base, logical);
    default: return fmt::format("{}.slice(0, 1)", base);
  }
}

Tensor make_input(const Program& p, size_t i, int v, Device device) {
  const InputSpec& in = p.inputs[i];
  std::vector<int64_t> logical = input_sizes(p, i, v);
  std::vector<int64_t> phys = storage_sizes(in, logical);
  int64_t n = 1;
  for (int64_t s : phys) n *= s;
  std::vector<double> vals(n);
  for (int64_t k = 0; k < n; ++k) vals[k] = element_value(p.data_seed, int(i), k, in.dtype, in.index_bound, p.specials);
  // The layout is applied on the device, so a strided input stays a view of a larger storage there too.
  return apply_layout(in, from_vector<double>(vals, SymIntList(phys), in.dtype).to(device), logical);
}

}  // namespace

int Program::num_args() const {
  int n = 0;
  for (const auto& in : inputs) n += !in.is_param;
  return n;
}

std::vector<int64_t> input_sizes(const Program& p, size_t i, int v) {
  std::vector<int64_t> s;
  for (int c : p.inputs[i].dims) s.push_back(c < 0 ? 1 : p.classes.at(c).sizes.at(v));
  return s;
}

std::vector<Tensor> make_inputs(const Program& p, int v, Device device) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    if (!p.inputs[i].is_param) out.push_back(make_input(p, i, v, device));
  }
  return out;
}

Context make_context(const Program& p, Device device) {
  Context ctx;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    if (p.inputs[i].is_param) ctx.params.push_back(make_input(p, i, 0, device));
  }
  // Module weights come from sinter's generator, seeded from the program (the C++ printout does the same).
  manual_seed(p.data_seed);
  for (const auto& m : p.modules) {
    if (m.kind == "Linear") ctx.modules.push_back(std::make_shared<nn::Linear>(m.ints.at(0), m.ints.at(1), m.ints.at(2) != 0));
    else ctx.modules.push_back(std::make_shared<nn::LayerNorm>(m.ints.at(0), 1e-5, m.ints.at(1) != 0));
  }
  if (!device.is_cpu())
    for (auto& m : ctx.modules) m->to(device);
  return ctx;
}

std::vector<Tensor> run_program(const Program& p, const Context& ctx, const std::vector<Tensor>& args,
                                std::vector<Tensor>* all_values, const StepHook& after) {
  std::vector<Tensor> values;
  size_t ai = 0, pi = 0;
  for (const auto& in : p.inputs) values.push_back(in.is_param ? ctx.params.at(pi++) : args.at(ai++));
  for (const auto& s : p.steps) {
    Tensor r = run_step(s, values, ctx);
    values.push_back(after ? after(values.size(), r) : r);
  }
  std::vector<Tensor> out;
  for (int id : p.outputs) out.push_back(values.at(id));
  if (all_values) *all_values = values;
  return out;
}

// ---- text form ----
std::string to_text(const Program& p) {
  std::string t = fmt::format("seed {} case {} data {} specials {} freeze {}\n", p.seed, p.case_id, p.data_seed,
                              int(p.specials), int(p.freeze));
  for (size_t c = 0; c < p.classes.size(); ++c) t += fmt::format("class c{} {}\n", c, fmt::join(p.classes[c].sizes, " "));
  for (size_t i = 0; i < p.modules.size(); ++i) {
    t += fmt::format("module m{} {} {}\n", i, p.modules[i].kind, fmt::join(p.modules[i].ints, " "));
  }
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const InputSpec& in = p.inputs[i];
    std::vector<std::string> dims;
    for (int c : in.dims) dims.push_back(c < 0 ? "1" : fmt::format("c{}", c));
    t += fmt::format("v{} = {} {} [{}] layout {}", i, in.is_param ? "param" : "input", dtype_name(in.dtype),
                     fmt::join(dims, " "), layout_name(in.layout));
    for (int64_t a : in.layout_args) t += fmt::format(" {}", a);
    if (!in.dynamic.empty()) t += fmt::format(" ; dynamic {}", fmt::join(in.dynamic, " "));
    if (in.index_bound > 0) t += fmt::format(" ; bound {}", in.index_bound);
    t += "\n";
  }
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    t += fmt::format("v{} = {}", p.inputs.size() + k, s.op);
    for (int a : s.args) t += fmt::format(" v{}", a);
    if (!s.ints.empty()) t += fmt::format(" ; ints {}", fmt::join(s.ints, " "));
    if (!s.reals.empty()) t += fmt::format(" ; reals {}", fmt::join(s.reals, " "));
    t += "\n";
  }
  std::vector<std::string> outs;
  for (int o : p.outputs) outs.push_back(fmt::format("v{}", o));
  t += fmt::format("out {}\n", fmt::join(outs, " "));
  return t;
}

Program parse_program(const std::string& text) {
  Program p;
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    try {
      // Split off "; key values" sections.
      std::vector<std::vector<std::string>> parts{{}};
      for (const auto& t : tokens(line)) {
        if (t == ";") parts.emplace_back();
        else parts.back().push_back(t);
      }
      const auto& w = parts[0];
      if (w.empty()) continue;
      if (w[0] == "seed") {
        SINTER_CHECK(w.size() >= 10, "fuzz: a seed line has 10 words");
        p.seed = std::stoull(w[1]), p.case_id = std::stoull(w[3]), p.data_seed = std::stoull(w[5]);
        p.specials = w[7] == "1", p.freeze = w[9] == "1";
      } else if (w[0] == "class") {
        SizeClass c;
        for (size_t k = 2; k < w.size(); ++k) c.sizes.push_back(std::stoll(w[k]));
        p.classes.push_back(c);
      } else if (w[0] == "module") {
        ModuleSpec m{w.at(2), {}};
        for (size_t k = 3; k < w.size(); ++k) m.ints.push_back(std::stoll(w[k]));
        p.modules.push_back(m);
      } else if (w[0] == "out") {
        for (size_t k = 1; k < w.size(); ++k) p.outputs.push_back(value_id(w[k]));
      } else {
        SINTER_CHECK(w.size() >= 3 && w[1] == "=", "fuzz: expected 'v<k> = ...'");
        int id = value_id(w[0]);
        SINTER_CHECK(id == p.num_values(), "fuzz: value v{} out of order (expected v{})", id, p.num_values());
        if (w[2] == "input" || w[2] == "param") {
          SINTER_CHECK(p.steps.empty(), "fuzz: inputs come before steps");
          InputSpec spec;
          spec.is_param = w[2] == "param";
          spec.dtype = parse_dtype(w.at(3));
          size_t k = 4;
          SINTER_CHECK(w.at(k).front() == '[', "fuzz: input dims are in brackets");
          std::string dims;
          for (; k < w.size(); ++k) {
            dims += w[k] + " ";
            if (w[k].back() == ']') break;
          }
          for (auto& d : tokens(dims.substr(1, dims.rfind(']') - 1))) spec.dims.push_back(d == "1" ? -1 : std::stoi(d.substr(1)));
          ++k;
          SINTER_CHECK(k + 1 < w.size() + 1 && w.at(k) == "layout", "fuzz: expected 'layout'");
          spec.layout = parse_layout(w.at(k + 1));
          for (k += 2; k < w.size(); ++k) spec.layout_args.push_back(std::stoll(w[k]));
          for (size_t q = 1; q < parts.size(); ++q) {
            const auto& kv = parts[q];
            if (kv.at(0) == "dynamic") {
              for (size_t j = 1; j < kv.size(); ++j) spec.dynamic.push_back(std::stoi(kv[j]));
            } else if (kv.at(0) == "bound") {
              spec.index_bound = std::stoll(kv.at(1));
            }
          }
          p.inputs.push_back(spec);
        } else {
          Step s;
          s.op = w[2];
          SINTER_CHECK(is_known_op(s.op), "fuzz: unknown op '{}'", s.op);
          for (size_t k = 3; k < w.size(); ++k) s.args.push_back(value_id(w[k]));
          for (size_t q = 1; q < parts.size(); ++q) {
            const auto& kv = parts[q];
            for (size_t j = 1; j < kv.size(); ++j) {
              if (kv.at(0) == "ints") s.ints.push_back(std::stoll(kv[j]));
              else s.reals.push_back(std::strtod(kv[j].c_str(), nullptr));
            }
          }
          p.steps.push_back(s);
        }
      }
    } catch (const std::exception& e) {
      throw Error(fmt::format("fuzz program line {}: {} ({})", line_no, e.what(), line));
    }
  }
  return p;
}

Program compact_classes(const Program& p) {
  Program q = p;
  std::vector<int> remap(p.classes.size(), -1);
  q.classes.clear();
  for (auto& in : q.inputs) {
    for (int& c : in.dims) {
      if (c < 0) continue;
      if (remap[c] < 0) {
        remap[c] = static_cast<int>(q.classes.size());
        q.classes.push_back(p.classes[c]);
      }
      c = remap[c];
    }
  }
  if (q.classes.empty() && !p.classes.empty()) q.classes.push_back(SizeClass{p.classes[0].sizes});  // the variants
  return q;
}

// ---- C++ ----
std::string to_cpp(const Program& p, const std::string& backend, bool dynamic_always) {
  std::string o = "// sinter fuzz: " + fmt::format("seed {} case {}", p.seed, p.case_id) + "\n";
  o += "#include <sinter/sinter.h>\n#include <cmath>\n#include <iostream>\nusing namespace sinter;\n";
  o += kValueFunctionCpp;
  int nv = p.num_variants();
  std::vector<std::string> names(p.num_values());
  std::vector<std::string> params, args, arg_names;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    names[i] = fmt::format("{}{}", p.inputs[i].is_param ? "p" : "x", i);
    if (!p.inputs[i].is_param) arg_names.push_back(names[i]);
  }
  for (size_t k = 0; k < p.steps.size(); ++k) names[p.inputs.size() + k] = fmt::format("v{}", p.inputs.size() + k);
  // make(v): the inputs of variant v.
  o += "static std::vector<Tensor> make(int v) {\n";
  for (size_t c = 0; c < p.classes.size(); ++c) {
    o += fmt::format("  const int64_t c{}[] = {{{}}};\n", c, fmt::join(p.classes[c].sizes, ", "));
  }
  o += "  std::vector<Tensor> in;\n";
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const InputSpec& in = p.inputs[i];
    if (in.is_param) continue;
    std::vector<std::string> logical;
    for (int c : in.dims) logical.push_back(c < 0 ? "1" : fmt::format("c{}[v]", c));
    // Storage sizes, written out per layout.
    std::vector<std::string> phys = logical;
    const auto& a = in.layout_args;
    if (in.layout == Layout::kTranspose) std::swap(phys[a[0]], phys[a[1]]);
    if (in.layout == Layout::kPermute) {
      for (size_t d = 0; d < logical.size(); ++d) phys[a[d]] = logical[d];
    }
    if (in.layout == Layout::kStep) phys[a[0]] = fmt::format("{} * {}", logical[a[0]], a[1]);
    if (in.layout == Layout::kExpand) phys[a[0]] = "1";
    if (in.layout == Layout::kOffset) phys[0] = logical[0] + " + 1";
    std::string base = fmt::format("fuzz_input({}ULL, {}, {{{}}}, {}, {}, {})", p.data_seed, i, fmt::join(phys, ", "),
                                   dtype_enum_name(in.dtype), in.index_bound, p.specials ? "true" : "false");
    o += fmt::format("  in.push_back({});\n", layout_cpp(in, base, fmt::format("{{{}}}", fmt::join(logical, ", "))));
    for (int d : in.dynamic) o += fmt::format("  mark_dynamic(in.back(), {});\n", d);
  }
  o += "  return in;\n}\n\nint main() {\n";
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const InputSpec& in = p.inputs[i];
    if (!in.is_param) continue;
    std::vector<int64_t> s = input_sizes(p, i, 0);
    o += fmt::format("  Tensor {} = fuzz_input({}ULL, {}, {{{}}}, {}, {}, {});  // a tensor the function closes over\n",
                     names[i], p.data_seed, i, fmt::join(storage_sizes(in, s), ", "), dtype_enum_name(in.dtype),
                     in.index_bound, p.specials ? "true" : "false");
    if (in.layout != Layout::kContiguous) o += fmt::format("  {0} = {1};\n", names[i], layout_cpp(in, names[i], fmt::format("{{{}}}", fmt::join(s, ", "))));
  }
  if (!p.modules.empty()) o += fmt::format("  manual_seed({}ULL);\n", p.data_seed);
  for (size_t i = 0; i < p.modules.size(); ++i) {
    const auto& m = p.modules[i];
    if (m.kind == "Linear") o += fmt::format("  nn::Linear m{}({}, {}, {});\n", i, m.ints[0], m.ints[1], m.ints[2] ? "true" : "false");
    else o += fmt::format("  nn::LayerNorm m{}({}, 1e-5, {});\n", i, m.ints[0], m.ints[1] ? "true" : "false");
  }
  std::vector<std::string> sig;
  for (const auto& n : arg_names) sig.push_back("Tensor " + n);
  o += fmt::format("  auto f = [&]({}) {{\n", fmt::join(sig, ", "));
  for (size_t k = 0; k < p.steps.size(); ++k) {
    o += fmt::format("    Tensor {} = {};\n", names[p.inputs.size() + k], step_cpp(p.steps[k], names));
  }
  std::vector<std::string> outs;
  for (int id : p.outputs) outs.push_back(names[id]);
  // Inputs are returned too: the function may write them.
  for (const auto& n : arg_names) outs.push_back(n);
  o += fmt::format("    return std::vector<Tensor>{{{}}};\n  }};\n", fmt::join(outs, ", "));
  std::vector<std::string> call;
  for (size_t k = 0; k < arg_names.size(); ++k) call.push_back(fmt::format("in[{}]", k));
  o += fmt::format("  auto g = compile(f, {{.backend = \"{}\", .dynamic = Dynamic::{}{}}});\n", backend,
                   dynamic_always ? "kAlways" : "kAuto", p.freeze ? ", .freeze = true" : "");
  o += fmt::format("  for (int v = 0; v < {}; ++v) {{\n", nv);
  o += fmt::format("    std::vector<Tensor> in = make(v);\n    std::vector<Tensor> want = f({});\n", fmt::join(call, ", "));
  o += fmt::format("    in = make(v);\n    std::vector<Tensor> got;\n    try {{\n      got = g({});\n", fmt::join(call, ", "));
  o += "    } catch (const std::exception& e) {\n      std::cout << \"variant \" << v << \": compiled threw: \" << e.what() << \"\\n\";\n"
       "      continue;\n    }\n";
  o += "    for (size_t k = 0; k < want.size(); ++k) {\n"
       "      std::cout << \"variant \" << v << \" output \" << k << \" sizes \" << want[k].sizes().str() << \" / \"\n"
       "                << got[k].sizes().str() << \"\\n  eager:    \" << want[k] << \"\\n  compiled: \" << got[k] << \"\\n\";\n"
       "    }\n  }\n}\n";
  return o;
}

}  // namespace sinter::tools::fuzz
