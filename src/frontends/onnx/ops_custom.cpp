// Nodes of custom domains: a node with domain "mylib" and op_type "rms_gate" runs the registered custom op
// "mylib::rms_gate" (sinter/library.h). Its inputs are the op's Tensor arguments in schema order; its attributes
// are the other arguments, by name; arguments not given take their schema defaults.
#include <fmt/format.h>

#include "frontends/onnx/importer.h"
#include "sinter/library.h"

namespace sinter::onnx {
namespace {

std::string_view attribute_type_name(int32_t t) {
  using A = proto::Attribute;
  switch (t) {
    case A::kFloat: return "FLOAT";
    case A::kInt: return "INT";
    case A::kString: return "STRING";
    case A::kFloats: return "FLOATS";
    case A::kInts: return "INTS";
    default: return "another type";
  }
}

Value attribute_value(const proto::Attribute& a, const SchemaArg& arg, const NodeCtx& c) {
  using A = proto::Attribute;
  switch (arg.type) {
    case ArgType::kInt:
      if (a.type == A::kInt) return Value(a.i);
      break;
    case ArgType::kBool:
      if (a.type == A::kInt) return Value(a.i != 0);
      break;
    case ArgType::kFloat:
      if (a.type == A::kFloat) return Value(static_cast<double>(a.f));
      if (a.type == A::kInt) return Value(static_cast<double>(a.i));
      break;
    case ArgType::kScalar:
      if (a.type == A::kFloat) return Value(Scalar(static_cast<double>(a.f)));
      if (a.type == A::kInt) return Value(Scalar(a.i));
      break;
    case ArgType::kStr:
      if (a.type == A::kString) return Value(a.s);
      break;
    case ArgType::kIntList:
      if (a.type == A::kInts) return Value(SymIntList(a.ints));
      break;
    case ArgType::kFloatList:
      if (a.type == A::kFloats) return Value(std::vector<double>(a.floats.begin(), a.floats.end()));
      break;
    default: break;
  }
  c.fail(fmt::format("attribute '{}' ({}) cannot be given to argument '{}' of type {}", a.name,
                     attribute_type_name(a.type), arg.name, arg.type_str));
}

std::vector<Tensor> import_custom(NodeCtx& c) {
  const OpDef* def = find_op(op_key(c.node()));
  const Schema& schema = def->schema;
  library::Kwargs kwargs;
  size_t input = 0;
  for (const SchemaArg& arg : schema.args) {
    if (arg.type == ArgType::kTensorList || arg.type == ArgType::kOptionalTensorList)
      c.unsupported(fmt::format("{}'s argument '{}' is a list of tensors, which ONNX nodes cannot pass",
                                schema.full_name(), arg.name));
    if (arg.type != ArgType::kTensor) continue;
    if (input < c.num_inputs() && c.has(input)) kwargs.emplace_back(arg.name, c.in(input));
    ++input;
  }
  if (c.num_inputs() > input)
    c.fail(fmt::format("{} inputs, but {} takes {} tensor(s)", c.num_inputs(), schema.full_name(), input));
  for (const proto::Attribute& a : c.node().attributes) {
    int i = schema.find_arg(a.name);
    if (i < 0 || schema.args[i].type == ArgType::kTensor)
      c.fail(fmt::format("attribute '{}' is not a non-tensor argument of {}", a.name, schema.str()));
    kwargs.emplace_back(a.name, attribute_value(a, schema.args[i], c));
  }
  if (c.node().outputs.size() > schema.returns.size())
    c.fail(fmt::format("{} outputs, but {} returns {}", c.node().outputs.size(), schema.full_name(),
                       schema.returns.size()));
  return library::Op(def->id).call({}, kwargs, Loc());
}

}  // namespace

const OpEntry* find_entry(const proto::Node& n) {
  const OpTable& table = op_table();
  std::string key = op_key(n);
  if (auto it = table.find(key); it != table.end()) return &it->second;
  static const OpEntry custom{import_custom};
  const OpDef* def = key.find("::") != std::string::npos ? find_op(key) : nullptr;
  return def && def->custom ? &custom : nullptr;
}

}  // namespace sinter::onnx
