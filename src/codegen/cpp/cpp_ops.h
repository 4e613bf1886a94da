// How each scalar op, constant, load and store of the loop IR is spelled in C++ (over the prelude's functions).
#pragma once
#include <string>
#include <vector>

#include "inductor/loop_ir.h"

namespace sinter::codegen::cpp {

std::string op_str(inductor::SOp op, inductor::CType type, const std::vector<std::string>& args,
                   const std::vector<inductor::CType>& arg_types);
std::string const_str(inductor::SExpr constant);
const char* storage_type(DType dt);                          // the element type in memory ("sn_u16" for bf16)
std::string load_str(DType dt, const std::string& element);  // memory -> compute type
std::string store_str(DType dt, const std::string& value);   // compute type -> memory
std::string reduce_init(inductor::ReduceOp op, inductor::CType type);
std::string reduce_combine(inductor::ReduceOp op, const std::string& acc, const std::string& value);

// The C text of an index expression: loop variable k prints as var_names[k], symbols as s<id>. `wide`: integer
// constants carry LL (64-bit index arithmetic); off when every index of the kernel fits in 32 bits.
std::string index_expr(const ExprPtr& e, const std::vector<std::string>& var_names, bool wide);

}  // namespace sinter::codegen::cpp
