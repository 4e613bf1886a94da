#include "runtime/cuda_launcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ops/cuda_blas.h"
#include "ops/linalg_util.h"
#include "ops/shape_util.h"
#include "runtime/cuda_sim.h"
#include "sinter/ops.h"
#include "support/check.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_driver.h"
#include "tensor/cuda_graph.h"

namespace sinter::runtime {

CudaLauncher::CudaLauncher(std::shared_ptr<const CompiledGraphParts> parts, std::vector<CudaKernelEntry> kernels,
                           std::vector<CudaKernelEntry> combined, std::shared_ptr<const void> code, Device device,
                           int multiprocessors, std::shared_ptr<const AutotuneStore> autotune)
    : parts_(std::move(parts)), kernels_(std::move(kernels)), combined_(std::move(combined)), code_(std::move(code)),
      device_(device), multiprocessors_(std::max(1, multiprocessors)), autotune_(std::move(autotune)) {}

Tensor CudaLauncher::allocate(const TensorMeta& meta) const {
  TensorMeta m = meta;
  m.device = device_;
  return empty_from_meta(m);
}

void* LazyKernel::get() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!function_) function_ = make_();
  return function_;
}

void CudaLauncher::run_loops(RunState& r, int k) const {
  if (r.ev(parts_->plan.kernels[k].total) <= 0) return;
  launch(r, k, config_for(r, k));
}

void CudaLauncher::launch(RunState& r, int k, const LaunchConfig& config) const {
  const inductor::KernelPlan& plan = parts_->plan.kernels[k];
  const CudaKernelEntry& e = kernels_[k];
  int64_t total = r.ev(plan.total);
  const unsigned block = config.block > 0 ? config.block : e.block;
  int64_t per_block = e.rows_per_block > 0 ? e.rows_per_block : int64_t{block} * e.vector;
  int64_t cap = grid_cap(e.rows_per_block > 0, config.blocks_per_sm);
  int64_t blocks = (total + per_block - 1) / per_block;
  // A split row kernel (a block per row, or per tile of rows of a column reduction): enough chunks per row to
  // give every multiprocessor 8 blocks (4 on the simulator, so that its tests split too), each chunk at least 4
  // steps of every thread of the row.
  int64_t parts = 1;
  if (e.split_values > 0) {
    int64_t elems = r.ev(plan.stages.at(0).elems);
    int64_t target = cuda::is_simulated() ? 4 : static_cast<int64_t>(multiprocessors_) * 8;
    int64_t threads_per_row = int64_t{e.block} / std::max(1u, e.rows_per_block);
    int64_t most = std::max<int64_t>(1, elems / (threads_per_row * e.vector * 4));
    parts = std::clamp<int64_t>((target + blocks - 1) / blocks, 1, most);
    blocks *= parts;
  }
  unsigned grid = static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, cap));
  std::vector<void*> ptrs;
  for (int b : plan.buffers) ptrs.push_back(r.bufs[b].data_ptr());
  std::vector<void*> params;
  for (void*& p : ptrs) params.push_back(&p);
  for (const int64_t& s : r.syms) params.push_back(const_cast<int64_t*>(&s));
  // From the allocator directly: an eager `empty` on CUDA would stage through the host (ops/cuda_fallback.h).
  auto device_array = [&](int64_t n, DType dt) { return empty_from_meta(dense_meta(SymIntList{n}, dt, device_)); };
  Tensor flag, workspace, counters;
  void* flag_ptr = nullptr;
  if (e.error_flag) {
    flag = device_array(1, kInt32);
    flag_ptr = flag.data_ptr();
    cuda::zero_async(flag_ptr, sizeof(int), device_.index);
  }
  params.push_back(&flag_ptr);
  void *workspace_ptr = nullptr, *counters_ptr = nullptr;
  if (e.split_values > 0) {
    workspace = device_array(int64_t{e.split_values} * total * parts, kInt64);  // 8 bytes a partial result
    counters = device_array(total, kInt32);
    workspace_ptr = workspace.data_ptr();
    counters_ptr = counters.data_ptr();
    cuda::zero_async(counters_ptr, total * sizeof(unsigned), device_.index);
    params.push_back(&workspace_ptr);
    params.push_back(&counters_ptr);
    params.push_back(&parts);
  }
  const bool vector = vector_path(r, e, ptrs.data());
  const std::string& name = vector ? e.name : e.scalar_name;
  if (cuda::is_simulated()) fire(name, vector ? e.sim : e.scalar_sim, nullptr, params, grid, block);
  else fire(name, nullptr, vector ? e.function : e.scalar->get(), params, grid, block);
  if (e.error_flag) check_flag(flag, e.name);
}

// The most blocks a kernel launches. Every kernel walks its iterations grid-stride, so this only sets the
// parallelism: a tuned number per multiprocessor (max-autotune), else, as measured on an H200 (132 SMs) over
// pointwise and softmax, 64 blocks per multiprocessor for a flat kernel (3% better than 16) and a block per row for
// a row kernel (3-5% better than 16 per multiprocessor: the rows of a block do not wait on each other's barriers).
// The simulator runs a few (each block is a set of fibers on one host thread).
int64_t CudaLauncher::grid_cap(bool rows, int blocks_per_sm) const {
  if (cuda::is_simulated()) return blocks_per_sm > 0 ? blocks_per_sm : 4;
  if (blocks_per_sm > 0) return static_cast<int64_t>(multiprocessors_) * blocks_per_sm;
  return rows ? int64_t{0x7fffffff} : static_cast<int64_t>(multiprocessors_) * 64;
}

// Whether this call may take the kernel's vector path: the checks it was written with hold for these addresses
// (`ptrs`: the kernel's buffers, in argument order) and sizes.
bool CudaLauncher::vector_path(const RunState& r, const CudaKernelEntry& e, void* const* ptrs) const {
  for (const inductor::VectorCheck& c : e.vector_checks) {
    const bool ok = c.argument >= 0 ? (reinterpret_cast<uintptr_t>(ptrs[c.argument]) & (c.bytes - 1)) == 0
                                    : r.ev(c.divisible) % c.by == 0;
    if (!ok) return false;
  }
  return true;
}

// Launches `fn` (on a GPU) or `entry` (on the simulated device) with `params`; while capturing on the simulated
// device the replays launch it with these values (every parameter is 8 bytes).
void CudaLauncher::fire(const std::string& name, sim::Entry entry, void* fn, std::vector<void*>& params,
                        unsigned grid, unsigned block) const {
  const int index = device_.index;
  if (cuda::is_simulated()) {
    if (cuda::capturing(index)) {
      std::vector<uint64_t> values(params.size());
      for (size_t i = 0; i < params.size(); ++i) std::memcpy(&values[i], params[i], sizeof(uint64_t));
      cuda::record_simulated(index, [name, entry, values, grid, block]() mutable {
        std::vector<void*> ps;
        for (uint64_t& v : values) ps.push_back(&v);
        sim::launch(name, entry, ps.data(), {grid, 1, 1}, {block, 1, 1}, 0);
      });
    } else {
      sim::launch(name, entry, params.data(), {grid, 1, 1}, {block, 1, 1}, 0);
    }
    return;
  }
  cuda::driver::use_device(index);
  cuda::driver::launch(static_cast<cuda::driver::CUfunction>(fn), {grid, 1, 1}, {block, 1, 1}, 0,
                       cuda::work_stream(index), params.data(), name.c_str());
}

void CudaLauncher::check_flag(const Tensor& flag, const std::string& kernel) const {
  auto check = [flag, kernel] {
    SINTER_CHECK(flag.item<int>() == 0, "ZeroDivisionError: integer division by zero in compiled kernel {}", kernel);
  };
  if (!cuda::check_after_replay(device_.index, check)) check();
}

// The group's kernels of this wave, each over its own range of one grid's blocks (as many as its own launch would
// have, blocks of 256 threads); the group's other kernels get empty ranges. Parameters as codegen::cuda::combine
// lays them out, each 8 bytes, kept in arrays reserved up front so that pointers into them stay valid.
void CudaLauncher::run_combined(RunState& r, const std::vector<int>& wave) const {
  const inductor::Schedule& schedule = parts_->schedule;
  const int g = schedule.kernels.at(wave.front()).combined;
  const std::vector<int>& group = schedule.combined.at(g);
  const CudaKernelEntry& c = combined_.at(g);
  size_t buffers = 0;
  for (int k : group) buffers += parts_->plan.kernels[k].buffers.size();
  std::vector<void*> ptrs;
  std::vector<int64_t> ranges;
  std::vector<int64_t> vectors;
  ptrs.reserve(buffers);
  ranges.reserve(2 * group.size());
  vectors.reserve(group.size());
  int64_t blocks = 0;
  for (int k : group) {
    const inductor::KernelPlan& plan = parts_->plan.kernels[k];
    const CudaKernelEntry& e = kernels_[k];
    const size_t first = ptrs.size();
    for (int b : plan.buffers) ptrs.push_back(r.bufs[b].defined() ? r.bufs[b].data_ptr() : nullptr);
    int64_t n = 0;
    if (std::find(wave.begin(), wave.end(), k) != wave.end()) {
      const int64_t total = r.ev(plan.total), per_block = int64_t{e.block} * e.vector;
      n = total > 0 ? std::min((total + per_block - 1) / per_block, grid_cap(false, 0)) : 0;
    }
    ranges.push_back(blocks);
    ranges.push_back(blocks + n);
    blocks += n;
    vectors.push_back(vector_path(r, e, ptrs.data() + first) ? 1 : 0);
  }
  if (blocks == 0) return;
  std::vector<void*> params;
  for (void*& p : ptrs) params.push_back(&p);
  for (const int64_t& s : r.syms) params.push_back(const_cast<int64_t*>(&s));
  Tensor flag;
  void* flag_ptr = nullptr;
  if (c.error_flag) {
    flag = empty_from_meta(dense_meta(SymIntList{1}, kInt32, device_));
    flag_ptr = flag.data_ptr();
    cuda::zero_async(flag_ptr, sizeof(int), device_.index);
  }
  params.push_back(&flag_ptr);
  for (size_t i = 0; i < group.size(); ++i) {
    params.push_back(&ranges[2 * i]);
    params.push_back(&ranges[2 * i + 1]);
    params.push_back(&vectors[i]);
  }
  fire(c.name, c.sim, c.function, params, static_cast<unsigned>(blocks), c.block);
  if (c.error_flag) check_flag(flag, c.name);
}

bool CudaLauncher::run_library(RunState& r, int k) const {
  const inductor::Kernel& kernel = parts_->schedule.kernels[k];
  const inductor::LoopNode& n = parts_->program->nodes[kernel.nodes[0]];
  const Tensor& c = r.bufs[n.outs[0]];
  // Without cuBLAS (or for a dtype it lacks) the op's eager kernel computes the product; on the simulated device
  // matmul_into's CPU GEMM runs on the device memory itself.
  if (!n.gemm || (!cuda::is_simulated() && !cuda::gemm_supported(c.dtype()))) return false;
  Tensor a = r.view(n.tensor_args[0]), b = r.view(n.tensor_args[1]);
  int64_t m = a.size(0).hint(), cols = b.size(1).hint();
  matmul_into(a, b, strided_view(c, {m, cols}, {cols, 1}));  // the product's buffer is dense
  if (kernel.epilogue >= 0) run_loops(r, kernel.epilogue);
  return true;
}

void CudaLauncher::wait() const {
  if (!cuda::capturing(device_.index)) cuda::synchronize(device_.index);
}

}  // namespace sinter::runtime
