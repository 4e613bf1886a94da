// Long chains of element-wise ops (a loop of y = (y * 0.999).relu(), 20,000 ops) compile without any recursion
// that follows the chain (capture, passes, lowering, scheduling, code generation all walk it iteratively) and in
// time linear in its length: lowering cuts an expression at LowerOptions::max_expression nodes and the scheduler
// caps a kernel at kMaxKernelNodes, so the generated C++ stays a set of bounded kernels.
//
// Run time: the C++ compiler is the slow part (about 1 s per few thousand generated lines on a small machine), so
// the full inductor path (generated code compiled and run) takes a 3,000-op chain, and the 20,000-op chain goes
// through capture, the passes, lowering, scheduling and source generation (not the C++ compiler) on a thread
// with a 1 MiB stack, and runs under aot_eager. Results are checked against eager each time.
#include <gtest/gtest.h>
#include <pthread.h>

#include <chrono>
#include <functional>

#include "codegen/cpp/cpp_codegen.h"
#include "inductor/lower.h"
#include "inductor/scheduler.h"
#include "passes/pipeline.h"
#include "sinter/compile.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

// 2 * iterations ops.
std::function<Tensor(const Tensor&)> chain(int iterations) {
  return [iterations](const Tensor& x) {
    Tensor y = x;
    for (int i = 0; i < iterations; ++i) y = (y * 0.999).relu();
    return y;
  };
}

// Runs fn on a thread with a small stack: a recursion whose depth follows the chain would overflow it.
void on_small_stack(const std::function<void()>& fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);
  struct Ctx {
    const std::function<void()>* fn;
    std::exception_ptr error;
  } ctx{&fn, nullptr};
  pthread_t th;
  ASSERT_EQ(pthread_create(
                &th, &attr,
                [](void* p) -> void* {
                  auto* c = static_cast<Ctx*>(p);
                  try {
                    (*c->fn)();
                  } catch (...) {
                    c->error = std::current_exception();
                  }
                  return nullptr;
                },
                &ctx),
            0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  if (ctx.error) std::rethrow_exception(ctx.error);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Tensor input() {
  manual_seed(11);
  return randn({64}) + 2.0;  // mostly positive, so the chain does not end at zero everywhere
}

// What the inductor makes of a graph, down to generated source (no C++ compiler).
struct Generated {
  int loop_nodes = 0, kernels = 0;
  size_t largest_unit = 0;
};

TEST(LongChain, TwentyThousandOpsThroughCaptureLoweringAndCodegen) {
  auto f = chain(10000);
  Tensor x = input();
  auto generated = std::make_shared<Generated>();
  register_backend("long_chain_probe", [generated](const Graph& graph, const std::vector<Tensor>&) -> CompiledGraph {
    Graph g = graph.clone();
    passes::run_inductor_passes(g, passes::PassContext{});
    inductor::LoopProgram program = inductor::lower(g);
    inductor::Schedule schedule = inductor::schedule(program);
    inductor::ProgramPlan plan = inductor::plan_kernels(program, schedule);
    codegen::cpp::GeneratedCode code = codegen::cpp::generate(program, plan, 4);
    generated->loop_nodes = static_cast<int>(program.nodes.size());
    generated->kernels = schedule.launches();
    for (const std::string& u : code.units) generated->largest_unit = std::max(generated->largest_unit, u.size());
    auto kept = std::make_shared<Graph>(graph.clone());
    return [kept](const std::vector<Tensor>& inputs) { return interpret(*kept, inputs); };
  });
  Tensor want = f(x);
  auto start = std::chrono::steady_clock::now();
  Tensor got;
  on_small_stack([&] { got = compile(f, {.backend = "long_chain_probe"})(x); });
  double s = seconds_since(start);
  EXPECT_TENSOR_EQ(got, want);
  // 20,000 ops (as many scalar nodes) cut into expressions of about 1,000 nodes and kernels of at most
  // kMaxKernelNodes: several kernels, none of them huge.
  EXPECT_GE(generated->loop_nodes, 15);
  EXPECT_GE(generated->kernels, 20000 / inductor::kMaxKernelNodes);
  EXPECT_LT(generated->largest_unit, size_t{4} << 20);
  EXPECT_LT(s, 120.0) << "not a timing test: capture + lowering of 20,000 ops should take seconds";
  RecordProperty("seconds", std::to_string(s));
}

TEST(LongChain, TwentyThousandOpsUnderAotEager) {
  auto f = chain(10000);
  Tensor x = input();
  Tensor got;
  on_small_stack([&] { got = compile(f, {.backend = "aot_eager"})(x); });
  EXPECT_TENSOR_EQ(got, f(x));
}

TEST(LongChain, ThreeThousandOpsUnderTheInductor) {
  auto f = chain(1500);
  Tensor x = input();
  auto start = std::chrono::steady_clock::now();
  Tensor got = compile(f, {.backend = "inductor"})(x);
  double s = seconds_since(start);
  EXPECT_CLOSE(got, f(x));
  EXPECT_LT(s, 300.0) << "not a timing test";
}

}  // namespace
}  // namespace sinter
