// ONNX's operator schemas (input/output counts, attributes) per operator version, and the structural checks
// onnx.checker makes of a model: the importer refuses an invalid graph with an error naming the node and what is
// wrong, before it looks at what sinter supports. Internal to src/frontends/onnx.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "frontends/onnx/proto.h"

namespace sinter::onnx {

struct OpSchemaRow {
  const char* domain;  // "" is the default domain (ai.onnx)
  const char* op_type;
  int since_version;
  int min_inputs, max_inputs, min_outputs, max_outputs;
  const char* input_kinds;  // one letter per formal input: s single, o optional, v variadic (the last one)
  const char* attributes;   // "name:type name:type!" (AttributeProto.type; ! when required), by name
};

// The newest default-domain opset sinter knows the schemas of (schema_table.cpp, from the pinned onnx package).
extern const int64_t kMaxSupportedOpset;
const std::vector<OpSchemaRow>& schema_rows();

// The version of `op_type` in `domain` that a model importing `opset` of that domain uses: the newest one whose
// since_version is not after `opset`. nullptr when there is none; *known (when given) says whether the operator
// exists in some version.
const OpSchemaRow* find_schema(std::string_view domain, std::string_view op_type, int64_t opset,
                               bool* known = nullptr);

// The checks of onnx.checker that sinter relies on, over the whole model (subgraphs too): opset imports in the
// supported range; value names unique (SSA, across enclosing graphs) and every node input defined before use
// (topological order); node input/output counts, empty required inputs, attribute names and types against the
// operator's schema; typed top-level graph inputs and outputs; dims >= 0 or symbolic. Throws sinter::Error
// "invalid ONNX model: ..." naming the graph, the node (index, name, op type) and what is wrong.
void validate_model(const proto::Model& model);

}  // namespace sinter::onnx
