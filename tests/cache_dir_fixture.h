// A test fixture base for tests of the kernel cache: each test gets its own temporary folder (dir_) with
// SINTER_CACHE_DIR pointing at dir_/cache (cache_), and starts and ends with nothing loaded in memory. The
// folder is removed afterwards, also when a test made it unwritable. delta() counts the cache's events since SetUp.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

#include "codegen/cpp/kernel_cache.h"
#include "scoped_env.h"

namespace sinter::testing {

class CacheDirFixture : public ::testing::Test {
 protected:
  // `name` makes the folder /tmp/sinter-<name>-XXXXXX.
  explicit CacheDirFixture(std::string name) : name_(std::move(name)) {}
  void SetUp() override {
    std::string templ = "/tmp/sinter-" + name_ + "-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    cache_ = dir_ + "/cache";
    cache_env_.emplace("SINTER_CACHE_DIR", cache_);
    codegen::cpp::clear_memory_cache();
    before_ = codegen::cpp::kernel_cache_stats();
  }
  void TearDown() override {
    codegen::cpp::clear_memory_cache();
    cache_env_.reset();
    std::error_code ignored;
    std::filesystem::permissions(cache_, std::filesystem::perms::owner_all, ignored);
    std::filesystem::remove_all(dir_, ignored);
  }

  // The cache's counters since SetUp.
  codegen::cpp::KernelCacheStats delta() const {
    codegen::cpp::KernelCacheStats now = codegen::cpp::kernel_cache_stats();
    return {now.compiled - before_.compiled,   now.memory_hits - before_.memory_hits,
            now.disk_hits - before_.disk_hits, now.rejected - before_.rejected,
            now.corrupt - before_.corrupt,     now.failures - before_.failures};
  }

  std::string dir_, cache_;
  codegen::cpp::KernelCacheStats before_;

 private:
  std::string name_;
  std::optional<ScopedEnv> cache_env_;
};

}  // namespace sinter::testing
