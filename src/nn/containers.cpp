// The keyed and parameter containers: ModuleDict (children named by key), ParameterList (parameters "0", "1",
// ...) and ParameterDict (parameters named by key). The parameter containers register a pointer to each entry,
// so assigning an entry re-registers it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "sinter/nn.h"
#include "support/check.h"

namespace sinter::nn {

namespace {
// "Parameter containing: [torch.float32 of size 2x3]", as PyTorch's ParameterList/ParameterDict print an entry.
std::string parameter_line(const std::string& key, const Tensor& t) {
  if (!t.defined()) return "  (" + key + "): None";
  std::string device = t.is_cpu() ? "" : " (" + t.device().str() + ")";
  return fmt::format("  ({}): Parameter containing: [torch.{} of size {}{}]", key, dtype_name(t.dtype()),
                     fmt::join(t.sizes().hints(), "x"), device);
}
}  // namespace

// ---- ModuleDict ----
ModuleDict::ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules) {
  for (const auto& [key, m] : modules) insert(key, m);
}
ModuleDict::ModuleDict(const NamedModules& modules) { update(modules); }

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> module) {
  SINTER_CHECK(module != nullptr, "{}.insert(\"{}\") got a null module", name(), key);
  Module* raw = module.get();
  register_module(key, std::move(module));
  for (auto& item : items_)
    if (item.first == key) {
      item.second = raw;
      return;
    }
  items_.emplace_back(key, raw);
}
void ModuleDict::insert(const std::string& key, Module& module) {
  register_module(key, module);
  for (auto& item : items_)
    if (item.first == key) {
      item.second = &module;
      return;
    }
  items_.emplace_back(key, &module);
}
void ModuleDict::update(const NamedModules& modules) {
  for (const auto& [key, m] : modules) insert(key, m);
}

std::shared_ptr<Module> ModuleDict::pop(const std::string& key) {
  auto it = std::find_if(items_.begin(), items_.end(), [&](const auto& item) { return item.first == key; });
  SINTER_CHECK(it != items_.end(), "{}.pop: no key \"{}\" (keys: {})", name(), key, fmt::join(keys(), ", "));
  Module* m = it->second;
  std::shared_ptr<Module> owner = child_owner(key);
  items_.erase(it);
  unregister(key);
  return owner ? owner : std::shared_ptr<Module>(std::shared_ptr<Module>(), m);  // borrowed: not owning
}
void ModuleDict::clear() {
  for (const auto& item : items_) unregister(item.first);
  items_.clear();
}

bool ModuleDict::contains(const std::string& key) const {
  for (const auto& item : items_)
    if (item.first == key) return true;
  return false;
}
std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& item : items_) out.push_back(item.first);
  return out;
}
std::vector<Module*> ModuleDict::values() const {
  std::vector<Module*> out;
  for (const auto& item : items_) out.push_back(item.second);
  return out;
}
Module& ModuleDict::operator[](const std::string& key) const {
  for (const auto& item : items_)
    if (item.first == key) return *item.second;
  SINTER_CHECK(false, "{} has no key \"{}\" (its keys: [{}])", name(), key, fmt::join(keys(), ", "));
  throw InternalError("unreachable");
}
void ModuleDict::throw_wrong_type(const std::string& key) const {
  SINTER_CHECK(false, "{} entry \"{}\" is a {}, not the requested layer type", name(), key, (*this)[key].name());
  throw InternalError("unreachable");
}

// ---- ParameterList ----
ParameterList::ParameterList(std::initializer_list<Tensor> params) {
  for (const Tensor& p : params) append(p);
}
ParameterList::ParameterList(const std::vector<Tensor>& params) { extend(params); }

void ParameterList::append(const Tensor& param) {
  entries_.push_back(param);
  register_parameter(std::to_string(entries_.size() - 1), &entries_.back());
}
void ParameterList::extend(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) append(p);
}
const Tensor& ParameterList::operator[](int64_t index) const {
  int64_t n = static_cast<int64_t>(entries_.size());
  SINTER_CHECK(index >= -n && index < n, "index {} is out of range for {} of size {}", index, name(), n);
  return entries_[index < 0 ? index + n : index];
}
Tensor& ParameterList::operator[](int64_t index) {
  return const_cast<Tensor&>(static_cast<const ParameterList&>(*this)[index]);
}
std::string ParameterList::extra_repr() const {
  std::vector<std::string> lines;
  for (size_t i = 0; i < entries_.size(); ++i) lines.push_back(parameter_line(std::to_string(i), entries_[i]));
  return fmt::format("{}", fmt::join(lines, "\n"));
}

// ---- ParameterDict ----
ParameterDict::ParameterDict(std::initializer_list<std::pair<std::string, Tensor>> params) {
  for (const auto& [key, t] : params) insert(key, t);
}
ParameterDict::ParameterDict(const NamedTensors& params) { update(params); }

int64_t ParameterDict::index_of(const std::string& key) const {
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].first == key) return static_cast<int64_t>(i);
  return -1;
}
void ParameterDict::insert(const std::string& key, const Tensor& param) {
  int64_t i = index_of(key);
  if (i >= 0) {
    register_parameter(key, param);  // the entry is registered by pointer: this assigns it
    return;
  }
  // Check the key before storing anything, so a rejected key leaves no entry behind.
  entries_.emplace_back(key, param);
  try {
    register_parameter(key, &entries_.back().second);
  } catch (...) {
    entries_.pop_back();
    throw;
  }
}
Tensor ParameterDict::pop(const std::string& key) {
  int64_t i = index_of(key);
  SINTER_CHECK(i >= 0, "ParameterDict.pop: no key \"{}\" (keys: {})", key, fmt::join(keys(), ", "));
  Tensor t = entries_[i].second;
  for (const Item& e : entries_) unregister(e.first);
  std::deque<Item> rest;  // Item's key is const: the deque is rebuilt rather than erased from
  for (int64_t j = 0; j < static_cast<int64_t>(entries_.size()); ++j)
    if (j != i) rest.emplace_back(entries_[j].first, entries_[j].second);
  entries_.swap(rest);
  reregister();
  return t;
}
void ParameterDict::clear() {
  for (const Item& e : entries_) unregister(e.first);
  entries_.clear();
}
void ParameterDict::reregister() {
  for (Item& e : entries_) register_parameter(e.first, &e.second);
}
void ParameterDict::update(const NamedTensors& params) {
  for (const auto& [key, t] : params) insert(key, t);
}
bool ParameterDict::contains(const std::string& key) const { return index_of(key) >= 0; }
std::vector<std::string> ParameterDict::keys() const {
  std::vector<std::string> out;
  for (const auto& item : entries_) out.push_back(item.first);
  return out;
}
std::vector<Tensor> ParameterDict::values() const {
  std::vector<Tensor> out;
  for (const auto& item : entries_) out.push_back(item.second);
  return out;
}
NamedTensors ParameterDict::items() const {
  NamedTensors out;
  for (const auto& item : entries_) out.emplace_back(item.first, item.second);
  return out;
}
const Tensor& ParameterDict::operator[](const std::string& key) const {
  int64_t i = index_of(key);
  SINTER_CHECK(i >= 0, "{} has no key \"{}\" (its keys: [{}]); insert adds one", name(), key,
               fmt::join(keys(), ", "));
  return entries_[i].second;
}
Tensor& ParameterDict::operator[](const std::string& key) {
  return const_cast<Tensor&>(static_cast<const ParameterDict&>(*this)[key]);
}
std::string ParameterDict::extra_repr() const {
  std::vector<std::string> lines;
  for (const auto& [key, t] : entries_) lines.push_back(parameter_line(key, t));
  return fmt::format("{}", fmt::join(lines, "\n"));
}

}  // namespace sinter::nn
