// Settings that do not do what the user asked are said once on stderr, without any log setting: unknown
// SINTER_LOGS names (with the known ones), a SINTER_DEBUG_DIR that cannot be written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "support/debug_dump.h"
#include "support/log.h"
#include "support/warning.h"
#include "scoped_env.h"

namespace sinter {
namespace {

namespace fs = std::filesystem;

using sinter::testing::ScopedEnv;

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(SettingsWarning, UnknownLogChannelIsNamedOnceWithTheKnownOnes) {
  {
    ScopedEnv logs("SINTER_LOGS", "fusion,nonsense_channel_x,grpah");
    ::testing::internal::CaptureStderr();
    reload_log_settings();
    reload_log_settings();  // the same setting read again says nothing new
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(count(err, "[sinter:warning] SINTER_LOGS: unknown log channels 'nonsense_channel_x', 'grpah' "
                         "(ignored); the channels are graph, guards, recompiles, graph_breaks, dynamic, fusion, "
                         "output_code, perf_hints, passes, profile, schedule, cudagraphs, aot, all"),
              1u)
        << err;
    EXPECT_TRUE(log_enabled(LogChannel::kFusion));  // the known name still counts
    EXPECT_FALSE(log_enabled(LogChannel::kGraph));
  }
  ::testing::internal::CaptureStderr();
  reload_log_settings();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  {
    ScopedEnv logs("SINTER_LOGS", "all, +profile");  // spaces and a leading + are fine
    ::testing::internal::CaptureStderr();
    reload_log_settings();
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  }
  reload_log_settings();
}

TEST(SettingsWarning, UnusableDebugDirIsReportedOnce) {
  std::string file = fs::temp_directory_path() / fmt::format("sinter-debug-dir-file-{}", getpid());
  std::ofstream(file) << "a file, not a folder\n";
  {
    ScopedEnv debug("SINTER_DEBUG_DIR", file + "/sub");
    ::testing::internal::CaptureStderr();
    support::DebugDump a(file + "/sub", "graph_a"), b(file + "/sub", "graph_b");
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(a.active());
    EXPECT_FALSE(b.active());
    EXPECT_EQ(count(err, "[sinter:warning] SINTER_DEBUG_DIR: cannot create " + file + "/sub"), 1u) << err;
  }
  fs::remove(file);
}

}  // namespace
}  // namespace sinter
