// The graph IR: what capture records, what passes rewrite and what backends (custom ones included) receive.
// An FX-like list of nodes in topological order: inputs, constants, op calls and one output node. Values are
// "proxy" tensors (data-less, carrying sizes/strides/dtype/device) whose TraceState names the node that makes them.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "sinter/tensor.h"
#include "sinter/value.h"

namespace sinter {

enum class OpId : uint16_t;         // a row of the op table (src/ops/op_list.h)
std::string_view op_name(OpId op);  // its qualified name, "add.Tensor"
// The op of a qualified name ("gelu", "add.Tensor"); throws Error when there is none.
OpId op_id(std::string_view qualified_name);
namespace sym {
class ShapeEnv;  // the symbols of one capture (src/symbolic/shape_env.h)
}

// Which graph value a proxy tensor stands for: output `output` of node `node` of the graph whose serial is `graph`.
// Shared by every copy of the proxy, so renumbering a graph updates what all its users see.
struct TraceState {
  int node = -1;
  int output = 0;
  uint64_t graph = 0;
};

enum class NodeKind : uint8_t {
  kInput,     // a graph input (placeholder): `name` and one output whose meta is the input's
  kConstant,  // a real tensor held by the graph (a frozen weight): `name`, `constant` and one output
  kOp,        // a call of `op` with `args`, making `outputs`
  kOutput,    // the single, last node; `args` are the returned values
};

struct Node {
  int id = -1;  // the position in the graph's node list
  NodeKind kind = NodeKind::kOp;
  std::string name;  // kInput, kConstant: the value's name (unique in the graph); empty for ops
  OpId op{};         // kOp
  // kOp: one Value per schema argument, in schema order, defaults filled in (as the dispatcher passes them);
  // graph values appear as proxies. kOutput: one tensor Value per returned value.
  Args args;
  std::vector<Tensor> outputs;  // proxies; none for kOutput
  Tensor constant;              // kConstant: the real tensor
  Loc loc;                      // kOp: the user's source line that called the op (line 0 when unknown)

  bool is_op() const { return kind == NodeKind::kOp; }
  bool is_op(OpId o) const { return kind == NodeKind::kOp && op == o; }
  const Tensor& output(int i = 0) const { return outputs.at(i); }
  const TensorMeta& meta(int i = 0) const { return outputs.at(i).meta(); }
  // kOp: the argument of that schema name (n.arg("approximate").str_value()); throws Error when there is none.
  const Value& arg(std::string_view schema_name) const;
  std::string_view op_name() const;  // "gelu", "max.dim"; "input", "constant", "output" for other kinds
};

// Iterates a graph's nodes as const Node&.
class NodeRange {
 public:
  using Storage = std::vector<std::unique_ptr<Node>>;
  class Iterator {
   public:
    explicit Iterator(Storage::const_iterator it) : it_(it) {}
    const Node& operator*() const { return **it_; }
    const Node* operator->() const { return it_->get(); }
    Iterator& operator++() { return ++it_, *this; }
    bool operator==(const Iterator& o) const { return it_ == o.it_; }

   private:
    Storage::const_iterator it_;
  };
  explicit NodeRange(const Storage& nodes) : nodes_(&nodes) {}
  Iterator begin() const { return Iterator(nodes_->begin()); }
  Iterator end() const { return Iterator(nodes_->end()); }
  size_t size() const { return nodes_->size(); }

 private:
  const Storage* nodes_;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;  // proxies belong to one graph: copy with clone()
  Graph& operator=(const Graph&) = delete;
  // A deep copy with its own proxies (sharing the ShapeEnv and the constants' data).
  Graph clone() const;

  // ---- Building (appending). Later changes go through a Rewriter. ----
  // A graph input; placed after the existing inputs. Empty strides mean dense (contiguous) ones. A name already
  // taken gets a suffix (x, x_1, ...); names start with a letter or '_' and hold letters, digits, '_' and '.'.
  Tensor add_input(std::string name, TensorMeta meta);
  // Records a call of `op`: normalizes `args` against the schema (defaults filled in, kinds checked), requires
  // every tensor argument to be a value of this graph, runs the op's shape rule on the proxies (under the graph's
  // ShapeEnv, when it has one) and returns the new node's output proxies. Throws Error when the rule rejects them.
  std::vector<Tensor> add_op(OpId op, Args args, Loc loc = Loc::current());
  Tensor add_op1(OpId op, Args args, Loc loc = Loc::current());  // an op with one output
  // A real tensor held by the graph (a frozen weight); placed after the inputs and earlier constants.
  Tensor add_constant(Tensor value, std::string name = "c");
  // Sets (or replaces) the output node's values.
  void set_outputs(std::vector<Tensor> values);

  // ---- Reading. ----
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int id) const;
  NodeRange nodes() const { return NodeRange(nodes_); }
  std::vector<const Node*> input_nodes() const;
  std::vector<Tensor> inputs() const;  // the input proxies, in order
  int num_inputs() const;
  int num_ops() const;
  bool has_output() const;
  const Node& output_node() const;  // throws Error when set_outputs was never called
  std::vector<Tensor> outputs() const;
  // Whether `value` is a proxy of this graph (of a node that still exists).
  bool contains(const Tensor& value) const;
  // The node that makes `value`; throws Error when it is not a value of this graph.
  const Node& producer(const Tensor& value) const;
  // The nodes (op or output) that take `value` as an argument, in order, each once.
  std::vector<const Node*> users(const Tensor& value) const;

  // The symbols the graph's sizes refer to (null when all sizes are concrete).
  const std::shared_ptr<sym::ShapeEnv>& shape_env() const { return shape_env_; }
  void set_shape_env(std::shared_ptr<sym::ShapeEnv> env) { shape_env_ = std::move(env); }

  uint64_t serial() const { return serial_; }  // distinguishes graphs in TraceState
  std::string str() const;                     // print_graph(*this)

 private:
  friend class Rewriter;
  Node& insert_node(int pos, std::unique_ptr<Node> node);
  std::vector<Tensor> insert_op(int pos, OpId op, Args args, const Loc& loc);
  void check_value(const Tensor& t, std::string_view what) const;
  void renumber(int from = 0);
  std::string unique_name(std::string name) const;

  std::vector<std::unique_ptr<Node>> nodes_;
  std::shared_ptr<sym::ShapeEnv> shape_env_;
  uint64_t serial_;
};

std::ostream& operator<<(std::ostream& os, const Graph& g);

// ---- Text. ----
// Readable code, one line per node:
//   graph(%x: f32[s0, 768], %w: f32[3072, 768]):
//     %2 = linear(%x, %w)  # f32[s0, 3072]
//     %3 = gelu(%2, approximate='tanh')  # f32[s0, 3072]
//     %4, %5 = max.dim(%3, 1)  # f32[s0], i64[s0]
//     return (%3, %4)
// Values are numbered in order of definition (inputs and constants print their names). Arguments follow the
// schema: positional ones in order, keyword-only ones as name=value, trailing defaults left out. A type is
// dtype[sizes], then {strides} when not the dense default, +offset when nonzero, @device when not the CPU.
// A constant prints as `%w = constant()  # f32[3, 4]` (its data is not part of the text).
std::string print_graph(const Graph& g);

struct ParseOptions {
  // Example values of the symbols s0, s1, ... (indexed by id; each >= 2). Missing ones get distinct defaults
  // (64, 72, 80, ...). Shape rules run on these values where sizes are compared.
  std::vector<int64_t> symbol_hints;
  // Data of constants by name; a constant not given is filled with zeros.
  std::map<std::string, Tensor> constants;
};
// Reads print_graph's text back (print_graph(parse_graph(text)) == text for printed text). Values may have any
// %names; a `# type` comment after an op is checked against the shape rule when present. Symbols make a
// ShapeEnv for the graph. Throws Error naming the line and column of the first problem.
Graph parse_graph(std::string_view text, const ParseOptions& options = {});

// Checks the graph's invariants and throws Error naming the first node that breaks one: ids are positions,
// arguments are values of earlier nodes, argument kinds match the schema, re-running each shape rule gives the
// recorded output metas, and there is exactly one output node, the last.
void verify(const Graph& g);

// Runs the graph eagerly on real inputs (checked against the input metas: count, dtype, device, rank, sizes;
// symbolic sizes take their values from the inputs) and returns the outputs. Intermediates are freed after
// their last use.
std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs);

// The only way to change a graph after it is built. Every edit keeps ids equal to positions and the order
// topological; nodes keep their addresses, so a `const Node&` stays valid until that node is erased.
class Rewriter {
 public:
  explicit Rewriter(Graph& graph) : g_(graph) {}
  Graph& graph() const { return g_; }

  // Records an op just before `anchor`; its tensor arguments must be defined before `anchor`. Without a
  // location it takes the anchor's (a decomposition's ops name the user's call of the op they replace, so an
  // error they raise at run time points at the user's line, not at the pass).
  std::vector<Tensor> insert_op_before(const Node& anchor, OpId op, Args args, Loc loc = Loc{});
  Tensor insert_op1_before(const Node& anchor, OpId op, Args args, Loc loc = Loc{});
  // Makes every user of `old_value` use `new_value` instead (except the node that makes `new_value`, so
  // x -> f(x) works); returns the number of arguments changed. The two must have the same sizes, dtype and
  // device, and `new_value` must be defined before every user.
  int replace_all_uses(const Tensor& old_value, const Tensor& new_value);
  // Removes a node whose outputs have no users (the output node cannot be erased).
  void erase(const Node& node);
  // Replaces an op node's arguments (normalized as in add_op) and re-runs its shape rule; the node keeps its
  // output proxies (with their metas updated), so its users stay connected. The output count must not change.
  void set_args(const Node& node, Args args);
  // Removes op and constant nodes whose outputs are unused, except ops with side effects (in-place ops, ops
  // that write an argument, random ops: removing one would shift the generator's stream). Returns how many.
  int eliminate_dead_code();
  // Re-runs every op's shape rule in order, updating output metas (after an edit changed a layout upstream).
  void recompute_metas();
  // Re-runs one op's shape rule on its current arguments, updating its output metas (for a pass that walks the
  // graph in order after changing a layout, and mends what a new layout breaks before it reaches a node).
  void recompute_meta(const Node& node);
  // Makes the graph return `value` as its output `i` (same sizes, dtype and device; defined before the output
  // node).
  void set_output(size_t i, const Tensor& value);

 private:
  Node& mutable_node(const Node& node) const;
  Graph& g_;
};

// Whether removing an unused call of this op node would change what the program does.
bool has_side_effects(const Node& node);

}  // namespace sinter
