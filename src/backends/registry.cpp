// The backend registry: a process-wide, thread-safe map from name to backend (one of the registries listed in
// docs/ARCHITECTURE.md, section 9). Built-ins are registered on first use; registering a taken name is an error
// unless the caller asks to replace it (never a built-in, which the engine relies on: aot_eager is the fallback
// and the reference).
#include <fmt/format.h>

#include <deque>
#include <map>
#include <mutex>

#include "backends/backends.h"
#include "support/check.h"

namespace sinter {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, const BackendFn*> by_name;
  std::deque<BackendFn> storage;  // never shrinks, so references handed out stay valid after a re-registration

  Registry() {
    add("eager", backends::eager_backend());
    add("aot_eager", backends::aot_eager_backend());
    add("inductor", backends::inductor_backend());
    add("cudagraphs", backends::cudagraphs_backend());
  }
  void add(const std::string& name, BackendFn backend) {
    storage.push_back(std::move(backend));
    by_name[name] = &storage.back();
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool is_builtin_backend(const std::string& name) {
  return name == "eager" || name == "aot_eager" || name == "inductor" || name == "cudagraphs";
}

BackendFn::BackendFn(Backend simple) {
  if (simple)
    fn_ = [simple = std::move(simple)](const Graph& g, const std::vector<Tensor>& examples, const CompileContext&) {
      return simple(g, examples);
    };
}

BackendFn::BackendFn(ContextBackend full) : fn_(std::move(full)) {}

CompiledGraph BackendFn::operator()(const Graph& graph, const std::vector<Tensor>& example_inputs) const {
  return fn_(graph, example_inputs, CompileContext::for_graph(graph));
}

CompiledGraph BackendFn::operator()(const Graph& graph, const std::vector<Tensor>& example_inputs,
                                    const CompileContext& context) const {
  return fn_(graph, example_inputs, context);
}

void register_backend(const std::string& name, Backend backend, RegisterOptions options) {
  register_backend(name, BackendFn(std::move(backend)), options);
}

void register_backend(const std::string& name, ContextBackend backend, RegisterOptions options) {
  register_backend(name, BackendFn(std::move(backend)), options);
}

void register_backend(const std::string& name, const BackendFn& backend, RegisterOptions options) {
  SINTER_CHECK(!name.empty(), "register_backend: the name is empty");
  SINTER_CHECK(static_cast<bool>(backend), "register_backend('{}'): the backend is an empty function", name);
  SINTER_CHECK(!is_builtin_backend(name),
               "register_backend('{}'): '{}' is a built-in backend and cannot be replaced; register yours under "
               "another name",
               name, name);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  SINTER_CHECK(options.replace || !r.by_name.count(name),
               "register_backend('{}'): a backend of that name is already registered (pass {{.replace = true}} "
               "to replace it)",
               name);
  r.add(name, backend);
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.by_name) names.push_back(entry.first);
  return names;
}

const BackendFn& find_backend(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_name.find(name);
  if (it != r.by_name.end()) return *it->second;
  std::string known;
  for (const auto& entry : r.by_name) known += (known.empty() ? "" : ", ") + entry.first;
  throw Error(
      fmt::format("unknown backend '{}'; known backends: {} (add one with register_backend)", name, known));
}

}  // namespace sinter
