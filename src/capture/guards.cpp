// Guards (see guards.h): building them from a capture, the hot-path check, and the readable forms used by the
// recompile log, the guards log and explain().
#include "capture/guards.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>

#include "graph/graph_util.h"
#include "ops/autocast.h"
#include "sinter/autograd.h"
#include "support/check.h"

namespace sinter::capture {

namespace {

bool is_aligned(const Tensor& t) {
  if (!t.has_storage()) return true;
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

// The dims from outermost to innermost when the strides are exactly the dense strides of that order; none for
// a layout with gaps, overlaps or an empty tensor.
std::optional<std::vector<int8_t>> dense_order(const Tensor& t) {
  const TensorMeta& m = t.meta();
  const int rank = static_cast<int>(m.sizes.size());
  std::vector<int8_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int8_t a, int8_t b) { return m.strides[a].hint() > m.strides[b].hint(); });
  int64_t expected = 1;
  for (int i = rank - 1; i >= 0; --i) {
    int d = order[i];
    if (m.sizes[d].hint() == 0 || m.strides[d].hint() != expected) return std::nullopt;
    expected *= m.sizes[d].hint();
  }
  return order;
}

bool dense_matches(const std::vector<int8_t>& order, const TensorMeta& m) {
  int64_t expected = 1;
  for (int i = static_cast<int>(order.size()) - 1; i >= 0; --i) {
    int d = order[i];
    if (m.strides[d].hint() != expected) return false;
    expected *= m.sizes[d].hint();
  }
  return true;
}

std::string layout_name(const std::vector<int8_t>& order) {
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity = identity && order[i] == static_cast<int8_t>(i);
  if (identity) return "contiguous";
  if (order == std::vector<int8_t>{0, 2, 3, 1}) return "channels-last";
  std::vector<std::string> dims;
  for (int8_t d : order) dims.push_back(std::to_string(d));
  return fmt::format("dense with dims ordered ({})", graph_detail::join(dims, ", "));
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::vector<std::string> parts;
  for (int64_t x : v) parts.push_back(std::to_string(x));
  return fmt::format("[{}]", graph_detail::join(parts, ", "));
}

std::string sizes_str(const TensorGuard& g) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < g.sizes.size(); ++d)
    parts.push_back(g.symbols[d] >= 0 ? fmt::format("s{}", g.symbols[d]) : std::to_string(g.sizes[d]));
  return fmt::format("[{}]", graph_detail::join(parts, ", "));
}

const char* kind_name(size_t index) {
  static const char* kNames[] = {"a Tensor", "a list of Tensors", "an integer", "a double", "a bool"};
  return index < 5 ? kNames[index] : "?";
}

double double_of(int64_t bits) { return std::bit_cast<double>(bits); }

}  // namespace

void flatten_tensors(const std::vector<CallArg>& args, std::vector<Tensor>& out) {
  for (const CallArg& a : args) {
    if (const Tensor* t = std::get_if<Tensor>(&a))
      out.push_back(*t);
    else if (const auto* list = std::get_if<std::vector<Tensor>>(&a))
      out.insert(out.end(), list->begin(), list->end());
  }
}

void static_guard(const Tensor& real, TensorGuard& g) {
  g.defined = real.defined();
  if (!g.defined) return;
  const TensorMeta& m = real.meta();
  g.dtype = m.dtype;
  g.device = m.device;
  g.requires_grad = real.requires_grad();
  g.aligned = is_aligned(real);
  g.layout = Layout::kExact;
  g.sizes = m.sizes.hints();
  g.symbols.assign(g.sizes.size(), -1);
  g.strides = m.strides.hints();
}

TensorMeta input_meta(const Tensor& real, const std::vector<std::optional<DynamicRange>>& dynamic,
                      sym::ShapeEnv* env, TensorGuard& g) {
  static_guard(real, g);
  if (!g.defined) return {};
  TensorMeta meta = real.meta();
  bool any_symbolic = false;
  for (size_t d = 0; d < meta.sizes.size(); ++d) {
    if (!env || d >= dynamic.size() || !dynamic[d]) continue;
    SymInt s = env->create_symbol(meta.sizes[d].hint(), dynamic[d]->min, dynamic[d]->max,
                                  fmt::format("{}.size({})", g.name, d));
    if (!s.is_symbolic()) continue;  // 0 and 1 stay concrete
    meta.sizes[d] = s;
    g.symbols[d] = static_cast<int32_t>(s.expr()->symbol_id());
    any_symbolic = true;
  }
  if (!any_symbolic) return meta;
  // A symbolic dim's stride is an expression of the sizes when the layout is dense; a layout with gaps keeps
  // its exact strides (and the guard checks them exactly).
  if (auto order = dense_order(real)) {
    g.layout = Layout::kDense;
    g.order = *order;
    SymInt running = 1;
    for (int i = static_cast<int>(order->size()) - 1; i >= 0; --i) {
      int d = (*order)[i];
      meta.strides[d] = running;
      running = running * meta.sizes[d];
    }
  }
  return meta;
}

void set_alias_pattern(GuardSet& guards, const std::vector<Tensor>& real) {
  for (size_t i = 0; i < real.size() && i < guards.tensors.size(); ++i) {
    guards.tensors[i].alias_of = -1;
    if (!real[i].has_storage()) continue;
    for (size_t j = 0; j < i; ++j) {
      if (real[j].has_storage() && real[j].storage() == real[i].storage()) {
        guards.tensors[i].alias_of = static_cast<int>(j);
        break;
      }
    }
  }
}

namespace {

// "off", or "cpu bfloat16, cuda float16": an autocast_state_key() for messages.
std::string autocast_text(uint32_t key) {
  std::vector<std::string> parts;
  for (int d = 0; d < 2; ++d) {
    const uint32_t byte = (key >> (8 * d)) & 0xff;
    if (byte & 1) parts.push_back(fmt::format("{} {}", d ? "cuda" : "cpu", dtype_name(static_cast<DType>(byte >> 1))));
  }
  return parts.empty() ? "off" : graph_detail::join(parts, ", ");
}

// The tensor checks shared by the hot path (messages == nullptr) and diagnose().
bool check_tensor(const TensorGuard& g, const Tensor& t, int64_t* values,
                  std::vector<GuardFailure>* failures) {
  auto fail = [&](std::string text, int dim = -1) {
    if (failures) failures->push_back({std::move(text), g.arg, g.element, dim, false});
    return false;
  };
  if (!t.defined() || !g.defined) {
    if (t.defined() == g.defined) return true;
    return fail(fmt::format("{} was {}, now {}", g.name, g.defined ? "a tensor" : "undefined",
                            t.defined() ? "a tensor" : "undefined"));
  }
  const TensorMeta& m = t.impl()->meta;
  bool ok = true;
  if (m.dtype != g.dtype)
    ok = fail(fmt::format("{}.dtype was {}, now {}", g.name, dtype_name(g.dtype), dtype_name(m.dtype)));
  if (m.device != g.device)
    ok = fail(fmt::format("{}.device was {}, now {}", g.name, g.device.str(), m.device.str()));
  if (t.requires_grad() != g.requires_grad)
    ok = fail(fmt::format("{}.requires_grad was {}, now {}", g.name, g.requires_grad, t.requires_grad()));
  if (m.sizes.size() != g.sizes.size())
    return fail(fmt::format("{}.dim() was {}, now {}", g.name, g.sizes.size(), m.sizes.size()));
  if (!ok && !failures) return false;
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    int64_t size = m.sizes[d].hint();
    if (g.symbols[d] >= 0) {
      if (values) values[g.symbols[d]] = size;
    } else if (size != g.sizes[d]) {
      ok = fail(fmt::format("{}.size({}) was {}, now {}", g.name, d, g.sizes[d], size), static_cast<int>(d));
      if (!failures) return false;
    }
  }
  if (!ok) return false;  // strides only make sense to compare at equal sizes
  if (g.layout == Layout::kExact) {
    for (size_t d = 0; d < g.strides.size(); ++d) {
      if (m.strides[d].hint() != g.strides[d])
        return fail(fmt::format("{}.stride() was {}, now {}", g.name, ints_str(g.strides),
                                ints_str(m.strides.hints())));
    }
  } else if (!dense_matches(g.order, m)) {
    return fail(fmt::format("{} was {}, now has strides {} for sizes {}", g.name, layout_name(g.order),
                            ints_str(m.strides.hints()), ints_str(m.sizes.hints())));
  }
  if (g.aligned && !is_aligned(t))
    return fail(fmt::format("{}'s data was 16-byte aligned, now it is not", g.name));
  return true;
}

// Storage sharing among the guarded tensors must follow the captured pattern. Lifted tensors are the entry's
// own (held, identity-guarded), so sharing among them is taken as captured: the check costs O(args *
// tensors), not O(tensors^2), for a module with many parameters.
bool check_aliasing(const GuardSet& gs, const std::vector<Tensor>& flat,
                    std::vector<GuardFailure>* failures) {
  const size_t n = gs.tensors.size(), num_args = static_cast<size_t>(gs.num_arg_tensors);
  auto at = [&](size_t i) -> const Tensor& { return i < num_args ? flat[i] : gs.lifted[i - num_args]; };
  for (size_t i = 1; i < n; ++i) {
    const Tensor& t = at(i);
    const int expected = gs.tensors[i].alias_of;
    int first = -1;
    if (t.has_storage()) {
      const Storage* s = t.storage().get();
      for (size_t j = 0; j < i && j < num_args; ++j) {
        const Tensor& u = flat[j];
        if (u.has_storage() && u.storage().get() == s) {
          first = static_cast<int>(j);
          break;
        }
      }
    }
    if (first < 0 && i >= num_args && expected >= static_cast<int>(num_args)) first = expected;
    if (first == expected) continue;
    if (!failures) return false;
    const TensorGuard& g = gs.tensors[i];
    std::string was = g.alias_of < 0 ? "shared storage with no earlier input"
                                     : "shared storage with " + gs.tensors[g.alias_of].name;
    std::string now = first < 0 ? "shares none" : "shares storage with " + gs.tensors[first].name;
    failures->push_back({fmt::format("{} {}, now {}", g.name, was, now), g.arg, g.element, -1, false});
    return false;
  }
  return true;
}

}  // namespace

bool GuardSet::check(const std::vector<CallArg>& call_args, const std::vector<Tensor>& flat,
                     int64_t* values) const {
  if (call_args.size() != args.size() || flat.size() != static_cast<size_t>(num_arg_tensors)) return false;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgGuard& g = args[i];
    const CallArg& a = call_args[i];
    switch (g.kind) {
      case ArgGuard::kTensor:
        if (a.index() != 0) return false;
        break;
      case ArgGuard::kTensorList:
        if (a.index() != 1 || std::get<1>(a).size() != static_cast<size_t>(g.count)) return false;
        break;
      case ArgGuard::kInt:
        if (a.index() != 2 || std::get<2>(a).hint() != g.value) return false;
        break;
      case ArgGuard::kSymInt:
        if (a.index() != 2) return false;
        values[g.value] = std::get<2>(a).hint();
        break;
      case ArgGuard::kDouble:
        if (a.index() != 3 || std::bit_cast<int64_t>(std::get<3>(a)) != g.value) return false;
        break;
      case ArgGuard::kBool:
        if (a.index() != 4 || std::get<4>(a) != (g.value != 0)) return false;
        break;
    }
  }
  for (int i = 0; i < num_arg_tensors; ++i)
    if (!check_tensor(tensors[i], flat[i], values, nullptr)) return false;
  for (size_t j = 0; j < lifted.size(); ++j)
    if (!check_tensor(tensors[num_arg_tensors + j], lifted[j], values, nullptr)) return false;
  if (!check_aliasing(*this, flat, nullptr)) return false;
  for (const auto& [module, training_flag] : training)
    if (module->is_training() != training_flag) return false;
  if (grad_mode >= 0 && GradMode::is_enabled() != (grad_mode == 1)) return false;
  if (autocast_state_key() != autocast) return false;
  for (const GradGuard& g : grads) {
    const std::shared_ptr<TensorImpl>& slot = lifted[g.owner].impl()->grad;
    if (static_cast<bool>(slot) != g.defined) return false;
    if (slot && !check_tensor(g.tensor, Tensor(slot), values, nullptr)) return false;
  }
  for (const auto& [holds, what] : host)
    if (!holds()) return false;
  if (env && num_symbols > 0) return env->evaluate_guards(std::span<const int64_t>(values, num_symbols)).ok;
  return true;
}

std::vector<GuardFailure> GuardSet::diagnose(const std::vector<CallArg>& call_args,
                                             const std::vector<Tensor>& flat) const {
  std::vector<GuardFailure> out;
  if (call_args.size() != args.size()) {
    out.push_back({fmt::format("the function took {} arguments, now {}", args.size(), call_args.size())});
    return out;
  }
  std::vector<int64_t> values(num_symbols, 0);
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgGuard& g = args[i];
    const CallArg& a = call_args[i];
    int arg = static_cast<int>(i);
    size_t want = g.kind == ArgGuard::kTensor                                 ? 0
                  : g.kind == ArgGuard::kTensorList                           ? 1
                  : (g.kind == ArgGuard::kInt || g.kind == ArgGuard::kSymInt) ? 2
                  : g.kind == ArgGuard::kDouble                               ? 3
                                                                              : 4;
    if (a.index() != want) {
      out.push_back({fmt::format("arg{} was {}, now {}", i, kind_name(want), kind_name(a.index())), arg});
      return out;
    }
    if (g.kind == ArgGuard::kTensorList && std::get<1>(a).size() != static_cast<size_t>(g.count)) {
      out.push_back({fmt::format("len(arg{}) was {}, now {}", i, g.count, std::get<1>(a).size()), arg});
      return out;
    }
    if (g.kind == ArgGuard::kInt && std::get<2>(a).hint() != g.value)
      out.push_back(
          {fmt::format("arg{} (int) was {}, now {}", i, g.value, std::get<2>(a).hint()), arg, -1, -1, true});
    if (g.kind == ArgGuard::kSymInt) values[g.value] = std::get<2>(a).hint();
    if (g.kind == ArgGuard::kDouble && std::bit_cast<int64_t>(std::get<3>(a)) != g.value)
      out.push_back(
          {fmt::format("arg{} (double) was {}, now {}", i, double_of(g.value), std::get<3>(a)), arg});
    if (g.kind == ArgGuard::kBool && std::get<4>(a) != (g.value != 0))
      out.push_back({fmt::format("arg{} (bool) was {}, now {}", i, g.value != 0, std::get<4>(a)), arg});
  }
  bool tensors_ok = true;
  for (int i = 0; i < num_arg_tensors && i < static_cast<int>(flat.size()); ++i)
    tensors_ok &= check_tensor(tensors[i], flat[i], values.data(), &out);
  for (size_t j = 0; j < lifted.size(); ++j)
    tensors_ok &= check_tensor(tensors[num_arg_tensors + j], lifted[j], values.data(), &out);
  check_aliasing(*this, flat, &out);
  for (const auto& [module, flag] : training)
    if (module->is_training() != flag)
      out.push_back({fmt::format("{} module's training flag was {}, now {}", module->name(), flag, !flag)});
  if (grad_mode >= 0 && GradMode::is_enabled() != (grad_mode == 1))
    out.push_back({fmt::format("grad mode was {}, now {}", grad_mode == 1 ? "on" : "off (NoGradGuard)",
                               GradMode::is_enabled() ? "on" : "off (NoGradGuard)")});
  if (autocast_state_key() != autocast)
    out.push_back({fmt::format("the autocast state changed (was {}, now {})", autocast_text(autocast),
                               autocast_text(autocast_state_key()))});
  for (const GradGuard& g : grads) {
    const std::shared_ptr<TensorImpl>& slot = lifted[g.owner].impl()->grad;
    if (static_cast<bool>(slot) != g.defined)
      out.push_back({fmt::format("{} was {}, now {}", g.tensor.name, g.defined ? "a tensor" : "undefined",
                                 slot ? "a tensor" : "undefined")});
    else if (slot)
      check_tensor(g.tensor, Tensor(slot), values.data(), &out);
  }
  for (const auto& [holds, what] : host)
    if (!holds()) out.push_back({fmt::format("host state changed: {}", what)});
  if (tensors_ok && out.empty() && env && num_symbols > 0) {
    sym::GuardCheck c = env->evaluate_guards(values);
    if (!c.ok) out.push_back({c.message});
  }
  return out;
}

std::vector<std::string> GuardSet::describe() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgGuard& g = args[i];
    switch (g.kind) {
      case ArgGuard::kTensor:
        break;
      case ArgGuard::kTensorList:
        out.push_back(fmt::format("len(arg{}) == {}", i, g.count));
        break;
      case ArgGuard::kInt:
        out.push_back(fmt::format("arg{} == {} (int)", i, g.value));
        break;
      case ArgGuard::kSymInt:
        out.push_back(fmt::format("arg{} is s{} (int)", i, g.value));
        break;
      case ArgGuard::kDouble:
        out.push_back(fmt::format("arg{} == {} (double)", i, double_of(g.value)));
        break;
      case ArgGuard::kBool:
        out.push_back(fmt::format("arg{} == {} (bool)", i, g.value != 0));
        break;
    }
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorGuard& g = tensors[i];
    if (!g.defined) {
      out.push_back(fmt::format("{} is undefined", g.name));
      continue;
    }
    std::string layout = g.layout == Layout::kDense ? layout_name(g.order) : "strides " + ints_str(g.strides);
    std::string text =
        fmt::format("{}: {} {}{} {}, {}{}{}", g.name, dtype_name(g.dtype), sizes_str(g),
                    g.device.is_cpu() ? "" : " @" + g.device.str(), layout,
                    g.requires_grad ? "requires_grad, " : "", g.aligned ? "16-byte aligned" : "any alignment",
                    i >= static_cast<size_t>(num_arg_tensors) ? ", the same tensor as captured" : "");
    if (g.alias_of >= 0) text += fmt::format(", shares storage with {}", tensors[g.alias_of].name);
    out.push_back(std::move(text));
  }
  if (env && num_symbols > 0) {
    std::string text = env->guards_str();
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (end > start) out.push_back(text.substr(start, end - start));
      start = end + 1;
    }
  }
  if (grad_mode >= 0) out.push_back(fmt::format("grad mode is {}", grad_mode == 1 ? "on" : "off"));
  if (autocast != 0) out.push_back(fmt::format("autocast: {}", autocast_text(autocast)));
  for (const GradGuard& g : grads)
    if (!g.defined) out.push_back(fmt::format("{} is undefined", g.tensor.name));
    else out.push_back(fmt::format("{}: {} {}, strides {}", g.tensor.name, dtype_name(g.tensor.dtype),
                                   ints_str(g.tensor.sizes), ints_str(g.tensor.strides)));
  for (const auto& [holds, what] : host) out.push_back(fmt::format("host state: {}", what));
  if (!training.empty()) {
    std::vector<std::string> flags;
    for (const auto& [module, flag] : training) flags.push_back(fmt::format("{}={}", module->name(), flag));
    out.push_back("training flags: " + graph_detail::join(flags, ", "));
  }
  return out;
}

}  // namespace sinter::capture
