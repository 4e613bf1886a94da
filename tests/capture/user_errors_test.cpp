// Errors raised while capturing a call name the user's code and the sizes of the call: the op's own line (or,
// for an operator, the nearest located call before it) and concrete sizes, not the capture's symbols.
#include <fmt/format.h>

#include "sinter/compile.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

TEST(CompiledUserErrors, ShapeMismatchOfASymbolicEntryNamesTheUserLineAndConcreteSizes) {
  const std::string file = __FILE__;
  const int line = __LINE__ + 1;
  auto f = [](const Tensor& a, const Tensor& b) { return add(a, b).relu(); };
  for (const char* backend : {"aot_eager", "inductor"}) {
    auto c = compile(f, {.backend = backend, .dynamic = Dynamic::kAlways});
    Tensor a = st::random({3, 4}, kFloat32, 1), b = st::random({3, 4}, kFloat32, 2);
    EXPECT_CLOSE(c(a, b), f(a, b));
    // The symbolic entry guards s0 == s2; these sizes miss it, and the re-trace finds they cannot broadcast.
    Tensor x = st::random({5, 4}, kFloat32, 3), y = st::random({6, 4}, kFloat32, 4);
    try {
      c(x, y);
      ADD_FAILURE() << backend << ": no error";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("shapes [5, 4] and [6, 4]"), std::string::npos) << msg;
      EXPECT_NE(msg.find("dim 0: 5 vs 6"), std::string::npos) << msg;
      EXPECT_NE(msg.find(fmt::format("called from {}:{}", file, line)), std::string::npos) << msg;
      EXPECT_EQ(msg.find("s0"), std::string::npos) << msg;
      EXPECT_EQ(msg.find("src/"), std::string::npos) << msg;
    }
  }
}

TEST(CompiledUserErrors, AnOperatorNamesTheNearestLocatedCall) {
  const std::string file = __FILE__;
  const int line = __LINE__ + 2;
  auto f = [](const Tensor& a, const Tensor& b) {
    Tensor r = relu(a);
    return r + b;  // an operator: no location of its own
  };
  auto c = compile(f, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  c(st::random({3, 4}, kFloat32, 1), st::random({3, 4}, kFloat32, 2));
  EXPECT_ERROR(c(st::random({5, 4}, kFloat32, 1), st::random({6, 4}, kFloat32, 2)), "shapes [5, 4] and [6, 4]",
               fmt::format("the nearest located call before it is at {}:{}", file, line));
}

// A data-dependent error raised by an extern op while compiled code runs (an index out of range) names the
// user's call of that op, not sinter's runtime.
TEST(CompiledUserErrors, AnExternOpsRunTimeErrorNamesTheUserLine) {
  const std::string file = __FILE__;
  const int line = __LINE__ + 1;
  auto f = [](const Tensor& w, const Tensor& idx) { return embedding(w.relu(), idx) * 2; };
  for (const char* backend : {"aot_eager", "inductor"}) {
    auto c = compile(f, {.backend = backend});
    Tensor w = st::random({4, 3}, kFloat32, 1);
    Tensor good = from_vector(std::vector<int64_t>{0, 3}, {2}), bad = from_vector(std::vector<int64_t>{1, 9}, {2});
    EXPECT_CLOSE(c(w, good), f(w, good));
    try {
      c(w, bad);
      ADD_FAILURE() << backend << ": no error";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(fmt::format("{}:{}", file, line)), std::string::npos) << backend << ": " << msg;
      EXPECT_EQ(msg.find("src/runtime"), std::string::npos) << backend << ": " << msg;
    }
  }
}
