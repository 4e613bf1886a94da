// Thread-count settings: set_num_threads rejects counts out of [1, kMaxThreads] (0 restores the default) with
// sinter::Error; SINTER_NUM_THREADS / OMP_NUM_THREADS values that are not whole numbers or are out of range are
// replaced (below 1: the number of cores; above the limit: kMaxThreads) with one message on stderr, never an
// abort.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "sinter/sinter.h"
#include "tensor/thread_pool.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(ThreadCount, SetNumThreadsRejectsOutOfRangeCounts) {
  int before = get_num_threads();
  EXPECT_ERROR(set_num_threads(-1), "set_num_threads", "-1", "out of range");
  EXPECT_ERROR(set_num_threads(100000), "set_num_threads", "100000", "1024");
  EXPECT_ERROR(set_num_threads(kMaxThreads + 1), "out of range");
  EXPECT_EQ(get_num_threads(), before);  // unchanged by the refused calls
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  set_num_threads(before);
}

TEST(ThreadCount, ParsesEnvironmentValues) {
  std::string msg;
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "4", 7, msg), 4);
  EXPECT_TRUE(msg.empty());
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "1024", 7, msg), 1024);
  EXPECT_TRUE(msg.empty());
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "abc", 7, msg), 7);
  EXPECT_NE(msg.find("SINTER_NUM_THREADS='abc' is not a whole number"), std::string::npos) << msg;
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "4x", 7, msg), 7);
  EXPECT_NE(msg.find("not a whole number"), std::string::npos) << msg;
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "", 7, msg), 7);
  EXPECT_FALSE(msg.empty());
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "0", 7, msg), 7);
  EXPECT_NE(msg.find("below 1"), std::string::npos) << msg;
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "-3", 7, msg), 7);
  EXPECT_NE(msg.find("below 1"), std::string::npos) << msg;
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "99999", 7, msg), kMaxThreads);
  EXPECT_NE(msg.find("above the limit"), std::string::npos) << msg;
  EXPECT_NE(msg.find("uses 1024 threads"), std::string::npos) << msg;
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "1000000000", 7, msg), kMaxThreads);
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "99999999999999999999999", 7, msg), kMaxThreads);
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "-99999999999999999999999", 7, msg), 7);
  EXPECT_EQ(parse_thread_count("OMP_NUM_THREADS", "6,2", 7, msg), 6);  // one count per nesting level
  EXPECT_TRUE(msg.empty());
  EXPECT_EQ(parse_thread_count("SINTER_NUM_THREADS", "6,2", 7, msg), 7);
}

// The environment is read again by set_num_threads(0): a bad value is replaced with one message, no abort.
TEST(ThreadCount, BadEnvironmentValueIsReplacedWithAMessage) {
  int before = get_num_threads();
  const char* old = std::getenv("SINTER_NUM_THREADS");
  std::string saved = old ? old : "";
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ::testing::internal::CaptureStderr();
  setenv("SINTER_NUM_THREADS", "abc", 1);
  set_num_threads(0);
  EXPECT_EQ(get_num_threads(), std::min(cores, kMaxThreads));
  setenv("SINTER_NUM_THREADS", "99999", 1);
  set_num_threads(0);
  EXPECT_EQ(get_num_threads(), kMaxThreads);  // clamped (no thread starts until a parallel region runs)
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("SINTER_NUM_THREADS='abc' is not a whole number"), std::string::npos) << err;
  EXPECT_EQ(err.find("99999"), std::string::npos) << "the message is printed once per process: " << err;
  if (old) setenv("SINTER_NUM_THREADS", saved.c_str(), 1);
  else unsetenv("SINTER_NUM_THREADS");
  set_num_threads(before);
}

}  // namespace
}  // namespace sinter
