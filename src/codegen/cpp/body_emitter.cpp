#include "codegen/cpp/body_emitter.h"

#include <algorithm>

#include "codegen/cpp/cpp_ops.h"

namespace sinter::codegen::cpp {

using inductor::CType;
using inductor::LoopDim;
using inductor::PlannedNode;
using inductor::SExpr;
using inductor::SKind;
using inductor::SOp;
using inductor::StagePlan;

BodyEmitter::BodyEmitter(const inductor::LoopProgram& p, const inductor::KernelPlan& k) : p_(p), k_(k) {
  int nv = 0;
  for (const StagePlan& st : k_.stages)
    for (const LoopDim& d : st.loops) nv = std::max(nv, d.var + 1);
  for (const LoopDim& d : k_.outer) nv = std::max(nv, d.var + 1);
  for (const StagePlan& st : k_.stages)
    for (const PlannedNode& n : st.nodes) nv = std::max(nv, static_cast<int>(p_.nodes[n.node].domain.size()));
  for (int v = 0; v < nv; ++v) var_names_.push_back(var(v));
}

std::string BodyEmitter::idx(const ExprPtr& e) const { return index_expr(e, var_names_, !k_.index32); }

std::string BodyEmitter::unravel(const std::vector<LoopDim>& dims, const std::string& flat,
                                 const std::string& ind) const {
  const char* it = index_type();
  std::string out;
  if (dims.empty()) return out;
  if (dims.size() == 1) return fmt::format("{}const {} {} = {};\n", ind, it, var(dims[0].var), flat);
  out += fmt::format("{}{} rem_ = {};\n", ind, it, flat);
  for (size_t j = dims.size(); j-- > 1;) {
    std::string sz = idx(dims[j].size);
    out += fmt::format("{}const {} {} = rem_ % {};\n{}rem_ /= {};\n", ind, it, var(dims[j].var), sz, ind, sz);
  }
  out += fmt::format("{}const {} {} = rem_;\n", ind, it, var(dims[0].var));
  return out;
}

// Operands first and in argument order, from an explicit stack (a body can be thousands of nodes deep).
std::string BodyEmitter::emit(SExpr root, std::string& out, const std::string& ind) {
  std::vector<std::pair<SExpr, bool>> stack{{root, false}};  // (node, its operands are on the stack already)
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    if (names_.count(e)) {
      stack.pop_back();
      continue;
    }
    if (!expanded && e->kind == SKind::kOp && !e->args.empty()) {
      stack.back().second = true;
      for (size_t i = e->args.size(); i-- > 0;)
        if (!names_.count(e->args[i])) stack.push_back({e->args[i], false});
      continue;
    }
    stack.pop_back();
    emit_node(e, out, ind);
  }
  return names_.at(root);
}

std::string BodyEmitter::stored(SExpr root, const std::string& v, DType dt) const {
  const bool rounds = root->kind == SKind::kOp &&
                      ((root->op == SOp::round_bf16 && dt == kBFloat16) || (root->op == SOp::round_f16 && dt == kFloat16));
  return store_str(dt, rounds ? names_.at(root->args[0]) : v);
}

// One node whose operands all have names.
void BodyEmitter::emit_node(SExpr e, std::string& out, const std::string& ind) {
  std::string text;
  if (e->kind == SKind::kConst) {
    names_[e] = const_str(e);
    return;
  }
  if (e->kind == SKind::kLoad) {
    auto f = stage_->forwarded.find(e);
    if (f != stage_->forwarded.end()) {
      names_[e] = values_.at(f->second);
      return;
    }
    auto read = load_elements_.find(e);
    std::string element = read != load_elements_.end() ? read->second
                                                         : fmt::format("{}[{}]", buf(e->buffer), idx(e->offset));
    text = load_str(p_.buffers[e->buffer].dtype, element);
  } else {
    std::vector<std::string> args;
    std::vector<CType> types;
    for (SExpr a : e->args) {
      args.push_back(names_.at(a));
      types.push_back(a->type);
    }
    // One reciprocal per row, hoisted out of the loop by the compiler, and a multiply per element.
    if (stage_->reciprocal_divs.count(e)) text = fmt::format("{} * (1.0f / {})", args[0], args[1]);
    else text = op_str(e->op, e->type, args, types);
  }
  std::string name = fmt::format("t{}", tmp_++);
  out += fmt::format("{}const {} {} = {};\n", ind, inductor::ctype_name(e->type), name, text);
  names_[e] = name;
}

}  // namespace sinter::codegen::cpp
