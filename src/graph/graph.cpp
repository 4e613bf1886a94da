// Graph: building by appending (inputs, constants, op calls, the output node), reading, cloning. Each op's output
// metas come from its shape rule run on the argument proxies, so a graph is correct by construction.
#include "sinter/graph.h"

#include <fmt/format.h>

#include <atomic>
#include <cctype>
#include <optional>

#include "graph/graph_util.h"
#include "ops/dispatch.h"
#include "support/check.h"
#include "symbolic/shape_env.h"

namespace sinter {

using graph_detail::make_proxy;
using graph_detail::trace_of;

namespace {

uint64_t next_serial() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

bool valid_name(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

}  // namespace

std::string_view Node::op_name() const {
  switch (kind) {
    case NodeKind::kInput: return "input";
    case NodeKind::kConstant: return "constant";
    case NodeKind::kOutput: return "output";
    case NodeKind::kOp: return sinter::op_name(op);
  }
  return "?";
}

const Value& Node::arg(std::string_view schema_name) const {
  SINTER_CHECK(kind == NodeKind::kOp, "arg('{}'): node {} is an {}, not an op", schema_name, id, op_name());
  const Schema& schema = op_def(op).schema;
  int i = schema.find_arg(schema_name);
  SINTER_CHECK(i >= 0 && i < static_cast<int>(args.size()), "{} has no argument '{}'", schema.full_name(),
               schema_name);
  return args[i];
}

OpId op_id(std::string_view qualified_name) {
  const OpDef* def = find_op(qualified_name);
  SINTER_CHECK(def, "there is no op named '{}'", qualified_name);
  return def->id;
}

Graph::Graph() : serial_(next_serial()) {}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

Graph Graph::clone() const {
  Graph g;
  g.shape_env_ = shape_env_;
  auto remap = [&](const Tensor& t) -> Tensor {
    const TraceState* tr = trace_of(t);
    if (!tr || tr->graph != serial_ || tr->node >= static_cast<int>(g.nodes_.size())) return t;
    return g.nodes_[tr->node]->outputs.at(tr->output);
  };
  for (const auto& n : nodes_) {
    auto copy = std::make_unique<Node>();
    copy->id = n->id;
    copy->kind = n->kind;
    copy->name = n->name;
    copy->op = n->op;
    copy->constant = n->constant;
    copy->loc = n->loc;
    for (const Value& v : n->args) copy->args.push_back(graph_detail::map_tensors(v, remap));
    for (size_t k = 0; k < n->outputs.size(); ++k) {
      const TensorImpl& from = *n->outputs[k].impl();
      Tensor proxy = make_proxy(from.meta, n->id, static_cast<int>(k), g.serial_);
      // A wrapped number (a host value fed to the graph) promotes like a weak scalar: the copy must too.
      proxy.impl()->wrapped_number = from.wrapped_number;
      proxy.impl()->requires_grad = from.requires_grad;
      copy->outputs.push_back(std::move(proxy));
    }
    g.nodes_.push_back(std::move(copy));
  }
  return g;
}

// ---- Building ----

Node& Graph::insert_node(int pos, std::unique_ptr<Node> node) {
  Node& ref = *node;
  nodes_.insert(nodes_.begin() + pos, std::move(node));
  renumber(pos);
  return ref;
}

void Graph::renumber(int from) {
  for (int i = from; i < num_nodes(); ++i) {
    Node& n = *nodes_[i];
    n.id = i;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      TraceState* tr = n.outputs[k].impl()->trace.get();
      tr->node = i;
      tr->output = static_cast<int>(k);
    }
  }
}

std::string Graph::unique_name(std::string name) const {
  SINTER_CHECK(valid_name(name),
               "graph value name '{}' is not valid: it must start with a letter or '_' and hold only letters, "
               "digits, '_' and '.'",
               name);
  auto taken = [&](const std::string& candidate) {
    for (const auto& n : nodes_)
      if ((n->kind == NodeKind::kInput || n->kind == NodeKind::kConstant) && n->name == candidate) return true;
    return false;
  };
  if (!taken(name)) return name;
  for (int i = 1;; ++i) {
    std::string candidate = fmt::format("{}_{}", name, i);
    if (!taken(candidate)) return candidate;
  }
}

void Graph::check_value(const Tensor& t, std::string_view what) const {
  if (contains(t)) return;
  const TraceState* tr = trace_of(t);
  if (!t.defined()) detail::throw_user_error(fmt::format("{} is an undefined tensor", what));
  if (!tr)
    detail::throw_user_error(fmt::format(
        "{} is a real tensor, not a value of this graph (add it with add_input or add_constant first)", what));
  detail::throw_user_error(fmt::format("{} is a value of another graph (or of a node that was erased)", what));
}

Tensor Graph::add_input(std::string name, TensorMeta meta) {
  if (meta.strides.empty() && !meta.sizes.empty()) meta.strides = graph_detail::dense_strides(meta.sizes);
  SINTER_CHECK(meta.strides.size() == meta.sizes.size(), "input '{}': sizes {} and strides {} differ in rank", name,
               meta.sizes.str(), meta.strides.str());
  int pos = 0;
  while (pos < num_nodes() && nodes_[pos]->kind == NodeKind::kInput) ++pos;
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::kInput;
  node->name = unique_name(std::move(name));
  node->outputs.push_back(make_proxy(meta, pos, 0, serial_));
  return insert_node(pos, std::move(node)).outputs[0];
}

Tensor Graph::add_constant(Tensor value, std::string name) {
  SINTER_CHECK(value.defined() && value.has_storage() && !trace_of(value),
               "add_constant needs a real tensor (with data), not a proxy or an undefined tensor");
  int pos = 0;
  while (pos < num_nodes() && (nodes_[pos]->kind == NodeKind::kInput || nodes_[pos]->kind == NodeKind::kConstant))
    ++pos;
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::kConstant;
  node->name = unique_name(std::move(name));
  node->outputs.push_back(make_proxy(value.meta(), pos, 0, serial_));
  node->constant = std::move(value);
  return insert_node(pos, std::move(node)).outputs[0];
}

std::vector<Tensor> Graph::insert_op(int pos, OpId op, Args args, const Loc& loc) {
  const OpDef& def = op_def(op);
  // Errors outside a dispatch call get the op, its operands and the caller's line here; inside one (capture)
  // the dispatcher's context already names them.
  auto fail = [&](const Error& e) {
    if (current_op_call()) throw;
    std::string where = loc.line() ? fmt::format("\n  called from {}:{}", loc.file_name(), loc.line()) : "";
    throw Error(fmt::format("{}: {}\n  operands: {}{}", def.schema.full_name(), e.what(),
                            describe_operands(def, args), where));
  };
  std::vector<Tensor> metas;
  try {
    normalize_args(def, args);
    for (size_t i = 0; i < args.size(); ++i) {
      graph_detail::for_each_tensor(args[i], [&](const Tensor& t) {
        // The message is only formatted on failure: this runs for every argument of every recorded op.
        if (contains(t) && trace_of(t)->node < pos) return;
        std::string what = fmt::format("argument '{}'", def.schema.args[i].name);
        check_value(t, what);
        SINTER_CHECK(trace_of(t)->node < pos, "{} is defined after the point where the op is inserted", what);
      });
    }
    std::optional<sym::ShapeEnvScope> scope;
    if (shape_env_) scope.emplace(shape_env_.get());
    metas = run_meta(op, args);
  } catch (const Error& e) {
    fail(e);
  }
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::kOp;
  node->op = op;
  node->args = std::move(args);
  node->loc = loc;
  // run_meta made fresh data-less tensors (except an in-place op's, which is its argument): they become the
  // proxies themselves instead of being copied into new ones (recording is on the per-call path of functions
  // with graph breaks).
  node->outputs = std::move(metas);
  for (size_t k = 0; k < node->outputs.size(); ++k) {
    Tensor& out = node->outputs[k];
    if (def.schema.is_inplace() || out.impl()->trace || out.impl_ptr().use_count() != 1)
      out = make_proxy(out.meta(), pos, static_cast<int>(k), serial_);
    else
      out = graph_detail::adopt_as_proxy(std::move(out), pos, static_cast<int>(k), serial_);
  }
  return insert_node(pos, std::move(node)).outputs;
}

std::vector<Tensor> Graph::add_op(OpId op, Args args, Loc loc) {
  int pos = has_output() ? num_nodes() - 1 : num_nodes();
  return insert_op(pos, op, std::move(args), loc);
}

Tensor Graph::add_op1(OpId op, Args args, Loc loc) {
  graph_detail::check_single_output(op, "add_op");
  return add_op(op, std::move(args), loc)[0];
}

void Graph::set_outputs(std::vector<Tensor> values) {
  Args args;
  args.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (!contains(values[i])) check_value(values[i], fmt::format("output {}", i));
    args.emplace_back(std::move(values[i]));
  }
  if (has_output()) {
    nodes_.back()->args = std::move(args);
    return;
  }
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::kOutput;
  node->args = std::move(args);
  insert_node(num_nodes(), std::move(node));
}

// ---- Reading ----

const Node& Graph::node(int id) const {
  SINTER_CHECK(id >= 0 && id < num_nodes(), "node id {} is out of range for a graph of {} nodes", id, num_nodes());
  return *nodes_[id];
}

std::vector<const Node*> Graph::input_nodes() const {
  std::vector<const Node*> out;
  for (const auto& n : nodes_)
    if (n->kind == NodeKind::kInput) out.push_back(n.get());
  return out;
}

std::vector<Tensor> Graph::inputs() const {
  std::vector<Tensor> out;
  for (const auto& n : nodes_)
    if (n->kind == NodeKind::kInput) out.push_back(n->outputs[0]);
  return out;
}

int Graph::num_inputs() const { return static_cast<int>(input_nodes().size()); }

int Graph::num_ops() const {
  int count = 0;
  for (const auto& n : nodes_) count += n->kind == NodeKind::kOp;
  return count;
}

bool Graph::has_output() const { return !nodes_.empty() && nodes_.back()->kind == NodeKind::kOutput; }

const Node& Graph::output_node() const {
  SINTER_CHECK(has_output(), "the graph has no output node (set_outputs was not called)");
  return *nodes_.back();
}

std::vector<Tensor> Graph::outputs() const {
  std::vector<Tensor> out;
  for (const Value& v : output_node().args) out.push_back(v.tensor());
  return out;
}

bool Graph::contains(const Tensor& value) const {
  const TraceState* tr = trace_of(value);
  if (!tr || tr->graph != serial_ || tr->node < 0 || tr->node >= num_nodes()) return false;
  const Node& n = *nodes_[tr->node];
  return tr->output >= 0 && tr->output < static_cast<int>(n.outputs.size()) && n.outputs[tr->output].is_same(value);
}

const Node& Graph::producer(const Tensor& value) const {
  check_value(value, "the tensor");
  return *nodes_[trace_of(value)->node];
}

std::vector<const Node*> Graph::users(const Tensor& value) const {
  std::vector<const Node*> out;
  for (const auto& n : nodes_) {
    bool uses = false;
    graph_detail::for_each_tensor(n->args, [&](const Tensor& t) { uses = uses || t.is_same(value); });
    if (uses) out.push_back(n.get());
  }
  return out;
}

std::string Graph::str() const { return print_graph(*this); }

std::ostream& operator<<(std::ostream& os, const Graph& g) { return os << print_graph(g); }

namespace graph_detail {
void check_single_output(OpId op, std::string_view alternative) {
  const Schema& schema = op_def(op).schema;
  SINTER_CHECK(schema.returns.size() == 1 && !schema.returns_list(), "{} returns {} values; use {}",
               schema.full_name(), schema.returns_list() ? "a list of" : std::to_string(schema.returns.size()),
               alternative);
}
}  // namespace graph_detail

bool has_side_effects(const Node& node) {
  if (node.kind != NodeKind::kOp) return false;
  const OpDef& def = op_def(node.op);
  if (def.schema.is_inplace() || (def.flags & kRandom)) return true;
  for (const SchemaArg& a : def.schema.args)
    if (a.is_write) return true;
  return false;
}

}  // namespace sinter
