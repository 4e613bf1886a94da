// CUDA graphs (cuda_graph.h): the capture scope of a thread, the recorded work and its replay.
#include "tensor/cuda_graph.h"

#include <fmt/format.h>

#include "sinter/cuda.h"

namespace sinter::cuda {

struct Graph::State {
  int index = 0;
  std::shared_ptr<Allocator> pool;
  std::unique_ptr<driver::Stream> stream;      // GPU: the capture stream
  driver::CUgraph graph = nullptr;             // GPU
  driver::CUgraphExec exec = nullptr;          // GPU
  std::vector<std::function<void()>> work;     // simulated device
  std::vector<std::function<void()>> checks;   // after each replay
  std::vector<std::shared_ptr<const void>> owned;
};

namespace {

// The capture this thread runs, or null: a scope set and cleared by Graph::capture only.
thread_local Graph::State* active = nullptr;

Graph::State* active_for(int index) { return active != nullptr && active->index == index ? active : nullptr; }

}  // namespace

bool capturing() { return active != nullptr; }
bool capturing(int index) { return active_for(index) != nullptr; }

driver::CUstream work_stream(int index) {
  Graph::State* s = active_for(index);
  return s != nullptr && s->stream ? s->stream->get() : nullptr;
}

bool record_simulated(int index, const std::function<void()>& work) {
  Graph::State* s = active_for(index);
  if (s == nullptr || !is_simulated()) return false;
  s->work.push_back(work);
  return true;
}

void require_not_capturing(int index, std::string_view what) {
  if (capturing(index))
    throw NotCapturableError(fmt::format("{} cannot be part of a CUDA graph (captured on cuda:{})", what, index));
}

bool check_after_replay(int index, std::function<void()> check) {
  Graph::State* s = active_for(index);
  if (s == nullptr) return false;
  s->checks.push_back(std::move(check));
  return true;
}

void keep_with_graph(int index, std::shared_ptr<const void> owned) {
  if (Graph::State* s = active_for(index)) s->owned.push_back(std::move(owned));
}

Allocator* capture_pool(int index) {
  Graph::State* s = active_for(index);
  return s != nullptr ? s->pool.get() : nullptr;
}

std::unique_ptr<Graph> Graph::capture(int index, std::shared_ptr<Allocator> pool, const std::function<void()>& body) {
  if (active != nullptr)
    throw NotCapturableError(fmt::format("a CUDA graph capture for cuda:{} began inside another capture", index));
  std::unique_ptr<Graph> g(new Graph());
  g->state_ = std::make_unique<State>();
  State& s = *g->state_;
  s.index = index;
  s.pool = std::move(pool);
  const driver::Api* a = nullptr;
  if (!is_simulated()) {
    a = &driver::require();
    driver::use_device(index);
    s.stream = std::make_unique<driver::Stream>();  // non-blocking: the default stream's work does not join it
    driver::check(a->cuStreamBeginCapture(s.stream->get(), driver::kStreamCaptureModeRelaxed), "cuStreamBeginCapture");
  }
  active = &s;
  try {
    body();
  } catch (...) {
    active = nullptr;
    if (a != nullptr) {
      driver::CUgraph partial = nullptr;
      a->cuStreamEndCapture(s.stream->get(), &partial);  // the capture's own error is the one to report
      if (partial != nullptr) a->cuGraphDestroy(partial);
    }
    throw;
  }
  active = nullptr;
  if (a != nullptr) {
    driver::CUresult r = a->cuStreamEndCapture(s.stream->get(), &s.graph);
    if (r != driver::kSuccess)
      throw NotCapturableError(fmt::format("cuStreamEndCapture: {}", driver::error_text(r)));
    r = a->cuGraphInstantiate(&s.exec, s.graph, 0);
    if (r != driver::kSuccess)
      throw NotCapturableError(fmt::format("cuGraphInstantiate: {}", driver::error_text(r)));
  }
  return g;
}

Graph::~Graph() {
  if (!state_ || is_simulated()) return;
  // Not checked: a destructor cannot throw, and at process exit the driver may be gone. A replay still running
  // reads the pool's blocks and the kept host bytes: wait for it before they go.
  if (const driver::Api* a = driver::api()) {
    try {
      driver::use_device(state_->index);
    } catch (const std::exception&) {
      return;
    }
    a->cuStreamSynchronize(nullptr);
    if (state_->exec != nullptr) a->cuGraphExecDestroy(state_->exec);
    if (state_->graph != nullptr) a->cuGraphDestroy(state_->graph);
  }
}

void Graph::replay() const {
  const State& s = *state_;
  if (is_simulated()) {
    for (const std::function<void()>& w : s.work) w();
  } else {
    driver::use_device(s.index);
    driver::check(driver::require().cuGraphLaunch(s.exec, nullptr), "cuGraphLaunch");
  }
  for (const std::function<void()>& c : s.checks) c();
}

int64_t Graph::recorded() const { return is_simulated() ? static_cast<int64_t>(state_->work.size()) : -1; }

}  // namespace sinter::cuda
