#include "codegen/cuda/cuda_codegen.h"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "codegen/cpp/body_emitter.h"
#include "codegen/cpp/cpp_ops.h"
#include "codegen/cpp/prelude.h"
#include "codegen/cuda/vector_access.h"
#include "support/check.h"
#include "symbolic/shape_env.h"

namespace sinter::codegen::cuda {

using cpp::load_str;
using cpp::reduce_combine;
using cpp::reduce_init;
using cpp::storage_type;
using cpp::store_str;
using inductor::Buffer;
using inductor::CType;
using inductor::KernelPlan;
using inductor::LoopDim;
using inductor::LoopNode;
using inductor::LoopProgram;
using inductor::PlannedNode;
using inductor::StagePlan;

namespace {

constexpr unsigned kBlock = 256;  // threads of a flat kernel's block, and of a block of small row groups

constexpr const char* kHelpers = R"(
// ---- CUDA helpers ----
// N elements read or written as one access (16 bytes at most; its address is a multiple of its size).
template <typename T, int N> struct alignas(sizeof(T) * N) sn_vec { T v[N]; };
SN_INLINE sn_i64 sn_imin(sn_i64 a, sn_i64 b) { return a < b ? a : b; }
SN_INLINE sn_i64 sn_imax(sn_i64 a, sn_i64 b) { return a > b ? a : b; }
SN_INLINE sn_i64 sn_ifloordiv(sn_i64 a, sn_i64 b) {
  sn_i64 q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
SN_INLINE sn_i64 sn_imod(sn_i64 a, sn_i64 b) {
  sn_i64 r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// Where a kernel raises its error flag (integer division by zero): `a_->error[0] = 1` as in the C++ kernels.
struct sn_err_ { int* error; };
// The lanes of this thread's row group inside its warp (groups of 4..32 lanes).
SN_INLINE unsigned sn_group_mask(int group) {
  return group >= 32 ? 0xffffffffu : ((1u << group) - 1u) << ((threadIdx.x & 31u) / group * group);
}
SN_INLINE float sn_shfl_xor(float v, int m, unsigned mask) { return __shfl_xor_sync(mask, v, m); }
SN_INLINE double sn_shfl_xor(double v, int m, unsigned mask) { return __shfl_xor_sync(mask, v, m); }
SN_INLINE sn_i64 sn_shfl_xor(sn_i64 v, int m, unsigned mask) { return __shfl_xor_sync(mask, v, m); }
SN_INLINE sn_i32 sn_shfl_xor(sn_i32 v, int m, unsigned mask) { return __shfl_xor_sync(mask, v, m); }
SN_INLINE sn_i8 sn_shfl_xor(sn_i8 v, int m, unsigned mask) { return (sn_i8)__shfl_xor_sync(mask, (int)v, m); }
SN_INLINE sn_u8 sn_shfl_xor(sn_u8 v, int m, unsigned mask) { return (sn_u8)__shfl_xor_sync(mask, (int)v, m); }
SN_INLINE bool sn_shfl_xor(bool v, int m, unsigned mask) { return __shfl_xor_sync(mask, (int)v, m) != 0; }
// ---- end of CUDA helpers ----
)";

// A power of two in [lo, hi] at least n (hi when n is larger).
unsigned pow2_at_least(int64_t n, unsigned lo, unsigned hi) {
  unsigned g = lo;
  while (g < hi && g < n) g *= 2;
  return g;
}

constexpr int kMaxVector = 8;          // elements per vector access (16 bytes at most)
constexpr int kMaxPersistent = 32;     // elements per thread a whole-row kernel keeps in registers per array
constexpr int kRegisterBudget = 96;    // elements per thread all of a row's register arrays may hold
constexpr int64_t kSplitRows = 32;     // a reduction of at most this many rows (by the size hints) ...
constexpr int64_t kSplitElems = 8192;  // ... of at least this many elements each splits its rows across blocks
constexpr int kColumnWarps = 8;        // a column reduction's block: 32 rows by this many warps

// One memory access of a stage: a load (or a kept value read back), a store, or a kept value's store.
struct Access {
  int buffer = -1;
  ExprPtr offset;
};

class KernelWriter : cpp::BodyEmitter {
 public:
  KernelWriter(const LoopProgram& p, const KernelPlan& k) : BodyEmitter(p, k) {}
  CudaKernel write();

 private:
  // How the elements of a row (or of a flat kernel) are walked.
  struct Walk {
    int v = 1;               // consecutive innermost elements per thread and step (vector width)
    int slots = 0;           // > 0: whole rows in registers, `slots` steps per thread, unrolled
  };
  void choose_vector();
  bool is_vector(const Access& a, int last) const;
  std::vector<Access> accesses(const StagePlan& st) const;
  void collect_loads(const StagePlan& st, std::vector<inductor::SExpr>& loads) const;
  void element_block(const StagePlan& st, const Walk& w, std::string& out, const std::string& ind);
  void stage_loop(const StagePlan& st, const Walk& w, std::string& out, const std::string& ind);
  void reduction_stage(const StagePlan& st, const Walk& w, std::string& out, const std::string& ind);
  void combine_group(const PlannedNode& n, const std::string& acc, std::string& out, const std::string& ind) const;
  void store_result(const PlannedNode& n, const std::string& acc, std::string& out, const std::string& ind) const;
  std::string split_body(const Walk& w, const std::string& ind);
  std::string column_body(const std::string& ind);
  std::string rows_body(const Walk& w, const std::string& ind);
  std::string flat_body(const Walk& w, const std::string& ind);
  std::string group_sync() const { return group_ > 32 ? "__syncthreads();" : "__syncwarp(mask_);"; }
  int64_t hint(const ExprPtr& e) const;
  std::string vec_type(int buffer, int v) const {
    return fmt::format("sn_vec<{}, {}>", storage_type(p_.buffers[buffer].dtype), v);
  }

  std::string it_;
  unsigned group_ = 0;
  int v_ = 1;                           // the vector path's width (1: there is only a scalar path)
  std::vector<inductor::VectorCheck> checks_;  // launch-time tests of the vector path (none: it always runs)
  // Whole-row kernels: register arrays of the row being computed, declared at the top of the row.
  std::string decls_, decl_ind_;
  std::unordered_map<std::string, std::string> cached_;  // "b3[offset]" -> the array holding it
  int registers_ = 0;
};

int64_t KernelWriter::hint(const ExprPtr& e) const {
  if (e->is_const()) return e->value();
  if (p_.shape_env) return sym::evaluate(*e, p_.shape_env->hints());
  return 1 << 20;
}

int last_var(const StagePlan& st) { return st.loops.empty() ? -1 : st.loops.back().var; }

void KernelWriter::collect_loads(const StagePlan& st, std::vector<inductor::SExpr>& loads) const {
  std::unordered_set<inductor::SExpr> seen;
  std::vector<inductor::SExpr> stack;
  for (const PlannedNode& n : st.nodes) stack.push_back(n.body);
  while (!stack.empty()) {
    inductor::SExpr e = stack.back();
    stack.pop_back();
    if (!seen.insert(e).second) continue;
    if (e->kind == inductor::SKind::kLoad) {
      if (!st.forwarded.count(e)) loads.push_back(e);
    } else {
      for (inductor::SExpr a : e->args) stack.push_back(a);
    }
  }
  // Deterministic order: by buffer, then by the offset's text.
  std::sort(loads.begin(), loads.end(), [](inductor::SExpr a, inductor::SExpr b) {
    if (a->buffer != b->buffer) return a->buffer < b->buffer;
    return sym::to_string(a->offset) < sym::to_string(b->offset);
  });
}

std::vector<Access> KernelWriter::accesses(const StagePlan& st) const {
  std::vector<Access> out;
  std::vector<inductor::SExpr> loads;
  collect_loads(st, loads);
  for (inductor::SExpr e : loads) out.push_back({e->buffer, e->offset});
  for (const PlannedNode& n : st.nodes) {
    const int b = p_.nodes[n.node].out;
    if (n.stored || !n.loaded_keeps.empty()) out.push_back({b, n.store});
    if (n.keep_for >= 0) out.push_back({p_.nodes[n.keep_for].out, n.keep_at});
  }
  return out;
}

bool KernelWriter::is_vector(const Access& a, int last) const {
  return v_ > 1 && last >= 0 && contiguous_in(a.offset, last) && alignment_conditions(a.offset, last, v_);
}

// The widest vector (16 bytes at most) that the contiguous accesses of every stage allow, with the run-time tests
// that make it valid: each vector buffer's address aligned, each innermost size and size-dependent stride a
// multiple of the width.
void KernelWriter::choose_vector() {
  size_t widest = 0;
  for (const StagePlan& st : k_.stages) {
    int last = last_var(st);
    if (last < 0) return;
    for (const Access& a : accesses(st))
      if (contiguous_in(a.offset, last)) widest = std::max(widest, element_size(p_.buffers[a.buffer].dtype));
  }
  if (widest == 0) return;
  int v = std::min<int>(kMaxVector, static_cast<int>(16 / widest));
  for (const StagePlan& st : k_.stages) {
    const ExprPtr& inner = st.loops.back().size;
    while (v > 1 && inner->is_const() && inner->value() % v != 0) v /= 2;
  }
  v_ = v;
  if (v_ == 1) return;
  std::set<std::string> seen;  // each test once, by its text
  auto divisible = [&](const ExprPtr& e) {
    if (seen.insert(fmt::format("({}) % {}", idx(e), v_)).second) checks_.push_back({-1, 0, e, v_});
  };
  bool any = false;
  for (const StagePlan& st : k_.stages) {
    int last = last_var(st);
    const ExprPtr& inner = st.loops.back().size;
    if (!inner->is_const()) divisible(inner);
    for (const Access& a : accesses(st)) {
      if (!contiguous_in(a.offset, last)) continue;
      auto extra = alignment_conditions(a.offset, last, v_);
      if (!extra) continue;
      any = true;
      const unsigned bytes = static_cast<unsigned>(v_ * element_size(p_.buffers[a.buffer].dtype));
      if (seen.insert(fmt::format("{} & {}", buf(a.buffer), bytes - 1)).second)
        checks_.push_back({k_.argument(a.buffer), bytes, nullptr, 1});
      for (const ExprPtr& e : *extra) divisible(e);
    }
  }
  if (!any) {
    v_ = 1;
    checks_.clear();
  }
}

// The stage's nodes at V consecutive innermost elements: the loop variables are bound, the innermost one at the
// first of them (a multiple of V). Vector accesses read and write V elements at once; the rest element by element.
// A whole-row walk keeps what it reads (and the values a reduction keeps for a later stage) in register arrays
// indexed by the slot `s_`, read by the later stages of the same row instead of memory.
void KernelWriter::element_block(const StagePlan& st, const Walk& w, std::string& out, const std::string& ind) {
  const int last = last_var(st);
  const bool whole = w.slots > 0;
  const std::string k = w.v > 1 ? "k_" : "0";
  const std::string slot = whole ? "[s_]" : "";
  std::vector<inductor::SExpr> loads;
  if (w.v > 1 || whole) collect_loads(st, loads);
  load_elements_.clear();
  for (inductor::SExpr e : loads) {
    Access a{e->buffer, e->offset};
    if (!(w.v > 1 ? is_vector(a, last) : whole)) continue;
    std::string key = fmt::format("{}[{}]", buf(e->buffer), idx(e->offset));
    std::string read = fmt::format("*(const {}*)&{}", vec_type(e->buffer, w.v), key);
    auto c = cached_.find(key);
    std::string name;
    if (c != cached_.end()) {
      name = c->second;
    } else if (whole && registers_ + w.slots * w.v <= kRegisterBudget) {
      name = fmt::format("L{}_", cached_.size());
      decls_ += fmt::format("{}{} {}[{}];  // {} of the row\n", decl_ind_, vec_type(e->buffer, w.v), name, w.slots,
                            key);
      registers_ += w.slots * w.v;
      cached_[key] = name;
      out += fmt::format("{}{}{} = {};\n", ind, name, slot, read);
    } else {
      name = fmt::format("l{}_", tmp_++);
      out += fmt::format("{}const {} {} = {};\n", ind, vec_type(e->buffer, w.v), name, read);
      load_elements_[e] = fmt::format("{}.v[{}]", name, k);
      continue;
    }
    load_elements_[e] = fmt::format("{}{}.v[{}]", name, slot, k);
  }
  // Vector stores collect their V elements here and write them after the element loop.
  std::vector<std::pair<std::string, std::string>> vector_stores;  // (variable, store statement)
  std::unordered_map<int, std::string> store_vars;                  // loop node -> its vector variable
  for (const PlannedNode& n : st.nodes) {
    if (!n.stored || st.reduction || w.v == 1) continue;
    const int b = p_.nodes[n.node].out;
    if (!is_vector({b, n.store}, last)) continue;
    std::string name = fmt::format("S{}_", n.node);
    out += fmt::format("{}{} {};\n", ind, vec_type(b, w.v), name);
    store_vars[n.node] = name;
    vector_stores.push_back({name, fmt::format("*({}*)&{}[{}] = {};", vec_type(b, w.v), buf(b), idx(n.store), name)});
  }
  std::string in = ind;
  if (w.v > 1) {
    out += fmt::format("{}const {} vb_ = {};\n", ind, it_, var(last));
    out += fmt::format("{}#pragma unroll\n{}for (int k_ = 0; k_ < {}; ++k_) {{\n", ind, ind, w.v);
    in = ind + "  ";
    out += fmt::format("{}const {} {} = vb_ + k_;\n", in, it_, var(last));
  }
  const std::string element = whole ? fmt::format("[s_ * {} + {}]", w.v, k) : "";
  names_.clear();
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    if (!st.reduction) out += fmt::format("{}// {}\n", in, ln.origin);
    for (inductor::SExpr x : n.loaded_keeps) {  // kept here by the reduction stage that computed it
      std::string name = fmt::format("t{}", tmp_++);
      std::string from = whole ? fmt::format("K{}_{}", n.node, element)
                               : fmt::format("{}[{}]", buf(ln.out), idx(n.store));
      out += fmt::format("{}const float {} = {};\n", in, name, from);
      names_[x] = name;
    }
    std::string v = emit(n.body, out, in);
    if (st.reduction) {
      if (n.keep_for >= 0) {
        const LoopNode& keeper = p_.nodes[n.keep_for];
        if (whole)
          out += fmt::format("{}K{}_{} = {};  // kept for {}\n", in, n.keep_for, element, v, keeper.origin);
        else
          out += fmt::format("{}{}[{}] = {};  // kept for {}\n", in, buf(keeper.out), idx(n.keep_at), v, keeper.origin);
      }
      std::string acc = fmt::format("acc{}", n.node);
      out += fmt::format("{}{} = {};\n", in, acc, reduce_combine(ln.reduce_op, acc, v));
    } else if (n.stored) {
      auto s = store_vars.find(n.node);
      if (s != store_vars.end())
        out += fmt::format("{}{}.v[k_] = {};\n", in, s->second, stored(n.body, v, p_.buffers[ln.out].dtype));
      else
        out += fmt::format("{}{}[{}] = {};\n", in, buf(ln.out), idx(n.store), stored(n.body, v, p_.buffers[ln.out].dtype));
    }
    if (!st.reduction) values_[n.node] = v;
  }
  names_.clear();
  load_elements_.clear();
  if (w.v > 1) out += ind + "}\n";
  for (const auto& [name, statement] : vector_stores) out += fmt::format("{}{}\n", ind, statement);
}

// One stage over the elements of the current row: a group of group_ threads, each V consecutive elements a step.
void KernelWriter::stage_loop(const StagePlan& st, const Walk& w, std::string& out, const std::string& ind) {
  const int64_t step = static_cast<int64_t>(group_) * w.v;
  std::string in = ind + "  ";
  bool guarded = false;
  if (w.slots > 0) {
    out += fmt::format("{}#pragma unroll\n{}for (int s_ = 0; s_ < {}; ++s_) {{\n", ind, ind, w.slots);
    out += fmt::format("{}const {} q_ = ({})(lane_ + s_ * {}) * {};\n", in, it_, it_, group_, w.v);
    guarded = !st.elems->is_const() || st.elems->value() != step * w.slots;  // the last steps reach past the row
    if (guarded) {
      out += fmt::format("{}if (q_ < ({}){}) {{\n", in, it_, idx(st.elems));
      in += "  ";
    }
  } else {
    if (w.v == 1) out += fmt::format("{}#pragma unroll 4\n", ind);
    out += fmt::format("{}for ({} q_ = lane_ * {}; q_ < ({}){}; q_ += {}) {{\n", ind, it_, w.v, it_, idx(st.elems), step);
  }
  out += unravel(st.loops, "q_", in);
  element_block(st, w, out, in);
  if (guarded) out += ind + "  }\n";
  out += ind + "}\n";
}

void KernelWriter::reduction_stage(const StagePlan& st, const Walk& w, std::string& out, const std::string& ind) {
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    out += fmt::format("{}// {}: {} over {}\n", ind, ln.origin, inductor::reduce_op_name(ln.reduce_op), idx(st.elems));
    out += fmt::format("{}{} acc{} = {};\n", ind, inductor::ctype_name(n.body->type), n.node,
                       reduce_init(ln.reduce_op, n.body->type));
    if (n.keep_for >= 0 && w.slots > 0) {
      decls_ += fmt::format("{}float K{}_[{}];  // kept for {}\n", decl_ind_, n.keep_for, w.slots * w.v,
                            p_.nodes[n.keep_for].origin);
      registers_ += w.slots * w.v;
    }
  }
  stage_loop(st, w, out, ind);
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    std::string acc = fmt::format("acc{}", n.node);
    combine_group(n, acc, out, ind);
    if (ln.reduce_op == inductor::ReduceOp::mean)
      out += fmt::format("{}{} = {} / ({}){};\n", ind, acc, acc, inductor::ctype_name(n.body->type), idx(st.elems));
    store_result(n, acc, out, ind);
    values_[n.node] = acc;
  }
}

// The group's partial results of `acc` combined into every lane: shuffles inside each warp, then (a whole-block
// group) shared memory.
void KernelWriter::combine_group(const PlannedNode& n, const std::string& acc, std::string& out,
                                 const std::string& ind) const {
  const LoopNode& ln = p_.nodes[n.node];
  const char* t = inductor::ctype_name(n.body->type);
  unsigned lanes = std::min(group_, 32u);
  // The partner's value is shuffled once per step, by every lane (a combine may read its operand twice).
  out += fmt::format("{}for (int m_ = {}; m_ > 0; m_ >>= 1) {{\n{}  const {} o_ = sn_shfl_xor({}, m_, mask_);\n{}  {} = {};\n{}}}\n",
                     ind, lanes / 2, ind, t, acc, ind, acc, reduce_combine(ln.reduce_op, acc, "o_"), ind);
  if (group_ > 32) {
    unsigned warps = group_ / 32;
    out += fmt::format("{}{{\n{}  __shared__ {} red_[{}];\n", ind, ind, t, warps);
    out += fmt::format("{}  if ((threadIdx.x & 31u) == 0) red_[threadIdx.x >> 5] = {};\n{}  __syncthreads();\n", ind,
                       acc, ind);
    out += fmt::format("{}  {} = red_[0];\n{}  for (int w_ = 1; w_ < {}; ++w_) {} = {};\n{}  __syncthreads();\n{}}}\n",
                       ind, acc, ind, warps, acc, reduce_combine(ln.reduce_op, acc, "red_[w_]"), ind, ind);
  }
}

void KernelWriter::store_result(const PlannedNode& n, const std::string& acc, std::string& out,
                                const std::string& ind) const {
  if (!n.stored) return;
  const int b = p_.nodes[n.node].out;
  out += fmt::format("{}if (lane_ == 0) {}[{}] = {};\n", ind, buf(b), idx(n.store), store_str(p_.buffers[b].dtype, acc));
}

// Few long rows (a whole-tensor sum): each row is split into `parts_` chunks, one block each. A block reduces its
// chunk, writes its partial result to the workspace and counts itself in the row's counter; the block that counts
// last combines the row's partials (in chunk order, so the result does not depend on which block was last) and
// stores the result. The launcher zeroes the counters and picks parts_ from the multiprocessor count.
std::string KernelWriter::split_body(const Walk& w, const std::string& ind) {
  const StagePlan& st = k_.stages.at(0);
  stage_ = &st;
  const int64_t step = static_cast<int64_t>(group_) * w.v;
  std::string out, in = ind + "  ";
  out += fmt::format("{}for (sn_i64 b_ = blockIdx.x; b_ < rows_ * parts_; b_ += gridDim.x) {{\n", ind);
  out += fmt::format("{}const sn_i64 row_ = b_ / parts_, part_ = b_ % parts_;\n", in);
  out += fmt::format("{}const {} o_ = ({})row_;\n", in, it_, it_);
  out += unravel(k_.outer, "o_", in);
  out += fmt::format("{}const sn_i64 elems_ = {};\n", in, idx(st.elems));
  out += fmt::format("{}const sn_i64 chunk_ = ((elems_ + parts_ - 1) / parts_ + {} - 1) / {} * {};\n", in, step, step,
                     step);
  out += fmt::format("{}const {} lo_ = ({})(part_ * chunk_), hi_ = ({})sn_imin(elems_, part_ * chunk_ + chunk_);\n", in,
                     it_, it_, it_);
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    out += fmt::format("{}// {}: {} over {}, this block's chunk\n", in, ln.origin, inductor::reduce_op_name(ln.reduce_op),
                       idx(st.elems));
    out += fmt::format("{}{} acc{} = {};\n", in, inductor::ctype_name(n.body->type), n.node,
                       reduce_init(ln.reduce_op, n.body->type));
  }
  out += fmt::format("{}#pragma unroll 4\n{}for ({} q_ = lo_ + lane_ * {}; q_ < hi_; q_ += {}) {{\n", in, in, it_, w.v, step);
  out += unravel(st.loops, "q_", in + "  ");
  element_block(st, w, out, in + "  ");
  out += in + "}\n";
  for (size_t i = 0; i < st.nodes.size(); ++i) {
    const PlannedNode& n = st.nodes[i];
    std::string acc = fmt::format("acc{}", n.node);
    combine_group(n, acc, out, in);
    out += fmt::format("{}if (threadIdx.x == 0) (({}*)(ws_ + {} * 8 * rows_ * parts_))[b_] = {};\n", in,
                       inductor::ctype_name(n.body->type), i, acc);
  }
  out += fmt::format("{}__shared__ bool last_;\n", in);
  out += fmt::format("{}if (threadIdx.x == 0) {{\n{}  __threadfence();  // the partials are visible before the count\n"
                     "{}  last_ = atomicAdd(&count_[row_], 1u) == (unsigned)(parts_ - 1);\n{}}}\n{}__syncthreads();\n",
                     in, in, in, in, in);
  out += fmt::format("{}if (last_) {{  // every partial of the row is written: combine them\n", in);
  std::string in2 = in + "  ";
  out += fmt::format("{}__threadfence();\n", in2);
  for (size_t i = 0; i < st.nodes.size(); ++i) {
    const PlannedNode& n = st.nodes[i];
    const LoopNode& ln = p_.nodes[n.node];
    const char* t = inductor::ctype_name(n.body->type);
    std::string acc = fmt::format("acc{}", n.node);
    out += fmt::format("{}{} = {};\n", in2, acc, reduce_init(ln.reduce_op, n.body->type));
    out += fmt::format("{}for (sn_i64 j_ = lane_; j_ < parts_; j_ += {}) {{\n{}  const {} p_ = ((volatile {}*)(ws_ + {} * 8 * "
                       "rows_ * parts_))[row_ * parts_ + j_];\n{}  {} = {};\n{}}}\n",
                       in2, group_, in2, t, t, i, in2, acc, reduce_combine(ln.reduce_op, acc, "p_"), in2);
    combine_group(n, acc, out, in2);
    if (ln.reduce_op == inductor::ReduceOp::mean) out += fmt::format("{}{} = {} / ({})elems_;\n", in2, acc, acc, t);
    store_result(n, acc, out, in2);
  }
  out += in + "}\n";
  out += in + "__syncthreads();  // last_ is read by every thread before the next chunk sets it\n";
  out += ind + "}\n";
  return out;
}

// Column reductions (KernelPlan::column_lanes: loads contiguous across consecutive rows and strided along the
// reduced dim, as in a bias's gradient): a block's 32 lanes take 32 consecutive rows (a tile) and its warps every
// kColumnWarps-th reduced element of a chunk, so that each warp's load is one contiguous run. As in split_body, the
// reduced elements are split into parts_ chunks across blocks and the block that counts last in the tile combines
// the partials of each row in chunk order. A lane past the last row loads the last row's elements (in range) and
// stores nothing.
std::string KernelWriter::column_body(const std::string& ind) {
  const StagePlan& st = k_.stages.at(0);
  stage_ = &st;
  const Walk w{1, 0};
  std::string out, in = ind + "  ";
  out += fmt::format("{}const sn_i64 tiles_ = (rows_ + 31) / 32;\n", ind);
  out += fmt::format("{}const unsigned warp_ = threadIdx.x >> 5;\n", ind);
  out += fmt::format("{}for (sn_i64 b_ = blockIdx.x; b_ < tiles_ * parts_; b_ += gridDim.x) {{\n", ind);
  out += fmt::format("{}const sn_i64 tile_ = b_ / parts_, part_ = b_ % parts_, row_ = tile_ * 32 + lane_;\n", in);
  out += fmt::format("{}const bool live_ = row_ < rows_;\n", in);
  out += fmt::format("{}const {} o_ = ({})(live_ ? row_ : rows_ - 1);\n", in, it_, it_);
  out += unravel(k_.outer, "o_", in);
  out += fmt::format("{}const sn_i64 elems_ = {};\n", in, idx(st.elems));
  out += fmt::format("{}const sn_i64 chunk_ = ((elems_ + parts_ - 1) / parts_ + {} - 1) / {} * {};\n", in, kColumnWarps,
                     kColumnWarps, kColumnWarps);
  out += fmt::format("{}const {} lo_ = ({})(part_ * chunk_), hi_ = ({})sn_imin(elems_, part_ * chunk_ + chunk_);\n", in,
                     it_, it_, it_);
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    out += fmt::format("{}// {}: {} over {}, this block's chunk of 32 rows\n", in, ln.origin,
                       inductor::reduce_op_name(ln.reduce_op), idx(st.elems));
    out += fmt::format("{}{} acc{} = {};\n", in, inductor::ctype_name(n.body->type), n.node,
                       reduce_init(ln.reduce_op, n.body->type));
  }
  out += fmt::format("{}#pragma unroll 4\n{}for ({} q_ = lo_ + warp_; q_ < hi_; q_ += {}) {{\n", in, in, it_,
                     kColumnWarps);
  out += unravel(st.loops, "q_", in + "  ");
  element_block(st, w, out, in + "  ");
  out += in + "}\n";
  // The warps' partials of each row, combined in warp order by warp 0.
  for (const PlannedNode& n : st.nodes)
    out += fmt::format("{}__shared__ {} red{}_[{}][32];\n{}red{}_[warp_][lane_] = acc{};\n", in,
                       inductor::ctype_name(n.body->type), n.node, kColumnWarps, in, n.node, n.node);
  out += fmt::format("{}__syncthreads();\n", in);
  auto finish = [&](const PlannedNode& n, const std::string& acc, const std::string& ind2) {
    const LoopNode& ln = p_.nodes[n.node];
    if (ln.reduce_op == inductor::ReduceOp::mean)
      out += fmt::format("{}{} = {} / ({})elems_;\n", ind2, acc, acc, inductor::ctype_name(n.body->type));
    if (!n.stored) return;
    const int b = ln.out;
    out += fmt::format("{}{}[{}] = {};\n", ind2, buf(b), idx(n.store), store_str(p_.buffers[b].dtype, acc));
  };
  std::string in2 = in + "  ", in3 = in2 + "  ";
  out += fmt::format("{}if (warp_ == 0 && live_) {{\n", in);
  for (size_t i = 0; i < st.nodes.size(); ++i) {
    const PlannedNode& n = st.nodes[i];
    const LoopNode& ln = p_.nodes[n.node];
    const std::string acc = fmt::format("acc{}", n.node);
    out += fmt::format("{}{} = red{}_[0][lane_];\n", in2, acc, n.node);
    out += fmt::format("{}for (int w_ = 1; w_ < {}; ++w_) {} = {};\n", in2, kColumnWarps, acc,
                       reduce_combine(ln.reduce_op, acc, fmt::format("red{}_[w_][lane_]", n.node)));
  }
  out += fmt::format("{}if (parts_ == 1) {{\n", in2);
  for (const PlannedNode& n : st.nodes) finish(n, fmt::format("acc{}", n.node), in3);
  out += fmt::format("{}}} else {{\n", in2);
  for (size_t i = 0; i < st.nodes.size(); ++i)
    out += fmt::format("{}(({}*)(ws_ + {} * 8 * rows_ * parts_))[row_ * parts_ + part_] = acc{};\n", in3,
                       inductor::ctype_name(st.nodes[i].body->type), i, st.nodes[i].node);
  out += fmt::format("{}__threadfence();  // the partials are visible before the tile's count\n{}}}\n{}}}\n", in3, in2, in);
  out += fmt::format("{}if (parts_ > 1) {{\n", in);
  out += fmt::format("{}__shared__ bool last_;\n{}__syncthreads();\n", in2, in2);
  out += fmt::format("{}if (threadIdx.x == 0) last_ = atomicAdd(&count_[tile_], 1u) == (unsigned)(parts_ - 1);\n", in2);
  out += fmt::format("{}__syncthreads();\n", in2);
  out += fmt::format("{}if (last_ && warp_ == 0 && live_) {{  // every partial of the tile is written: combine them\n", in2);
  out += fmt::format("{}__threadfence();\n", in3);
  for (size_t i = 0; i < st.nodes.size(); ++i) {
    const PlannedNode& n = st.nodes[i];
    const LoopNode& ln = p_.nodes[n.node];
    const std::string acc = fmt::format("acc{}", n.node);
    const char* t = inductor::ctype_name(n.body->type);
    out += fmt::format("{}{} = {};\n", in3, acc, reduce_init(ln.reduce_op, n.body->type));
    out += fmt::format("{}for (sn_i64 j_ = 0; j_ < parts_; ++j_) {{\n{}  const {} p_ = ((volatile {}*)(ws_ + {} * 8 * "
                       "rows_ * parts_))[row_ * parts_ + j_];\n{}  {} = {};\n{}}}\n",
                       in3, in3, t, t, i, in3, acc, reduce_combine(ln.reduce_op, acc, "p_"), in3);
    finish(n, acc, in3);
  }
  out += in2 + "}\n" + in + "}\n";
  out += in + "__syncthreads();  // red_ and last_ are written again for the next tile\n";
  out += ind + "}\n";
  return out;
}

std::string KernelWriter::rows_body(const Walk& w, const std::string& ind) {
  const unsigned rows = group_ <= 32 ? kBlock / group_ : 1;
  decls_.clear();
  cached_.clear();
  registers_ = 0;
  std::string body;
  std::string in = ind + "  ";
  decl_ind_ = in;
  for (size_t s = 0; s < k_.stages.size(); ++s) {
    const StagePlan& st = k_.stages[s];
    stage_ = &st;
    if (s > 0) body += fmt::format("{}{}  // the previous stage's stores are visible to the group\n", in, group_sync());
    if (st.reduction) reduction_stage(st, w, body, in);
    else stage_loop(st, w, body, in);
    // What this stage stored is read from memory by the later stages, not from registers read before.
    for (const PlannedNode& n : st.nodes) {
      if (!n.stored) continue;
      std::string prefix = buf(p_.nodes[n.node].out) + "[";
      for (auto c = cached_.begin(); c != cached_.end();)
        c = c->first.rfind(prefix, 0) == 0 ? cached_.erase(c) : std::next(c);
    }
  }
  std::string head;
  head += fmt::format("{}for (sn_i64 base_ = (sn_i64)blockIdx.x * {}; base_ < rows_; base_ += (sn_i64)gridDim.x * {}) {{\n",
                      ind, rows, rows);
  head += fmt::format("{}const sn_i64 row_ = base_ + threadIdx.x / {}u;\n", in, group_);
  if (rows > 1) head += fmt::format("{}if (row_ >= rows_) continue;  // the group has no row here\n", in);
  head += fmt::format("{}const {} o_ = ({})row_;\n", in, it_, it_);
  head += unravel(k_.outer, "o_", in);
  head += decls_;
  std::string tail;
  if (group_ > 32) tail += in + "__syncthreads();  // the next row's stage 0 overwrites nothing of this one\n";
  tail += ind + "}\n";
  return head + body + tail;
}

std::string KernelWriter::flat_body(const Walk& w, const std::string& ind) {
  const StagePlan& st = k_.stages.at(0);
  stage_ = &st;
  std::string body;
  // Unrolled so that each thread has several independent loads in flight.
  if (w.v == 1) body += fmt::format("{}#pragma unroll 4\n", ind);
  std::string count = w.v == 1 ? "total_" : fmt::format("total_ / {}", w.v);
  body += fmt::format("{}for (sn_i64 q_ = (sn_i64)blockIdx.x * blockDim.x + threadIdx.x; q_ < {}; "
                      "q_ += (sn_i64)gridDim.x * blockDim.x) {{\n", ind, count);
  std::string first = w.v == 1 ? fmt::format("({})q_", it_) : fmt::format("({})(q_ * {})", it_, w.v);
  body += unravel(st.loops, first, ind + "  ");
  element_block(st, w, body, ind + "  ");
  body += ind + "}\n";
  return body;
}

CudaKernel KernelWriter::write() {
  it_ = index_type();
  CudaKernel result;
  result.name = k_.name;
  choose_vector();
  std::string ind = "  ";
  std::string body, scalar_body;  // the vector path, and where checks_ is not empty the scalar kernel's
  Walk fast{v_, 0}, scalar{1, 0};
  bool columns = false;
  if (k_.rows) {
    int64_t widest = 1;
    bool same_loops = true;
    for (const StagePlan& st : k_.stages) {
      widest = std::max(widest, hint(st.elems));
      same_loops = same_loops && st.elems == k_.stages[0].elems && st.loops.size() == k_.stages[0].loops.size();
      for (size_t d = 0; same_loops && d < st.loops.size(); ++d)
        same_loops = st.loops[d].var == k_.stages[0].loops[d].var && st.loops[d].size == k_.stages[0].loops[d].size;
    }
    const int64_t vectors = (widest + v_ - 1) / v_;
    // One reduction stage over few long rows: split each row across blocks.
    const bool split = k_.stages.size() == 1 && k_.stages[0].reduction && hint(k_.total) <= kSplitRows &&
                       widest >= kSplitElems;
    // A row that fits in registers (the same elements in every stage) is read once and kept, a few steps of V
    // elements per thread. Measured on an H200 over 4096-wide rows: float32 softmax is fastest with 2 steps of 4
    // (512 threads a row; 3% better than 4 steps), bfloat16 layer norm with 4 steps of 8 (8% better than 2).
    const int steps = v_ >= 8 ? 4 : 2;
    // A column reduction (KernelPlan::column_lanes) of at least a tile of rows: lanes across rows. Fewer rows
    // would leave most lanes of each load idle; they take the row paths (the reduced elements across lanes).
    columns = k_.column_lanes && hint(k_.total) >= 32;
    const bool whole = same_loops && k_.stages[0].elems->is_const() && widest <= int64_t{1024} * 4 * v_;
    if (columns) {
      group_ = 32;
      v_ = 1;
      checks_.clear();
      result.shape.split = true;
    } else if (split) {
      group_ = kBlock;
      result.shape.split = true;
    } else if (whole) {
      group_ = pow2_at_least((vectors + steps - 1) / steps, 4, 1024);
      fast.slots = static_cast<int>((vectors + group_ - 1) / group_);
      if (fast.slots * v_ > kMaxPersistent) fast.slots = 0;
      // The scalar path (misaligned views) loops over memory instead: kept whole, its rows would unroll V times
      // as many steps, for NVRTC to compile and the GPU to cache, for a case that is rare.
    } else {
      group_ = vectors <= 1024 ? pow2_at_least(vectors, 4, 32) : vectors <= 16384 ? 256 : 1024;
    }
    unsigned rows = columns ? 32 : group_ <= 32 ? kBlock / group_ : 1;
    result.shape.block = columns ? 32 * kColumnWarps : group_ <= 32 ? kBlock : group_;
    result.shape.rows_per_block = rows;
    result.shape.group = group_;
    result.shape.vector = static_cast<unsigned>(v_);
    body += fmt::format("{}const {} lane_ = ({})(threadIdx.x % {}u);\n", ind, it_, it_, group_);
    body += fmt::format("{}const unsigned mask_ = sn_group_mask({});\n", ind, group_);
    body += fmt::format("{}const sn_i64 rows_ = {};\n", ind, idx(k_.total));
    auto rows_or_split = [&](const Walk& w, const std::string& in) {
      return columns ? column_body(in) : split ? split_body(w, in) : rows_body(w, in);
    };
    scalar_body = body;
    body += rows_or_split(fast, ind);
    if (!checks_.empty()) scalar_body += rows_or_split(scalar, ind);
  } else {
    result.shape = {kBlock, 0, 0};
    result.shape.vector = static_cast<unsigned>(v_);
    body += fmt::format("{}const sn_i64 total_ = {};\n", ind, idx(k_.total));
    scalar_body = body;
    body += flat_body(fast, ind);
    if (!checks_.empty()) scalar_body += flat_body(scalar, ind);
  }
  size_t count = 0;
  for (const StagePlan& st : k_.stages) count += st.nodes.size();
  std::string how = columns ? fmt::format("lanes across 32 rows, {} warps along the reduced dim", kColumnWarps)
                    : k_.rows      ? fmt::format("rows of {} thread(s) each", group_)
                                   : std::string("flat");
  if (result.shape.split) how += ", each row split across blocks";
  std::string nodes;
  for (const StagePlan& st : k_.stages)
    for (const PlannedNode& n : st.nodes) nodes += fmt::format("//   loop node {}: {}\n", n.node, p_.nodes[n.node].origin);
  std::vector<std::string> params, casts;
  for (size_t i = 0; i < k_.buffers.size(); ++i) {
    const Buffer& b = p_.buffers[k_.buffers[i]];
    params.push_back(fmt::format("{}* __restrict__ b{}", storage_type(b.dtype), i));
    casts.push_back(fmt::format("*({}**)p[{}]", storage_type(b.dtype), i));
    result.buffer_types.push_back(storage_type(b.dtype));
  }
  result.num_symbols = p_.num_symbols;
  for (int s = 0; s < p_.num_symbols; ++s) {
    params.push_back(fmt::format("const sn_i64 s{}", s));
    casts.push_back(fmt::format("*(const sn_i64*)p[{}]", k_.buffers.size() + s));
  }
  params.push_back("int* __restrict__ err_");
  casts.push_back(fmt::format("*(int**)p[{}]", casts.size()));
  if (result.shape.split) {
    params.push_back("char* __restrict__ ws_");
    casts.push_back(fmt::format("*(char**)p[{}]", casts.size()));
    params.push_back("unsigned* __restrict__ count_");
    casts.push_back(fmt::format("*(unsigned**)p[{}]", casts.size()));
    params.push_back("const sn_i64 parts_");
    casts.push_back(fmt::format("*(const sn_i64*)p[{}]", casts.size()));
    result.split_values = static_cast<int>(k_.stages[0].nodes.size());
  }
  std::string signature;
  for (size_t i = 0; i < params.size(); ++i) signature += (i ? ",\n    " : "") + params[i];
  // One __global__ function (and its simulator entry) around a body.
  auto with_error = [&](std::string text) {
    if (text.find("a_->error") == std::string::npos) return text;
    result.error_flag = true;
    return "  const sn_err_ ae_{err_};\n  const sn_err_* const a_ = &ae_;\n" + text;
  };
  if (!k_.rows) {  // a part of a combined kernel: the bodies over a range of the combined grid's blocks
    result.part_body = with_error(body);
    if (!checks_.empty()) result.part_scalar_body = with_error(scalar_body);
  }
  auto kernel_text = [&](const std::string& name, std::string text, const std::string& what) {
    text = with_error(std::move(text));
    std::string head = fmt::format("// {}: {} node(s), {}{}\n", name, count, how, what) + nodes;
    head += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n    {}) {{\n", result.shape.block,
                        name, signature);
    std::string sim = fmt::format("#ifdef SINTER_CUDA_SIM\nextern \"C\" void {}__sim(void** p) {{ {}(", name, name);
    for (size_t i = 0; i < casts.size(); ++i) sim += (i ? ", " : "") + casts[i];
    sim += "); }\n#endif\n";
    return head + text + "}\n" + sim;
  };
  std::string fast_how;
  if (fast.slots > 0) fast_how += fmt::format(", whole rows in registers ({} step(s) per thread)", fast.slots);
  if (v_ > 1) fast_how += fmt::format(", {}-element vectors", v_);
  if (!checks_.empty()) {
    std::vector<std::string> tests;
    for (const inductor::VectorCheck& c : checks_)
      tests.push_back(c.argument >= 0 ? fmt::format("b{} aligned to {} bytes", c.argument, c.bytes)
                                      : fmt::format("({}) % {} == 0", idx(c.divisible), c.by));
    fast_how += fmt::format("\n//   launched where {}; else {}", fmt::join(tests, ", "), k_.name + "_s");
    result.vector_checks = checks_;
    result.scalar_name = k_.name + "_s";
    result.scalar_source = kernel_text(result.scalar_name, scalar_body, ", one element at a time (the scalar path)");
  }
  result.source = kernel_text(k_.name, body, fast_how);
  return result;
}

}  // namespace

std::vector<CudaKernel> generate(const LoopProgram& program, const inductor::ProgramPlan& plan) {
  std::vector<CudaKernel> out;
  for (const KernelPlan& k : plan.kernels) {
    if (k.name.empty()) {
      out.emplace_back();
      continue;
    }
    SINTER_CHECK(k.epilogue_of.empty(), "cuda: {} is an epilogue of {}, which this target does not fuse", k.name,
                 k.epilogue_of);
    out.push_back(KernelWriter(program, k).write());
  }
  return out;
}

// A combined group (kernels of flat bodies): each part's bodies as device functions over blocks [0, nb_) of their
// own, and one __global__ that gives each part its range of the grid's blocks.
//   extern "C" __global__ void combinedG(<part 0's buffers>, <part 1's>, ..., s0.., int* err_,
//                                        sn_i64 from0, sn_i64 to0, sn_i64 vec0, sn_i64 from1, ...)
// A part whose range is empty does not run (the launcher runs a group in waves); `vecI` picks its vector path.
CudaKernel combine(const std::vector<const CudaKernel*>& parts, const std::string& name) {
  CudaKernel result;
  result.name = name;
  result.shape = {kBlock, 0, 0};
  std::string text = fmt::format("// {}: {} flat kernels combined into one launch, each over its own blocks\n", name,
                                 parts.size());
  std::vector<std::string> params, casts, calls;
  auto cast = [&](const std::string& type) {
    casts.push_back(fmt::format("*({})p[{}]", type, casts.size()));
  };
  auto device_fn = [&](const std::string& fn, const CudaKernel& c, const std::string& body) {
    std::vector<std::string> own;
    for (size_t j = 0; j < c.buffer_types.size(); ++j)
      own.push_back(fmt::format("{}* __restrict__ b{}", c.buffer_types[j], j));
    for (int sy = 0; sy < c.num_symbols; ++sy) own.push_back(fmt::format("const sn_i64 s{}", sy));
    own.push_back("int* __restrict__ err_");
    own.push_back("const sn_i64 bid_");
    own.push_back("const sn_i64 nb_");
    std::string b = body;
    for (auto [from, to] : {std::pair<std::string, std::string>{"blockIdx.x", "bid_"}, {"gridDim.x", "nb_"}})
      for (size_t at; (at = b.find(from)) != std::string::npos;) b.replace(at, from.size(), to);
    return fmt::format("__device__ __forceinline__ void {}(\n    {}) {{\n{}}}\n", fn, fmt::join(own, ",\n    "), b);
  };
  for (size_t i = 0; i < parts.size(); ++i) {
    const CudaKernel& c = *parts[i];
    SINTER_INTERNAL_ASSERT(!c.part_body.empty(), "cuda: {} is not a flat kernel and cannot be combined", c.name);
    text += device_fn(c.name + "_part", c, c.part_body);
    if (!c.part_scalar_body.empty()) text += device_fn(c.name + "_part_s", c, c.part_scalar_body);
    result.error_flag = result.error_flag || c.error_flag;
    std::vector<std::string> args;
    for (size_t j = 0; j < c.buffer_types.size(); ++j) {
      params.push_back(fmt::format("{}* __restrict__ c{}_{}", c.buffer_types[j], i, j));
      cast(c.buffer_types[j] + "**");
      args.push_back(fmt::format("c{}_{}", i, j));
    }
    result.num_symbols = c.num_symbols;
    for (int sy = 0; sy < c.num_symbols; ++sy) args.push_back(fmt::format("s{}", sy));
    args.push_back("err_");
    args.push_back(fmt::format("b_ - from{}", i));
    args.push_back(fmt::format("to{} - from{}", i, i));
    std::string call = fmt::format("{}_part({})", c.name, fmt::join(args, ", "));
    if (!c.part_scalar_body.empty())
      call = fmt::format("if (vec{}) {}; else {}_part_s({})", i, call, c.name, fmt::join(args, ", "));
    calls.push_back(fmt::format("  if (b_ >= from{} && b_ < to{}) {{\n    {};\n    return;\n  }}\n", i, i, call));
  }
  for (int sy = 0; sy < result.num_symbols; ++sy) {
    params.push_back(fmt::format("const sn_i64 s{}", sy));
    cast("const sn_i64*");
  }
  params.push_back("int* __restrict__ err_");
  cast("int**");
  for (size_t i = 0; i < parts.size(); ++i) {
    params.push_back(fmt::format("const sn_i64 from{}", i));
    cast("const sn_i64*");
    params.push_back(fmt::format("const sn_i64 to{}", i));
    cast("const sn_i64*");
    params.push_back(fmt::format("const sn_i64 vec{}", i));
    cast("const sn_i64*");
  }
  text += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n    {}) {{\n", kBlock, name,
                      fmt::join(params, ",\n    "));
  text += "  const sn_i64 b_ = blockIdx.x;\n";
  for (const std::string& c : calls) text += c;
  text += "}\n";
  text += fmt::format("#ifdef SINTER_CUDA_SIM\nextern \"C\" void {}__sim(void** p) {{ {}({}); }}\n#endif\n", name, name,
                      fmt::join(casts, ", "));
  result.source = std::move(text);
  return result;
}

std::string unit_header() { return std::string(cpp::prelude()) + kHelpers; }

}  // namespace sinter::codegen::cuda
