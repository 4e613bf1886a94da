#include "inductor/scalar_ops.h"

#include <array>

namespace sinter::inductor {

namespace {

struct ScalarOpInfo {
  std::string_view name;
  int arity;
  bool transcendental;
};

constexpr std::array kScalarOps = {
#define SINTER_SCALAR_OP_INFO(name, arity, transcendental) ScalarOpInfo{#name, arity, transcendental},
    SINTER_SCALAR_OPS(SINTER_SCALAR_OP_INFO)
#undef SINTER_SCALAR_OP_INFO
};

constexpr std::array<std::string_view, 5> kReduceOps = {
#define SINTER_REDUCE_OP_NAME(name) #name,
    SINTER_REDUCE_OPS(SINTER_REDUCE_OP_NAME)
#undef SINTER_REDUCE_OP_NAME
};

}  // namespace

std::string_view scalar_op_name(SOp op) { return kScalarOps[static_cast<size_t>(op)].name; }
int scalar_op_arity(SOp op) { return kScalarOps[static_cast<size_t>(op)].arity; }
bool is_transcendental(SOp op) { return kScalarOps[static_cast<size_t>(op)].transcendental; }

std::optional<SOp> scalar_op_named(std::string_view name) {
  for (size_t i = 0; i < kScalarOps.size(); ++i)
    if (kScalarOps[i].name == name) return static_cast<SOp>(i);
  return std::nullopt;
}

std::string_view reduce_op_name(ReduceOp op) { return kReduceOps[static_cast<size_t>(op)]; }

}  // namespace sinter::inductor
