// Backward nodes, saved tensors, grad mode and the autograd methods of Tensor.
#include "autograd/nodes.h"

#include <atomic>

#include "ops/dispatch.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter {
namespace autograd {
namespace {

thread_local bool tls_grad_enabled = true;
std::atomic<uint64_t> next_sequence_nr{0};

std::string describe_saved(const Tensor& t) { return fmt::format("[{} {}]", dtype_name(t.dtype()), t.sizes().str()); }

// "add_.Tensor" -> "AddBackward0", as PyTorch names its nodes.
std::string node_name(OpId op) {
  std::string name = op_def(op).schema.name, out;
  if (size_t ns = name.rfind("::"); ns != std::string::npos) name = name.substr(ns + 2);  // mylib::rms_gate
  bool upper = true;
  for (char ch : name) {
    if (ch == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    upper = false;
  }
  return out + "Backward0";
}

}  // namespace

bool GradMode::is_enabled() { return tls_grad_enabled; }
void GradMode::set_enabled(bool enabled) { tls_grad_enabled = enabled; }

Node::Node() : sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}
Node::~Node() = default;

Tensor alias_without_history(const Tensor& t) {
  if (t.impl()->trace) {
    // A capture's proxy: a view recorded in the graph (a value the graph knows, which, when the capture runs segment
    // by segment at graph breaks, the segment keeps alive and hands real data).
    AutoGradMode off(false);
    return t.view(t.sizes());
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl()->storage;
  impl->meta = t.impl()->meta;
  impl->wrapped_number = t.impl()->wrapped_number;
  return Tensor(std::move(impl));
}

// ---- saved tensors ----

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : defined_(t.defined()), is_output_(is_output) {
  if (!defined_) return;
  version_ = t.version();
  requires_grad_ = t.requires_grad();
  data_ = is_output ? alias_without_history(t) : t;
}

Tensor SavedTensor::unpack(Node& node, uint32_t output_nr) const {
  if (!defined_) return Tensor();
  SINTER_CHECK(data_.defined(),
               "trying to backward through the graph a second time (or to use saved tensors after they were freed): "
               "{}'s saved tensors were freed by an earlier backward; pass retain_graph=true to the first backward",
               node.name());
  SINTER_CHECK(data_.version() == version_,
               "one of the tensors needed for gradient computation has been modified by an in-place operation: {}, "
               "saved by {}, is at version {}; expected version {} instead",
               describe_saved(data_), node.name(), data_.version(), version_);
  // The node as the saved output's grad_fn matters only to a backward that records (create_graph).
  if (!is_output_ || !requires_grad_ || !GradMode::is_enabled()) return data_;
  Tensor out = alias_without_history(data_);
  out.impl()->requires_grad = true;
  out.impl()->grad_fn = node.shared_from_this();
  out.impl()->output_nr = output_nr;
  return out;
}

// ---- OpBackward ----

OpBackward::OpBackward(OpId op, const DerivativeRow* row) : op_(op), row_(row) {}

std::string OpBackward::name() const { return node_name(op_); }

int OpBackward::arg_index(std::string_view name) const {
  int k = op_def(op_).schema.find_arg(name);
  SINTER_INTERNAL_ASSERT(k >= 0, "the derivative of {} names '{}', which its schema does not have",
                         op_def(op_).schema.full_name(), name);
  return k;
}

void OpBackward::release() {
  released_ = true;
  for (ArgSlot& s : slots_)
    for (SavedTensor& t : s.saved) t.reset();
  for (SavedTensor& t : saved_results_) t.reset();
}

std::vector<Tensor> OpBackward::apply(std::vector<Tensor> grads) {
  SINTER_CHECK(row_, "the derivative of {} is not implemented{}", op_def(op_).schema.full_name(),
               is_custom_op(op_) ? " (the custom op was defined without a backward formula)" : "");
  SINTER_CHECK(!released_,
               "trying to backward through the graph a second time (or to use saved tensors after they were freed): "
               "{}'s saved tensors were freed by an earlier backward; pass retain_graph=true to the first backward",
               name());
  BackwardContext c(*this, std::move(grads));
  c.inputs_out_.resize(next_edges().size());
  row_->formula(c);
  // Undo broadcasting and type promotion: each gradient takes its input's sizes and dtype.
  for (const ArgSlot& s : slots_)
    for (size_t k = 0; k < s.edge_count; ++k) {
      Tensor& g = c.inputs_out_[s.first_edge + k];
      if (!g.defined()) continue;
      const GradMeta& m = s.metas[k];
      if (g.sizes() != m.sizes) g = sum_to(g, m.sizes);
      if (g.dtype() != m.dtype) g = g.to(m.dtype);
    }
  return std::move(c.inputs_out_);
}

// ---- the formulas' view of a node ----

Tensor BackwardContext::grad(int i) const {
  if (grad_defined(i)) return grads_[i];
  const GradMeta& m = node_.input_metas().at(i);
  return zeros(m.sizes, TensorOptions(m.dtype, m.device));
}

bool BackwardContext::grad_defined(int i) const {
  return i < static_cast<int>(grads_.size()) && grads_[i].defined();
}

int BackwardContext::num_outputs() const { return static_cast<int>(node_.input_metas().size()); }

OpId BackwardContext::op() const { return node_.op(); }

Tensor BackwardContext::t(std::string_view name) const {
  const OpBackward::ArgSlot& s = node_.slots_[node_.arg_index(name)];
  SINTER_INTERNAL_ASSERT(!s.is_list, "'{}' of {} is a list", name, node_.name());
  if (s.saved.empty()) {
    SINTER_INTERNAL_ASSERT(s.metas.empty(), "the derivative of {} reads '{}', which its row does not save",
                           op_def(node_.op()).schema.full_name(), name);
    return Tensor();
  }
  return s.saved[0].unpack(node_, 0);
}

std::vector<Tensor> BackwardContext::list(std::string_view name) const {
  const OpBackward::ArgSlot& s = node_.slots_[node_.arg_index(name)];
  SINTER_INTERNAL_ASSERT(s.saved.size() == s.metas.size(),
                         "the derivative of {} reads '{}', which its row does not save",
                         op_def(node_.op()).schema.full_name(), name);
  std::vector<Tensor> out;
  for (const SavedTensor& t : s.saved) out.push_back(t.unpack(node_, 0));
  return out;
}

const Value& BackwardContext::arg(std::string_view name) const { return node_.slots_[node_.arg_index(name)].value; }

int64_t BackwardContext::i(std::string_view name) const { return arg(name).to_int(); }

Tensor BackwardContext::result(int i) const {
  SINTER_INTERNAL_ASSERT(i < static_cast<int>(node_.saved_results_.size()),
                         "the derivative of {} reads result {}, which its row does not save",
                         op_def(node_.op()).schema.full_name(), i);
  return node_.saved_results_[i].unpack(node_, static_cast<uint32_t>(i));
}

const GradMeta& BackwardContext::meta(std::string_view name, size_t k) const {
  const OpBackward::ArgSlot& s = node_.slots_[node_.arg_index(name)];
  SINTER_INTERNAL_ASSERT(k < s.metas.size(), "'{}' of {} has no tensor {}", name, node_.name(), k);
  return s.metas[k];
}

size_t BackwardContext::count(std::string_view name) const { return node_.slots_[node_.arg_index(name)].metas.size(); }

bool BackwardContext::needs(std::string_view name, size_t k) const {
  const OpBackward::ArgSlot& s = node_.slots_[node_.arg_index(name)];
  return k < s.edge_count && node_.next_edges()[s.first_edge + k].valid();
}

void BackwardContext::set(std::string_view name, Tensor grad) {
  const OpBackward::ArgSlot& s = node_.slots_[node_.arg_index(name)];
  SINTER_INTERNAL_ASSERT(!s.is_list, "'{}' of {} is a list: use set_list", name, node_.name());
  if (s.edge_count == 1 && node_.next_edges()[s.first_edge].valid()) inputs_out_[s.first_edge] = std::move(grad);
}

void BackwardContext::set_list(std::string_view name, std::vector<Tensor> grads) {
  const OpBackward::ArgSlot& s = node_.slots_[node_.arg_index(name)];
  SINTER_INTERNAL_ASSERT(grads.size() == s.edge_count, "{} gradients for the {} tensors of '{}' of {}", grads.size(),
                         s.edge_count, name, node_.name());
  for (size_t k = 0; k < grads.size(); ++k)
    if (node_.next_edges()[s.first_edge + k].valid()) inputs_out_[s.first_edge + k] = std::move(grads[k]);
}

// ---- leaves ----

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {
  input_metas().push_back({leaf_->meta.sizes, leaf_->meta.dtype, leaf_->meta.device});
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor> grads) {
  if (grads.empty() || !grads[0].defined()) return {};
  // Through the grad field's accessors: under a capture (loss.backward() in a compiled step) the gradient is a
  // graph value, and the capture turns the field into a graph input and output.
  const Tensor leaf(leaf_);
  const Tensor current = read_grad_field(leaf);
  std::shared_ptr<TensorImpl> slot = current.defined() ? current.impl_ptr() : nullptr;
  accumulate_into(slot, grads[0], GradMode::is_enabled());
  if (slot != current.impl_ptr()) write_grad_field(leaf, slot ? Tensor(slot) : Tensor());
  return {};
}

void accumulate_into(std::shared_ptr<TensorImpl>& slot, const Tensor& grad, bool create_graph) {
  if (!slot) {
    // The first gradient is kept; a copy when it may be someone else's tensor (a view, or kept in the graph).
    Tensor g = create_graph ? grad : (grad.is_contiguous() ? alias_without_history(grad) : grad.contiguous());
    if (!create_graph && g.storage().use_count() > 1) g = g.clone();
    slot = g.impl_ptr();
    return;
  }
  Tensor current(slot);
  if (create_graph) {
    slot = add(current, grad).impl_ptr();
  } else {
    NoGradGuard no_grad;
    current.add_(grad);
  }
}

Edge gradient_edge(const Tensor& t) {
  TensorImpl* impl = t.impl();
  if (!impl) return {};
  if (impl->grad_fn) return {impl->grad_fn, impl->output_nr};
  if (!impl->requires_grad) return {};
  std::shared_ptr<Node> acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    impl->grad_accumulator = acc;
  }
  return {acc, 0};
}

int64_t storage_extent(const SymIntList& sizes, const SymIntList& strides, int64_t offset) {
  int64_t last = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d].guard_int() == 0) return offset;
    last += (sizes[d].guard_int() - 1) * strides[d].guard_int();
  }
  return last + 1;
}

Tensor sum_to(const Tensor& grad, const SymIntList& sizes) {
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  SINTER_INTERNAL_ASSERT(lead >= 0, "a gradient of shape {} cannot be summed to shape {}", grad.sizes().str(),
                         sizes.str());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d)
    if (d < lead || (sizes[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  Tensor g = dims.empty() ? grad : sum(grad, DimList(dims), /*keepdim=*/true);
  if (lead > 0 || g.sizes() != sizes) g = g.view(sizes);
  return g;
}

}  // namespace autograd

// ---- Tensor's autograd methods ----

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  return impl_ ? impl_->grad_fn : none;
}

namespace autograd {

void zero_grad(const std::vector<Tensor>& tensors, bool set_to_none) {
  for (const Tensor& p : tensors) {
    if (set_to_none) {  // without reading it first: a compiled step then needs no guard on the old gradient
      p.set_grad(Tensor());
      continue;
    }
    Tensor grad = p.grad();
    if (!grad.defined()) continue;
    if (grad.grad_fn())
      grad.detach_();
    else
      grad.requires_grad_(false);
    AutoGradMode off(false);
    grad.zero_();
  }
}

}  // namespace autograd

void Tensor::set_grad(const Tensor& grad) const {
  SINTER_CHECK(impl_, "set_grad on an undefined tensor");
  if (!grad.defined()) return write_grad_field(*this, Tensor());
  SINTER_CHECK(grad.sizes() == sizes() && grad.dtype() == dtype() && grad.device() == device(),
               "assigned grad has {} {} on {}, but the tensor is {} {} on {}", dtype_name(grad.dtype()),
               grad.sizes().str(), grad.device().str(), dtype_name(dtype()), sizes().str(), device().str());
  write_grad_field(*this, grad);
}

void Tensor::retain_grad() const {
  SINTER_CHECK(requires_grad(), "can't retain_grad on a tensor that has requires_grad=False");
  if (is_leaf() || impl_->retains_grad) return;
  impl_->retains_grad = true;
  impl_->grad_fn->retained().emplace_back(impl_->output_nr, impl_ptr());
}

Tensor Tensor::detach(Loc loc) const {
  SINTER_CHECK(impl_, "detach of an undefined tensor");
  (void)loc;
  // Under capture the graph records the detach as a view (made with grad mode off: it has no history).
  return autograd::alias_without_history(*this);
}

Tensor& Tensor::detach_() {
  SINTER_CHECK(impl_, "detach_ of an undefined tensor");
  impl_->grad_fn.reset();
  impl_->output_nr = 0;
  impl_->requires_grad = false;
  return *this;
}

}  // namespace sinter
