#include "ops/cuda_fallback.h"

#include <mutex>
#include <set>
#include <unordered_map>

#include "ops/dispatch.h"
#include "ops/shape_util.h"
#include "support/log.h"
#include "tensor/cuda_device.h"

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

}  // namespace

void run_cpu_kernel_for_cuda(KernelFn cpu_kernel, OpId op, const Args& args, std::vector<Tensor>& outs,
                             bool data_dependent, Device device) {
  if (cuda::is_simulated()) {
    cpu_kernel(op, args, outs);  // simulated device memory is host memory
  } else {
    hint_once(op);
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
