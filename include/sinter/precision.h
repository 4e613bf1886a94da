// The precision of float32 matrix products, as torch.set_float32_matmul_precision: one setting for the process,
// read by every product when it runs (eager and compiled alike, so a change needs no recompile).
#pragma once
#include <string>
#include <string_view>

namespace sinter {

// "highest" (the default): float32 products in float32. "high": on CUDA, TF32 tensor cores allowed (as
// cuda::set_matmul_allow_tf32(true)); the CPU stays in float32. "medium": also, on a CPU with AVX512-BF16,
// the matrix products of float32 matmul, mm, bmm, linear and addmm (and the compiled GEMMs they become) round
// their operands to bfloat16 and sum the products in float32: about twice the speed, with a relative error of
// about 2^-8 per operand instead of 2^-24. Another string throws sinter::Error.
void set_float32_matmul_precision(std::string_view precision);
std::string get_float32_matmul_precision();

}  // namespace sinter
