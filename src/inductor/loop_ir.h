// The inductor's loop IR: what lowering makes of a graph and what the scheduler fuses and codegen prints.
//
// A LoopProgram holds buffers (real memory: graph inputs, constants, materialised intermediates, outputs) and a
// list of loop nodes in dependency order: Pointwise (one value per element of an iteration domain), Reduction
// (kept dims outside, reduced dims inside) and Extern (a library call or an eager kernel: GEMM, conv, attention,
// anything without a loop form). Bodies are scalar expression DAGs (SExpr), interned so that equal
// subexpressions are one node and codegen computes them once. Index arithmetic is symbolic (ExprPtr):
// sizes are the graph's symbols s0, s1, ... and loop variables are symbols with ids from kLoopVarBase up, so one
// simplifier serves both and `offset == offset` is a pointer comparison.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "inductor/scalar_ops.h"
#include "sinter/graph.h"
#include "symbolic/expr.h"

namespace sinter::inductor {

using ::sinter::ExprPtr;

inline constexpr int64_t kLoopVarBase = int64_t(1) << 40;
ExprPtr loop_var(int k);  // the k-th loop variable of a node's domain
inline bool is_loop_var(int64_t symbol_id) { return symbol_id >= kLoopVarBase; }
inline int loop_var_index(int64_t symbol_id) { return static_cast<int>(symbol_id - kLoopVarBase); }

// The C type a scalar is computed in (f16/bf16 compute in float and round where a buffer is written).
enum class CType : uint8_t { kBool, kI8, kU8, kI32, kI64, kF32, kF64 };
CType compute_type(DType dt);
bool is_float(CType t);
const char* ctype_name(CType t);  // "float", "sn_i64", ...

enum class SKind : uint8_t { kLoad, kConst, kOp };
struct SNode;
using SExpr = const SNode*;
struct SNode {
  SKind kind = SKind::kOp;
  CType type = CType::kF32;
  SOp op = SOp::add;          // kOp
  std::vector<SExpr> args;    // kOp
  int buffer = -1;            // kLoad
  ExprPtr offset;             // kLoad: element offset from the buffer's base
  double value = 0;           // kConst (floats and bools)
  int64_t ivalue = 0;         // kConst (integers)
  size_t hash = 0;
};

// Interns scalar nodes: building the same expression twice gives the same pointer. A pool made over a `base`
// pool (the kernel planner's, over the program's) returns the base's node where one is equal and keeps only the
// new ones, so the base stays unchanged and pointer equality still means equal expressions.
class SPool {
 public:
  SPool() = default;
  explicit SPool(const SPool* base) : base_(base) {}
  SPool(const SPool&) = delete;
  SPool& operator=(const SPool&) = delete;
  SPool(SPool&&) = default;
  SPool& operator=(SPool&&) = default;
  SExpr load(int buffer, ExprPtr offset, CType type);
  SExpr constant(double v, CType type);
  SExpr iconstant(int64_t v, CType type);
  SExpr op(SOp op, std::vector<SExpr> args, CType type);  // checks the op's arity
  // An implicit type change between compute types (operand promotion): a cast op, or `a` itself.
  SExpr cast(SExpr a, CType type) { return a->type == type ? a : op(SOp::cast, {a}, type); }
  // An explicit dtype conversion the program asks for (`to`, `_to_copy`, ONNX Cast) of `a`, a value of dtype
  // `from` in its compute type: the result in `to`'s compute type, rounded as a `to` buffer would hold it
  // (float16/bfloat16: a round_f16/round_bf16 op, round to nearest even, overflow to inf). Unlike the
  // rounding of half arithmetic, which a fused kernel skips, a conversion is never dropped.
  SExpr convert(SExpr a, DType from, DType to);
  size_t size() const { return nodes_.size(); }

 private:
  SExpr intern(SNode node);
  SExpr find(const SNode& node) const;  // an equal node of this pool or its base, else null
  const SPool* base_ = nullptr;
  std::deque<SNode> nodes_;
  std::unordered_multimap<size_t, const SNode*> table_;
};

// The distinct nodes reachable from `root` (a recompute-cost measure).
int dag_size(SExpr root);
// Buffers loaded anywhere in `root`.
void collect_loads(SExpr root, std::vector<SExpr>& loads);

enum class BufferKind : uint8_t { kInput, kConstant, kIntermediate };
struct Buffer {
  int id = -1;
  std::string name;  // "x", "buf3"
  BufferKind kind = BufferKind::kIntermediate;
  DType dtype = kFloat32;
  std::vector<ExprPtr> sizes, strides;  // the layout it is allocated (or given) with; offsets count from its base
  int graph_input = -1;                 // kInput: position among the graph's inputs
  Tensor constant;                      // kConstant
  int producer = -1;                    // kIntermediate: the loop node that writes it (-1: several write parts)
};

enum class LoopKind : uint8_t { kPointwise, kReduction, kExtern };

// A tensor argument of an extern: a strided view of a buffer.
struct BufferView {
  int buffer = -1;
  std::vector<ExprPtr> sizes, strides;
  ExprPtr offset;
};

struct LoopNode {
  int id = -1;
  LoopKind kind = LoopKind::kPointwise;
  std::string origin;  // the graph nodes it came from ("%5 = gelu(%4)"), printed as comments
  // Pointwise / Reduction: the iteration domain. Loop variable k walks domain[k]. A reduction's first
  // `num_outer` dims are kept (its output has one value per outer index) and the rest are reduced.
  std::vector<ExprPtr> domain;
  int num_outer = 0;
  SExpr body = nullptr;   // the value computed per point
  int out = -1;           // the buffer written
  ExprPtr store_offset;   // where (a function of the outer variables for a reduction, of all for pointwise)
  ReduceOp reduce_op = ReduceOp::sum;  // Reduction
  // Extern: `op` run on `args` whose tensors are views of buffers (tensor_args[i] for the i-th tensor met while
  // walking args in order, lists included); `gemm` marks the row-blocked GEMM form whose epilogue can fuse.
  OpId op{};
  Args args;
  Loc loc;  // the user's call of the op (from the graph node), named by errors the extern raises at run time
  std::vector<BufferView> tensor_args;
  std::vector<int> outs;  // output buffers (allocated by the extern's kernel)
  bool gemm = false;      // out[M, N] = A[M, K] @ B[K, N] (tensor_args 0 and 1), rows blockable
  bool conv = false;      // conv2d computed as one implicit GEMM over output pixels (float32, channels-last
                          // output, one group): a flat epilogue over its memory order runs per finished tile
};

// Built by lowering, node by node (each node whole before it is appended), and read-only from then on: the
// scheduler, the kernel planner, the code generators and the runtime take it const. The planner's rewritten
// bodies live in its own pool over `pool`.
struct LoopProgram {
  std::vector<Buffer> buffers;
  std::vector<LoopNode> nodes;
  std::vector<BufferView> outputs;  // the graph's outputs, as views of buffers
  std::shared_ptr<sym::ShapeEnv> shape_env;
  SPool pool;
  int num_symbols = 0;  // symbol ids in use are < num_symbols

  int add_buffer(Buffer b);
  std::string str() const;  // a readable dump (tests, logs)
};

// An index expression as the dumps print it: loop variable k as v<k>, sizes as s<id> (Python's operators).
std::string index_text(const ExprPtr& e);

// Splits an index expression into coefficients of the loop variables [0, nvars) and a rest without them.
// False when a loop variable appears other than linearly (inside //, %, Min, Max or a product of two).
bool affine_split(const ExprPtr& e, int nvars, std::vector<ExprPtr>& coeffs, ExprPtr& rest);

}  // namespace sinter::inductor
