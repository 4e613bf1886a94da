// The first compile into a cache root in a process (not a hit) sweeps every shard for build directories that a killed compile
// left behind ("<key>.tmp-<pid>-*") and entries moved aside ("<key>.discarded-<pid>-<n>"): those of a process
// that is gone go once 5 minutes old, any go once an hour old; a live process's and fresh ones stay. A cache
// directory that is refused is reported once on stderr without any log setting.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>

#include "cache_dir_fixture.h"
#include "support/cache_files.h"
#include "codegen/cpp/kernel_cache.h"

namespace sinter::codegen::cpp {
using namespace ::sinter::support;
namespace {

namespace fs = std::filesystem;

// A pid that belonged to a process which has ended (and been reaped).
pid_t dead_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

void make_old(const std::string& path, int seconds) {
  struct timespec times[2] = {{0, UTIME_OMIT}, {std::time(nullptr) - seconds, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

class KernelCacheSweep : public testing::CacheDirFixture {
 protected:
  KernelCacheSweep() : CacheDirFixture("cache-sweep-test") {}
};

TEST_F(KernelCacheSweep, LeftoversOfGoneProcessesAreRemovedOnFirstUse) {
  std::string shard = cache_ + "/v" + std::to_string(kAbiVersion) + "/0a";
  ASSERT_EQ(make_dirs(shard), "");
  std::string key(64, 'a');
  pid_t gone = dead_pid();
  struct Leftover {
    std::string name;
    int age;
    bool removed;
  };
  const Leftover cases[] = {
      {fmt::format("{}.tmp-{}-aaaaaa", key, gone), 10 * 60, true},      // killed mid-compile
      {fmt::format("{}.tmp-{}-bbbbbb", key, gone), 60, false},          // too fresh to judge
      {fmt::format("{}.discarded-{}-0", key, gone), 10 * 60, true},     // moved aside, then killed
      {fmt::format("{}.tmp-1-cccccc", key), 20 * 60, false},            // its process (pid 1) lives
      {fmt::format("{}.tmp-1-dddddd", key), 2 * 3600, true},            // older than any compile
      {fmt::format("{}.tmp-{}-eeeeee", key, getpid()), 20 * 60, false}, // this process's own
      {key + ".tmp-f00f00", 10 * 60, false},                            // no pid (older sinter): an hour
      {key, 3 * 3600, false},                                           // a published entry
  };
  for (const Leftover& c : cases) {
    ASSERT_EQ(make_dirs(shard + "/" + c.name), "");
    ASSERT_TRUE(write_new_file(shard + "/" + c.name + "/kernel.cpp", "int x;\n").empty());
    make_old(shard + "/" + c.name, c.age);
  }
  // Any compile that misses sweeps the cache; its own entry lands in another shard.
  CompiledObject obj = compile_and_load({"extern \"C\" int sn_sweep_value() { return 3; }\n"}, "sweep");
  ASSERT_NE(obj.library, nullptr);
  for (const Leftover& c : cases)
    EXPECT_EQ(fs::exists(shard + "/" + c.name), !c.removed) << c.name << " (" << c.age << " s old)";
}

TEST_F(KernelCacheSweep, RefusedCacheDirectoryIsReportedOnceWithoutLogSettings) {
  ASSERT_EQ(make_dirs(cache_), "");
  ASSERT_EQ(chmod(cache_.c_str(), 0777), 0);
  unsetenv("SINTER_LOGS");
  ::testing::internal::CaptureStderr();
  compile_and_load({"extern \"C\" int sn_sweep_value() { return 4; }\n"}, "sweep_refused");
  clear_memory_cache();
  compile_and_load({"extern \"C\" int sn_sweep_value() { return 5; }\n"}, "sweep_refused");
  std::string err = ::testing::internal::GetCapturedStderr();
  std::string line = "[sinter:warning] kernel cache: not using " + cache_ + ": others can write it (mode 777)";
  size_t first = err.find(line);
  EXPECT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(line, first + 1), std::string::npos) << "reported twice:\n" << err;
}

}  // namespace
}  // namespace sinter::codegen::cpp
