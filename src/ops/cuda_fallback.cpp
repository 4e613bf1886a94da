#include "ops/cuda_fallback.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <unordered_map>

#include "ops/dispatch.h"
#include "ops/shape_util.h"
#include "support/log.h"
#include "support/warning.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_graph.h"

namespace sinter {
namespace {

// Host copies of the device storages an op touches, one per storage so that views of one storage still alias.
class Staging {
 public:
  // `t` as a CPU tensor over the host copy of its storage (fetched from the device when `fetch`).
  Tensor host(const Tensor& t, bool fetch) {
    if (!t.defined() || !t.is_cuda()) return t;
    Storage* s = t.storage().get();
    auto it = copies_.find(s);
    if (it == copies_.end()) {
      Entry e{t.storage(), empty_from_meta(dense_meta(SymIntList{static_cast<int64_t>(s->nbytes())}, kUInt8, kCPU))};
      if (fetch) cuda::copy_to_host(e.host.data_ptr(), s->data(), s->nbytes(), t.device().index);
      it = copies_.emplace(s, std::move(e)).first;
    }
    auto impl = std::make_shared<TensorImpl>(*t.impl());
    impl->storage = it->second.host.storage();
    impl->meta.device = kCPU;
    return Tensor(std::move(impl));
  }
  void upload(const Tensor& t) {
    if (!t.defined() || !t.is_cuda()) return;
    const Entry& e = copies_.at(t.storage().get());
    cuda::copy_to_device(e.device->data(), e.host.data_ptr(), e.device->nbytes(), t.device().index);
  }

 private:
  struct Entry {
    std::shared_ptr<Storage> device;
    Tensor host;  // uint8[nbytes]
  };
  std::unordered_map<Storage*, Entry> copies_;
};

void hint_once(OpId op) {
  static std::mutex mutex;
  static std::set<OpId> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(op).second)
    SINTER_LOG(kPerfHints, "cuda: {} has no CUDA kernel yet; it runs its CPU kernel on staged host copies",
               op_def(op).schema.full_name());
}

std::atomic<CudaGeneratedKernel> installed{nullptr};
std::atomic<KernelFn> attention_kernel{nullptr};
std::atomic<KernelFn> attention_backward_kernel{nullptr};
std::atomic<int64_t> generated_calls{0}, cpu_calls{0};

}  // namespace

void set_cuda_generated_kernel(CudaGeneratedKernel fn) { installed.store(fn); }
void set_cuda_attention_kernel(KernelFn fn) { attention_kernel.store(fn); }
KernelFn cuda_attention_kernel() { return attention_kernel.load(); }
void set_cuda_attention_backward_kernel(KernelFn fn) { attention_backward_kernel.store(fn); }
KernelFn cuda_attention_backward_kernel() { return attention_backward_kernel.load(); }

bool cuda_eager_generated() {
  const char* v = std::getenv("SINTER_CUDA_EAGER");
  std::string_view s = v ? v : "";
  if (s == "generated") return true;
  if (s == "cpu") return false;
  if (!s.empty())
    warn_once("SINTER_CUDA_EAGER", fmt::format("SINTER_CUDA_EAGER='{}' is neither 'generated' nor 'cpu'; using the "
                                               "default", s));
  // While a CUDA graph is captured, kernels it can hold: the CPU kernel cannot be part of one.
  return !cuda::is_simulated() || cuda::capturing();
}

CudaEagerCounts cuda_eager_counts() { return {generated_calls.load(), cpu_calls.load()}; }

bool run_cuda_generated(OpId op, const Args& args, std::vector<Tensor>& outs) {
  CudaGeneratedKernel generated = installed.load();
  if (!generated || !cuda_eager_generated() || !generated(op, args, outs)) return false;
  ++generated_calls;
  return true;
}

void run_without_cuda_kernel(KernelFn cpu_kernel, OpId op, const Args& args, std::vector<Tensor>& outs,
                             bool data_dependent, Device device) {
  if (!data_dependent && run_cuda_generated(op, args, outs)) return;
  if (cuda::capturing(device.index))
    cuda::require_not_capturing(device.index, fmt::format("{} (it has no CUDA kernel for these arguments and runs its "
                                                          "CPU kernel)", op_def(op).schema.full_name()));
  ++cpu_calls;
  // The simulated device stages too (its memory is host memory, but a kernel that put a tensor of its own in
  // place of an output it was given would pass there and leave the GPU's output unwritten).
  {
    if (!cuda::is_simulated()) hint_once(op);
    const Schema& schema = op_def(op).schema;
    Staging staging;
    Args host_args = args;
    for (size_t i = 0; i < host_args.size(); ++i) {
      Value& v = host_args[i];
      if (v.is_tensor()) {
        v = Value(staging.host(v.tensor(), true));
      } else if (v.is_tensor_list()) {
        std::vector<Tensor> list = v.tensor_list();
        for (Tensor& t : list) t = staging.host(t, true);
        v = Value(std::move(list));
      }
    }
    std::vector<Tensor> host_outs;
    for (const Tensor& o : outs) host_outs.push_back(staging.host(o, false));
    cpu_kernel(op, host_args, host_outs);
    if (data_dependent) outs = host_outs;
    for (const Tensor& o : outs) staging.upload(o);
    for (size_t i = 0; i < args.size() && i < schema.args.size(); ++i) {
      if (!schema.args[i].is_write) continue;
      if (args[i].is_tensor()) staging.upload(args[i].tensor());
      else if (args[i].is_tensor_list())
        for (const Tensor& t : args[i].tensor_list()) staging.upload(t);
    }
  }
  // Outputs a data-dependent kernel allocated itself (on the host) move to the op's device.
  if (data_dependent)
    for (Tensor& o : outs)
      if (o.defined() && o.device() != device) o = o.to(device);
}

}  // namespace sinter
