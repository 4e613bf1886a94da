// validate_model(): onnx.checker's structural checks, so that an invalid graph is refused at load with a message
// naming the node, instead of failing later (or not at all) in the executor.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "frontends/onnx/schema.h"
#include "support/check.h"

namespace sinter::onnx {

namespace {

bool default_domain(std::string_view d) { return d.empty() || d == "ai.onnx"; }

using SchemaIndex = std::map<std::pair<std::string_view, std::string_view>, std::vector<const OpSchemaRow*>>;

const SchemaIndex& schema_index() {
  static const SchemaIndex index = [] {
    SchemaIndex i;
    for (const OpSchemaRow& r : schema_rows()) i[{r.domain, r.op_type}].push_back(&r);
    for (auto& [key, rows] : i)
      std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->since_version < b->since_version; });
    return i;
  }();
  return index;
}

const char* attribute_type_name(int32_t t) {
  static const char* const kNames[] = {"UNDEFINED", "FLOAT",   "INT",     "STRING",        "TENSOR",
                                       "GRAPH",     "FLOATS",  "INTS",    "STRINGS",       "TENSORS",
                                       "GRAPHS",    "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
  return t >= 0 && t < int32_t(std::size(kNames)) ? kNames[t] : "unknown";
}

// A schema's attributes: name -> (type, required).
std::map<std::string, std::pair<int32_t, bool>, std::less<>> schema_attributes(const OpSchemaRow& s) {
  std::map<std::string, std::pair<int32_t, bool>, std::less<>> out;
  std::string_view all = s.attributes;
  while (!all.empty()) {
    size_t space = all.find(' ');
    std::string_view item = all.substr(0, space);
    size_t colon = item.find(':');
    SINTER_INTERNAL_ASSERT(colon != std::string_view::npos, "bad schema attribute entry {}", item);
    bool required = item.back() == '!';
    std::string_view type = item.substr(colon + 1, item.size() - colon - 1 - (required ? 1 : 0));
    out[std::string(item.substr(0, colon))] = {std::stoi(std::string(type)), required};
    if (space == std::string_view::npos) break;
    all.remove_prefix(space + 1);
  }
  return out;
}

// The names visible in a graph: its own and those of the graphs enclosing it (subgraphs see outer values).
struct Scope {
  std::unordered_set<std::string> names;
  const Scope* parent = nullptr;
  bool has(const std::string& n) const { return names.count(n) || (parent && parent->has(n)); }
};

class Validator {
 public:
  explicit Validator(const proto::Model& m) {
    bool found = false;
    for (const proto::OpsetId& o : m.opsets) {
      std::string domain = default_domain(o.domain) ? "" : o.domain;
      if (domain.empty()) {
        SINTER_CHECK(o.version >= 1 && o.version <= kMaxSupportedOpset,
                     "invalid ONNX model: it imports opset {} of the default domain; sinter supports opsets 1 to {}",
                     o.version, kMaxSupportedOpset);
        found = true;
      }
      SINTER_CHECK(!opsets_.count(domain), "invalid ONNX model: opset_import lists domain '{}' twice",
                   domain.empty() ? "ai.onnx" : domain);
      opsets_[domain] = o.version;
    }
    if (!found) opsets_[""] = 1;  // models from before opset_import (IR version 1-2) are opset 1
  }

  // `where` prefixes node labels: "" in the main graph, "node 2 'loop' (Loop): attribute 'body': " in a subgraph.
  void graph(const proto::Graph& g, const Scope* parent, const std::string& node_where) {
    std::string where = node_where.empty() ? "the main graph: " : node_where;
    Scope scope{{}, parent};
    bool top = parent == nullptr;
    std::set<std::string> inputs;
    for (const proto::ValueInfo& v : g.inputs) {
      SINTER_CHECK(!v.name.empty(), "invalid ONNX model: {}a graph input has no name", where);
      SINTER_CHECK(inputs.insert(v.name).second, "invalid ONNX model: {}graph input '{}' is declared twice", where,
                   v.name);
      value_info(v, "graph input", where, top);
      scope.names.insert(v.name);
    }
    std::set<std::string> initializers;
    for (const proto::TensorProto& t : g.initializers) {
      SINTER_CHECK(initializers.insert(t.name).second, "invalid ONNX model: {}two initializers are named '{}'",
                   where, t.name);
      for (int64_t d : t.dims)
        SINTER_CHECK(d >= 0, "invalid ONNX model: {}initializer '{}' has a negative dim ({})", where, t.name, d);
      scope.names.insert(t.name);
    }
    for (const proto::ValueInfo& v : g.value_infos) value_info(v, "value_info", where, false);
    for (size_t i = 0; i < g.nodes.size(); ++i) node(g.nodes[i], i, scope, node_where);
    std::set<std::string> outputs;
    for (const proto::ValueInfo& v : g.outputs) {
      SINTER_CHECK(!v.name.empty(), "invalid ONNX model: {}a graph output has no name", where);
      SINTER_CHECK(outputs.insert(v.name).second, "invalid ONNX model: {}graph output '{}' is listed twice", where,
                   v.name);
      SINTER_CHECK(scope.has(v.name),
                   "invalid ONNX model: {}graph output '{}' is not produced by any node, input or initializer",
                   where, v.name);
      value_info(v, "graph output", where, top);
    }
  }

 private:
  // Top-level inputs and outputs must say their type (onnx.checker's check_value_info); every dim anywhere is a
  // size >= 0 or a name (or unknown).
  void value_info(const proto::ValueInfo& v, const char* role, const std::string& where, bool typed) {
    using K = proto::TypeProto::Kind;
    if (typed) {
      SINTER_CHECK(v.type.kind != K::kNone, "invalid ONNX model: {}{} '{}' has no type", where, role, v.name);
      SINTER_CHECK(v.type.kind != K::kTensor || v.type.elem_type != 0,
                   "invalid ONNX model: {}{} '{}' is a tensor without an element type", where, role, v.name);
    }
    for (size_t i = 0; i < v.type.shape.size(); ++i) {
      const proto::Dim& d = v.type.shape[i];
      SINTER_CHECK(!d.value || *d.value >= 0,
                   "invalid ONNX model: {}{} '{}' has dim {} of {} (a dim is a size >= 0 or a symbolic name)", where,
                   role, v.name, i, *d.value);
    }
  }

  void node(const proto::Node& n, size_t index, Scope& scope, const std::string& where) {
    std::string label = n.name.empty() ? fmt::format("{}node {} ({})", where, index, n.op_type)
                                       : fmt::format("{}node {} '{}' ({})", where, index, n.name, n.op_type);
    SINTER_CHECK(!n.op_type.empty(), "invalid ONNX model: {} has no op_type", label);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string& in = n.inputs[i];
      SINTER_CHECK(in.empty() || scope.has(in),
                   "invalid ONNX model: {}: input {} '{}' is not a graph input, an initializer or the output of an "
                   "earlier node (nodes must be in topological order)",
                   label, i, in);
    }
    std::string domain = default_domain(n.domain) ? "" : n.domain;
    const OpSchemaRow* s = nullptr;
    if (auto it = opsets_.find(domain); it != opsets_.end()) {
      bool known = false;
      s = find_schema(domain, n.op_type, it->second, &known);
      SINTER_CHECK(s || !known, "invalid ONNX model: {}: {} does not exist in opset {} of domain '{}' (it starts "
                   "at opset {})", label, n.op_type, it->second, domain.empty() ? "ai.onnx" : domain,
                   schema_index().at({domain, n.op_type}).front()->since_version);
    } else {
      SINTER_CHECK(!schema_index().count({domain, n.op_type}),
                   "invalid ONNX model: {}: its domain '{}' is not in the model's opset_import", label, domain);
    }
    if (s) counts_and_attributes(n, *s, label, opsets_.at(domain));
    std::set<std::string> attr_names;
    for (const proto::Attribute& a : n.attributes) {
      SINTER_CHECK(attr_names.insert(a.name).second, "invalid ONNX model: {}: attribute '{}' is given twice", label,
                   a.name);
      std::string sub = fmt::format("{}: attribute '{}': ", label, a.name);
      if (a.g) graph(*a.g, &scope, sub);
      for (size_t k = 0; k < a.graphs.size(); ++k) graph(*a.graphs[k], &scope, fmt::format("{}graph {}: ", sub, k));
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const std::string& out = n.outputs[i];
      if (out.empty()) continue;  // an omitted optional output
      SINTER_CHECK(!scope.has(out),
                   "invalid ONNX model: {}: output {} '{}' is already defined (by a graph input, an initializer or "
                   "an earlier output; every value has one definition)",
                   label, i, out);
      scope.names.insert(out);
    }
  }

  void counts_and_attributes(const proto::Node& n, const OpSchemaRow& s, const std::string& label,
                             int64_t opset) {
    auto range = [](int lo, int hi) {
      return hi == lo ? fmt::format("{}", lo) : hi >= (1 << 30) ? fmt::format("{} or more", lo)
                                                                 : fmt::format("{} to {}", lo, hi);
    };
    std::string version = fmt::format("{} of opset {} (version {})", n.op_type, opset, s.since_version);
    int ins = static_cast<int>(n.inputs.size()), outs = static_cast<int>(n.outputs.size());
    SINTER_CHECK(ins >= s.min_inputs && ins <= s.max_inputs, "invalid ONNX model: {}: has {} input{}; {} takes {}",
                 label, ins, ins == 1 ? "" : "s", version, range(s.min_inputs, s.max_inputs));
    SINTER_CHECK(outs >= s.min_outputs && outs <= s.max_outputs,
                 "invalid ONNX model: {}: has {} output{}; {} gives {}", label, outs, outs == 1 ? "" : "s", version,
                 range(s.min_outputs, s.max_outputs));
    // Only a single (not optional, not variadic) formal input may not be left empty; inputs past the last formal
    // one belong to it (the counts above allow them only when it is variadic).
    std::string_view kinds = s.input_kinds;
    for (int i = 0; i < ins && !kinds.empty(); ++i) {
      char kind = size_t(i) < kinds.size() ? kinds[i] : kinds.back();
      SINTER_CHECK(!(n.inputs[i].empty() && kind == 's'),
                   "invalid ONNX model: {}: input {} is required by {} but empty", label, i, version);
    }
    auto known = schema_attributes(s);
    for (const proto::Attribute& a : n.attributes) {
      SINTER_CHECK(a.type >= 0 && a.type <= proto::Attribute::kTypeProtos,
                   "invalid ONNX model: {}: attribute '{}' has unknown type {}", label, a.name, a.type);
      auto it = known.find(a.name);
      if (it == known.end()) {
        if (a.name.rfind("__", 0) == 0) continue;  // internal names, which onnx.checker lets through
        std::vector<std::string> names;
        for (const auto& [name, t] : known) names.push_back(name);
        throw Error(fmt::format("invalid ONNX model: {}: unknown attribute '{}' ({} has {})", label, a.name, version,
                                names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
      }
      // A type of 0 is a producer that did not say (IR version 1); the value then decides.
      SINTER_CHECK(a.type == 0 || a.type == it->second.first,
                   "invalid ONNX model: {}: attribute '{}' is {}, {} wants {}", label, a.name,
                   attribute_type_name(a.type), version, attribute_type_name(it->second.first));
    }
    for (const auto& [name, t] : known) {
      if (!t.second) continue;
      bool given = std::any_of(n.attributes.begin(), n.attributes.end(), [&](auto& a) { return a.name == name; });
      SINTER_CHECK(given, "invalid ONNX model: {}: required attribute '{}' of {} is missing", label, name, version);
    }
  }

  std::map<std::string, int64_t> opsets_;  // domain ("" default) -> version
};

}  // namespace

const OpSchemaRow* find_schema(std::string_view domain, std::string_view op_type, int64_t opset, bool* known) {
  const SchemaIndex& index = schema_index();
  auto it = index.find({default_domain(domain) ? std::string_view() : domain, op_type});
  if (known) *known = it != index.end();
  if (it == index.end()) return nullptr;
  const OpSchemaRow* best = nullptr;
  for (const OpSchemaRow* r : it->second)
    if (r->since_version <= opset) best = r;
  return best;
}

void validate_model(const proto::Model& model) {
  Validator v(model);
  v.graph(model.graph, nullptr, "");
}

}  // namespace sinter::onnx
