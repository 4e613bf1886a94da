// CUDA graphs for compiled graphs (tensor/cuda_graph.h captures and replays): the "cudagraphs" backend, which
// captures aot_eager's run of a graph (its eager CUDA kernels), and Mode::kReduceOverhead of the inductor
// backend, which captures its executor's launches, library calls and copies.
//
// Per compiled graph: the first call of an input layout (dtypes, sizes, strides) runs as compiled, so that work
// done once (kernels compiled on first use, library handles) is not captured; the second captures one CUDA graph
// for that layout, from the compiled graph's own memory pool, and every later call replays it. Inputs that are the
// same tensors at every call (parameters and buffers, CompileContext::static_inputs) are read in place. So are
// the other inputs when the second call finds them at the first call's addresses (the same tensors, or buffers
// refilled between calls): that graph serves calls with the inputs at those addresses (a graph only reads its
// inputs); otherwise, and for calls with the inputs elsewhere, a graph copies each into a buffer of its own
// before each replay. Outputs are copied out of the graph's memory after each replay (one device copy per output
// storage), so a result stays valid however often the graph is replayed; an output that is an input comes back
// as the caller's tensor. At most kMaxGraphs layouts keep a
// graph (a symbolic entry may see many); the least recently used is dropped, logged on `cudagraphs`. Work a
// graph cannot hold (an op that runs its CPU kernel, a read by the host, a CPU input) makes the compiled graph
// run without CUDA graphs from then on, said on `perf_hints` and `cudagraphs`.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>

#include "backends/backends.h"
#include "support/log.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_graph.h"
#include "tensor/element_span.h"

namespace sinter::backends {

namespace {

constexpr size_t kMaxGraphs = 16;

std::atomic<int64_t> captures{0}, replays{0};
std::atomic<int> serial{0};

Tensor on_storage(std::shared_ptr<Storage> storage, TensorMeta meta) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->meta = std::move(meta);
  return Tensor(std::move(impl));
}

// A tensor laid out as `t` (sizes, strides, dtype) in fresh memory that covers just its span.
Tensor buffer_like(const Tensor& t) { return span_buffer(t, t.device()); }

void* span_start(const Tensor& t) {
  return static_cast<char*>(t.storage()->data()) + element_span(t).first * static_cast<int64_t>(t.element_size());
}

// "float32[8, 16], float32[16] and 6 static": the inputs a graph is captured for (static ones counted).
std::string layout_text(const std::vector<Tensor>& inputs, const std::vector<bool>& is_static) {
  std::string s;
  size_t fixed = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (k < is_static.size() && is_static[k]) {
      ++fixed;
      continue;
    }
    const Tensor& t = inputs[k];
    s += s.empty() ? "" : ", ";
    s += t.defined() ? std::string(dtype_name(t.dtype())) + t.sizes().str() : "none";
  }
  return fixed == 0 ? s : fmt::format("{} and {} static", s, fixed);
}

class CudaGraphRunner {
 public:
  CudaGraphRunner(CompiledGraph::Fn body, std::vector<bool> static_inputs, int index, int launches)
      : name_(fmt::format("cudagraphs_{}", serial++)), body_(std::move(body)), static_(std::move(static_inputs)),
        index_(index), launches_(launches), pool_(cuda::new_memory_pool(index)) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (disabled_.empty())
      for (size_t k = 0; k < inputs.size(); ++k)
        if (inputs[k].defined() && inputs[k].device() != Device(DeviceType::kCUDA, index_))
          disable(fmt::format("input {} is on {}", k, inputs[k].device().str()));
    if (!disabled_.empty()) {
      lock.unlock();
      return body_(inputs);
    }
    std::vector<int64_t> key = key_of(inputs), addresses = key;
    for (size_t k = 0; k < inputs.size(); ++k)
      if (inputs[k].defined() && !is_static(k)) addresses.push_back(reinterpret_cast<int64_t>(inputs[k].data_ptr()));
    auto it = graphs_.find(addresses);  // a graph that reads the inputs where they are now
    if (it == graphs_.end()) it = graphs_.find(key);  // one that copies them in
    if (it == graphs_.end()) {
      if (warmed_.size() > 4 * kMaxGraphs) warmed_.clear();
      auto [first, fresh] = warmed_.emplace(key, addresses);
      if (fresh) {  // the layout's first call
        lock.unlock();
        std::vector<Tensor> outs = body_(inputs);
        worth_it(inputs, outs);
        return outs;
      }
      // The inputs at the addresses of the layout's first call again (one buffer refilled between calls, or the
      // same tensors): a graph that reads them there; else one that copies them in.
      const bool direct = first->second == addresses;
      if (graphs_.size() >= kMaxGraphs) evict();
      std::shared_ptr<Recorded> rec;
      try {
        rec = capture(inputs, direct);
      } catch (const std::exception& e) {
        disable(e.what());
        lock.unlock();
        return body_(inputs);
      }
      it = graphs_.emplace(direct ? std::move(addresses) : std::move(key), std::move(rec)).first;
    }
    it->second->used = ++clock_;
    return replay(*it->second, inputs);
  }

 private:
  struct Recorded {
    std::unique_ptr<cuda::Graph> graph;
    // Per input: the graph's buffer, copied into before each replay; undefined where the graph reads the input
    // in place (a static input, or every input of a graph captured at the inputs' own addresses).
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;  // what the captured run returned (in the graph's memory); undefined where...
    std::vector<int> output_input;  // ...output o is input output_input[o] itself (-1 otherwise)
    std::string layout;
    uint64_t used = 0;
  };

  std::vector<int64_t> key_of(const std::vector<Tensor>& inputs) const {
    std::vector<int64_t> key;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Tensor& t = inputs[k];
      if (!t.defined()) {
        key.push_back(-1);
        continue;
      }
      key.push_back(static_cast<int64_t>(t.dtype()));
      key.push_back(t.dim());
      for (int64_t d = 0; d < t.dim(); ++d) key.push_back(t.size(d).hint()), key.push_back(t.stride(d).hint());
      if (is_static(k)) key.push_back(reinterpret_cast<int64_t>(t.data_ptr()));
    }
    return key;
  }

  bool is_static(size_t k) const { return k < static_.size() && static_[k]; }

  // A replay is one graph launch plus a copy per input that is not static and per output: with no more launches
  // than that a call, a CUDA graph only adds work (the compiled graph runs without, said once).
  void worth_it(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outs) {
    if (launches_ < 0) return;
    int copies = 0;
    for (size_t k = 0; k < inputs.size(); ++k) copies += inputs[k].defined() && !is_static(k);
    for (const Tensor& o : outs) copies += o.defined();
    if (launches_ > copies + 1) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (disabled_.empty())
      disable(fmt::format("it launches {} kernel(s) a call, and a replay would launch the graph and {} copies "
                          "(inputs in, outputs out)",
                          launches_, copies));
  }

  std::shared_ptr<Recorded> capture(const std::vector<Tensor>& inputs, bool direct) {
    auto start = std::chrono::steady_clock::now();
    auto rec = std::make_shared<Recorded>();
    rec->inputs.resize(inputs.size());
    rec->layout = layout_text(inputs, static_);
    std::vector<Tensor> in = inputs;
    rec->graph = cuda::Graph::capture(index_, pool_, [&] {
      if (!direct)
        for (size_t k = 0; k < inputs.size(); ++k)
          if (inputs[k].defined() && !is_static(k)) in[k] = rec->inputs[k] = buffer_like(inputs[k]);
      rec->outputs = body_(in);
    });
    rec->output_input.assign(rec->outputs.size(), -1);
    for (size_t o = 0; o < rec->outputs.size(); ++o)
      for (size_t k = 0; k < in.size() && rec->outputs[o].defined(); ++k)
        if (rec->outputs[o].is_same(in[k])) rec->output_input[o] = static_cast<int>(k), rec->outputs[o] = Tensor();
    ++captures;
    int64_t ops = rec->graph->recorded();
    SINTER_LOG(kCudagraphs, "{}: captured a CUDA graph for inputs ({}){}{} in {:.3f} ms; {} graph(s) kept", name_,
               rec->layout, direct ? " read where they are" : " copied in",
               ops >= 0 ? fmt::format(", {} operations recorded", ops) : "",
               1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
               graphs_.size() + 1);
    return rec;
  }

  std::vector<Tensor> replay(const Recorded& rec, const std::vector<Tensor>& inputs) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Tensor& buffer = rec.inputs[k];
      if (!buffer.defined()) continue;
      int64_t count = element_span(buffer).count;
      cuda::copy_on_device(span_start(buffer), span_start(inputs[k]), count * buffer.element_size(), index_);
    }
    ++replays;
    rec.graph->replay();
    std::vector<Tensor> outs(rec.outputs.size());
    std::map<const Storage*, std::shared_ptr<Storage>> copied;
    for (size_t o = 0; o < outs.size(); ++o) {
      if (rec.output_input[o] >= 0) {  // the input itself: the caller's tensor
        outs[o] = inputs[rec.output_input[o]];
        continue;
      }
      const Tensor& t = rec.outputs[o];
      if (!t.defined()) continue;
      bool in_place = false;  // a view of a static input's memory, which the graph does not own
      for (size_t k = 0; k < inputs.size() && !in_place; ++k)
        in_place = is_static(k) && inputs[k].defined() && t.storage() == inputs[k].storage();
      if (in_place) {
        outs[o] = t;
        continue;
      }
      std::shared_ptr<Storage>& copy = copied[t.storage().get()];
      if (!copy) {
        size_t bytes = t.storage()->nbytes();
        copy = empty_from_meta(TensorMeta{{static_cast<int64_t>(bytes)}, {1}, 0, kUInt8, t.device()}).storage();
        cuda::copy_on_device(copy->data(), t.storage()->data(), bytes, index_);
      }
      outs[o] = on_storage(copy, t.meta());
    }
    return outs;
  }

  void evict() {
    auto oldest = graphs_.begin();
    for (auto it = graphs_.begin(); it != graphs_.end(); ++it)
      if (it->second->used < oldest->second->used) oldest = it;
    SINTER_LOG(kCudagraphs, "{}: {} CUDA graphs kept, the least recently used one (inputs ({})) is dropped", name_,
               graphs_.size(), oldest->second->layout);
    graphs_.erase(oldest);
  }

  void disable(const std::string& why) {
    disabled_ = why;
    graphs_.clear();
    SINTER_LOG(kCudagraphs, "{}: runs without CUDA graphs: {}", name_, why);
    SINTER_LOG(kPerfHints, "cudagraphs: a compiled graph runs without CUDA graphs: {}", why);
  }

  std::string name_;
  CompiledGraph::Fn body_;
  std::vector<bool> static_;
  int index_;
  int launches_;  // per call without graphs; -1: not known (eager ops)
  std::shared_ptr<Allocator> pool_;
  std::mutex mutex_;
  std::string disabled_;  // why the compiled graph runs without CUDA graphs; empty while it uses them
  std::map<std::vector<int64_t>, std::shared_ptr<Recorded>> graphs_;
  std::map<std::vector<int64_t>, std::vector<int64_t>> warmed_;  // layouts called once: their inputs' addresses
  uint64_t clock_ = 0;
};

}  // namespace

CompiledGraph::Fn with_cuda_graphs(const Graph& graph, const CompileContext& ctx, CompiledGraph::Fn body,
                                   int launches) {
  int index = -1;
  for (const Node* in : graph.input_nodes())
    if (in->meta().device.is_cuda()) index = in->meta().device.index;
  if (index < 0) {
    SINTER_LOG(kCudagraphs, "a graph without CUDA inputs runs without CUDA graphs");
    SINTER_LOG(kPerfHints, "cudagraphs: a graph without CUDA inputs runs without CUDA graphs (as in default mode)");
    return body;
  }
  auto runner = std::make_shared<CudaGraphRunner>(std::move(body), ctx.static_inputs, index, launches);
  return [runner](const std::vector<Tensor>& inputs) { return runner->run(inputs); };
}

ContextBackend cudagraphs_backend() {
  return [](const Graph& graph, const std::vector<Tensor>& examples, const CompileContext& ctx) -> CompiledGraph {
    CompiledGraph eager = aot_eager_backend()(graph, examples);
    return CompiledGraph(
        with_cuda_graphs(graph, ctx, [eager](const std::vector<Tensor>& in) { return eager(in); }, -1), -1);
  };
}

CudaGraphCounts cuda_graph_counts() { return {captures.load(), replays.load()}; }

}  // namespace sinter::backends
