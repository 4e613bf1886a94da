// The "inductor" backend's CUDA path: the graph planned as for the CPU (plan_graph), CUDA source for every loop
// kernel (codegen/cuda), then either NVRTC cubins loaded into the GPU (one program per kernel, compiled in
// parallel, cached on disk by source) or, on the simulated device, one host shared object built from the same
// source over the simulator's prelude. The CUDA launcher runs the result.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "backends/backends.h"
#include "codegen/cpp/kernel_cache.h"
#include "codegen/cuda/cubin_cache.h"
#include "codegen/cuda/cuda_codegen.h"
#include "codegen/cuda/nvrtc.h"
#include "codegen/cuda/sim_prelude.h"
#include "runtime/cuda_launcher.h"
#include "runtime/cuda_sim.h"
#include "support/check.h"
#include "support/log.h"
#include "support/sha256.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_driver.h"

namespace sinter::backends {

namespace {

using codegen::cuda::CudaKernel;
using runtime::CudaKernelEntry;

// The simulated device: every kernel in one host unit, bound to the simulator's runtime.
std::shared_ptr<const void> load_simulated(const std::vector<CudaKernel>& kernels, const std::string& name,
                                           const std::string& source, const std::string& debug_dir,
                                           std::vector<CudaKernelEntry>& entries) {
  codegen::cpp::CompileOptions flags;
  flags.debug_dir = debug_dir;
  std::string unit = std::string(codegen::cuda::sim_prelude()) + source;
  codegen::cpp::CompiledObject obj = codegen::cpp::compile_and_load({unit}, name + "_cuda_sim", flags);
  auto bind = reinterpret_cast<void (*)(const sn_sim_api*)>(obj.library->symbol("sn_sim_bind"));
  bind(runtime::sim::api());
  auto entry = [&](const std::string& kernel) {
    return reinterpret_cast<void (*)(void**)>(obj.library->symbol(kernel + "__sim"));
  };
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (kernels[k].name.empty()) continue;
    entries[k].sim = entry(kernels[k].name);
    if (!kernels[k].scalar_name.empty()) entries[k].scalar_sim = entry(kernels[k].scalar_name);
  }
  SINTER_LOG(kPerfHints, "inductor: {} simulated CUDA kernel(s) {} in {:.3f} s", entries.size(),
             obj.from == codegen::cpp::CompiledObject::From::kCompiled ? "compiled" : "loaded from cache", obj.seconds);
  return obj.library;
}

// The cubins of (name, source) units (empty names are externs: no cubin), one NVRTC program each, compiled in
// parallel on the host's cores; counts the ones compiled rather than loaded from the cache.
std::vector<std::string> compile_cubins(const std::vector<std::pair<std::string, std::string>>& units,
                                        const std::string& arch, size_t& compiled_count) {
  std::vector<size_t> todo;
  for (size_t k = 0; k < units.size(); ++k)
    if (!units[k].first.empty()) todo.push_back(k);
  std::vector<std::string> cubins(units.size());
  std::vector<std::string> errors(units.size());
  std::vector<bool> compiler_faults(units.size(), false);
  std::atomic<size_t> next{0}, compiled{0};
  auto work = [&] {
    for (size_t i; (i = next++) < todo.size();) {
      size_t k = todo[i];
      try {
        bool fresh = false;
        cubins[k] = codegen::cuda::cubin_for(units[k].second, units[k].first, arch, fresh);
        if (fresh) ++compiled;
      } catch (const std::exception& e) {
        errors[k] = e.what();
        compiler_faults[k] = dynamic_cast<const CompilerError*>(&e) != nullptr;
      }
    }
  };
  unsigned threads = std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 16);
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<size_t>(threads, todo.size()); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (size_t k = 0; k < errors.size(); ++k) {
    if (errors[k].empty()) continue;
    if (compiler_faults[k]) throw CompilerError(errors[k]);  // keeps its kind: the graph may fall back
    throw Error(errors[k]);
  }
  compiled_count = compiled.load();
  return cubins;
}

// The kernels' vector (or only) paths; with `scalars`, their scalar kernels as well.
std::vector<std::pair<std::string, std::string>> units_of(const std::vector<CudaKernel>& kernels, bool scalars) {
  std::vector<std::pair<std::string, std::string>> units;
  for (const CudaKernel& c : kernels) {
    units.emplace_back(c.name, c.source);
    if (scalars && !c.scalar_name.empty()) units.emplace_back(c.scalar_name, c.scalar_source);
  }
  return units;
}

// A GPU: the cubins loaded as modules of the device's primary context.
std::shared_ptr<const void> load_on_gpu(const std::vector<CudaKernel>& kernels, const std::string& arch,
                                        Device device, std::vector<CudaKernelEntry>& entries) {
  auto start = std::chrono::steady_clock::now();
  size_t compiled = 0;
  std::vector<std::string> cubins = compile_cubins(units_of(kernels, false), arch, compiled);
  cuda::driver::use_device(device.index);
  auto modules = std::make_shared<std::vector<cuda::driver::Module>>();
  modules->reserve(kernels.size());
  size_t count = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (kernels[k].name.empty()) continue;
    modules->emplace_back(cubins[k], kernels[k].name);
    entries[k].function = modules->back().function(kernels[k].name);
    ++count;
    if (kernels[k].scalar_name.empty()) continue;
    // The scalar kernel on its first launch; its module lives as long as the launcher's entry.
    entries[k].scalar = std::make_shared<runtime::LazyKernel>(
        [name = kernels[k].scalar_name, source = kernels[k].scalar_source, arch, device,
         module = std::shared_ptr<cuda::driver::Module>()]() mutable -> void* {
          bool fresh = false;
          std::string cubin = codegen::cuda::cubin_for(source, name, arch, fresh);
          cuda::driver::use_device(device.index);
          module = std::make_shared<cuda::driver::Module>(cubin, name);
          SINTER_LOG(kPerfHints, "inductor: scalar kernel {} {} for a call its vector path does not take", name,
                     fresh ? "compiled" : "loaded from the cache");
          return module->function(name);
        });
  }
  SINTER_LOG(kPerfHints, "inductor: {} CUDA kernel(s) for {} ({} compiled by NVRTC, the rest from the cache) in "
             "{:.3f} s", count, arch, compiled,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return modules;
}

// Whether kernel k may be launched twice on the same buffers with the same result: it loads nothing it stores
// (max-autotune times it so); an epilogue runs inside its GEMM's step and is left as it is.
bool may_launch_again(const runtime::CompiledGraphParts& parts, int k) {
  const inductor::Kernel& kernel = parts.schedule.kernels[k];
  if (kernel.kind != inductor::Kernel::Kind::kLoops || kernel.epilogue_of >= 0) return false;
  std::vector<int> stored, loaded;
  for (int id : kernel.nodes) {
    const inductor::LoopNode& n = parts.program->nodes[id];
    stored.push_back(n.out);
    std::vector<inductor::SExpr> loads;
    inductor::collect_loads(n.body, loads);
    for (inductor::SExpr l : loads) loaded.push_back(l->buffer);
  }
  for (int b : stored)
    if (std::find(loaded.begin(), loaded.end(), b) != loaded.end() &&
        std::find(kernel.local_buffers.begin(), kernel.local_buffers.end(), b) == kernel.local_buffers.end())
      return false;
  return true;
}

// max-autotune's records in the cubin cache's folder for this GPU ("tuning-<arch>"), one per kernel source and
// device name.
std::shared_ptr<const runtime::AutotuneStore> autotune_store(const std::string& graph, Device device,
                                                           std::vector<CudaKernelEntry>& entries) {
  auto store = std::make_shared<runtime::AutotuneStore>();
  store->graph = graph;
  if (cuda::is_simulated()) return store;
  cuda::DeviceProperties props = cuda::get_device_properties(device.index);
  std::string arch = fmt::format("tuning-sm_{}{}", props.major, props.minor);
  for (CudaKernelEntry& e : entries)
    if (e.tuned) e.tune_key = support::sha256_hex(fmt::format("launch v1\n{}\n{}", props.name, e.tune_key));
  store->load = [arch](const std::string& key) { return codegen::cuda::load_cubin(arch, key); };
  store->store = [arch](const std::string& key, const std::string& value) {
    codegen::cuda::store_cubin(arch, key, value);
  };
  return store;
}

Device graph_device(const Graph& graph) {
  for (const Node* in : graph.input_nodes())
    if (in->meta().device.is_cuda()) return in->meta().device;
  return kCUDA;
}

}  // namespace

std::shared_ptr<runtime::Executor> compile_for_cuda(const Graph& graph, const CompileContext& ctx) {
  std::string name = next_graph_name();
  support::DebugDump dump(ctx.debug_dir, name);
  std::shared_ptr<runtime::CompiledGraphParts> parts = plan_graph(graph, ctx, name, dump);
  std::vector<CudaKernel> kernels = codegen::cuda::generate(*parts->program, parts->plan);
  // Each combined group's kernel after the plan's kernels; on a GPU its parts are compiled only inside it.
  const size_t num_plan = kernels.size();
  const std::vector<std::vector<int>>& groups = parts->schedule.combined;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<const CudaKernel*> members;
    for (int k : groups[g]) members.push_back(&kernels[k]);
    CudaKernel c = codegen::cuda::combine(members, fmt::format("{}_combined{}", name, g));
    kernels.push_back(std::move(c));
  }
  std::vector<CudaKernelEntry> entries(kernels.size());
  std::string source = codegen::cuda::unit_header();
  bool any = false;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const CudaKernel& c = kernels[k];
    if (c.name.empty()) continue;
    any = true;
    source += "\n" + c.source + (c.scalar_source.empty() ? "" : "\n" + c.scalar_source);
    CudaKernelEntry& e = entries[k];
    e.name = c.name;
    e.block = c.shape.block;
    e.rows_per_block = c.shape.rows_per_block;
    e.vector = c.shape.vector;
    e.split_values = c.split_values;
    e.error_flag = c.error_flag;
    e.vector_checks = c.vector_checks;
    e.scalar_name = c.scalar_name;
    const bool tunable = k < num_plan && may_launch_again(*parts, static_cast<int>(k)) && c.split_values == 0;
    if (ctx.options.mode == Mode::kMaxAutotune && tunable) {
      e.tuned = std::make_shared<runtime::TunedLaunch>();
      e.tune_key = c.source;  // with the device's name, hashed below
    }
  }
  Device device = graph_device(graph);
  std::shared_ptr<const void> code;
  if (any) {
    dump.file("kernels.cu", source);
    SINTER_LOG(kOutputCode, "{} CUDA source:\n{}", name, source);
    if (cuda::is_simulated()) {
      if (codegen::cuda::nvrtc_check_in_simulation()) {
        size_t compiled = 0;
        compile_cubins(units_of(kernels, true), "sm_90", compiled);
      }
      code = load_simulated(kernels, name, source, dump.dir(), entries);
    } else {
      cuda::DeviceProperties props = cuda::get_device_properties(device.index);
      std::vector<CudaKernel> loaded = kernels;
      for (size_t k = 0; k < num_plan; ++k)
        if (parts->schedule.kernels[k].combined >= 0) loaded[k] = CudaKernel();  // launched only combined
      code = load_on_gpu(loaded, fmt::format("sm_{}{}", props.major, props.minor), device, entries);
    }
  }
  std::vector<CudaKernelEntry> combined(std::make_move_iterator(entries.begin() + num_plan),
                                        std::make_move_iterator(entries.end()));
  entries.resize(num_plan);
  std::shared_ptr<const runtime::AutotuneStore> autotune;
  if (ctx.options.mode == Mode::kMaxAutotune) autotune = autotune_store(name, device, entries);
  auto launcher = std::make_unique<runtime::CudaLauncher>(parts, std::move(entries), std::move(combined), code, device,
                                                          std::max(1, ctx.target.cores), autotune);
  return std::make_shared<runtime::Executor>(parts, std::move(launcher));
}

}  // namespace sinter::backends
