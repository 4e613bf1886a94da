// nn::Module: the registry of parameters, buffers and children, traversal with PyTorch's dotted names and
// order, train/eval, in-place dtype/device conversion, state dicts and printing.
#include <cxxabi.h>

#include <cstdlib>
#include <set>
#include <sstream>
#include <typeinfo>

#include <algorithm>

#include "nn/util.h"
#include "sinter/autograd.h"
#include "sinter/nn.h"
#include "support/check.h"

namespace sinter::nn {

// Reads Module's private slots for the free helpers below.
struct ModuleAccess {
  static const auto& params(const Module& m) { return m.params_; }
  static const auto& buffers(const Module& m) { return m.buffers_; }
  static const auto& children(const Module& m) { return m.children_; }
};

namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// Pre-order walk of (dotted prefix, module), visiting each module once (PyTorch's named_modules).
void walk_modules(Module& m, const std::string& prefix, std::set<const Module*>& seen,
                  std::vector<std::pair<std::string, Module*>>& out) {
  if (!seen.insert(&m).second) return;
  out.emplace_back(prefix, &m);
  for (const auto& child : ModuleAccess::children(m))
    walk_modules(*child.module, join_name(prefix, child.name), seen, out);
}

// Named parameters or buffers of `m` (and its subtree when recurse), each tensor once.
template <class GetSlots>
NamedTensors named_tensors(const Module& m, const std::string& prefix, bool recurse, GetSlots get_slots) {
  std::vector<std::pair<std::string, Module*>> mods;
  if (recurse) {
    std::set<const Module*> seen;
    walk_modules(const_cast<Module&>(m), prefix, seen, mods);
  } else {
    mods.emplace_back(prefix, const_cast<Module*>(&m));
  }
  NamedTensors out;
  std::set<const TensorImpl*> seen;
  for (const auto& [mod_prefix, mod] : mods)
    for (const auto& slot : get_slots(*mod))
      if (slot.tensor().defined() && seen.insert(slot.tensor().impl()).second)
        out.emplace_back(join_name(mod_prefix, slot.name), slot.tensor());
  return out;
}

void collect_state(const Module& m, const std::string& prefix, StateDict& out) {
  for (const auto& slot : ModuleAccess::params(m))
    if (slot.tensor().defined()) out.insert(join_name(prefix, slot.name), slot.tensor());
  for (const auto& slot : ModuleAccess::buffers(m))
    if (slot.tensor().defined() && slot.persistent) out.insert(join_name(prefix, slot.name), slot.tensor());
  for (const auto& child : ModuleAccess::children(m))
    collect_state(*child.module, join_name(prefix, child.name), out);
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", \"" : "\"") + names[i] + "\"";
  return s;
}

// Indents every line after the first by two spaces (PyTorch's _addindent).
std::string add_indent(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

}  // namespace

// ---- StateDict ----
StateDict::StateDict(const std::map<std::string, Tensor>& entries) {
  for (const auto& [name, t] : entries) insert(name, t);
}
StateDict::StateDict(std::initializer_list<std::pair<std::string, Tensor>> entries) {
  for (const auto& [name, t] : entries) insert(name, t);
}
void StateDict::insert(const std::string& name, const Tensor& tensor) {
  auto it = index_.find(name);
  if (it != index_.end()) {
    items_[it->second].second = tensor;
    return;
  }
  index_.emplace(name, items_.size());
  items_.emplace_back(name, tensor);
}
const Tensor& StateDict::at(const std::string& name) const {
  auto it = index_.find(name);
  SINTER_CHECK(it != index_.end(), "state dict has no key \"{}\"", name);
  return items_[it->second].second;
}
Tensor& StateDict::at(const std::string& name) {
  return const_cast<Tensor&>(static_cast<const StateDict&>(*this).at(name));
}
bool StateDict::erase(const std::string& name) {
  auto it = index_.find(name);
  if (it == index_.end()) return false;
  items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
  return true;
}
std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  for (const auto& item : items_) out.push_back(item.first);
  return out;
}

// ---- registration ----
Tensor Module::forward(const Tensor&) {
  SINTER_CHECK_AT(
      call_site(), false,
      "{} has no forward(const Tensor&) to call; define `Tensor forward(const Tensor& x)` in it, or call "
      "its own forward directly",
      name());
  return {};
}

Tensor Module::operator()(const Tensor& input, Loc loc) {
  CallSiteScope scope(loc);
  return forward(input);
}

void Module::check_new_name(const std::string& name, const char* kind) const {
  SINTER_CHECK(!name.empty(), "{} name can't be empty", kind);
  SINTER_CHECK(name.find('.') == std::string::npos, "{} name can't contain \".\", got \"{}\"", kind, name);
  auto used = [&](const auto& list) {
    for (const auto& e : list)
      if (e.name == name) return true;
    return false;
  };
  std::string k = kind;
  SINTER_CHECK((k == "parameter" || !used(params_)) && (k == "buffer" || !used(buffers_)) &&
                   (k == "module" || !used(children_)),
               "{}: attribute \"{}\" already exists (as another kind than {})", this->name(), name, kind);
}

// A slot reads either its own handle (member null) or a member of the module. Registering a name again
// replaces the entry in place; an entry that reads a member keeps reading one (the new member, or the old one
// assigned the new value), so the layer's field and the registry never disagree.
Tensor& Module::add_slot(std::vector<Slot>& slots, const std::string& name, Tensor* member, Tensor value,
                         bool persistent) {
  for (Slot& s : slots)
    if (s.name == name) {
      s.persistent = persistent;
      if (member) {
        s.member = member, s.value = Tensor();
      } else if (s.member) {
        *s.member = value;
      } else {
        s.value = value;
      }
      return s.tensor();
    }
  slots.push_back({name, member ? Tensor() : value, member, persistent});
  return slots.back().tensor();
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "parameter");
  if (tensor.defined()) tensor.requires_grad_(requires_grad);
  return add_slot(params_, name, nullptr, tensor, true);
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_new_name(name, "buffer");
  return add_slot(buffers_, name, nullptr, tensor, persistent);
}

Tensor& Module::register_parameter(const std::string& name, Tensor* member, bool requires_grad) {
  check_new_name(name, "parameter");
  SINTER_CHECK(member != nullptr, "register_parameter(\"{}\") got a null member pointer", name);
  if (member->defined()) member->requires_grad_(requires_grad);
  return add_slot(params_, name, member, Tensor(), true);
}

Tensor& Module::register_buffer(const std::string& name, Tensor* member, bool persistent) {
  check_new_name(name, "buffer");
  SINTER_CHECK(member != nullptr, "register_buffer(\"{}\") got a null member pointer", name);
  return add_slot(buffers_, name, member, Tensor(), persistent);
}

void Module::add_child(const std::string& name, Module* module, std::shared_ptr<Module> owner) {
  check_new_name(name, "module");
  SINTER_CHECK(module != nullptr, "register_module(\"{}\") got a null module", name);
  SINTER_CHECK(module != this, "{} can't be registered as its own child \"{}\"", this->name(), name);
  for (Child& c : children_)
    if (c.name == name) {
      c.module = module;
      c.owner = std::move(owner);
      return;
    }
  children_.push_back({name, module, std::move(owner)});
}

bool Module::unregister(const std::string& name) {
  auto drop = [&](auto& list) {
    auto it = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.name == name; });
    if (it == list.end()) return false;
    list.erase(it);
    return true;
  };
  return drop(params_) || drop(buffers_) || drop(children_);
}

std::shared_ptr<Module> Module::child_owner(const std::string& name) const {
  for (const Child& c : children_)
    if (c.name == name) return c.owner;
  return nullptr;
}

// ---- traversal ----
std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters("", recurse)) out.push_back(t);
  return out;
}
NamedTensors Module::named_parameters(const std::string& prefix, bool recurse) const {
  return named_tensors(
      *this, prefix, recurse, [](const Module& m) -> const auto& { return ModuleAccess::params(m); });
}
std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers("", recurse)) out.push_back(t);
  return out;
}
NamedTensors Module::named_buffers(const std::string& prefix, bool recurse) const {
  return named_tensors(
      *this, prefix, recurse, [](const Module& m) -> const auto& { return ModuleAccess::buffers(m); });
}
std::vector<Module*> Module::children() const {
  std::vector<Module*> out;
  for (auto& [name, m] : named_children()) out.push_back(m);
  return out;
}
std::vector<std::pair<std::string, Module*>> Module::named_children() const {
  std::vector<std::pair<std::string, Module*>> out;
  std::set<const Module*> seen;
  for (const Child& c : children_)
    if (seen.insert(c.module).second) out.emplace_back(c.name, c.module);
  return out;
}
std::vector<Module*> Module::modules() {
  std::vector<Module*> out;
  for (auto& [name, m] : named_modules()) out.push_back(m);
  return out;
}
std::vector<std::pair<std::string, Module*>> Module::named_modules(const std::string& prefix) {
  std::vector<std::pair<std::string, Module*>> out;
  std::set<const Module*> seen;
  walk_modules(*this, prefix, seen, out);
  return out;
}

Module& Module::get_submodule(const std::string& path) {
  Module* m = this;
  for (const std::string& part : split_path(path)) {
    Module* next = nullptr;
    for (const Child& c : m->children_)
      if (c.name == part) next = c.module;
    SINTER_CHECK(next != nullptr, "{} has no submodule \"{}\" (looking up \"{}\")", m->name(), part, path);
    m = next;
  }
  return *m;
}

namespace {
Tensor find_slot(Module& root, const std::string& path, bool buffer) {
  size_t dot = path.rfind('.');
  Module& owner = dot == std::string::npos ? root : root.get_submodule(path.substr(0, dot));
  std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
  for (const auto& slot : buffer ? ModuleAccess::buffers(owner) : ModuleAccess::params(owner))
    if (slot.name == leaf) return slot.tensor();
  SINTER_CHECK(false, "{} has no {} \"{}\" (looking up \"{}\")", owner.name(),
               buffer ? "buffer" : "parameter", leaf, path);
  return {};
}
}  // namespace

Tensor Module::get_parameter(const std::string& path) { return find_slot(*this, path, false); }
Tensor Module::get_buffer(const std::string& path) { return find_slot(*this, path, true); }

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [name, child] : named_children()) child->apply(fn);
  fn(*this);
  return *this;
}

void Module::zero_grad(bool set_to_none) { autograd::zero_grad(parameters(), set_to_none); }

Module& Module::train(bool on) {
  for (Module* m : modules()) m->training_ = on;
  return *this;
}

// ---- conversion ----
void Module::convert(std::optional<Device> device, std::optional<DType> dtype) {
  NoGradGuard no_grad;  // the conversion is no computation to differentiate
  std::set<const TensorImpl*> done;
  for (Module* m : modules())
    for (auto* slots : {&m->params_, &m->buffers_})
      for (Slot& s : *slots) {
        Tensor& t = s.tensor();
        if (!t.defined() || !done.insert(t.impl()).second) continue;
        DType to_dtype = dtype && t.is_floating_point() ? *dtype : t.dtype();
        Device to_device = device ? *device : t.device();
        if (to_dtype == t.dtype() && to_device == t.device()) continue;
        // Swap the converted data into the same TensorImpl, so every handle (the layer's member, the user's
        // copies) sees it, as PyTorch's `param.data = param.to(...)`.
        Tensor converted = t.to(to_device, to_dtype);
        t.impl()->storage = converted.impl()->storage;
        t.impl()->meta = converted.impl()->meta;
      }
}

Module& Module::to(Device device) {
  convert(device, std::nullopt);
  return *this;
}
Module& Module::to(DType dtype) {
  SINTER_CHECK(is_floating(dtype), "nn.Module.to only accepts floating point dtypes, but got {}",
               dtype_name(dtype));
  convert(std::nullopt, dtype);
  return *this;
}
Module& Module::to(Device device, DType dtype) {
  SINTER_CHECK(is_floating(dtype), "nn.Module.to only accepts floating point dtypes, but got {}",
               dtype_name(dtype));
  convert(device, dtype);
  return *this;
}

// ---- weights ----
StateDict Module::state_dict(const std::string& prefix) const {
  StateDict out;
  collect_state(*this, prefix, out);
  return out;
}

LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  StateDict own = state_dict();
  LoadResult result;
  std::vector<std::string> problems;
  for (const auto& [key, target] : own) {
    if (!state.contains(key)) {
      result.missing_keys.push_back(key);
      continue;
    }
    const Tensor& src = state.at(key);
    if (!src.defined()) {
      problems.push_back(fmt::format("value for \"{}\" is an undefined tensor", key));
    } else if (src.sizes().hints() != target.sizes().hints()) {
      problems.push_back(
          fmt::format("size mismatch for {}: copying a param with shape {} from checkpoint, the shape "
                      "in current model is {}.",
                      key, src.sizes().str(), target.sizes().str()));
    }
  }
  for (const auto& [key, t] : state)
    if (!own.contains(key)) result.unexpected_keys.push_back(key);
  // PyTorch's order: missing keys, unexpected keys, then the size mismatches.
  std::vector<std::string> head;
  if (strict && !result.missing_keys.empty())
    head.push_back("Missing key(s) in state_dict: " + quoted_list(result.missing_keys) + ".");
  if (strict && !result.unexpected_keys.empty())
    head.push_back("Unexpected key(s) in state_dict: " + quoted_list(result.unexpected_keys) + ".");
  problems.insert(problems.begin(), head.begin(), head.end());
  if (!problems.empty()) {
    std::string msg = "Error(s) in loading state_dict for " + name() + ":";
    for (const std::string& p : problems) msg += "\n\t" + p;
    throw Error(msg);
  }
  NoGradGuard no_grad;  // loading writes parameters in place, as PyTorch's load_state_dict under no_grad
  for (const auto& [key, target] : own)
    if (state.contains(key)) Tensor(target).copy_(state.at(key));
  return result;
}

LoadResult Module::load_safetensors(const std::string& path, bool strict) {
  return load_state_dict(nn::load_safetensors(path), strict);
}

// ---- printing ----
std::string Module::name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string full = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  // "sinter::nn::Linear" -> "Linear", "(anonymous namespace)::Block" -> "Block" (outside template arguments).
  size_t angle = full.find('<');
  size_t cut = full.rfind("::", angle == std::string::npos ? std::string::npos : angle);
  return cut == std::string::npos ? full : full.substr(cut + 2);
}

std::string Module::str() const {
  std::vector<std::string> lines;
  std::string extra = extra_repr();
  size_t n_extra = 0;
  if (!extra.empty()) {
    std::stringstream ss(extra);
    for (std::string line; std::getline(ss, line);) lines.push_back(line), ++n_extra;
  }
  for (const Child& c : children_) lines.push_back("(" + c.name + "): " + add_indent(c.module->str()));
  std::string out = name() + "(";
  if (n_extra == 1 && lines.size() == 1) {
    out += lines[0];
  } else if (!lines.empty()) {
    out += "\n";
    for (const std::string& l : lines) out += "  " + l + "\n";
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& module) { return os << module.str(); }

}  // namespace sinter::nn
