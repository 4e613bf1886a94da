// The targets sinter describes: this machine's CPU (what the inductor generates code for) and an NVIDIA GPU
// (declared for the scheduler's capability queries; no CUDA code is generated yet).
#include "sinter/target.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "codegen/cpp/toolchain.h"
#include "sinter/threads.h"

namespace sinter {

const char* extern_kind_name(ExternKind kind) {
  switch (kind) {
    case ExternKind::kGemm: return "gemm";
    case ExternKind::kConv: return "conv";
    case ExternKind::kAttention: return "attention";
  }
  return "?";
}

const char* epilogue_shape_name(EpilogueShape shape) {
  switch (shape) {
    case EpilogueShape::kTile: return "tile";
    case EpilogueShape::kRows: return "rows";
    case EpilogueShape::kMenu: return "menu";
  }
  return "?";
}

namespace {

const ExternCapability* find(const Target& t, ExternKind kind) {
  for (const ExternCapability& c : t.externs)
    if (c.kind == kind) return &c;
  return nullptr;
}

}  // namespace

bool Target::runs_on(const Device& device) const {
  return kind == TargetKind::kCpu ? device.is_cpu() : device.is_cuda();
}

bool Target::provides(ExternKind extern_kind, DType dtype) const {
  const ExternCapability* c = find(*this, extern_kind);
  return c && std::find(c->dtypes.begin(), c->dtypes.end(), dtype) != c->dtypes.end();
}

bool Target::accepts(ExternKind extern_kind, EpilogueShape shape) const {
  const ExternCapability* c = find(*this, extern_kind);
  return c && std::find(c->epilogues.begin(), c->epilogues.end(), shape) != c->epilogues.end();
}

std::string Target::missing(ExternKind extern_kind, EpilogueShape shape) const {
  return fmt::format("the target's {} takes no {} epilogue (capability {}.epilogue.{})", extern_kind_name(extern_kind),
                     epilogue_shape_name(shape), extern_kind_name(extern_kind), epilogue_shape_name(shape));
}

std::string Target::str() const {
  std::string out = fmt::format("target: {}\n  kind {}, cores {}, vector width {} floats, warp {}, shared memory "
                                "per block {} B, L2 {} B, parallel above {} elements, combined kernels {}\n",
                                name, kind == TargetKind::kCpu ? "cpu" : "cuda", cores, vector_width_floats,
                                warp_size, shared_memory_per_block, l2_bytes, parallel_min_elements,
                                combined_kernels ? "yes" : "no");
  for (const ExternCapability& c : externs) {
    std::string dtypes, shapes;
    for (DType d : c.dtypes) dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d));
    for (EpilogueShape s : c.epilogues) shapes += (shapes.empty() ? "" : ",") + std::string(epilogue_shape_name(s));
    out += fmt::format("  extern {}: dtypes {}; epilogues {}", extern_kind_name(c.kind), dtypes,
                       shapes.empty() ? "none" : shapes);
    if (!c.menu.empty()) {
      std::string menu;
      for (const std::string& m : c.menu) menu += (menu.empty() ? "" : ",") + m;
      out += fmt::format(" (menu: {})", menu);
    }
    out += "\n";
  }
  return out;
}

Target host_cpu_target() {
  Target t;
  t.kind = TargetKind::kCpu;
  t.cores = get_num_threads();
  t.vector_width_floats = codegen::cpp::vector_width_floats();
  t.warp_size = 1;
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  t.l2_bytes = l2 > 0 ? l2 : 0;
  t.parallel_min_elements = 65536;
  t.combined_kernels = true;
  t.name = fmt::format("cpu ({}, {} threads)", codegen::cpp::host_cpu_features().description, t.cores);
  // sgemm (src/ops/sgemm.cpp) calls a tile callback per block of rows: element-wise tiles and whole rows fit.
  t.externs.push_back({ExternKind::kGemm, {kFloat32}, {EpilogueShape::kTile, EpilogueShape::kRows}, {}});
  // The channels-last conv calls its callback per block of output pixels x channels: element-wise only.
  t.externs.push_back({ExternKind::kConv, {kFloat32}, {EpilogueShape::kTile}, {}});
  // scaled_dot_product_attention runs as the eager kernel (a library call without epilogues).
  t.externs.push_back({ExternKind::kAttention, {kFloat32, kFloat64, kBFloat16, kFloat16}, {}, {}});
  return t;
}

Target cuda_target(int sm) {
  Target t;
  t.kind = TargetKind::kCuda;
  t.name = fmt::format("cuda sm_{}", sm);
  // Hopper (sm_90, H100/H200): 132 SMs, 227 KiB of shared memory per block, 50 MiB of L2.
  t.cores = sm >= 90 ? 132 : 108;
  t.warp_size = 32;
  t.vector_width_floats = 4;  // 128-bit loads
  t.shared_memory_per_block = sm >= 90 ? 227 * 1024 : 163 * 1024;
  t.l2_bytes = sm >= 90 ? 50LL << 20 : 40LL << 20;
  t.parallel_min_elements = static_cast<int64_t>(t.cores) * 1024;
  t.combined_kernels = true;
  const std::vector<DType> floats = {kFloat32, kFloat16, kBFloat16, kFloat64};
  // cuBLASLt applies bias, relu, gelu and an auxiliary output inside the GEMM; anything else runs as an
  // element-wise kernel after it. No row epilogues.
  t.externs.push_back({ExternKind::kGemm, floats, {EpilogueShape::kMenu}, {"bias", "relu", "gelu", "aux"}});
  t.externs.push_back({ExternKind::kConv, floats, {EpilogueShape::kMenu}, {"bias", "relu"}});
  t.externs.push_back({ExternKind::kAttention, {kFloat16, kBFloat16, kFloat32}, {}, {}});
  return t;
}

}  // namespace sinter
