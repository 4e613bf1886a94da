#include "inductor/loop_ir.h"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <unordered_set>

#include "support/check.h"

namespace sinter::inductor {

ExprPtr loop_var(int k) { return sym::make_symbol(kLoopVarBase + k); }

CType compute_type(DType dt) {
  switch (dt) {
    case kFloat32:
    case kFloat16:
    case kBFloat16: return CType::kF32;
    case kFloat64: return CType::kF64;
    case kInt64: return CType::kI64;
    case kInt32: return CType::kI32;
    case kInt8: return CType::kI8;
    case kUInt8: return CType::kU8;
    case kBool: return CType::kBool;
  }
  SINTER_INTERNAL_ASSERT(false, "compute_type: unknown dtype");
  return CType::kF32;
}

bool is_float(CType t) { return t == CType::kF32 || t == CType::kF64; }

const char* ctype_name(CType t) {
  switch (t) {
    case CType::kBool: return "bool";
    case CType::kI8: return "sn_i8";
    case CType::kU8: return "sn_u8";
    case CType::kI32: return "sn_i32";
    case CType::kI64: return "sn_i64";
    case CType::kF32: return "float";
    case CType::kF64: return "double";
  }
  return "?";
}

// ---- SPool ----

static size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

// Constants are the same by their bits (0.0 and -0.0 differ: x / -0.0 is not x / 0.0); every NaN is one.
static bool same_value(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b) || (a != a && b != b);
}
static size_t value_hash(double v) { return v == v ? std::hash<uint64_t>()(std::bit_cast<uint64_t>(v)) : 7; }

static bool same(const SNode& a, const SNode& b) {
  return a.kind == b.kind && a.type == b.type && a.op == b.op && a.args == b.args && a.buffer == b.buffer &&
         a.offset == b.offset && same_value(a.value, b.value) && a.ivalue == b.ivalue;
}

SExpr SPool::intern(SNode n) {
  size_t h = mix(static_cast<size_t>(n.kind), static_cast<size_t>(n.type));
  h = mix(h, static_cast<size_t>(n.op));
  for (SExpr a : n.args) h = mix(h, std::hash<const void*>()(a));
  h = mix(h, static_cast<size_t>(n.buffer + 1));
  h = mix(h, std::hash<const void*>()(n.offset.get()));
  h = mix(h, value_hash(n.value));
  h = mix(h, std::hash<int64_t>()(n.ivalue));
  n.hash = h;
  if (SExpr found = find(n)) return found;
  nodes_.push_back(std::move(n));
  const SNode* p = &nodes_.back();
  table_.emplace(h, p);
  return p;
}

SExpr SPool::find(const SNode& n) const {
  if (base_ != nullptr)
    if (SExpr found = base_->find(n)) return found;
  auto [lo, hi] = table_.equal_range(n.hash);
  for (auto it = lo; it != hi; ++it)
    if (same(*it->second, n)) return it->second;
  return nullptr;
}

SExpr SPool::load(int buffer, ExprPtr offset, CType type) {
  SNode n;
  n.kind = SKind::kLoad;
  n.type = type;
  n.buffer = buffer;
  n.offset = std::move(offset);
  return intern(std::move(n));
}

// A floating scalar becomes a non-floating constant as eager's cast_to converts it: bool is `v != 0` (so -0.5 and
// NaN are true), integers truncate through int64 (NaN gives 0, values beyond int64 saturate) and then wrap to the
// type's width. A plain static_cast would turn -0.5 into false and make NaN or 1e30 undefined behaviour.
SExpr SPool::constant(double v, CType type) {
  if (type == CType::kBool) return iconstant(v != 0 ? 1 : 0, type);
  if (!is_float(type)) {
    if (v != v) return iconstant(0, type);
    if (v >= 9.2e18) return iconstant(INT64_MAX, type);
    if (v <= -9.2e18) return iconstant(INT64_MIN, type);
    return iconstant(static_cast<int64_t>(v), type);
  }
  SNode n;
  n.kind = SKind::kConst;
  n.type = type;
  n.value = v;
  return intern(std::move(n));
}

SExpr SPool::iconstant(int64_t v, CType type) {
  if (is_float(type)) return constant(static_cast<double>(v), type);
  SNode n;
  n.kind = SKind::kConst;
  n.type = type;
  // Wrapped to the type's width, as eager's cast of an integer Scalar to a narrower dtype wraps.
  switch (type) {
    case CType::kBool: n.ivalue = v != 0; break;
    case CType::kI8: n.ivalue = static_cast<int8_t>(v); break;
    case CType::kU8: n.ivalue = static_cast<uint8_t>(v); break;
    case CType::kI32: n.ivalue = static_cast<int32_t>(v); break;
    default: n.ivalue = v; break;
  }
  return intern(std::move(n));
}

SExpr SPool::op(SOp op, std::vector<SExpr> args, CType type) {
  SINTER_INTERNAL_ASSERT(static_cast<int>(args.size()) == scalar_op_arity(op), "loop IR: {} takes {} operand(s), got {}",
                         scalar_op_name(op), scalar_op_arity(op), args.size());
  SNode n;
  n.kind = SKind::kOp;
  n.type = type;
  n.op = op;
  n.args = std::move(args);
  return intern(std::move(n));
}

SExpr SPool::convert(SExpr a, DType from, DType to) {
  SExpr v = cast(a, compute_type(to));  // float64 -> float16 goes through float32, as eager's conversion does
  if (from == to || (to != kFloat16 && to != kBFloat16)) return v;
  // Integers of at most 8 bits (and bools) are exact in both half types.
  if (from == kBool || from == kInt8 || from == kUInt8) return v;
  return op(to == kFloat16 ? SOp::round_f16 : SOp::round_bf16, {v}, CType::kF32);
}

static void walk(SExpr root, std::unordered_set<SExpr>& seen, const std::function<void(SExpr)>& f) {
  std::vector<SExpr> stack{root};
  while (!stack.empty()) {
    SExpr e = stack.back();
    stack.pop_back();
    if (!seen.insert(e).second) continue;
    f(e);
    for (SExpr a : e->args) stack.push_back(a);
  }
}

int dag_size(SExpr root) {
  std::unordered_set<SExpr> seen;
  walk(root, seen, [](SExpr) {});
  return static_cast<int>(seen.size());
}

void collect_loads(SExpr root, std::vector<SExpr>& loads) {
  std::unordered_set<SExpr> seen;
  walk(root, seen, [&](SExpr e) {
    if (e->kind == SKind::kLoad) loads.push_back(e);
  });
}

// ---- program ----

int LoopProgram::add_buffer(Buffer b) {
  b.id = static_cast<int>(buffers.size());
  if (b.name.empty()) b.name = fmt::format("buf{}", b.id);
  buffers.push_back(std::move(b));
  return buffers.back().id;
}

static std::string dims_str(const std::vector<ExprPtr>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + sym::to_string(dims[i]);
  return "[" + s + "]";
}

std::string LoopProgram::str() const {
  std::string s;
  for (const Buffer& b : buffers) {
    const char* kind = b.kind == BufferKind::kInput ? "input" : b.kind == BufferKind::kConstant ? "constant" : "buffer";
    s += fmt::format("{} {}: {}{} strides {}\n", kind, b.name, dtype_name(b.dtype), dims_str(b.sizes), dims_str(b.strides));
  }
  for (const LoopNode& n : nodes) {
    const char* kind = n.kind == LoopKind::kPointwise ? "pointwise" : n.kind == LoopKind::kReduction ? "reduction" : "extern";
    if (n.kind == LoopKind::kExtern) {
      std::string outs;
      for (int o : n.outs) outs += (outs.empty() ? "" : ", ") + buffers[o].name;
      s += fmt::format("node {}: extern {}{} -> {}  # {}\n", n.id, op_name(n.op), n.gemm ? " (gemm)" : "", outs, n.origin);
    } else {
      s += fmt::format("node {}: {} {} outer {} {} -> {} (dag {})  # {}\n", n.id, kind, dims_str(n.domain),
                       n.num_outer, n.kind == LoopKind::kReduction ? reduce_op_name(n.reduce_op) : "", buffers[n.out].name, dag_size(n.body), n.origin);
    }
  }
  return s;
}

std::string index_text(const ExprPtr& e) {
  return sym::to_string(e, [](int64_t id) {
    return is_loop_var(id) ? fmt::format("v{}", loop_var_index(id)) : fmt::format("s{}", id);
  });
}

static bool has_loop_var(const ExprPtr& e) {
  for (int64_t id : sym::free_symbols(e))
    if (is_loop_var(id)) return true;
  return false;
}

bool affine_split(const ExprPtr& e0, int nvars, std::vector<ExprPtr>& coeffs, ExprPtr& rest) {
  ExprPtr e = sym::expand(e0);
  coeffs.assign(nvars, sym::make_const(0));
  rest = sym::make_const(0);
  std::vector<ExprPtr> terms;
  if (e->kind() == sym::Kind::kAdd) {
    terms = e->args();
    rest = sym::make_const(e->value());
  } else {
    terms = {e};
  }
  for (const ExprPtr& t : terms) {
    if (!has_loop_var(t)) {
      rest = sym::make_add(rest, t);
      continue;
    }
    ExprPtr var;
    ExprPtr coef = sym::make_const(1);
    if (t->is_symbol()) {
      var = t;
    } else if (t->kind() == sym::Kind::kMul) {
      coef = sym::make_const(t->value());
      for (const ExprPtr& f : t->args()) {
        if (f->is_symbol() && is_loop_var(f->symbol_id()) && !var) {
          var = f;
        } else if (has_loop_var(f)) {
          return false;
        } else {
          coef = sym::make_mul(coef, f);
        }
      }
    }
    if (!var) return false;
    int k = loop_var_index(var->symbol_id());
    if (k >= nvars) return false;
    coeffs[k] = sym::make_add(coeffs[k], coef);
  }
  return true;
}

}  // namespace sinter::inductor
