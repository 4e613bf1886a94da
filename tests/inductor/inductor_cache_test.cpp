// The inductor's kernel cache end to end, through compile(): a second process compiles nothing, a corrupt entry
// is detected and rebuilt, two processes compiling the same graph at once both succeed, and a missing or failing
// compiler gives a sinter::Error naming the compiler / the kept source (or, with fallback, runs aot_eager).
// Second processes are this test binary re-run (posix_spawn of /proc/self/exe) with one child test selected:
// a fork() would inherit a thread pool whose worker threads do not exist in the child.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cache_dir_fixture.h"
#include "child_process.h"
#include "codegen/cpp/kernel_cache.h"
#include "sinter/compile.h"
#include "sinter/ops.h"
#include "testing.h"
#include "scoped_env.h"

namespace sinter {
namespace {

namespace fs = std::filesystem;
using codegen::cpp::kernel_cache_stats;
using codegen::cpp::KernelCacheStats;

// The graph the processes share: a row reduction with its prologue and epilogue, and a broadcast add.
Tensor shared_graph(const Tensor& x) { return softmax(x * 1.25 + 0.5, -1) + x.sum(DimList{1}, true); }
Tensor shared_input() { return testing::random({16, 24}, kFloat32, 11); }
constexpr const char* kChildEnv = "SINTER_INDUCTOR_CACHE_CHILD";

KernelCacheStats minus(const KernelCacheStats& a, const KernelCacheStats& b) {
  return {a.compiled - b.compiled, a.memory_hits - b.memory_hits, a.disk_hits - b.disk_hits,
          a.rejected - b.rejected, a.corrupt - b.corrupt,         a.failures - b.failures};
}

// Sets an environment variable for one scope and restores the old value.
using sinter::testing::ScopedEnv;

// Re-runs this binary with only InductorCacheChild.CompilesTheSharedGraph selected, `mode` in kChildEnv.
pid_t spawn_child(const std::string& mode) {
  return testing::spawn_self("InductorCacheChild.CompilesTheSharedGraph", {{kChildEnv, mode}});
}
using testing::wait_child;

// What a child process does: compile the shared graph; "warm" also requires that nothing was compiled.
TEST(InductorCacheChild, CompilesTheSharedGraph) {
  const char* mode = std::getenv(kChildEnv);
  if (!mode) GTEST_SKIP() << "runs only as the child process of the InductorCache tests";
  KernelCacheStats before = kernel_cache_stats();
  auto f = compile([](const Tensor& x) { return shared_graph(x); }, {.backend = "inductor"});
  Tensor x = shared_input();
  EXPECT_CLOSE(f(x), shared_graph(x));
  KernelCacheStats d = minus(kernel_cache_stats(), before);
  if (std::string(mode) == "warm") {
    EXPECT_EQ(d.compiled, 0);
    EXPECT_GE(d.disk_hits, 1);
  }
  EXPECT_EQ(d.failures, 0);
}

// Each test gets its own cache directory, and forgets objects loaded by earlier tests.
class InductorCache : public testing::CacheDirFixture {
 protected:
  InductorCache() : CacheDirFixture("inductor-cache-test") {}
  // The shared objects in the cache.
  std::vector<fs::path> objects() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_ + "/cache"))
      if (e.path().filename() == "kernel.so") out.push_back(e.path());
    return out;
  }
  // Compiles and runs the shared graph with a new compiled function (so nothing is reused but the caches).
  void compile_and_check() {
    auto f = compile([](const Tensor& x) { return shared_graph(x); }, {.backend = "inductor"});
    Tensor x = shared_input();
    EXPECT_CLOSE(f(x), shared_graph(x));
  }
};

TEST_F(InductorCache, SecondProcessCompilesNothing) {
  compile_and_check();
  ASSERT_GE(delta().compiled, 1);
  codegen::cpp::clear_memory_cache();
  EXPECT_EQ(wait_child(spawn_child("warm")), 0) << "the child compiled again or failed (its output is above)";
}

// Replaces a file by one holding `bytes` (a new inode, so no process that mapped the old one is disturbed).
void replace_file(const fs::path& path, const std::string& bytes) {
  fs::path tmp = path.string() + ".new";
  std::ofstream(tmp, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  fs::permissions(tmp, fs::perms::owner_all);
  fs::rename(tmp, path);
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_F(InductorCache, CorruptOrTruncatedEntryIsDetectedAndRebuilt) {
  compile_and_check();
  codegen::cpp::clear_memory_cache();
  std::vector<fs::path> objs = objects();
  ASSERT_EQ(objs.size(), 1u);
  std::string good = read_all(objs[0]);
  ASSERT_GT(good.size(), 1000u);

  replace_file(objs[0], good.substr(0, good.size() / 2));  // truncated
  compile_and_check();
  EXPECT_EQ(delta().corrupt, 1);
  EXPECT_EQ(delta().compiled, 2);
  codegen::cpp::clear_memory_cache();

  objs = objects();
  ASSERT_EQ(objs.size(), 1u);
  std::string flipped = read_all(objs[0]);
  for (size_t i = flipped.size() / 3; i < flipped.size() / 3 + 64; ++i) flipped[i] = static_cast<char>(~flipped[i]);
  replace_file(objs[0], flipped);  // same size, other bytes
  compile_and_check();
  EXPECT_EQ(delta().corrupt, 2);
  EXPECT_EQ(delta().compiled, 3);
  codegen::cpp::clear_memory_cache();

  compile_and_check();  // the rebuilt entry is good
  EXPECT_EQ(delta().compiled, 3);
  EXPECT_EQ(delta().disk_hits, 1);
}

TEST_F(InductorCache, TwoProcessesCompilingTheSameGraphAtOnceBothSucceed) {
  pid_t a = spawn_child("any"), b = spawn_child("any");
  EXPECT_EQ(wait_child(a), 0);
  EXPECT_EQ(wait_child(b), 0);
  compile_and_check();
  EXPECT_EQ(delta().compiled, 0) << "the entry the children published should be loaded";
  EXPECT_EQ(delta().disk_hits, 1);
}

TEST_F(InductorCache, MissingCompilerIsAnErrorNamingItAndFallbackRunsAotEager) {
  ScopedEnv cxx("SINTER_CXX", "/nonexistent/c++");
  auto fn = [](const Tensor& x) { return gelu(x) * 3 - x; };
  Tensor x = shared_input();
  auto strict = compile(fn, {.backend = "inductor"});
  EXPECT_ERROR(strict(x), "/nonexistent/c++", "SINTER_CXX");
  auto lenient = compile(fn, {.backend = "inductor", .fallback = true});
  EXPECT_CLOSE(lenient(x), fn(x));
  EXPECT_EQ(lenient.stats().eager_fallbacks, 1);
  EXPECT_EQ(delta().compiled, 0);
}

TEST_F(InductorCache, CompilerErrorCarriesItsMessageAndTheKeptSource) {
  // A "compiler" that answers --version and fails every compile with a message of its own.
  std::string script = dir_ + "/failing-c++";
  std::ofstream(script) << "#!/bin/sh\n"
                           "if [ \"$1\" = \"--version\" ]; then echo 'failing-c++ 1.0'; exit 0; fi\n"
                           "echo 'failing-c++: error: injected by the test' >&2\n"
                           "exit 1\n";
  fs::permissions(script, fs::perms::owner_all);
  ScopedEnv cxx("SINTER_CXX", script);
  auto fn = [](const Tensor& x) { return tanh(x) * 2 + x.amax(DimList{1}, true); };
  Tensor x = shared_input();
  std::string message;
  try {
    compile(fn, {.backend = "inductor", .fallback = false})(x);  // by default a compiler failure falls back
  } catch (const Error& e) {
    message = e.what();
  }
  ASSERT_FALSE(message.empty()) << "no error";
  EXPECT_NE(message.find("injected by the test"), std::string::npos) << message;
  size_t at = message.find("source kept at: ");
  ASSERT_NE(at, std::string::npos) << message;
  std::string path = message.substr(at + 16, message.find('\n', at) - at - 16);
  std::string source = read_all(path);
  EXPECT_NE(source.find("extern \"C\" void kernel"), std::string::npos) << path;
  EXPECT_GE(delta().failures, 1);

  auto lenient = compile(fn, {.backend = "inductor", .fallback = true});
  EXPECT_CLOSE(lenient(x), fn(x));
  EXPECT_EQ(lenient.stats().eager_fallbacks, 1);
}

}  // namespace
}  // namespace sinter
