// SINTER_DEBUG_DIR: a compile writes every stage into a folder of its own, and the value names that the kernel
// comments, the fusion log and the profile use are those of the graph dumped right before lowering.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "support/cache_files.h"
#include "codegen/cpp/kernel_cache.h"
#include "sinter/compile.h"
#include "sinter/ops.h"
#include "support/log.h"
#include "scoped_env.h"
#include "testing.h"

namespace sinter {
namespace {

namespace fs = std::filesystem;

using sinter::testing::ScopedEnv;

std::string read(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Every "%name = op" that `text` mentions (graph values as the lowering names them).
std::set<std::string> origins_in(const std::string& text) {
  std::set<std::string> out;
  static const std::regex origin(R"((%[A-Za-z0-9_]+(, %[A-Za-z0-9_]+)*) = ([A-Za-z0-9_.]+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), origin); it != std::sregex_iterator(); ++it)
    out.insert((*it)[0].str());
  return out;
}

TEST(DebugDump, EveryStageOfACompileIsWrittenAndNamesMatchTheFinalGraph) {
  char templ[] = "/tmp/sinter-debug-dump-test-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  std::string root = templ;
  std::string err;
  {
    ScopedEnv cache("SINTER_CACHE_DIR", root + "/cache");
    ScopedEnv debug("SINTER_DEBUG_DIR", root + "/debug");
    ScopedEnv logs("SINTER_LOGS", "fusion,profile");
    reload_log_settings();
    codegen::cpp::clear_memory_cache();
    ::testing::internal::CaptureStderr();
    {
      auto fn = [](const Tensor& x, const Tensor& w) { return softmax(x * 0.5 + w, -1) + x.sum(DimList{1}, true); };
      auto fast = compile(fn, {.backend = "inductor"});
      Tensor x = testing::random({8, 16}, kFloat32, 1), w = testing::random({16}, kFloat32, 2);
      EXPECT_CLOSE(fast(x, w), fn(x, w));
    }  // the profile is printed when the compiled program is freed
    err = ::testing::internal::GetCapturedStderr();
  }
  reload_log_settings();

  // One folder for the one graph, named after it and this process.
  std::vector<fs::path> folders;
  for (const auto& e : fs::directory_iterator(root + "/debug")) folders.push_back(e.path());
  ASSERT_EQ(folders.size(), 1u);
  std::string folder_name = folders[0].filename().string();
  EXPECT_NE(folder_name.find(fmt::format("-pid{}", getpid())), std::string::npos) << folder_name;
  std::map<std::string, fs::path> by_stage;  // "captured" -> "00-captured.txt", ...
  for (const auto& e : fs::directory_iterator(folders[0])) {
    std::string name = e.path().filename().string();
    size_t dash = name.find('-');
    by_stage[dash == 2 ? name.substr(3, name.size() - 7) : name] = e.path();
  }
  for (const char* stage : {"captured", "before-lowering", "loop-program", "schedule", "passes.txt", "kernels.cpp"})
    EXPECT_TRUE(by_stage.count(stage)) << "no " << stage << " in " << folders[0];
  bool some_pass = false;
  for (const auto& [stage, path] : by_stage) some_pass = some_pass || stage.rfind("after-", 0) == 0;
  EXPECT_TRUE(some_pass) << "no graph after a pass (decompose changes softmax)";
  EXPECT_NE(read(by_stage["captured"]).find("= softmax"), std::string::npos) << read(by_stage["captured"]);
  EXPECT_NE(read(by_stage["passes.txt"]).find("decompose: changed"), std::string::npos) << read(by_stage["passes.txt"]);
  EXPECT_NE(read(by_stage["schedule"]).find("fusion decisions:"), std::string::npos);

  // The kernel comments, the fusion log and the profile name values as the final graph does.
  std::string final_graph = read(by_stage["before-lowering"]);
  std::string kernels = read(by_stage["kernels.cpp"]);
  std::set<std::string> in_kernels = origins_in(kernels);
  ASSERT_FALSE(in_kernels.empty()) << kernels.substr(0, 2000);
  for (const std::string& o : in_kernels)
    EXPECT_NE(final_graph.find(o + "("), std::string::npos) << "kernel comment '" << o << "' is not in\n" << final_graph;
  std::set<std::string> logged = origins_in(err);
  EXPECT_NE(err.find("[sinter:fusion]"), std::string::npos) << err;
  EXPECT_NE(err.find("[sinter:profile]"), std::string::npos) << err;
  ASSERT_FALSE(logged.empty()) << err;
  for (const std::string& o : logged)
    EXPECT_NE(final_graph.find(o + "("), std::string::npos) << "logged '" << o << "' is not in\n" << final_graph;
  support::remove_tree(root);
}

}  // namespace
}  // namespace sinter
