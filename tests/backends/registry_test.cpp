// The backend registry: built-ins, custom backends receiving the functional graph and example inputs, unknown
// names, and the aot_eager fallback when a backend fails.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "sinter/compile.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

TEST(BackendRegistry, BuiltinsAreRegistered) {
  std::vector<std::string> names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "eager"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "aot_eager"), names.end());
  EXPECT_ERROR(find_backend("tensorrt"), "unknown backend 'tensorrt'", "aot_eager", "eager");
}

TEST(BackendRegistry, CustomBackendGetsAFunctionalGraph) {
  struct Seen {
    int compiles = 0;
    std::string text;
    size_t examples = 0;
  };
  auto seen = std::make_shared<Seen>();
  register_backend("test_counting",
                   [seen](const Graph& g, const std::vector<Tensor>& examples) -> CompiledGraph {
                     ++seen->compiles;
                     seen->text = print_graph(g);
                     seen->examples = examples.size();
                     auto copy = std::make_shared<Graph>(g.clone());
                     return [copy](const std::vector<Tensor>& inputs) { return interpret(*copy, inputs); };
                   });
  auto f = [](const Tensor& x) {
    Tensor y = x;
    y.add_(1);
    return y.relu();
  };
  auto c = compile(f, {.backend = "test_counting"});
  Tensor x = st::random({4}, kFloat32, 1), ref = x.clone();
  Tensor out = c(x);
  EXPECT_EQ(seen->compiles, 1);
  EXPECT_EQ(seen->examples, 1u);
  EXPECT_EQ(seen->text.find("add_"), std::string::npos) << seen->text;  // functionalized: no in-place op
  EXPECT_TRUE(st::equal(x, ref + 1));                                   // the write-back happened
  EXPECT_TRUE(st::equal(out, (ref + 1).relu()));
}

TEST(BackendRegistry, FailingBackendFallsBackToAotEager) {
  register_backend("test_broken", [](const Graph&, const std::vector<Tensor>&) -> CompiledGraph {
    throw Error("this backend cannot compile anything");
  });
  auto f = [](const Tensor& x) { return x.exp(); };
  Tensor x = st::random({3}, kFloat32, 1);
  EXPECT_ERROR(compile(f, {.backend = "test_broken"})(x), "this backend cannot compile anything");
  auto c = compile(f, {.backend = "test_broken", .fallback = true});
  EXPECT_TRUE(st::equal(c(x), f(x)));
  EXPECT_EQ(c.stats().eager_fallbacks, 1);
  EXPECT_EQ(c.stats().compiles, 1);
}

TEST(BackendRegistry, RegistrationIsThreadSafe) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 20; ++i) {
        register_backend(fmt::format("test_thread_{}", t), find_backend("aot_eager"), {.replace = true});
        (void)backend_names();
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_NO_THROW(find_backend("test_thread_7"));
}

TEST(BackendRegistry, BuiltinNamesCannotBeReplaced) {
  for (const char* name : {"eager", "aot_eager", "inductor"})
    EXPECT_ERROR(register_backend(name, find_backend("eager"), {.replace = true}), "built-in backend", name);
  // aot_eager still serves compiles.
  auto f = [](const Tensor& x) { return x * 2; };
  Tensor x = st::random({3}, kFloat32, 1);
  EXPECT_TRUE(st::equal(compile(f, {.backend = "aot_eager"})(x), f(x)));
}

TEST(BackendRegistry, ATakenNameNeedsReplace) {
  register_backend("test_taken", find_backend("aot_eager"), {.replace = true});
  EXPECT_ERROR(register_backend("test_taken", find_backend("eager")), "test_taken", "already registered",
               ".replace = true");
  EXPECT_NO_THROW(register_backend("test_taken", find_backend("eager"), {.replace = true}));
}
