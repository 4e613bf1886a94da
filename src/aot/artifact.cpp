// Ahead-of-time artifacts (include/sinter/aot.h): writing one from an exported capture, and reading it back into a
// callable that runs the inductor's saved CPU kernels without compiling anything.
#include "sinter/aot.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "codegen/cpp/kernel_cache.h"
#include "codegen/cpp/toolchain.h"
#include "nn/json.h"
#include "sinter/graph.h"
#include "sinter/nn.h"
#include "sinter/ops.h"
#include "support/cache_files.h"
#include "support/check.h"
#include "support/mapped_file.h"
#include "support/log.h"
#include "support/sha256.h"
#include "symbolic/shape_env.h"
#include "tensor/thread_pool.h"

namespace sinter::aot {

namespace {

constexpr const char* kFormat = "sinter-aot 2";

const char* rel_text(sym::Rel r) {
  switch (r) {
    case sym::Rel::kEq: return "==";
    case sym::Rel::kNe: return "!=";
    case sym::Rel::kLt: return "<";
    case sym::Rel::kLe: return "<=";
  }
  return "?";
}

sym::Rel parse_rel(const std::string& t) {
  if (t == "==") return sym::Rel::kEq;
  if (t == "!=") return sym::Rel::kNe;
  if (t == "<") return sym::Rel::kLt;
  SINTER_CHECK(t == "<=", "aot: unknown guard relation '{}' in the manifest", t);
  return sym::Rel::kLe;
}

// A symbol of the saved graph: its example value and the sizes it may take.
struct Symbol {
  int64_t hint = 2, min = 2, max = sym::kInf;
  std::string source;
};
struct SavedGuard {
  std::string rel, lhs, rhs;
};

// What manifest.json says (besides the file hashes).
struct Manifest {
  std::vector<std::string> cpu_flags;
  std::string cpu;
  int cores = 1;
  int num_args = 0;
  std::vector<Symbol> symbols;
  std::vector<SavedGuard> guards;
  std::map<std::string, std::string> files;  // relative path -> SHA-256
};

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SINTER_CHECK(in.good(), "aot: cannot read {}", path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_whole(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  SINTER_CHECK(out.good(), "aot: cannot write {}", path);
}

// A file's digest in the manifest: the SHA-256 of the SHA-256s of its 1 MiB blocks, which hash in parallel (one
// SHA-256 of a 50 MB weights file takes a quarter of a second on one core).
std::string digest(std::string_view data) {
  constexpr size_t kBlock = size_t{1} << 20;
  const int64_t blocks = static_cast<int64_t>(std::max<size_t>(1, (data.size() + kBlock - 1) / kBlock));
  std::vector<std::string> parts(blocks);
  parallel_for(0, blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) parts[i] = support::sha256_hex(data.substr(i * kBlock, kBlock));
  });
  std::string all;
  for (const std::string& p : parts) all += p;
  return support::sha256_hex(all);
}

// The digest of a file, read through a private mapping (no copy into the heap).
std::string file_digest(const std::string& path) {
  support::MappedFile file(path, "aot", /*no_links=*/true);
  return digest(file.bytes());
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string manifest_json(const Manifest& m) {
  using nn::json_quote;
  std::vector<std::string> symbols, guards, files, flags;
  for (size_t i = 0; i < m.symbols.size(); ++i) {
    const Symbol& s = m.symbols[i];
    symbols.push_back(fmt::format("{{\"id\": {}, \"hint\": {}, \"min\": {}, \"max\": {}, \"source\": {}}}", i, s.hint,
                                  s.min, s.max, json_quote(s.source)));
  }
  for (const SavedGuard& g : m.guards)
    guards.push_back(fmt::format("{{\"rel\": {}, \"lhs\": {}, \"rhs\": {}}}", json_quote(g.rel), json_quote(g.lhs),
                                 json_quote(g.rhs)));
  for (const auto& [name, sha] : m.files) files.push_back(fmt::format("{}: {}", json_quote(name), json_quote(sha)));
  for (const std::string& f : m.cpu_flags) flags.push_back(json_quote(f));
  return fmt::format(
      "{{\n  \"format\": {},\n  \"kernel_abi\": {},\n  \"cpu\": {},\n  \"cpu_flags\": [{}],\n  \"target_cores\": {},\n"
      "  \"num_args\": {},\n  \"symbols\": [\n    {}\n  ],\n  \"guards\": [\n    {}\n  ],\n  \"files\": {{\n    {}\n  }}\n}}\n",
      json_quote(kFormat), codegen::cpp::kAbiVersion, json_quote(m.cpu), fmt::join(flags, ", "), m.cores, m.num_args,
      fmt::join(symbols, ",\n    "), fmt::join(guards, ",\n    "), fmt::join(files, ",\n    "));
}

const nn::Json& member(const nn::Json& j, const char* key, const std::string& path) {
  const nn::Json* v = j.find(key);
  SINTER_CHECK(v != nullptr, "aot: {} has no \"{}\"", path, key);
  return *v;
}

int64_t number(const nn::Json& j, const char* key, const std::string& path) {
  const nn::Json& v = member(j, key, path);
  int64_t out = 0;
  const char* end = v.text.data() + v.text.size();
  auto [at, ec] = std::from_chars(v.text.data(), end, out);
  SINTER_CHECK(v.kind == nn::Json::Kind::kNumber && ec == std::errc() && at == end,
               "aot: \"{}\" of {} is not an integer in range ({})", key, path, v.text);
  return out;
}

std::string text(const nn::Json& j, const char* key, const std::string& path) {
  const nn::Json& v = member(j, key, path);
  SINTER_CHECK(v.kind == nn::Json::Kind::kString, "aot: \"{}\" of {} is not a string", key, path);
  return v.text;
}

Manifest parse_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  SINTER_CHECK(::access(path.c_str(), R_OK) == 0, "aot: {} is not an artifact (no readable manifest.json)", dir);
  nn::Json j = nn::parse_json(read_whole(path));
  const std::string format = text(j, "format", path);
  SINTER_CHECK(format == kFormat, "aot: {} is of format '{}', this sinter reads '{}'", path, format, kFormat);
  SINTER_CHECK(number(j, "kernel_abi", path) == codegen::cpp::kAbiVersion,
               "aot: {} was saved for kernel ABI {}, this sinter runs ABI {}", path, number(j, "kernel_abi", path),
               codegen::cpp::kAbiVersion);
  Manifest m;
  m.cpu = text(j, "cpu", path);
  for (const nn::Json& f : member(j, "cpu_flags", path).items) m.cpu_flags.push_back(f.text);
  m.cores = static_cast<int>(number(j, "target_cores", path));
  m.num_args = static_cast<int>(number(j, "num_args", path));
  SINTER_CHECK(m.cores >= 1 && m.num_args >= 0, "aot: {} has target_cores {} and num_args {}", path, m.cores,
               m.num_args);
  for (const nn::Json& s : member(j, "symbols", path).items) {
    m.symbols.push_back({number(s, "hint", path), number(s, "min", path), number(s, "max", path),
                         text(s, "source", path)});
    const Symbol& y = m.symbols.back();
    SINTER_CHECK(y.min >= 2 && y.min <= y.hint && y.hint <= y.max,
                 "aot: symbol {} of {} has hint {} outside its range [{}, {}] (or below 2)", m.symbols.size() - 1, path,
                 y.hint, y.min, y.max);
  }
  for (const nn::Json& g : member(j, "guards", path).items)
    m.guards.push_back({text(g, "rel", path), text(g, "lhs", path), text(g, "rhs", path)});
  for (const auto& [name, sha] : member(j, "files", path).members) m.files[name] = sha.text;
  return m;
}

// The graph as the artifact has it: graph.txt parsed at the symbols' hints, with their ranges and the guards, so
// that lowering and scheduling decide exactly as when the artifact was saved (save compiles this same rebuild).
Graph rebuild_graph(const std::string& graph_text, const Manifest& m, const std::map<std::string, Tensor>& constants) {
  ParseOptions po;
  po.constants = constants;
  for (const Symbol& s : m.symbols) po.symbol_hints.push_back(s.hint);
  Graph g = parse_graph(graph_text, po);
  if (const std::shared_ptr<sym::ShapeEnv>& env = g.shape_env()) {
    SINTER_CHECK(env->num_symbols() == static_cast<int64_t>(m.symbols.size()),
                 "aot: the graph has {} symbols, the manifest {}", env->num_symbols(), m.symbols.size());
    for (size_t i = 0; i < m.symbols.size(); ++i)
      env->set_range(static_cast<int64_t>(i), m.symbols[i].min, m.symbols[i].max);
    for (const SavedGuard& gd : m.guards)
      env->add_guard(parse_rel(gd.rel), sym::parse_expr(gd.lhs), sym::parse_expr(gd.rhs));
  } else {
    SINTER_CHECK(m.symbols.empty(), "aot: the manifest names {} symbols, the graph has none", m.symbols.size());
  }
  return g;
}

CompileContext artifact_context(const Graph& g, const Manifest& m, const std::string& dir, bool prebuilt) {
  CompileOptions options;
  options.backend = "inductor";
  CompileContext ctx = CompileContext::for_graph(g, options);
  ctx.target.cores = m.cores;  // the generated code's split into units follows the saving machine's
  ctx.aot_object_dir = dir + "/kernels";
  ctx.aot_prebuilt = prebuilt;
  return ctx;
}

std::string describe_symbols(const Manifest& m) {
  std::string out;
  for (size_t i = 0; i < m.symbols.size(); ++i) {
    const Symbol& s = m.symbols[i];
    out += fmt::format("  s{} in [{}, {}]{}\n", i, s.min,
                       s.max == sym::kInf ? std::string("inf") : std::to_string(s.max),
                       s.source.empty() ? "" : " (" + s.source + ")");
  }
  for (const SavedGuard& g : m.guards) out += fmt::format("  {} {} {}\n", g.lhs, g.rel, g.rhs);
  return out;
}

}  // namespace

void save_graph(capture::ExportedGraph exported, const std::string& path) {
  for (const Tensor& t : exported.inputs)
    SINTER_CHECK(t.device().is_cpu(), "aot: artifacts of CUDA graphs are not supported yet (their cubins are not "
                                      "kept); save the function with CPU inputs");
  Manifest m;
  const codegen::cpp::CpuFeatures& cpu = codegen::cpp::host_cpu_features();
  m.cpu = cpu.description;
  m.cpu_flags = cpu.flags;
  m.cores = host_cpu_target().cores;
  m.num_args = exported.num_args;
  if (const std::shared_ptr<sym::ShapeEnv>& env = exported.graph.shape_env()) {
    for (int64_t i = 0; i < env->num_symbols(); ++i) {
      sym::Range r = env->declared_range(i);
      m.symbols.push_back({env->hint(i), r.min, r.max, env->source(i)});
    }
    for (const sym::Guard& g : env->guards())
      m.guards.push_back({rel_text(g.rel), sym::to_string(g.lhs), sym::to_string(g.rhs)});
  }
  const std::string text = print_graph(exported.graph);
  // The weights, by graph input name, and the graph's constants (CompileOptions::freeze), by node name.
  std::map<std::string, Tensor> weights, constants;
  const std::vector<const Node*> inputs = exported.graph.input_nodes();
  for (size_t i = exported.num_args; i < inputs.size(); ++i) weights[inputs[i]->name] = exported.inputs.at(i);
  for (const Node& n : exported.graph.nodes())
    if (n.kind == NodeKind::kConstant) constants[n.name] = n.constant;

  if (std::string why = support::make_dirs(path + "/kernels"); !why.empty())
    throw Error(fmt::format("aot: cannot create {}/kernels: {}", path, why));
  for (const std::string& old : list_dir(path + "/kernels")) ::unlink((path + "/kernels/" + old).c_str());
  write_whole(path + "/graph.txt", text);
  nn::save_safetensors(path + "/weights.safetensors", weights, {{"format", kFormat}});
  nn::save_safetensors(path + "/constants.safetensors", constants, {{"format", kFormat}});
  // Compile the graph as load() will rebuild it, keeping each kernel object in kernels/.
  Graph rebuilt = rebuild_graph(text, m, constants);
  std::vector<Tensor> examples = exported.inputs;
  find_backend("inductor")(rebuilt, examples, artifact_context(rebuilt, m, path, /*prebuilt=*/false));
  for (const char* f : {"graph.txt", "weights.safetensors", "constants.safetensors"})
    m.files[f] = file_digest(path + "/" + f);
  for (const std::string& k : list_dir(path + "/kernels"))
    m.files["kernels/" + k] = file_digest(path + "/kernels/" + k);
  write_whole(path + "/manifest.json", manifest_json(m));
}

struct Artifact::State {
  std::string path;
  Manifest manifest;
  Graph graph;
  std::vector<Tensor> weights;  // graph inputs after the arguments
  CompiledGraph fn;
  std::shared_ptr<sym::ShapeEnv> env;
};

Artifact load(const std::string& path) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  auto s = std::make_shared<Artifact::State>();
  s->path = path;
  s->manifest = parse_manifest(path);
  const Manifest& m = s->manifest;
  // Every file is the one the manifest names; nothing else is in kernels/ (an object there gets executed).
  for (const auto& [name, sha] : m.files) {
    SINTER_CHECK(name.find("..") == std::string::npos && !name.empty() && name[0] != '/',
                 "aot: the manifest of {} names a file outside the artifact: {}", path, name);
    SINTER_CHECK(file_digest(path + "/" + name) == sha,
                 "aot: {}/{} does not match its SHA-256 in the manifest (modified or truncated); refusing the artifact",
                 path, name);
  }
  const double verify_ms = ms_since(t0);
  for (const std::string& k : list_dir(path + "/kernels"))
    SINTER_CHECK(m.files.count("kernels/" + k), "aot: {}/kernels/{} is not in the manifest; refusing the artifact",
                 path, k);
  const codegen::cpp::CpuFeatures& cpu = codegen::cpp::host_cpu_features();
  std::vector<std::string> missing;
  for (const std::string& f : m.cpu_flags)
    if (std::find(cpu.flags.begin(), cpu.flags.end(), f) == cpu.flags.end()) missing.push_back(f);
  SINTER_CHECK(missing.empty(), "aot: {} was built for a CPU with {}; this CPU ({}) lacks {}", path, m.cpu,
               cpu.description, fmt::join(missing, " "));
  for (const char* f : {"graph.txt", "weights.safetensors", "constants.safetensors"})
    SINTER_CHECK(m.files.count(f), "aot: the manifest of {} lists no {}", path, f);
  auto t1 = Clock::now();
  s->graph = rebuild_graph(read_whole(path + "/graph.txt"), m, nn::load_safetensors(path + "/constants.safetensors"));
  s->env = s->graph.shape_env();
  const double graph_ms = ms_since(t1);
  auto t2 = Clock::now();
  std::map<std::string, Tensor> weights = nn::map_safetensors(path + "/weights.safetensors");
  const std::vector<const Node*> inputs = s->graph.input_nodes();
  SINTER_CHECK(m.num_args <= static_cast<int>(inputs.size()), "aot: the manifest says {} inputs, the graph has {}",
               m.num_args, inputs.size());
  for (size_t i = m.num_args; i < inputs.size(); ++i) {
    auto it = weights.find(inputs[i]->name);
    SINTER_CHECK(it != weights.end(), "aot: weights.safetensors has no tensor '{}'", inputs[i]->name);
    const TensorMeta& meta = inputs[i]->meta();
    Tensor w = it->second;
    SINTER_CHECK(w.dtype() == meta.dtype && w.sizes().hints() == meta.sizes.hints(),
                 "aot: weight '{}' is {} {}, the graph takes {} {}", inputs[i]->name, dtype_name(w.dtype()),
                 w.sizes().str(), dtype_name(meta.dtype), meta.sizes.str());
    // The graph reads it in another layout (a transposed view), or it lies in the mapped file less aligned than
    // an input must be: a copy, as a call copies such an input.
    if (w.strides().hints() != meta.strides.hints() || reinterpret_cast<uintptr_t>(w.data_ptr()) % 16 != 0) {
      Tensor laid = empty({w.numel()}, w.dtype()).as_strided(meta.sizes, meta.strides);
      laid.copy_(w);
      w = laid;
    }
    s->weights.push_back(w);
  }
  const double weights_ms = ms_since(t2);
  auto t3 = Clock::now();
  s->fn = find_backend("inductor")(s->graph, {}, artifact_context(s->graph, m, path, /*prebuilt=*/true));
  SINTER_LOG(kPerfHints, "aot: loaded {} in {:.1f} ms: files verified {:.1f} ms, graph {:.1f} ms, weights {:.1f} ms, "
             "kernels planned and loaded {:.1f} ms", path, ms_since(t0), verify_ms, graph_ms, weights_ms, ms_since(t3));
  return Artifact(std::move(s));
}

int Artifact::num_inputs() const { return state_ ? state_->manifest.num_args : 0; }

std::vector<TensorMeta> Artifact::input_metas() const {
  SINTER_CHECK(state_, "aot: input_metas() of an empty Artifact");
  std::vector<TensorMeta> out;
  const std::vector<const Node*> inputs = state_->graph.input_nodes();
  for (int i = 0; i < state_->manifest.num_args; ++i) out.push_back(inputs[i]->meta());
  return out;
}
const std::string& Artifact::path() const {
  SINTER_CHECK(state_, "aot: an empty Artifact (default-constructed) has no path");
  return state_->path;
}

std::string Artifact::describe() const {
  SINTER_CHECK(state_, "aot: describe() of an empty Artifact");
  std::string out = fmt::format("artifact {} (built for {}), {} input(s):\n", state_->path, state_->manifest.cpu,
                                state_->manifest.num_args);
  const std::vector<const Node*> inputs = state_->graph.input_nodes();
  for (int i = 0; i < state_->manifest.num_args; ++i)
    out += fmt::format("  {}: {} {}\n", inputs[i]->name, dtype_name(inputs[i]->meta().dtype),
                       inputs[i]->meta().sizes.str());
  return out + describe_symbols(state_->manifest);
}

std::vector<Tensor> Artifact::operator()(const std::vector<Tensor>& args) const {
  SINTER_CHECK(state_, "aot: calling an empty Artifact (default-constructed; use aot::load)");
  const State& s = *state_;
  const std::vector<const Node*> inputs = s.graph.input_nodes();
  SINTER_CHECK(static_cast<int>(args.size()) == s.manifest.num_args, "aot: {} takes {} input(s), got {}", s.path,
               s.manifest.num_args, args.size());
  // Bind each symbol where an input's size is that symbol, then check every size and the guards.
  std::vector<int64_t> values(s.manifest.symbols.size(), -1);
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorMeta& meta = inputs[i]->meta();
    const Tensor& a = args[i];
    SINTER_CHECK(a.defined(), "aot: input {} ('{}') is undefined", i, inputs[i]->name);
    SINTER_CHECK(a.device().is_cpu(), "aot: input {} ('{}') is on {}; the artifact runs on the CPU", i,
                 inputs[i]->name, a.device().str());
    SINTER_CHECK(a.dtype() == meta.dtype && a.dim() == static_cast<int64_t>(meta.sizes.size()),
                 "aot: input {} ('{}') is {} {}, the artifact takes {} {}", i, inputs[i]->name, dtype_name(a.dtype()),
                 a.sizes().str(), dtype_name(meta.dtype), meta.sizes.str());
    for (size_t d = 0; d < meta.sizes.size(); ++d) {
      ExprPtr e = sym::expr_of(meta.sizes[d]);
      if (!e->is_symbol()) continue;
      int64_t& v = values.at(e->symbol_id());
      if (v < 0) v = a.sizes().hints()[d];
    }
  }
  for (size_t k = 0; k < values.size(); ++k)
    SINTER_CHECK(values[k] >= 0, "aot: symbol s{} of {} is no input's size", k, s.path);
  if (s.env) {
    sym::GuardCheck check = s.env->evaluate_guards(values);
    SINTER_CHECK(check.ok, "aot: the inputs' sizes break a guard of {}: {}\n{}", s.path, check.message, describe());
  }
  std::vector<Tensor> run;
  run.reserve(inputs.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorMeta& meta = inputs[i]->meta();
    Tensor a = args[i];
    const std::vector<int64_t> sizes = a.sizes().hints(), strides = a.strides().hints();
    std::vector<int64_t> want_strides;
    for (size_t d = 0; d < meta.sizes.size(); ++d) {
      const int64_t size = sym::evaluate(*sym::expr_of(meta.sizes[d]), values);
      SINTER_CHECK(sizes[d] == size,
                   "aot: input {} ('{}') has sizes {}, the artifact takes {} (here {} in dim {})", i, inputs[i]->name,
                   a.sizes().str(), meta.sizes.str(), size, d);
      want_strides.push_back(sym::evaluate(*sym::expr_of(meta.strides[d]), values));
    }
    bool same = reinterpret_cast<uintptr_t>(a.data_ptr()) % 16 == 0;
    for (size_t d = 0; d < want_strides.size() && same; ++d)
      same = sizes[d] <= 1 || strides[d] == want_strides[d];
    if (!same) {  // another layout than the graph's: a copy in the graph's own (a fresh, aligned allocation)
      int64_t extent = 1;
      for (size_t d = 0; d < want_strides.size(); ++d)
        extent += (sizes[d] - 1) * want_strides[d];
      Tensor laid = empty({std::max<int64_t>(extent, 1)}, a.dtype()).as_strided(a.sizes(), SymIntList(want_strides));
      laid.copy_(a);
      a = laid;
    }
    run.push_back(a);
  }
  for (const Tensor& w : s.weights) run.push_back(w);
  return s.fn(run);
}

}  // namespace sinter::aot
