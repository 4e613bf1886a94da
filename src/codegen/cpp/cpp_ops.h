// How each scalar op, constant, load and store of the loop IR is spelled in C++ (over the prelude's functions).
#pragma once
#include <string>
#include <vector>

#include "inductor/loop_ir.h"

namespace sinter::codegen::cpp {

std::string op_str(const std::string& op, inductor::CType type, const std::vector<std::string>& args,
                   const std::vector<inductor::CType>& arg_types);
std::string const_str(inductor::SExpr constant);
const char* storage_type(DType dt);                          // the element type in memory ("sn_u16" for bf16)
std::string load_str(DType dt, const std::string& element);  // memory -> compute type
std::string store_str(DType dt, const std::string& value);   // compute type -> memory
std::string reduce_init(const std::string& reduce_op, inductor::CType type);
std::string reduce_combine(const std::string& reduce_op, const std::string& acc, const std::string& value);

}  // namespace sinter::codegen::cpp
