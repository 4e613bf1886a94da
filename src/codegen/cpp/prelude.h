// The prelude: C++ text put at the top of every generated CPU translation unit. It includes no standard-library
// header (so a unit compiles in tens of milliseconds) and defines branch-free inline math (sn_exp, sn_log, sn_tanh,
// sn_erf, ...; float versions accurate to 2 ulp, auto-vectorised inside `#pragma omp simd` loops), float16/bfloat16
// conversions (round to nearest even) and integer typedefs (sn_i64, sn_i32, sn_u8, sn_i8, sn_u16).
// The kernel cache does not add it: codegen writes prelude() at the top of each unit.
#pragma once
#include <string_view>

namespace sinter::codegen::cpp {

std::string_view prelude();

}  // namespace sinter::codegen::cpp
