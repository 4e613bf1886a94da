// Custom backends are checked: outputs of the wrong shape, dtype or device are an Error naming the backend,
// and an empty CompiledGraph is the backend's mistake (not an internal error).
#include <fmt/format.h>

#include "sinter/compile.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

// A backend that runs the graph correctly and then hands `mangle` its outputs to spoil.
void register_mangling(const std::string& name, std::function<void(std::vector<Tensor>&)> mangle) {
  register_backend(
      name,
      [mangle](const Graph& g, const std::vector<Tensor>&) -> CompiledGraph {
        auto copy = std::make_shared<Graph>(g.clone());
        return [copy, mangle](const std::vector<Tensor>& inputs) {
          std::vector<Tensor> outs = interpret(*copy, inputs);
          mangle(outs);
          return outs;
        };
      });
}

Tensor fn(const Tensor& x) { return (x * 2).sum({1}); }

}  // namespace

TEST(CustomBackendChecks, WrongOutputShapeIsAnErrorNamingTheBackend) {
  register_mangling("test_wrong_shape", [](std::vector<Tensor>& outs) { outs[0] = outs[0].unsqueeze(0); });
  auto c = compile(fn, {.backend = "test_wrong_shape"});
  EXPECT_ERROR(c(st::random({4, 3}, kFloat32, 1)), "backend 'test_wrong_shape'", "output 0", "[1, 4]", "[4]");
}

TEST(CustomBackendChecks, WrongOutputShapeOfASymbolicEntryNamesThisCallsSizes) {
  register_mangling("test_wrong_shape_sym", [](std::vector<Tensor>& outs) { outs[0] = outs[0].narrow(0, 0, 1); });
  auto c = compile(fn, {.backend = "test_wrong_shape_sym", .dynamic = Dynamic::kAlways});
  EXPECT_ERROR(c(st::random({6, 3}, kFloat32, 1)), "backend 'test_wrong_shape_sym'", "float32 [1]",
               "float32 [6]");
}

TEST(CustomBackendChecks, WrongOutputDtypeIsAnErrorNamingTheBackend) {
  register_mangling("test_wrong_dtype", [](std::vector<Tensor>& outs) { outs[0] = outs[0].to(kFloat64); });
  auto c = compile(fn, {.backend = "test_wrong_dtype"});
  EXPECT_ERROR(c(st::random({4, 3}, kFloat32, 1)), "backend 'test_wrong_dtype'", "float64", "float32");
}

TEST(CustomBackendChecks, UndefinedOutputIsAnErrorNamingTheBackend) {
  register_mangling("test_undefined_output", [](std::vector<Tensor>& outs) { outs[0] = Tensor(); });
  auto c = compile(fn, {.backend = "test_undefined_output"});
  EXPECT_ERROR(c(st::random({4, 3}, kFloat32, 1)), "backend 'test_undefined_output'", "undefined tensor");
}

TEST(CustomBackendChecks, CorrectOutputsPass) {
  register_mangling("test_honest", [](std::vector<Tensor>&) {});
  auto c = compile(fn, {.backend = "test_honest", .dynamic = Dynamic::kAlways});
  for (int64_t n : {2, 5, 9}) {
    Tensor x = st::random({n, 3}, kFloat32, n);
    EXPECT_TRUE(st::equal(c(x), fn(x)));
  }
}

TEST(CustomBackendChecks, EmptyCompiledGraphIsAUserErrorNamingTheBackend) {
  register_backend("test_empty_graph", [](const Graph&, const std::vector<Tensor>&) { return CompiledGraph(); });
  Tensor x = st::random({4, 3}, kFloat32, 1);
  try {
    compile(fn, {.backend = "test_empty_graph"})(x);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backend 'test_empty_graph' returned an empty CompiledGraph"),
              std::string::npos)
        << e.what();
  } catch (const InternalError& e) {
    ADD_FAILURE() << "an internal error: " << e.what();
  }
  // With fallback it is a backend failure like any other: aot_eager runs.
  ::testing::internal::CaptureStderr();
  auto c = compile(fn, {.backend = "test_empty_graph", .fallback = true});
  EXPECT_TRUE(st::equal(c(x), fn(x)));
  ::testing::internal::GetCapturedStderr();
}
