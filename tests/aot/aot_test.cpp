// Ahead-of-time artifacts (sinter/aot.h): saved in this process, loaded in another where SINTER_CXX names no
// compiler and the kernel cache is empty, with results equal to eager's for static and symbolic sizes; inputs
// checked against the saved guards; modified artifacts refused; what an artifact cannot hold said at save.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cache_dir_fixture.h"
#include "child_process.h"
#include "codegen/cpp/kernel_cache.h"
#include "sinter/aot.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

namespace fs = std::filesystem;
constexpr const char* kDirEnv = "SINTER_AOT_TEST_DIR";

// A small MLP with layer norm whose weights the function reads without taking them as arguments.
struct Model {
  Tensor w1 = testing::random({32, 16}, kFloat32, 1), b1 = testing::random({32}, kFloat32, 2);
  Tensor w2 = testing::random({8, 32}, kFloat32, 3), g = testing::random({8}, kFloat32, 4);
  Tensor operator()(const Tensor& x) const {
    Tensor h = gelu(linear(x, w1, b1));
    return layer_norm(linear(h, w2.t().contiguous().t()), {8}, g) + softmax(h.sum(DimList{1}, true), 0);
  }
};

Tensor input(int64_t rows, uint64_t seed) { return testing::random({rows, 16}, kFloat32, seed); }

// The child: loads the artifact in kDirEnv and checks it against eager on several batch sizes, compiling nothing.
TEST(AotChild, LoadsAndRunsWithoutACompiler) {
  const char* dir = std::getenv(kDirEnv);
  if (!dir) GTEST_SKIP() << "runs only as the child process of the AotArtifact tests";
  auto before = codegen::cpp::kernel_cache_stats();
  aot::Artifact a = aot::load(dir);
  Model m;
  for (int64_t rows : {5, 9, 2, 64}) {
    SCOPED_TRACE(rows);
    Tensor x = input(rows, 10 + rows);
    std::vector<Tensor> got = a({x});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_CLOSE(got[0], m(x));
  }
  EXPECT_EQ(codegen::cpp::kernel_cache_stats().compiled, before.compiled);
}

class AotArtifact : public testing::CacheDirFixture {
 protected:
  AotArtifact() : CacheDirFixture("aot-test") {}
  std::string artifact() const { return dir_ + "/model.sinter"; }
};

TEST_F(AotArtifact, RunsInAProcessWithoutACompiler) {
  Model m;
  auto f = compile([m](const Tensor& x) { return m(x); }, {.dynamic = Dynamic::kAlways});
  aot::save(f, artifact(), input(5, 15));
  EXPECT_TRUE(fs::exists(artifact() + "/manifest.json"));
  EXPECT_TRUE(fs::exists(artifact() + "/weights.safetensors"));
  EXPECT_FALSE(fs::is_empty(artifact() + "/kernels"));
  pid_t child = testing::spawn_self("AotChild.LoadsAndRunsWithoutACompiler",
                                    {{kDirEnv, artifact()}, {"SINTER_CXX", "/nonexistent/c++"},
                                     {"SINTER_CACHE_DIR", dir_ + "/empty-cache"}});
  EXPECT_EQ(testing::wait_child(child), 0) << "the child failed (its output is above)";
}

TEST_F(AotArtifact, ChecksItsInputs) {
  Model m;
  auto dynamic = compile([m](const Tensor& x) { return m(x); }, {.dynamic = Dynamic::kAlways});
  aot::save(dynamic, artifact(), input(6, 1));
  aot::Artifact a = aot::load(artifact());
  EXPECT_EQ(a.num_inputs(), 1);
  EXPECT_NE(a.describe().find("s0"), std::string::npos) << a.describe();
  EXPECT_ERROR(a({}), "takes 1 input(s), got 0");
  EXPECT_ERROR(a({input(4, 1).to(kFloat64)}), "float64");
  EXPECT_ERROR(a({testing::random({4, 17}, kFloat32, 1)}), "s1 == 16 is false for s1 = 17");
  EXPECT_ERROR(a({testing::random({4, 16, 1}, kFloat32, 1)}), "the artifact takes");
  EXPECT_ERROR(a({input(1, 1)}), "guard");  // sizes 0 and 1 are specialised: a symbol is at least 2
  // Another layout than the saved one is copied into it.
  Tensor wide = testing::random({16, 7}, kFloat32, 3).t();
  EXPECT_CLOSE(a({wide})[0], m(wide));
  // A static artifact serves its own sizes only.
  auto fixed = compile([m](const Tensor& x) { return m(x); }, {.dynamic = Dynamic::kNever});
  aot::save(fixed, artifact() + "-static", input(6, 1));
  aot::Artifact s = aot::load(artifact() + "-static");
  EXPECT_CLOSE(s({input(6, 2)})[0], m(input(6, 2)));
  EXPECT_ERROR(s({input(7, 2)}), "the artifact takes");
}

TEST_F(AotArtifact, RefusesAModifiedArtifact) {
  Model m;
  auto f = compile([m](const Tensor& x) { return m(x); });
  aot::save(f, artifact(), input(4, 1));
  {
    std::fstream w(artifact() + "/weights.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    w.seekp(-3, std::ios::end);
    w.put('\x7f');
  }
  EXPECT_ERROR(aot::load(artifact()), "does not match its SHA-256");
  aot::save(f, artifact(), input(4, 1));  // saved again: loads
  EXPECT_CLOSE(aot::load(artifact())({input(4, 2)})[0], m(input(4, 2)));
  std::ofstream(artifact() + "/kernels/extra.so") << "not a kernel";
  EXPECT_ERROR(aot::load(artifact()), "is not in the manifest");
  EXPECT_ERROR(aot::load(dir_ + "/nothing-here"), "not an artifact");
  // A broken manifest is an Error naming what is wrong, never a crash.
  fs::remove(artifact() + "/kernels/extra.so");
  std::string manifest;
  {
    std::ifstream in(artifact() + "/manifest.json");
    manifest.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto with = [&](const std::string& from, const std::string& to) {
    std::string m = manifest;
    m.replace(m.find(from), from.size(), to);
    std::ofstream(artifact() + "/manifest.json", std::ios::trunc) << m;
  };
  with("\"target_cores\": ", "\"target_cores\": 99999999999999999999");
  EXPECT_ERROR(aot::load(artifact()), "not an integer in range");
  with("\"format\": ", "\"format\": 7, \"x\": ");
  EXPECT_ERROR(aot::load(artifact()), "is not a string");
  std::ofstream(artifact() + "/manifest.json", std::ios::trunc) << "{\"format\": ";
  EXPECT_ERROR(aot::load(artifact()), "");
}

TEST_F(AotArtifact, SaysWhatItCannotHold) {
  auto breaks = compile([](const Tensor& x) { return x * x.sum().item<float>(); });
  EXPECT_ERROR(aot::save(breaks, artifact(), input(3, 1)), "graph break");
  auto writes = compile([](Tensor x) { return x.add_(1) * 2; });
  EXPECT_ERROR(aot::save(writes, artifact(), input(3, 1)), "writes its input");
  auto view = compile([](const Tensor& x) { return x.narrow(0, 1, 2); });
  EXPECT_ERROR(aot::save(view, artifact(), input(3, 1)), "view");
  auto scaled = compile([](const Tensor& x, int64_t k) { return x * k; });
  EXPECT_ERROR(aot::save(scaled, artifact(), input(3, 1), 3), "integer");
  Tensor w = testing::random({16}, kFloat32, 1).requires_grad_(true);
  auto grad = compile([w](const Tensor& x) { return x * w; });
  EXPECT_ERROR(aot::save(grad, artifact(), input(3, 1)), "gradients");
}

}  // namespace
}  // namespace sinter
