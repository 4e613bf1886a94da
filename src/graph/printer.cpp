// The graph as readable code (the format is described in graph.h). The parser reads exactly this text back, so
// any change here needs the same change in parser.cpp.
#include <fmt/format.h>

#include "graph/graph_util.h"
#include "graph/value_names.h"

namespace sinter {

using graph_detail::join;
using graph_detail::trace_of;

namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "'";
}

std::string_view memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::kContiguous: return "contiguous_format";
    case MemoryFormat::kChannelsLast: return "channels_last";
    case MemoryFormat::kPreserve: return "preserve_format";
  }
  return "?";
}

class Printer {
 public:
  explicit Printer(const Graph& g) : g_(g), names_(graph_detail::printed_value_names(g)) {}

  std::string graph() {
    std::vector<std::string> inputs;
    for (const Node& n : g_.nodes())
      if (n.kind == NodeKind::kInput) inputs.push_back(node(n));
    std::string out = fmt::format("graph({}):\n", join(inputs, ", "));
    for (const Node& n : g_.nodes())
      if (n.kind != NodeKind::kInput) out += fmt::format("  {}\n", node(n));
    return out;
  }

  std::string node(const Node& n) {
    switch (n.kind) {
      case NodeKind::kInput: return fmt::format("{}: {}", names_[n.id][0], graph_detail::meta_str(n.meta()));
      case NodeKind::kConstant:
        return fmt::format("{} = constant()  # {}", names_[n.id][0], graph_detail::meta_str(n.meta()));
      case NodeKind::kOutput: return fmt::format("return ({})", values(n.args));
      case NodeKind::kOp: break;
    }
    std::vector<std::string> types;
    for (size_t k = 0; k < n.outputs.size(); ++k) types.push_back(graph_detail::meta_str(n.meta(k)));
    std::string call = fmt::format("{}({})", n.op_name(), arguments(n));
    if (n.outputs.empty()) return call;
    return fmt::format("{} = {}  # {}", join(names_[n.id], ", "), call, join(types, ", "));
  }

 private:
  // Positional arguments up to the last one that differs from its default, then keyword-only ones that differ.
  std::string arguments(const Node& n) {
    const Schema& schema = op_def(n.op).schema;
    if (n.args.size() != schema.args.size()) return values(n.args);  // not normalized (a broken graph)
    auto is_default = [&](size_t i) {
      return schema.args[i].has_default && graph_detail::same_value(n.args[i], schema.args[i].default_value);
    };
    int last_positional = -1;
    for (size_t i = 0; i < n.args.size(); ++i)
      if (!schema.args[i].kwarg_only && !is_default(i)) last_positional = static_cast<int>(i);
    std::vector<std::string> parts;
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (!schema.args[i].kwarg_only) {
        if (static_cast<int>(i) <= last_positional) parts.push_back(value(n.args[i]));
      } else if (!is_default(i)) {
        parts.push_back(fmt::format("{}={}", schema.args[i].name, value(n.args[i])));
      }
    }
    return join(parts, ", ");
  }

  std::string values(const Args& args) {
    std::vector<std::string> parts;
    for (const Value& v : args) parts.push_back(value(v));
    return join(parts, ", ");
  }

  std::string tensor(const Tensor& t) {
    if (!t.defined()) return "None";
    if (g_.contains(t)) {
      const TraceState* tr = trace_of(t);
      return names_[tr->node][tr->output];
    }
    return trace_of(t) ? "%<value of another graph>" : "%<real tensor>";
  }

  std::string value(const Value& v) {
    if (v.is_none()) return "None";
    if (v.is_tensor()) return tensor(v.tensor());
    if (v.is_tensor_list()) {
      std::vector<std::string> parts;
      for (const Tensor& t : v.tensor_list()) parts.push_back(tensor(t));
      return fmt::format("[{}]", join(parts, ", "));
    }
    if (v.is_scalar()) return v.scalar().str();
    if (v.is_int()) return v.sym_int().str();
    if (v.is_int_list()) return v.int_list().str();
    if (v.is_double()) return Scalar(v.to_double()).str();
    if (v.is_bool()) return v.to_bool() ? "True" : "False";
    if (v.is_string()) return quote(v.str_value());
    if (v.is_dtype()) return std::string(graph_detail::short_dtype_name(v.dtype()));
    if (v.is_device()) return v.device().str();
    if (v.is_memory_format()) return std::string(memory_format_name(v.memory_format()));
    if (v.is_double_list()) {
      std::vector<std::string> parts;
      for (double d : v.double_list()) parts.push_back(Scalar(d).str());
      return fmt::format("[{}]", join(parts, ", "));
    }
    return "?";
  }

  const Graph& g_;
  std::vector<std::vector<std::string>> names_;  // per node, per output
};

}  // namespace

std::string print_graph(const Graph& g) { return Printer(g).graph(); }

namespace graph_detail {
std::vector<std::vector<std::string>> printed_value_names(const Graph& g) {
  std::vector<std::vector<std::string>> names;
  int counter = 0;
  for (const Node& n : g.nodes()) {
    std::vector<std::string>& outs = names.emplace_back();
    for (size_t k = 0; k < n.outputs.size(); ++k, ++counter)
      outs.push_back(n.name.empty() ? fmt::format("%{}", counter) : fmt::format("%{}", n.name));
  }
  return names;
}
std::string node_str(const Graph& g, const Node& n) { return Printer(g).node(n); }
}  // namespace graph_detail

}  // namespace sinter
