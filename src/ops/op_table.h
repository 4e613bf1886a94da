// The op table's interface: OpId, parsed schemas, and per-op shape rules and kernels.
// Rows come from op_list.h; each op family attaches its shape rule and kernels in its register_*_ops function,
// called once when the table is first used. Custom ops (sinter/library.h) add rows after the built-ins at run time.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ops/op_list.h"
#include "sinter/value.h"

namespace sinter {

// kSymScalars: the op's Scalar arguments may hold symbolic integers (its shape rule reads them as SymInt, as
// arange's bounds); other ops' Scalar arguments specialise a symbolic integer when it is passed.
enum OpFlags : uint32_t { kNoFlags = 0, kDataDependent = 1, kRandom = 2, kSymScalars = 4 };

enum class OpId : uint16_t {
#define SINTER_OP_ENUM(id, flags, schema) id,
  SINTER_OP_LIST(SINTER_OP_ENUM)
#undef SINTER_OP_ENUM
};
inline constexpr int kNumOps = 0
#define SINTER_OP_COUNT(id, flags, schema) +1
    SINTER_OP_LIST(SINTER_OP_COUNT)
#undef SINTER_OP_COUNT
    ;

// One argument or return of a schema: `Tensor(a!)? running_mean`, `int[2] stride=1`, `*`-only keywords.
enum class ArgType : uint8_t { kTensor, kTensorList, kOptionalTensorList, kScalar, kInt, kIntList, kFloat, kFloatList,
                               kBool, kStr, kScalarType, kDevice, kMemoryFormat };
struct SchemaArg {
  std::string name;
  ArgType type = ArgType::kTensor;
  bool optional = false;    // `T?`: None allowed
  int fixed_size = 0;       // `int[2]`: a single int broadcasts to this many
  bool kwarg_only = false;  // after `*`
  char alias = 0;           // `Tensor(a)` -> 'a'
  bool is_write = false;    // `Tensor(a!)`
  bool has_default = false;
  Value default_value;
  std::string type_str;     // as written, for printing
};

struct Schema {
  std::string name;      // "add"
  std::string overload;  // "Tensor"
  std::vector<SchemaArg> args;
  std::vector<SchemaArg> returns;
  std::string full_name() const { return overload.empty() ? name : name + "." + overload; }
  // Kinds derived from aliasing annotations.
  bool is_view() const;      // a return aliases an input without writing it
  bool is_inplace() const;   // the first return is a written input (add_, copy_)
  bool returns_list() const; // Tensor[]
  int find_arg(std::string_view name) const;  // -1 when absent
  std::string str() const;
};
// Throws Error naming the column on a malformed schema (custom ops' schemas are the user's).
Schema parse_schema(std::string_view text);

// What a shape rule computes: each output's sizes, strides (a view's strides and offset into the input's
// storage) and dtype, or that the sizes depend on data (nonzero, masked_select, boolean indexing).
struct ShapeResult {
  std::vector<TensorMeta> outputs;
  bool data_dependent = false;
  ShapeResult() = default;
  ShapeResult(TensorMeta m) : outputs{std::move(m)} {}
  ShapeResult(std::vector<TensorMeta> ms) : outputs(std::move(ms)) {}
  static ShapeResult unknown() {
    ShapeResult r;
    r.data_dependent = true;
    return r;
  }
};

// Shape rules run on SymInts, so one rule serves eager and capture.
using ShapeFn = ShapeResult (*)(OpId op, const Args& args);
// A kernel computes into `outs`, which the dispatcher allocated from the shape rule's metas (for in-place ops
// `outs` is {self}). A kernel of a data-dependent op (or a composite one) may replace outs' entries with tensors
// it made, of the same sizes and dtype.
using KernelFn = void (*)(OpId op, const Args& args, std::vector<Tensor>& outs);

struct CustomOp;  // a user-registered op's functions (ops/custom_ops.h)

struct OpDef {
  OpId id;
  uint32_t flags = 0;
  std::string_view schema_text = {};
  Schema schema;
  ShapeFn shape = nullptr;
  KernelFn kernels[kNumDeviceTypes] = {};
  std::shared_ptr<const CustomOp> custom = nullptr;  // set for the rows of custom ops only
};

// Works for built-in and custom rows alike; a built-in's lookup is one index.
const OpDef& op_def(OpId op);
std::string_view op_name(OpId op);  // "add.Tensor", "mylib::rms_gate"
// Looks an op up by its qualified name ("add.Tensor", or "relu" when it has no overload; "mylib::rms_gate").
const OpDef* find_op(std::string_view qualified_name);
// The built-in rows, in OpId order (custom rows are not in it).
const std::vector<OpDef>& all_ops();

// Custom rows take the ids after the built-ins: kNumOps, kNumOps + 1, ...
inline bool is_custom_op(OpId op) { return static_cast<int>(op) >= kNumOps; }
inline constexpr int kMaxCustomOps = 4096;
static_assert(kNumOps + kMaxCustomOps <= 65536, "OpId is 16 bits");
// Adds a row at run time (ops/custom_ops.cpp does, for library::define) and returns its id. `def.schema` must be
// parsed; `def.id` and `def.schema_text` are set here (the text is kept with the row). Thread-safe; rows are never
// removed. Throws Error when the qualified name is taken or kMaxCustomOps rows exist.
OpId add_custom_row(OpDef def, std::string schema_text);

// The registration surface each family uses.
class OpTable {
 public:
  void set(OpId op, ShapeFn shape, KernelFn cpu_kernel);
  void set_kernel(OpId op, Device device, KernelFn kernel);
  std::vector<OpDef>& defs() { return defs_; }

 private:
  std::vector<OpDef> defs_;
};

// Families (one file each, src/ops/<family>*.cpp).
void register_core_ops(OpTable& t);       // copies, conversions, views, fill
void register_pointwise_ops(OpTable& t);  // unary, binary, ternary, in-place forms, masked_fill
void register_reduction_ops(OpTable& t);  // reductions, scans, softmax, sort/topk, norms
void register_linalg_ops(OpTable& t);     // matmul family, conv, pool, upsample, attention, losses, embedding, dropout
void register_index_ops(OpTable& t);      // cat/stack, gather/scatter, indexing, pad, repeat, roll, flip, tril/triu
void register_factory_ops(OpTable& t);    // empty/zeros/.../arange/eye and the random factories

}  // namespace sinter
