// Recording at the dispatch point: an op with an input that requires grad runs eagerly and gets an OpBackward node
// that saves what its derivative row names. Installed into dispatch() when libsinter loads.
#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

#include "autograd/nodes.h"
#include "ops/dispatch.h"
#include "sinter/autograd.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter::autograd {
namespace {

// What one row saves, resolved against its op's schema once.
struct RowPlan {
  const DerivativeRow* row = nullptr;
  std::vector<bool> saves_arg;  // per schema argument
  bool saves_results = false;
};

RowPlan plan_row(OpId op) {
  RowPlan plan;
  plan.row = derivative_row(op);
  const Schema& schema = op_def(op).schema;
  plan.saves_arg.assign(schema.args.size(), false);
  if (!plan.row) return plan;
  std::string_view rest = plan.row->saves;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view name = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty()) continue;
    if (name.starts_with("result")) {
      plan.saves_results = true;
      continue;
    }
    int k = schema.find_arg(name);
    SINTER_INTERNAL_ASSERT(k >= 0, "the derivative row of {} saves '{}', which its schema does not have",
                           schema.full_name(), name);
    plan.saves_arg[k] = true;
  }
  return plan;
}

// Plans of custom ops' rows, made on first use (their rows join at run time); map nodes never move.
const RowPlan& custom_row_plan(OpId op) {
  static std::mutex mutex;
  static std::unordered_map<OpId, RowPlan> plans;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = plans.find(op); it != plans.end()) return it->second;
  return plans.emplace(op, plan_row(op)).first->second;
}

const RowPlan& row_plan(OpId op) {
  if (is_custom_op(op)) return custom_row_plan(op);
  static std::vector<RowPlan> plans;
  static std::once_flag once;
  std::call_once(once, [] {
    plans.reserve(kNumOps);
    for (int i = 0; i < kNumOps; ++i) plans.push_back(plan_row(static_cast<OpId>(i)));
  });
  return plans[static_cast<int>(op)];
}

// Where a tensor's elements sit in its storage.
struct Layout {
  SymIntList sizes, strides;
  int64_t offset = 0;
  explicit Layout(const Tensor& t) : sizes(t.sizes()), strides(t.strides()), offset(t.storage_offset().guard_int()) {}
};

// A zero buffer as long as the storage both layouts reach.
Tensor storage_buffer(const Layout& a, const Layout& b, const Tensor& like) {
  const int64_t n = std::max(storage_extent(a.sizes, a.strides, a.offset), storage_extent(b.sizes, b.strides, b.offset));
  return zeros({n}, TensorOptions(like.dtype(), like.device()));
}

Tensor write_at(const Tensor& buffer, const Tensor& values, const Layout& at) {
  return dispatch1(OpId::as_strided_scatter, {buffer, values, at.sizes, at.strides, Value(SymInt(at.offset))},
                   Loc::current());
}

Tensor read_at(const Tensor& buffer, const Layout& at) {
  return as_strided(buffer, at.sizes, at.strides, SymInt(at.offset));
}

// The base's history after an in-place op wrote through a view of it (PyTorch's CopySlices): the base's gradient
// outside the view passes through; inside it goes through the op's node, whose other inputs get theirs.
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<OpBackward> op)
      : base_(base), view_(view), op_(std::move(op)) {
    input_metas().push_back({base.sizes(), base.dtype(), base.device()});
    next_edges().push_back(op_->next_edges()[0]);
    for (size_t i = 1; i < op_->next_edges().size(); ++i) next_edges().push_back(op_->next_edges()[i]);
  }
  std::string name() const override { return "CopySlices"; }
  void release() override { op_->release(); }
  std::vector<Tensor> apply(std::vector<Tensor> grads) override {
    Tensor g = grads[0].defined() ? grads[0] : zeros(base_.sizes, TensorOptions(input_metas()[0].dtype,
                                                                                   input_metas()[0].device));
    Tensor buffer = write_at(storage_buffer(base_, view_, g), g, base_);
    std::vector<Tensor> op_grads = op_->apply({read_at(buffer, view_).clone()});
    Tensor inside = op_grads[0].defined() ? op_grads[0] : zeros_like(read_at(buffer, view_));
    std::vector<Tensor> out{read_at(write_at(buffer, inside, view_), base_)};
    for (size_t i = 1; i < op_grads.size(); ++i) out.push_back(op_grads[i]);
    return out;
  }

 private:
  Layout base_, view_;
  std::shared_ptr<OpBackward> op_;
};

// The history of a view written in place: its gradient lands at its place in its base's.
class ViewOfBase final : public Node {
 public:
  ViewOfBase(const Tensor& base, const Tensor& view, Edge base_edge) : base_(base), view_(view) {
    input_metas().push_back({view.sizes(), view.dtype(), view.device()});
    next_edges().push_back(std::move(base_edge));
  }
  std::string name() const override { return "AsStridedBackward0"; }
  std::vector<Tensor> apply(std::vector<Tensor> grads) override {
    return {read_at(write_at(storage_buffer(base_, view_, grads[0]), grads[0], view_), base_)};
  }

 private:
  Layout base_, view_;
};

// An in-place op wrote through `view` of `base`: both get new histories.
void rebase_view(const Tensor& view, const Tensor& base, std::shared_ptr<OpBackward> node) {
  node->next_edges()[0] = gradient_edge(base);
  auto copy = std::make_shared<CopySlices>(base, view, node);
  TensorImpl* b = base.impl();
  b->grad_fn = copy;
  b->output_nr = 0;
  b->requires_grad = true;
  TensorImpl* v = view.impl();
  v->grad_fn = std::make_shared<ViewOfBase>(base, view, Edge{copy, 0});
  v->output_nr = 0;
  v->requires_grad = true;
}

bool differentiable(const Tensor& t) { return t.defined() && t.requires_grad() && is_floating(t.dtype()); }

GradMeta meta_of(const Tensor& t) { return {t.sizes(), t.dtype(), t.device()}; }

// A copy of `t` outside the graph, for an in-place op's row that reads self as it was before the write.
Tensor saved_copy(const Tensor& t) {
  AutoGradMode off(false);
  return t.clone();
}

std::vector<Tensor> run_below(OpId op, const Args& args, const Loc& loc) {
  AutoGradMode off(false);
  return dispatch_below_autograd(op, args, loc);
}

void add_tensor_to_slot(OpBackward& node, OpBackward::ArgSlot& slot, const Tensor& t, bool save, bool copy) {
  if (!t.defined()) {
    if (slot.is_list) {  // an optional list's None element: no edge, but keep the positions
      slot.metas.push_back({});
      slot.saved.emplace_back();
      node.next_edges().push_back({});
      ++slot.edge_count;
    }
    return;
  }
  slot.metas.push_back(meta_of(t));
  if (save) slot.saved.emplace_back(copy ? saved_copy(t) : t, /*is_output=*/false);
  node.next_edges().push_back(differentiable(t) ? gradient_edge(t) : Edge{});
  ++slot.edge_count;
}

std::vector<Tensor> record(OpId op, const Args& args, const Loc& loc) {
  if (!GradMode::is_enabled()) return dispatch_below_autograd(op, args, loc);
  const OpDef& def = op_def(op);
  const Schema& schema = def.schema;
  const bool inplace = schema.is_inplace();
  if (inplace) {
    const Tensor& self = args[0].tensor();
    SINTER_CHECK(!(self.requires_grad() && self.is_leaf()),
                 "a leaf tensor that requires grad ({} {}) is used in an in-place operation; update it under "
                 "NoGradGuard, or work on a clone",
                 dtype_name(self.dtype()), self.sizes().str());
    if (std::shared_ptr<TensorImpl> base = self.impl()->view_base.lock())
      SINTER_CHECK(!(base->requires_grad && !base->grad_fn),
                   "a view of a leaf tensor that requires grad ({} {}) is used in an in-place operation; update it "
                   "under NoGradGuard, or work on a clone",
                   dtype_name(base->meta.dtype), base->meta.sizes.str());
  }
  if (not_differentiable(op)) return run_below(op, args, loc);

  const RowPlan& plan = row_plan(op);
  auto node = std::make_shared<OpBackward>(op, plan.row);
  std::vector<OpBackward::ArgSlot>& slots = node->slots();
  slots.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    OpBackward::ArgSlot& slot = slots[i];
    const SchemaArg& a = schema.args[i];
    const bool save = i < plan.saves_arg.size() && plan.saves_arg[i];
    slot.first_edge = node->next_edges().size();
    if (a.type == ArgType::kTensor) {
      if (!args[i].is_none()) add_tensor_to_slot(*node, slot, args[i].tensor(), save, inplace && i == 0);
    } else if (a.type == ArgType::kTensorList || a.type == ArgType::kOptionalTensorList) {
      slot.is_list = true;
      for (const Tensor& t : args[i].tensor_list()) add_tensor_to_slot(*node, slot, t, save, false);
    } else {
      slot.value = args[i];
    }
  }
  bool any_edge = false;
  for (const Edge& e : node->next_edges()) any_edge = any_edge || e.valid();
  std::vector<Tensor> outs = run_below(op, args, loc);
  if (!any_edge) return outs;

  for (size_t k = 0; k < outs.size(); ++k) {
    Tensor& out = outs[k];
    node->input_metas().push_back(meta_of(out));
    if (!is_floating(out.dtype())) continue;
    // A kernel that hands back an input as its result must not rewrite the input's history.
    if (!inplace)
      for (const Value& v : args)
        if (v.is_tensor() && v.tensor().is_same(out)) out = alias_without_history(out);
    out.impl()->requires_grad = true;
    out.impl()->grad_fn = node;
    out.impl()->output_nr = static_cast<uint32_t>(k);
  }
  if (plan.saves_results)
    for (const Tensor& out : outs) node->saved_results().emplace_back(out, /*is_output=*/true);
  if (inplace && is_floating(outs[0].dtype()))
    if (std::shared_ptr<TensorImpl> base = outs[0].impl()->view_base.lock(); base && is_floating(base->meta.dtype))
      rebase_view(outs[0], Tensor(base), node);
  return outs;
}

[[maybe_unused]] const bool installed = [] {
  set_autograd_fn(&record);
  return true;
}();

}  // namespace
}  // namespace sinter::autograd
