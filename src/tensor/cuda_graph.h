// CUDA graphs: the device work that one run of a compiled program issues, captured once and replayed. On a GPU
// the work goes, while capturing, to a capture stream of its own (CUDA stream capture in relaxed mode) instead of
// the default stream, and the graph is instantiated and launched on the default stream at each replay; on the
// simulated device every device operation (kernel launch, copy, fill, library call) is recorded as a host
// closure instead of run, and a replay runs the closures in order. Either way a capture runs nothing.
//
// The capture is a scope on the calling thread (like capture's HookScope): while it lasts, every allocation the
// thread makes on the device comes from the capture's memory pool, and every operation issued from the thread
// for that device joins the graph. Work a graph cannot hold throws NotCapturableError: a read of device memory
// by the host (item(), a copy to the host, an op that runs its CPU kernel on staged copies). Host data copied
// to the device while capturing (a scalar operand) is a constant of the graph: its bytes are kept and copied
// again at every replay.
#pragma once
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "sinter/error.h"
#include "sinter/tensor.h"
#include "tensor/cuda_driver.h"

namespace sinter::cuda {

class NotCapturableError : public Error {
 public:
  using Error::Error;
};

// Whether this thread is capturing (for any device, or for cuda:<index>).
bool capturing();
bool capturing(int index);
// The stream this thread's work for cuda:<index> goes on: the capture's while capturing, else the default (null).
driver::CUstream work_stream(int index);
// The simulated device while this thread captures for cuda:<index>: keeps `work` for the replays and returns
// true; otherwise returns false and the caller does the work now.
bool record_simulated(int index, const std::function<void()>& work);
// Throws NotCapturableError ("<what> cannot be part of a CUDA graph") while this thread captures for cuda:<index>.
void require_not_capturing(int index, std::string_view what);
// While capturing for cuda:<index>: `check` runs on the host after every replay (it may wait for the device, as
// reading back an error flag does), and true is returned; false when not capturing (the caller checks now).
bool check_after_replay(int index, std::function<void()> check);
// While capturing for cuda:<index>: `owned` lives as long as the graph (host bytes a recorded copy reads).
void keep_with_graph(int index, std::shared_ptr<const void> owned);
// The memory pool of the capture this thread runs for cuda:<index>, or null.
Allocator* capture_pool(int index);
// A private memory pool on cuda:<index>: a caching allocator of its own whose blocks go back only to it, freed
// when the pool and every storage from it are gone. Its memory counts in the device's memory_stats.
std::shared_ptr<Allocator> new_memory_pool(int index);

class Graph {
 public:
  // Captures the device work `body` issues from this thread for cuda:<index>, with every device allocation from
  // `pool`. A failure in `body` ends the capture and is rethrown; the driver refusing the graph is a
  // NotCapturableError naming the driver's error.
  static std::unique_ptr<Graph> capture(int index, std::shared_ptr<Allocator> pool, const std::function<void()>& body);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  // Queues the work on cuda:<index>'s default stream (simulated: runs it), then runs the after-replay checks.
  void replay() const;
  // Operations recorded (simulated device), or -1 on a GPU (the driver keeps the graph).
  int64_t recorded() const;
  struct State;  // what cuda_graph.cpp keeps: the driver's graph or the recorded closures, the pool, the checks

 private:
  Graph() = default;
  std::unique_ptr<State> state_;
};

}  // namespace sinter::cuda
