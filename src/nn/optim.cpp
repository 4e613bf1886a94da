// The optimizer base (param groups, per-parameter state, zero_grad, state dicts) and the options' maps.
#include <fmt/format.h>

#include <set>

#include "sinter/autograd.h"
#include "sinter/compile.h"
#include "sinter/ops.h"
#include "sinter/optim.h"
#include "support/check.h"

namespace sinter::optim {

namespace {

// Reads `values` into the named fields; any other name is an Error naming the options type.
void read_fields(const std::map<std::string, double>& values, const std::map<std::string, double*>& doubles,
                 const std::map<std::string, bool*>& bools, const char* type) {
  for (const auto& [name, value] : values) {
    if (auto d = doubles.find(name); d != doubles.end()) {
      *d->second = value;
    } else if (auto b = bools.find(name); b != bools.end()) {
      *b->second = value != 0;
    } else {
      SINTER_CHECK(false, "{}: no hyper-parameter named '{}'", type, name);
    }
  }
}

std::map<std::string, double> adam_map(double lr, const std::tuple<double, double>& betas, double eps,
                                       double weight_decay, bool amsgrad, bool maximize) {
  return {{"lr", lr},
          {"beta1", std::get<0>(betas)},
          {"beta2", std::get<1>(betas)},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"amsgrad", amsgrad ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

// Adam's and AdamW's fields (the same set under the same names).
void read_adam_fields(const std::map<std::string, double>& values, double& lr, std::tuple<double, double>& betas,
                      double& eps, double& weight_decay, bool& amsgrad, bool& maximize, const char* type) {
  read_fields(values,
              {{"lr", &lr},
               {"beta1", &std::get<0>(betas)},
               {"beta2", &std::get<1>(betas)},
               {"eps", &eps},
               {"weight_decay", &weight_decay}},
              {{"amsgrad", &amsgrad}, {"maximize", &maximize}}, type);
}

// "param_groups.3.lr" -> (3, "lr"); "state.12.exp_avg" -> (12, "exp_avg"). nullopt when `key` is not of that
// form.
std::optional<std::pair<size_t, std::string>> split_key(const std::string& key, const std::string& prefix) {
  if (key.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return std::nullopt;
  const std::string number = key.substr(prefix.size(), dot - prefix.size());
  if (number.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::make_pair(static_cast<size_t>(std::stoull(number)), key.substr(dot + 1));
}

}  // namespace

// ---- options ----

std::map<std::string, double> SGDOptions::to_map() const {
  return {{"lr", lr_},
          {"momentum", momentum_},
          {"dampening", dampening_},
          {"weight_decay", weight_decay_},
          {"nesterov", nesterov_ ? 1.0 : 0.0},
          {"maximize", maximize_ ? 1.0 : 0.0}};
}

void SGDOptions::from_map(const std::map<std::string, double>& values) {
  read_fields(
      values,
      {{"lr", &lr_}, {"momentum", &momentum_}, {"dampening", &dampening_}, {"weight_decay", &weight_decay_}},
      {{"nesterov", &nesterov_}, {"maximize", &maximize_}}, "SGDOptions");
}

std::map<std::string, double> AdamOptions::to_map() const {
  return adam_map(lr_, betas_, eps_, weight_decay_, amsgrad_, maximize_);
}

void AdamOptions::from_map(const std::map<std::string, double>& values) {
  read_adam_fields(values, lr_, betas_, eps_, weight_decay_, amsgrad_, maximize_, "AdamOptions");
}

std::map<std::string, double> AdamWOptions::to_map() const {
  return adam_map(lr_, betas_, eps_, weight_decay_, amsgrad_, maximize_);
}

void AdamWOptions::from_map(const std::map<std::string, double>& values) {
  read_adam_fields(values, lr_, betas_, eps_, weight_decay_, amsgrad_, maximize_, "AdamWOptions");
}

// ---- param groups ----

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_),
      options_(other.options_ ? other.options_->clone() : nullptr),
      initial_lr_(other.initial_lr_) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
    initial_lr_ = other.initial_lr_;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  SINTER_CHECK(options_ != nullptr, "param group has no options (add it to an optimizer first)");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  SINTER_CHECK(options_ != nullptr, "param group has no options (add it to an optimizer first)");
  return *options_;
}

// ---- the optimizer ----

Optimizer::Optimizer(std::string name, std::unique_ptr<OptimizerOptions> defaults)
    : name_(std::move(name)), defaults_(std::move(defaults)) {}

void Optimizer::init(const std::vector<OptimizerParamGroup>& groups) {
  check_options(*defaults_);
  size_t count = 0;
  for (const OptimizerParamGroup& group : groups) count += group.params().size();
  SINTER_CHECK(count > 0, "{}: optimizer got an empty parameter list", name_);
  for (const OptimizerParamGroup& group : groups) add_param_group(group);
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  OptimizerParamGroup added(group.params(),
                            group.has_options() ? group.options().clone() : defaults_->clone());
  added.set_initial_lr(group.initial_lr());
  check_options(added.options());
  std::set<const TensorImpl*> seen;
  for (const OptimizerParamGroup& g : param_groups_)
    for (const Tensor& p : g.params()) seen.insert(p.impl());
  for (size_t i = 0; i < added.params().size(); ++i) {
    const Tensor& p = added.params()[i];
    SINTER_CHECK(p.defined(), "{}: parameter {} of param group {} is an undefined tensor", name_, i,
                 param_groups_.size());
    SINTER_CHECK(p.is_leaf(), "{}: can't optimize a non-leaf Tensor (parameter {} of param group {})", name_,
                 i, param_groups_.size());
    SINTER_CHECK(
        seen.insert(p.impl()).second,
        "{}: some parameters appear in more than one parameter group (parameter {} of param group {})", name_,
        i, param_groups_.size());
  }
  param_groups_.push_back(std::move(added));
}

Tensor Optimizer::step(const LossClosure& closure) {
  Tensor loss;
  if (closure) {
    AutoGradMode enable_grad(true);
    loss = closure();
  }
  NoGradGuard no_grad;
  if (is_compiling()) {
    // A compiled step keeps what it read of the groups: their parameters and hyper-parameters other than lr (the
    // lr is a graph input, lr_tensor).
    std::vector<std::pair<std::weak_ptr<const OptimizerOptions>, std::map<std::string, double>>> seen;
    std::vector<size_t> sizes;
    for (const OptimizerParamGroup& g : param_groups_) {
      std::map<std::string, double> m = g.options().to_map();
      m.erase("lr");
      seen.emplace_back(g.options_ref(), std::move(m));
      sizes.push_back(g.params().size());
    }
    guard_host_state(
        [seen, sizes, alive = alive(), self = this] {
          if (alive.expired() || self->param_groups_.size() != sizes.size()) return false;
          for (size_t g = 0; g < sizes.size(); ++g) {
            std::shared_ptr<const OptimizerOptions> o = seen[g].first.lock();
            if (!o || o.get() != &self->param_groups_[g].options() || self->param_groups_[g].params().size() != sizes[g])
              return false;
            std::map<std::string, double> m = o->to_map();
            m.erase("lr");
            if (m != seen[g].second) return false;
          }
          return true;
        },
        fmt::format("{}'s param groups and hyper-parameters other than lr", name_));
  }
  update();
  return loss;
}

std::map<std::string, Tensor>& Optimizer::state_for(const Tensor& param,
                                                    const std::function<void(std::map<std::string, Tensor>&)>& init) {
  std::map<std::string, Tensor>& s = state_[param.impl()];
  if (s.empty()) {
    CaptureSuspended eager;  // kept across calls of a compiled step: real tensors, not graph values
    NoGradGuard no_grad;
    init(s);
  }
  return s;
}

Tensor Optimizer::lr_tensor(const OptimizerParamGroup& group, Device device) {
  return host_scalar(
      [options = group.options_ref(), name = name_] {
        std::shared_ptr<const OptimizerOptions> o = options.lock();
        SINTER_CHECK(o != nullptr,
                     "a compiled training step reads the learning rate of a {} param group that no longer exists "
                     "(the optimizer or its group was destroyed or replaced); compile the step again",
                     name);
        return o->get_lr();
      },
      TensorOptions(kFloat64, device));
}

void Optimizer::zero_grad(bool set_to_none) { autograd::zero_grad(parameters(), set_to_none); }

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> all;
  for (const OptimizerParamGroup& group : param_groups_)
    all.insert(all.end(), group.params().begin(), group.params().end());
  return all;
}

const std::map<std::string, Tensor>& Optimizer::state(const Tensor& param) const {
  static const std::map<std::string, Tensor> kEmpty;
  auto it = state_.find(param.impl());
  return it == state_.end() ? kEmpty : it->second;
}

std::map<std::string, Tensor> Optimizer::state_dict() const {
  std::map<std::string, Tensor> out;
  int64_t index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const OptimizerParamGroup& group = param_groups_[g];
    std::vector<int64_t> numbers;
    for (const Tensor& p : group.params()) {
      numbers.push_back(index);
      for (const auto& [name, value] : state(p)) out[fmt::format("state.{}.{}", index, name)] = value;
      ++index;
    }
    const std::string prefix = fmt::format("param_groups.{}.", g);
    out[prefix + "params"] = tensor(numbers, TensorOptions(kInt64));
    for (const auto& [name, value] : group.options().to_map())
      out[prefix + name] = scalar_tensor(value, kFloat64);
    if (group.initial_lr()) out[prefix + "initial_lr"] = scalar_tensor(*group.initial_lr(), kFloat64);
  }
  return out;
}

void Optimizer::load_state_dict(const std::map<std::string, Tensor>& state_dict) {
  // Split the map into groups' entries and parameters' entries first, so nothing changes when it is refused.
  std::map<size_t, std::map<std::string, Tensor>> groups;
  std::map<size_t, std::map<std::string, Tensor>> states;
  for (const auto& [key, value] : state_dict) {
    if (auto g = split_key(key, "param_groups.")) {
      groups[g->first][g->second] = value;
    } else if (auto s = split_key(key, "state.")) {
      states[s->first][s->second] = value;
    } else {
      SINTER_CHECK(false, "{}: load_state_dict: unexpected key '{}'", name_, key);
    }
  }
  SINTER_CHECK(groups.size() == param_groups_.size() &&
                   (groups.empty() || groups.rbegin()->first + 1 == groups.size()),
               "{}: load_state_dict: loaded state dict has {} parameter groups, the optimizer has {}", name_,
               groups.size(), param_groups_.size());

  // Saved parameter number -> this optimizer's parameter, group by group in order, as PyTorch's id_map.
  std::map<int64_t, Tensor> params_by_number;
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  std::vector<std::optional<double>> initial_lrs;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    std::map<std::string, Tensor>& entries = groups[g];
    auto numbers = entries.find("params");
    SINTER_CHECK(numbers != entries.end(), "{}: load_state_dict: param_groups.{}.params is missing", name_,
                 g);
    const std::vector<int64_t> saved = numbers->second.to(kInt64).reshape({-1}).to_vector<int64_t>();
    const std::vector<Tensor>& params = param_groups_[g].params();
    SINTER_CHECK(
        saved.size() == params.size(),
        "{}: load_state_dict: param group {} of the state dict has {} parameters, the optimizer's has {}",
        name_, g, saved.size(), params.size());
    for (size_t i = 0; i < saved.size(); ++i) params_by_number[saved[i]] = params[i];
    entries.erase(numbers);

    std::map<std::string, double> values;
    std::optional<double> initial_lr;
    for (const auto& [name, value] : entries) {
      SINTER_CHECK(value.numel() == 1, "{}: load_state_dict: param_groups.{}.{} must have one element", name_,
                   g, name);
      const double v = value.to(kFloat64).item<double>();
      if (name == "initial_lr")
        initial_lr = v;
      else
        values[name] = v;
    }
    options.push_back(param_groups_[g].options().clone());
    options.back()->from_map(values);
    check_options(*options.back());
    initial_lrs.push_back(initial_lr);
  }

  std::map<const TensorImpl*, std::map<std::string, Tensor>> new_state;
  for (const auto& [number, entries] : states) {
    auto p = params_by_number.find(static_cast<int64_t>(number));
    SINTER_CHECK(p != params_by_number.end(), "{}: load_state_dict: state.{} names no parameter of any group",
                 name_, number);
    const Tensor& param = p->second;
    for (const auto& [name, value] : entries) {
      if (name == "step") {
        SINTER_CHECK(value.numel() == 1, "{}: load_state_dict: state.{}.step must have one element", name_,
                     number);
        new_state[param.impl()][name] = value.to(param.device(), kFloat32, false, true).reshape({});
        continue;
      }
      SINTER_CHECK(value.sizes() == param.sizes(),
                   "{}: load_state_dict: state.{}.{} has sizes {} but its parameter has sizes {}", name_,
                   number, name, value.sizes().str(), param.sizes().str());
      const DType dtype = value.is_floating_point() ? param.dtype() : value.dtype();
      new_state[param.impl()][name] = value.to(param.device(), dtype, false, true);
    }
  }

  for (size_t g = 0; g < param_groups_.size(); ++g) {
    param_groups_[g].set_options(std::move(options[g]));
    param_groups_[g].set_initial_lr(initial_lrs[g]);
  }
  state_ = std::move(new_state);
}

}  // namespace sinter::optim
