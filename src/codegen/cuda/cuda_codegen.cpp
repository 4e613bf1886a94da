#include "codegen/cuda/cuda_codegen.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/cpp/body_emitter.h"
#include "codegen/cpp/cpp_ops.h"
#include "codegen/cpp/prelude.h"
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

class KernelWriter : cpp::BodyEmitter {
 public:
  KernelWriter(const LoopProgram& p, const KernelPlan& k) : BodyEmitter(p, k) {}
  CudaKernel write();

 private:
  void store(const PlannedNode& n, const std::string& value, std::string& out, const std::string& ind, bool lane0);
  void pointwise_body(const StagePlan& st, std::string& out, const std::string& ind);
  void row_pointwise_stage(const StagePlan& st, std::string& out, const std::string& ind);
  void row_reduction_stage(const StagePlan& st, std::string& out, const std::string& ind);
  std::string group_sync() const { return group_ > 32 ? "__syncthreads();" : "__syncwarp(mask_);"; }
  int64_t hint(const ExprPtr& e) const;

  std::string it_;
  unsigned group_ = 0;
};

int64_t KernelWriter::hint(const ExprPtr& e) const {
  if (e->is_const()) return e->value();
  if (p_.shape_env) return sym::evaluate(*e, p_.shape_env->hints());
  return 1 << 20;
}

void KernelWriter::store(const PlannedNode& n, const std::string& value, std::string& out, const std::string& ind,
                         bool lane0) {
  if (!n.stored) return;
  const int b = p_.nodes[n.node].out;
  out += fmt::format("{}{}{}[{}] = {};\n", ind, lane0 ? "if (lane_ == 0) " : "", buf(b), idx(n.store),
                     store_str(p_.buffers[b].dtype, value));
}

// The nodes of a pointwise stage at one element (the loop variables are bound).
void KernelWriter::pointwise_body(const StagePlan& st, std::string& out, const std::string& ind) {
  names_.clear();
  for (const PlannedNode& n : st.nodes) {
    out += fmt::format("{}// {}\n", ind, p_.nodes[n.node].origin);
    for (inductor::SExpr x : n.loaded_keeps) {  // stored here by the reduction stage that computed it
      std::string name = fmt::format("t{}", tmp_++);
      out += fmt::format("{}const float {} = {}[{}];\n", ind, name, buf(p_.nodes[n.node].out), idx(n.store));
      names_[x] = name;
    }
    std::string v = emit(n.body, out, ind);
    store(n, v, out, ind, false);
    values_[n.node] = v;
  }
  names_.clear();
}

void KernelWriter::row_pointwise_stage(const StagePlan& st, std::string& out, const std::string& ind) {
  out += fmt::format("{}#pragma unroll 4\n{}for ({} i_ = lane_; i_ < ({}){}; i_ += {}) {{\n", ind, ind, it_, it_,
                     idx(st.elems), group_);
  out += unravel(st.loops, "i_", ind + "  ");
  pointwise_body(st, out, ind + "  ");
  out += ind + "}\n";
}

void KernelWriter::row_reduction_stage(const StagePlan& st, std::string& out, const std::string& ind) {
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    out += fmt::format("{}// {}: {} over {}\n", ind, ln.origin, inductor::reduce_op_name(ln.reduce_op), idx(st.elems));
    out += fmt::format("{}{} acc{} = {};\n", ind, inductor::ctype_name(n.body->type), n.node,
                       reduce_init(ln.reduce_op, n.body->type));
  }
  out += fmt::format("{}#pragma unroll 4\n{}for ({} i_ = lane_; i_ < ({}){}; i_ += {}) {{\n", ind, ind, it_, it_,
                     idx(st.elems), group_);
  std::string in = ind + "  ";
  out += unravel(st.loops, "i_", in);
  names_.clear();
  for (const PlannedNode& n : st.nodes) {
    std::string v = emit(n.body, out, in);
    if (n.keep_for >= 0) {
      const LoopNode& keeper = p_.nodes[n.keep_for];
      out += fmt::format("{}{}[{}] = {};  // kept for {}\n", in, buf(keeper.out), idx(n.keep_at), v, keeper.origin);
    }
    std::string acc = fmt::format("acc{}", n.node);
    out += fmt::format("{}{} = {};\n", in, acc, reduce_combine(p_.nodes[n.node].reduce_op, acc, v));
  }
  names_.clear();
  out += ind + "}\n";
  // The group's partial results combined: shuffles inside each warp, then (a whole-block group) shared memory.
  for (const PlannedNode& n : st.nodes) {
    const LoopNode& ln = p_.nodes[n.node];
    const char* t = inductor::ctype_name(n.body->type);
    std::string acc = fmt::format("acc{}", n.node);
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
    if (ln.reduce_op == inductor::ReduceOp::mean)
      out += fmt::format("{}{} = {} / ({}){};\n", ind, acc, acc, t, idx(st.elems));
    store(n, acc, out, ind, true);
    values_[n.node] = acc;
  }
}

CudaKernel KernelWriter::write() {
  it_ = index_type();
  CudaKernel result;
  result.name = k_.name;
  std::string body;
  std::string ind = "  ";
  if (k_.rows) {
    int64_t widest = 1;
    for (const StagePlan& st : k_.stages) widest = std::max(widest, hint(st.elems));
    group_ = widest <= 1024 ? pow2_at_least(widest, 4, 32) : widest <= 16384 ? 256 : 1024;
    unsigned rows = group_ <= 32 ? kBlock / group_ : 1;
    result.shape = {group_ <= 32 ? kBlock : group_, rows, group_};
    body += fmt::format("{}const {} lane_ = ({})(threadIdx.x % {}u);\n", ind, it_, it_, group_);
    body += fmt::format("{}const unsigned mask_ = sn_group_mask({});\n", ind, group_);
    body += fmt::format("{}const sn_i64 rows_ = {};\n", ind, idx(k_.total));
    body += fmt::format("{}for (sn_i64 base_ = (sn_i64)blockIdx.x * {}; base_ < rows_; base_ += (sn_i64)gridDim.x * {}) {{\n",
                        ind, rows, rows);
    std::string in = ind + "  ";
    body += fmt::format("{}const sn_i64 row_ = base_ + threadIdx.x / {}u;\n", in, group_);
    if (rows > 1) body += fmt::format("{}if (row_ >= rows_) continue;  // the group has no row here\n", in);
    body += fmt::format("{}const {} o_ = ({})row_;\n", in, it_, it_);
    body += unravel(k_.outer, "o_", in);
    for (size_t s = 0; s < k_.stages.size(); ++s) {
      const StagePlan& st = k_.stages[s];
      stage_ = &st;
      if (s > 0) body += fmt::format("{}{}  // the previous stage's stores are visible to the group\n", in, group_sync());
      if (st.reduction) row_reduction_stage(st, body, in);
      else row_pointwise_stage(st, body, in);
    }
    if (group_ > 32) body += in + "__syncthreads();  // the next row's stage 0 overwrites nothing of this one\n";
    body += ind + "}\n";
  } else {
    const StagePlan& st = k_.stages.at(0);
    stage_ = &st;
    result.shape = {kBlock, 0, 0};
    body += fmt::format("{}const sn_i64 total_ = {};\n", ind, idx(k_.total));
    // Unrolled so that each thread has several independent loads in flight.
    body += fmt::format("{}#pragma unroll 4\n", ind);
    body += fmt::format("{}for (sn_i64 pos_ = (sn_i64)blockIdx.x * blockDim.x + threadIdx.x; pos_ < total_; "
                        "pos_ += (sn_i64)gridDim.x * blockDim.x) {{\n", ind);
    body += unravel(st.loops, fmt::format("({})pos_", it_), ind + "  ");
    pointwise_body(st, body, ind + "  ");
    body += ind + "}\n";
  }
  size_t count = 0;
  for (const StagePlan& st : k_.stages) count += st.nodes.size();
  std::string head = fmt::format("// {}: {} node(s), {}\n", k_.name, count,
                                 k_.rows ? fmt::format("rows of {} thread(s) each", group_) : std::string("flat"));
  for (const StagePlan& st : k_.stages)
    for (const PlannedNode& n : st.nodes) head += fmt::format("//   loop node {}: {}\n", n.node, p_.nodes[n.node].origin);
  std::vector<std::string> params, casts;
  for (size_t i = 0; i < k_.buffers.size(); ++i) {
    const Buffer& b = p_.buffers[k_.buffers[i]];
    params.push_back(fmt::format("{}* __restrict__ b{}", storage_type(b.dtype), i));
    casts.push_back(fmt::format("*({}**)p[{}]", storage_type(b.dtype), i));
  }
  for (int s = 0; s < p_.num_symbols; ++s) {
    params.push_back(fmt::format("const sn_i64 s{}", s));
    casts.push_back(fmt::format("*(const sn_i64*)p[{}]", k_.buffers.size() + s));
  }
  params.push_back("int* __restrict__ err_");
  casts.push_back(fmt::format("*(int**)p[{}]", casts.size()));
  result.error_flag = body.find("a_->error") != std::string::npos;
  if (result.error_flag) body = "  const sn_err_ ae_{err_};\n  const sn_err_* const a_ = &ae_;\n" + body;
  std::string signature;
  for (size_t i = 0; i < params.size(); ++i) signature += (i ? ",\n    " : "") + params[i];
  head += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n    {}) {{\n", result.shape.block,
                      k_.name, signature);
  std::string sim = fmt::format("#ifdef SINTER_CUDA_SIM\nextern \"C\" void {}__sim(void** p) {{ {}(", k_.name, k_.name);
  for (size_t i = 0; i < casts.size(); ++i) sim += (i ? ", " : "") + casts[i];
  sim += "); }\n#endif\n";
  result.source = head + body + "}\n" + sim;
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

std::string unit_header() { return std::string(cpp::prelude()) + kHelpers; }

}  // namespace sinter::codegen::cuda
