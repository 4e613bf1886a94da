#include "codegen/cpp/cpp_codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "codegen/cpp/body_emitter.h"
#include "codegen/cpp/cpp_ops.h"
#include "codegen/cpp/prelude.h"
#include "support/check.h"

namespace sinter::codegen::cpp {

using inductor::Buffer;
using inductor::CType;
using inductor::LoopKind;
using inductor::LoopNode;
using inductor::LoopProgram;
using inductor::SExpr;
using inductor::SKind;
using ::sinter::ExprPtr;

namespace {

constexpr int kLanes = 16;  // accumulators per reduction: enough independent chains for AVX-512 too

// Helpers shared by every translation unit (after the prelude).
constexpr const char* kPreamble = R"(
struct sn_kargs { void** bufs; const sn_i64* syms; int* error; };
static inline sn_i64 sn_imin(sn_i64 a, sn_i64 b) { return a < b ? a : b; }
static inline sn_i64 sn_imax(sn_i64 a, sn_i64 b) { return a > b ? a : b; }
static inline sn_i64 sn_ifloordiv(sn_i64 a, sn_i64 b) {
  sn_i64 q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline sn_i64 sn_imod(sn_i64 a, sn_i64 b) {
  sn_i64 r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
)";

using inductor::KernelPlan;
using inductor::LoopDim;
using inductor::PlannedNode;
using inductor::StagePlan;

// Prints one planned kernel.
class KernelWriter : BodyEmitter {
 public:
  KernelWriter(const LoopProgram& p, const KernelPlan& k) : BodyEmitter(p, k) {}
  std::string write();

 private:
  // `body`: the scalar body whose value `value` is (null for a reduction's result).
  void store(const PlannedNode& n, const std::string& value, std::string& out, const std::string& ind,
             inductor::SExpr body = nullptr);
  void emit_pointwise_stage(const StagePlan& st, std::string& out, const std::string& ind);
  void emit_reduction_stage(const StagePlan& st, std::string& out, const std::string& ind);
  void emit_column_block(const StagePlan& st, std::string& out, const std::string& ind);
  std::string hoist_invariant_loads();
  bool transposing(const StagePlan& st) const;
  void emit_flat_body(const StagePlan& st, std::string& out, const std::string& ind);
  std::string loop(const LoopDim& d, const std::string& ind) const {
    return fmt::format("{}for ({} {} = 0; {} < {}; ++{}) {{\n", ind, it_, var(d.var), var(d.var), idx(d.size), var(d.var));
  }

  std::string it_ = "sn_i64";  // the index type
};

void KernelWriter::store(const PlannedNode& n, const std::string& value, std::string& out, const std::string& ind,
                         inductor::SExpr body) {
  if (!n.stored) return;
  const int b = p_.nodes[n.node].out;
  const DType dt = p_.buffers[b].dtype;
  out += fmt::format("{}{}[{}] = {};\n", ind, buf(b), idx(n.store), body ? stored(body, value, dt) : store_str(dt, value));
}


void KernelWriter::emit_pointwise_stage(const StagePlan& st, std::string& out, const std::string& ind) {
  std::string in = ind;
  for (size_t j = 0; j < st.loops.size(); ++j) {
    if (j + 1 == st.loops.size()) out += in + "#pragma omp simd\n";
    out += loop(st.loops[j], in);
    in += "  ";
  }
  names_.clear();
  for (const PlannedNode& n : st.nodes) {
    out += fmt::format("{}// {}\n", in, p_.nodes[n.node].origin);
    for (SExpr x : n.loaded_keeps) {  // stored here by the reduction stage that computed it
      std::string name = fmt::format("t{}", tmp_++);
      out += fmt::format("{}const float {} = {}[{}];\n", in, name, buf(p_.nodes[n.node].out), idx(n.store));
      names_[x] = name;
    }
    std::string v = emit(n.body, out, in);
    store(n, v, out, in, n.body);
    values_[n.node] = v;
  }
  for (size_t j = 0; j < st.loops.size(); ++j) {
    in.resize(in.size() - 2);
    out += in + "}\n";
  }
  names_.clear();
}

void KernelWriter::emit_reduction_stage(const StagePlan& st, std::string& out, const std::string& ind) {
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    const char* t = inductor::ctype_name(n.body->type);
    out += fmt::format("{}// {}: {} over {}\n", ind, ln.origin, inductor::reduce_op_name(ln.reduce_op), idx(st.elems));
    out += fmt::format("{}{} acc{}[{}];\n{}for (int j = 0; j < {}; ++j) acc{}[j] = {};\n", ind, t, n.node, kLanes, ind,
                       kLanes, n.node, reduce_init(ln.reduce_op, n.body->type));
  }
  std::string in = ind;
  for (size_t j = 0; j + 1 < st.loops.size(); ++j) {
    out += loop(st.loops[j], in);
    in += "  ";
  }
  const LoopDim& last = st.loops.back();
  std::string n_name = fmt::format("n{}", st.nodes.front().node);
  out += fmt::format("{}const {} {} = {};\n{}{} i{} = 0;\n", in, it_, n_name, idx(last.size), in, it_, n_name);
  // Vector body: kLanes independent accumulators, one per lane; then the scalar tail.
  out += fmt::format("{}for (; i{} + {} <= {}; i{} += {}) {{\n{}  #pragma omp simd\n{}  for (int j = 0; j < {}; ++j) {{\n",
                     in, n_name, kLanes, n_name, n_name, kLanes, in, in, kLanes);
  auto body = [&](const std::string& body_ind, const char* lane) {
    names_.clear();
    for (const PlannedNode& n : st.nodes) {
      std::string v = emit(n.body, out, body_ind);
      if (n.keep_for >= 0) {
        const LoopNode& keeper = p_.nodes[n.keep_for];
        out += fmt::format("{}{}[{}] = {};  // kept for {}\n", body_ind, buf(keeper.out), idx(n.keep_at), v,
                           keeper.origin);
      }
      std::string acc = fmt::format("acc{}[{}]", n.node, lane);
      out += fmt::format("{}{} = {};\n", body_ind, acc, reduce_combine(p_.nodes[n.node].reduce_op, acc, v));
    }
    names_.clear();
  };
  out += fmt::format("{}    const {} {} = i{} + j;\n", in, it_, var(last.var), n_name);
  body(in + "    ", "j");
  out += in + "  }\n" + in + "}\n";
  out += fmt::format("{}for (; i{} < {}; ++i{}) {{\n", in, n_name, n_name, n_name);
  out += fmt::format("{}  const {} {} = i{};\n", in, it_, var(last.var), n_name);
  body(in + "  ", "0");
  out += in + "}\n";
  for (size_t j = 0; j + 1 < st.loops.size(); ++j) {
    in.resize(in.size() - 2);
    out += in + "}\n";
  }
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    const char* t = inductor::ctype_name(n.body->type);
    std::string r = fmt::format("r{}", n.node);
    out += fmt::format("{}{} {} = acc{}[0];\n{}for (int j = 1; j < {}; ++j) {} = {};\n", ind, t, r, n.node, ind, kLanes,
                       r, reduce_combine(ln.reduce_op, r, fmt::format("acc{}[j]", n.node)));
    if (ln.reduce_op == inductor::ReduceOp::mean) out += fmt::format("{}{} = {} / ({}){};\n", ind, r, r, t, idx(st.elems));
    store(n, r, out, ind);
    values_[n.node] = r;
  }
}

// kLanes consecutive rows at once (KernelPlan::column_lanes): the reduced loops outside, the lanes inside, so each
// load is contiguous across the lanes. The row variable of the last outer dim is redeclared per lane, and the
// kernel's later stages (one element per row) run per lane on the lane's reduced values.
void KernelWriter::emit_column_block(const StagePlan& st, std::string& out, const std::string& ind) {
  const std::string row = var(k_.outer.back().var);
  out += fmt::format("{}const {} base_ = {};\n", ind, it_, row);
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    const char* t = inductor::ctype_name(n.body->type);
    out += fmt::format("{}// {}: {} over {}, {} rows at once\n", ind, ln.origin, inductor::reduce_op_name(ln.reduce_op),
                       idx(st.elems), kLanes);
    out += fmt::format("{}{} acc{}[{}];\n{}for (int j = 0; j < {}; ++j) acc{}[j] = {};\n", ind, t, n.node, kLanes, ind,
                       kLanes, n.node, reduce_init(ln.reduce_op, n.body->type));
  }
  std::string in = ind;
  for (const LoopDim& d : st.loops) {
    out += loop(d, in);
    in += "  ";
  }
  out += fmt::format("{}#pragma omp simd\n{}for (int j = 0; j < {}; ++j) {{\n", in, in, kLanes);
  out += fmt::format("{}  const {} {} = base_ + j;\n", in, it_, row);
  names_.clear();
  for (const PlannedNode& n : st.nodes) {
    std::string v = emit(n.body, out, in + "  ");
    std::string acc = fmt::format("acc{}[j]", n.node);
    out += fmt::format("{}  {} = {};\n", in, acc, reduce_combine(p_.nodes[n.node].reduce_op, acc, v));
  }
  names_.clear();
  out += in + "}\n";
  for (size_t j = 0; j < st.loops.size(); ++j) {
    in.resize(in.size() - 2);
    out += in + "}\n";
  }
  out += fmt::format("{}for (int j = 0; j < {}; ++j) {{\n{}  const {} {} = base_ + j;\n", ind, kLanes, ind, it_, row);
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    const char* t = inductor::ctype_name(n.body->type);
    std::string r = fmt::format("acc{}[j]", n.node);
    if (ln.reduce_op == inductor::ReduceOp::mean) r = fmt::format("{} / ({}){}", r, t, idx(st.elems));
    const std::string name = fmt::format("r{}", n.node);
    out += fmt::format("{}  const {} {} = {};\n", ind, t, name, r);
    store(n, name, out, ind + "  ");
    values_[n.node] = name;
  }
  for (size_t i = 1; i < k_.stages.size(); ++i) {
    stage_ = &k_.stages[i];
    emit_pointwise_stage(k_.stages[i], out, ind + "  ");
  }
  stage_ = &st;
  out += ind + "}\n";
}

// The flat body: each node's value, stored.
void KernelWriter::emit_flat_body(const StagePlan& st, std::string& out, const std::string& ind) {
  names_.clear();
  for (const PlannedNode& n : st.nodes) {
    out += fmt::format("{}// {}\n", ind, p_.nodes[n.node].origin);
    std::string v = emit(n.body, out, ind);
    store(n, v, out, ind, n.body);
    values_[n.node] = v;
  }
}

// A flat pointwise stage that copies across a transposition: a short inner dim (at most 64 elements) read at a
// stride of a cache line or more by some load that is contiguous along the row variable (the next dim out), as
// an NCHW -> channels-last copy reads its channels. Row by row, such a load gathers one element from each of
// `inner` planes 16 KB apart, which share a cache set (1.9 ms for a [2, 32, 64, 64] copy instead of 0.1).
bool KernelWriter::transposing(const StagePlan& st) const {
  if (st.loops.size() < 2 || !st.loops.back().size->is_const() || st.loops.back().size->value() > 64) return false;
  const int inner = st.loops.back().var, row = st.loops[st.loops.size() - 2].var;
  int nvars = 0;
  for (const LoopDim& d : st.loops) nvars = std::max(nvars, d.var + 1);
  std::unordered_set<SExpr> seen;
  std::vector<SExpr> stack;
  for (const PlannedNode& n : st.nodes) {
    if (!n.body) return false;
    // The store must be contiguous along the inner dim (the output's order), or this is not a transposition.
    std::vector<ExprPtr> c;
    ExprPtr rest;
    if (!inductor::affine_split(n.store, nvars, c, rest) || !c[inner]->is_const(1)) return false;
    stack.push_back(n.body);
  }
  while (!stack.empty()) {
    SExpr e = stack.back();
    stack.pop_back();
    if (!seen.insert(e).second) continue;
    for (SExpr a : e->args) stack.push_back(a);
    if (e->kind != SKind::kLoad || load_elements_.count(e)) continue;
    std::vector<ExprPtr> c;
    ExprPtr rest;
    if (inductor::affine_split(e->offset, nvars, c, rest) && c[row]->is_const(1) && c[inner]->is_const() &&
        c[inner]->value() >= 16)
      return true;
  }
  return false;
}

// Loads at a constant offset (a 0-d value, one element of a broadcast) from buffers the kernel does not write are
// read once, before the loops: declarations for the kernel's head; the body then names them. A load
// per element of such a value kept g++ 12 from vectorising a softmax's exp loop whose logits were divided by a 0-d
// scale ("control flow in loop": 0.16 ms instead of 0.02 for a [2, 4, 64, 64] softmax).
std::string KernelWriter::hoist_invariant_loads() {
  std::unordered_set<int> written;
  std::vector<SExpr> roots;
  for (const StagePlan& st : k_.stages)
    for (const PlannedNode& n : st.nodes) {
      written.insert(p_.nodes[n.node].out);
      if (n.body) roots.push_back(n.body);
    }
  std::string out;
  std::unordered_set<SExpr> seen;
  std::vector<SExpr> stack = roots;  // explicit: a body can be thousands of nodes deep
  while (!stack.empty()) {
    SExpr e = stack.back();
    stack.pop_back();
    if (!seen.insert(e).second) continue;
    for (SExpr a : e->args) stack.push_back(a);
    if (e->kind != SKind::kLoad || written.count(e->buffer) || !e->offset->is_const()) continue;
    // Only where the element exists whatever the loops do: a buffer of constant, nonzero size (a kernel over an
    // empty domain must not read an empty buffer's element 0).
    const std::vector<ExprPtr>& sizes = p_.buffers[e->buffer].sizes;
    if (!std::all_of(sizes.begin(), sizes.end(), [](const ExprPtr& d) { return d->is_const() && d->value() > 0; }))
      continue;
    const std::string name = fmt::format("h{}", load_elements_.size());
    out += fmt::format("  const {} {} = {}[{}];\n", storage_type(p_.buffers[e->buffer].dtype), name, buf(e->buffer),
                       idx(e->offset));
    load_elements_[e] = name;
  }
  return out;
}

std::string KernelWriter::write() {
  it_ = index_type();
  const std::string hoisted = hoist_invariant_loads();
  std::string body;
  std::string ind = "  ";
  if (k_.rows && k_.column_lanes) {
    // Blocks of kLanes rows where they lie within one run of the last outer dim; single rows elsewhere.
    const StagePlan& st = k_.stages.at(0);
    stage_ = &st;
    const std::string row = var(k_.outer.back().var);
    body += fmt::format("{}for ({} o_ = begin_; o_ < end_;) {{\n", ind, it_);
    body += unravel(k_.outer, "o_", ind + "  ");
    body += fmt::format("{}  if (o_ + {} <= end_ && {} + {} <= {}) {{\n", ind, kLanes, row, kLanes,
                        idx(k_.outer.back().size));
    emit_column_block(st, body, ind + "    ");
    body += fmt::format("{}    o_ += {};\n{}  }} else {{\n", ind, kLanes, ind);
    for (const StagePlan& s : k_.stages) {
      stage_ = &s;
      if (s.reduction) emit_reduction_stage(s, body, ind + "    ");
      else emit_pointwise_stage(s, body, ind + "    ");
    }
    stage_ = &st;
    body += fmt::format("{}    ++o_;\n{}  }}\n", ind, ind);
    body += ind + "}\n";
  } else if (k_.rows) {
    body += fmt::format("{}for ({} o_ = begin_; o_ < end_; ++o_) {{\n", ind, it_);
    body += unravel(k_.outer, "o_", ind + "  ");
    for (const StagePlan& st : k_.stages) {
      stage_ = &st;
      if (st.reduction) emit_reduction_stage(st, body, ind + "  ");
      else emit_pointwise_stage(st, body, ind + "  ");
    }
    body += ind + "}\n";
  } else {
    // Flat pointwise: [begin, end) counts elements of the whole (coalesced) domain; each row segment is one
    // vectorised inner loop.
    const StagePlan& st = k_.stages.at(0);
    stage_ = &st;
    const LoopDim& last = st.loops.back();
    std::vector<LoopDim> outer(st.loops.begin(), st.loops.end() - 1);
    body += fmt::format("{}const {} inner_ = {};\n", ind, it_, idx(last.size));
    body += fmt::format("{}for ({} pos_ = begin_; pos_ < end_;) {{\n", ind, it_);
    std::string in = ind + "  ";
    body += fmt::format("{}const {} row_ = pos_ / inner_;\n", in, it_);
    body += fmt::format("{}const {} lo_ = pos_ - row_ * inner_;\n", in, it_);
    body += fmt::format("{}const {} hi_ = ({})sn_imin(inner_, end_ - row_ * inner_);\n", in, it_, it_);
    body += unravel(outer, "row_", in);
    if (transposing(st)) {
      // kLanes whole rows at once where they lie within one run of the row variable: the inner dim outside, the
      // rows in the vector loop, so the transposed reads are contiguous and each tile's lines stay in cache.
      const LoopDim& rows = outer.back();
      const std::string row = var(rows.var);
      body += fmt::format("{}if (lo_ == 0 && pos_ + {} * inner_ <= end_ && {} + {} <= {}) {{\n", in, kLanes, row,
                          kLanes, idx(rows.size));
      body += fmt::format("{}  const {} base_ = {};\n", in, it_, row);
      body += fmt::format("{}  for ({} {} = 0; {} < inner_; ++{}) {{\n", in, it_, var(last.var), var(last.var),
                          var(last.var));
      body += in + "    #pragma omp simd\n";
      body += fmt::format("{}    for (int j = 0; j < {}; ++j) {{\n{}      const {} {} = base_ + j;\n", in, kLanes, in,
                          it_, row);
      emit_flat_body(st, body, in + "      ");
      body += in + "    }\n" + in + "  }\n";
      body += fmt::format("{}  pos_ += {} * inner_;\n{}  continue;\n{}}}\n", in, kLanes, in, in);
    }
    body += in + "#pragma omp simd\n";
    body += fmt::format("{}for ({} {} = lo_; {} < hi_; ++{}) {{\n", in, it_, var(last.var), var(last.var), var(last.var));
    emit_flat_body(st, body, in + "  ");
    body += in + "}\n";
    body += in + "pos_ = (row_ + 1) * inner_;\n";
    body += ind + "}\n";
  }
  // Header: comments, then buffers and symbols as locals.
  size_t count = 0;
  for (const StagePlan& st : k_.stages) count += st.nodes.size();
  std::string head = fmt::format("// {}: {} node(s){}\n", k_.name, count, k_.epilogue_of.empty() ? "" : ", a GEMM epilogue");
  for (const StagePlan& st : k_.stages)
    for (const PlannedNode& n : st.nodes) head += fmt::format("//   loop node {}: {}\n", n.node, p_.nodes[n.node].origin);
  head += fmt::format("extern \"C\" void {}(void* args_, sn_i64 begin, sn_i64 end) {{\n", k_.name);
  head += "  const sn_kargs* a_ = (const sn_kargs*)args_;\n";
  head += fmt::format("  const {0} begin_ = ({0})begin, end_ = ({0})end;{1}\n", it_,
                      k_.index32 ? "  // every index fits in 32 bits" : "");
  for (int s = 0; s < p_.num_symbols; ++s) head += fmt::format("  const sn_i64 s{} = a_->syms[{}];\n", s, s);
  for (size_t i = 0; i < k_.buffers.size(); ++i) {
    const Buffer& b = p_.buffers[k_.buffers[i]];
    head += fmt::format("  {}* __restrict__ b{} = ({}*)a_->bufs[{}];  // {}\n", storage_type(b.dtype), i,
                        storage_type(b.dtype), i, b.name);
  }
  return head + hoisted + body + "}\n";
}

}  // namespace

GeneratedCode generate(const LoopProgram& program, const inductor::ProgramPlan& plan, int max_units) {
  GeneratedCode g;
  std::vector<std::string> fns;
  for (const KernelPlan& k : plan.kernels)
    if (!k.name.empty()) fns.push_back(KernelWriter(program, k).write());
  if (fns.empty()) return g;
  size_t units = std::clamp<size_t>(static_cast<size_t>(max_units), 1, fns.size());
  std::vector<std::string> parts(units);
  // Contiguous groups of similar length keep related kernels together in one file.
  size_t total = 0;
  for (const std::string& f : fns) total += f.size();
  size_t target = total / units + 1, u = 0, acc = 0;
  for (const std::string& f : fns) {
    if (acc >= target && u + 1 < units) {
      ++u;
      acc = 0;
    }
    parts[u] += f + "\n";
    acc += f.size();
  }
  for (std::string& part : parts) {
    if (part.empty()) continue;
    g.units.push_back(std::string(prelude()) + kPreamble + "\n" + part);
  }
  return g;
}

}  // namespace sinter::codegen::cpp
