// The kernel cache: compile + load, memory/disk hits across processes, refusal of entries others can write,
// detection of truncated/corrupt objects, concurrent writers, compiler errors and a missing compiler.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <thread>

#include "cache_dir_fixture.h"
#include "codegen/cpp/toolchain.h"
#include "support/cache_files.h"
#include "codegen/cpp/kernel_cache.h"
#include "support/sha256.h"
#include "sinter/error.h"
#include "support/log.h"

namespace sinter::codegen::cpp {
using namespace ::sinter::support;
namespace {

namespace fs = std::filesystem;
using IntFn = int (*)();

std::string returning(int value, const std::string& fn = "sn_test_value") {
  return fmt::format("extern \"C\" int {}() {{ return {}; }}\n", fn, value);
}

int call(const CompiledObject& obj, const std::string& fn = "sn_test_value") {
  return reinterpret_cast<IntFn>(obj.library->symbol(fn))();
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

std::string entry_dir(const CompiledObject& obj) { return fs::path(obj.library->path()).parent_path().string(); }

// Runs `body` in a forked child (a second process with the same state) and returns its exit code; the child
// reports through its exit code because gtest's assertions do not cross fork().
template <class F>
int in_child(F body) {
  pid_t pid = fork();
  if (pid == 0) {
    int code = 100;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      code = 101;
    }
    clear_memory_cache();  // closes libraries, which removes a private copy
    std::fflush(nullptr);
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

class KernelCache : public testing::CacheDirFixture {
 protected:
  KernelCache() : CacheDirFixture("kernel-cache-test") {}
  void SetUp() override {
    unsetenv("SINTER_DEBUG_DIR");
    CacheDirFixture::SetUp();
  }
};

TEST_F(KernelCache, CompilesAUnitAndCallsIt) {
  CompiledObject a = compile_and_load({returning(42)}, "graph_1");
  EXPECT_EQ(a.from, CompiledObject::From::kCompiled);
  EXPECT_EQ(call(a), 42);
  EXPECT_EQ(a.key.size(), 64u);
  EXPECT_TRUE(contains(a.library->path(), cache_));
  EXPECT_TRUE(fs::exists(a.source_path));
  CompiledObject b = compile_and_load({returning(42)}, "graph_1");
  EXPECT_EQ(b.from, CompiledObject::From::kMemory);
  EXPECT_EQ(b.library.get(), a.library.get());
  EXPECT_EQ(b.source_path, a.source_path);
  EXPECT_EQ(delta().compiled, 1);
  EXPECT_EQ(delta().memory_hits, 1);
}

TEST_F(KernelCache, EntriesArePrivateToTheUser) {
  CompiledObject a = compile_and_load({returning(7)}, "graph_1");
  for (const std::string& p : {cache_, cache_ + "/v" + std::to_string(kAbiVersion), entry_dir(a)}) {
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0) << p;
    EXPECT_EQ(st.st_mode & 077, 0u) << p << " mode " << std::oct << st.st_mode;
  }
  EXPECT_EQ(why_not_private(a.library->path(), false), "");
}

TEST_F(KernelCache, SecondProcessCompilesNothing) {
  CompiledObject a = compile_and_load({returning(5)}, "graph_2");
  a = {};
  int code = in_child([] {
    clear_memory_cache();  // the child starts like a fresh process: nothing loaded
    KernelCacheStats s0 = kernel_cache_stats();
    CompiledObject b = compile_and_load({returning(5)}, "graph_2");
    KernelCacheStats s1 = kernel_cache_stats();
    if (b.from != CompiledObject::From::kDisk) return 1;
    if (s1.compiled != s0.compiled || s1.disk_hits != s0.disk_hits + 1) return 2;
    return call(b) == 5 ? 0 : 3;
  });
  EXPECT_EQ(code, 0);
}

TEST_F(KernelCache, SeveralUnitsAreCompiledInParallelAndLinkedIntoOneObject) {
  std::vector<std::string> units = {
      "extern \"C\" int part_a() { return 1; }\n",
      "extern \"C\" int part_b() { return 20; }\n",
      "extern \"C\" int part_a(); extern \"C\" int part_b();\nextern \"C\" int sn_test_value() { return part_a() + "
      "part_b() + 300; }\n"};
  CompiledObject obj = compile_and_load(units, "graph_3");
  EXPECT_EQ(call(obj), 321);
  ASSERT_EQ(obj.source_paths.size(), 3u);
  for (const std::string& p : obj.source_paths) EXPECT_TRUE(fs::exists(p)) << p;
  EXPECT_TRUE(contains(obj.source_paths[2], "graph_3_2.cpp"));
  // No objects or logs are left beside the entry.
  for (const auto& f : fs::directory_iterator(entry_dir(obj)))
    EXPECT_NE(f.path().extension(), ".o") << f.path();
}

TEST_F(KernelCache, TruncatedObjectIsDetectedAndRebuilt) {
  CompiledObject a = compile_and_load({returning(11)}, "graph_4");
  std::string so = a.library->path();
  a = {};
  clear_memory_cache();  // closes the object: it is no longer mapped when we cut it
  fs::resize_file(so, fs::file_size(so) / 2);
  CompiledObject b = compile_and_load({returning(11)}, "graph_4");
  EXPECT_EQ(b.from, CompiledObject::From::kCompiled);
  EXPECT_EQ(call(b), 11);
  EXPECT_EQ(delta().corrupt, 1);
  EXPECT_EQ(delta().compiled, 2);
  b = {};
  clear_memory_cache();
  EXPECT_EQ(compile_and_load({returning(11)}, "graph_4").from, CompiledObject::From::kDisk);
}

TEST_F(KernelCache, CorruptedObjectIsDetectedAndRebuilt) {
  CompiledObject a = compile_and_load({returning(12)}, "graph_5");
  std::string so = a.library->path();
  a = {};
  clear_memory_cache();
  {
    std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(fs::file_size(so) / 2));
    f.put('\x5a').put('\xa5');
  }
  CompiledObject b = compile_and_load({returning(12)}, "graph_5");
  EXPECT_EQ(b.from, CompiledObject::From::kCompiled);
  EXPECT_EQ(call(b), 12);
  EXPECT_EQ(delta().corrupt, 1);
}

TEST_F(KernelCache, CorruptManifestIsDetectedAndRebuilt) {
  CompiledObject a = compile_and_load({returning(13)}, "graph_6");
  std::string manifest = entry_dir(a) + "/manifest";
  a = {};
  clear_memory_cache();
  fs::resize_file(manifest, 10);
  EXPECT_EQ(compile_and_load({returning(13)}, "graph_6").from, CompiledObject::From::kCompiled);
  EXPECT_EQ(delta().corrupt, 1);
}

TEST_F(KernelCache, GroupWritableEntryIsRefusedAndRebuilt) {
  CompiledObject a = compile_and_load({returning(14)}, "graph_7");
  std::string entry = entry_dir(a);
  a = {};
  clear_memory_cache();
  ASSERT_EQ(chmod(entry.c_str(), 0770), 0);
  CompiledObject b = compile_and_load({returning(14)}, "graph_7");
  EXPECT_EQ(b.from, CompiledObject::From::kCompiled);
  EXPECT_EQ(call(b), 14);
  EXPECT_EQ(delta().rejected, 1);
  EXPECT_EQ(why_not_private(entry, true), "");  // the rebuilt entry is private again
}

TEST_F(KernelCache, GroupWritableObjectIsRefused) {
  CompiledObject a = compile_and_load({returning(15)}, "graph_8");
  std::string so = a.library->path();
  a = {};
  clear_memory_cache();
  ASSERT_EQ(chmod(so.c_str(), 0760), 0);
  EXPECT_EQ(compile_and_load({returning(15)}, "graph_8").from, CompiledObject::From::kCompiled);
  EXPECT_EQ(delta().rejected, 1);
}

TEST_F(KernelCache, CacheDirectoryOthersCanWriteIsNotUsed) {
  ASSERT_EQ(make_dirs(cache_), "");
  ASSERT_EQ(chmod(cache_.c_str(), 0777), 0);
  CompiledObject a = compile_and_load({returning(16)}, "graph_9");
  EXPECT_EQ(call(a), 16);
  EXPECT_FALSE(contains(a.library->path(), cache_)) << "loaded from " << a.library->path();
  EXPECT_EQ(delta().rejected, 1);
  EXPECT_TRUE(fs::is_empty(cache_));  // nothing was written into it
  std::string private_dir = entry_dir(a);
  a = {};
  clear_memory_cache();
  EXPECT_FALSE(fs::exists(private_dir));  // the private build is removed when the object is closed
}

TEST_F(KernelCache, TwoProcessesCompilingTheSameKeyAtOnceBothSucceed) {
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  auto racer = [&] {
    return in_child([&] {
      char c;
      if (read(go[0], &c, 1) != 1) return 9;  // start together
      CompiledObject obj = compile_and_load({returning(17)}, "graph_10");
      return call(obj) == 17 ? 0 : 1;
    });
  };
  int codes[2] = {-1, -1};
  std::thread t0([&] { codes[0] = racer(); });
  std::thread t1([&] { codes[1] = racer(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(write(go[1], "xx", 2), 2);
  t0.join();
  t1.join();
  close(go[0]), close(go[1]);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
  CompiledObject after = compile_and_load({returning(17)}, "graph_10");
  EXPECT_EQ(after.from, CompiledObject::From::kDisk);
  // Only the published entry remains in its shard: no temporary directories.
  int entries = 0;
  for (const auto& f : fs::directory_iterator(fs::path(entry_dir(after)).parent_path())) ++entries, (void)f;
  EXPECT_EQ(entries, 1);
}

TEST_F(KernelCache, StaleBuildDirectoriesOfDeadProcessesAreRemoved) {
  std::string key = kernel_cache_key({returning(24)});
  std::string shard = cache_ + "/v" + std::to_string(kAbiVersion) + "/" + key.substr(0, 2);
  ASSERT_EQ(make_dirs(shard), "");
  std::string stale = shard + "/" + std::string(64, 'f') + ".tmp-abc123", fresh = shard + "/x.tmp-def456";
  ASSERT_EQ(make_dirs(stale), "");
  ASSERT_EQ(make_dirs(fresh), "");
  struct timespec old_times[2] = {{0, 0}, {std::time(nullptr) - 7200, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, stale.c_str(), old_times, 0), 0);
  compile_and_load({returning(24)}, "graph_17");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));  // may belong to a compile still running
}

TEST_F(KernelCache, ThreadsAskingForTheSameKeyShareOneCompile) {
  CompiledObject objs[4];
  std::vector<std::thread> threads;
  for (auto& o : objs) threads.emplace_back([&o] { o = compile_and_load({returning(18)}, "graph_11"); });
  for (auto& t : threads) t.join();
  for (auto& o : objs) EXPECT_EQ(o.library.get(), objs[0].library.get());
  EXPECT_EQ(delta().compiled, 1);
  EXPECT_EQ(delta().memory_hits, 3);
}

TEST_F(KernelCache, CompilerErrorGivesItsMessageAndTheSourcePath) {
  std::string bad = "extern \"C\" int sn_test_value() { return undeclared_thing_xyz; }\n";
  std::string message;
  try {
    compile_and_load({bad}, "graph_12");
  } catch (const Error& e) {
    message = e.what();
  }
  ASSERT_FALSE(message.empty()) << "no error";
  EXPECT_TRUE(contains(message, "undeclared_thing_xyz")) << message;
  EXPECT_TRUE(contains(message, "graph_12")) << message;
  size_t at = message.find("source kept at: ");
  ASSERT_NE(at, std::string::npos) << message;
  std::string path = message.substr(at + 16, message.find('\n', at) - at - 16);
  std::ifstream kept(path);
  std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, bad) << path;
  EXPECT_EQ(delta().failures, 1);
  // A failure is not cached: fixed source compiles, and asking again for the bad one fails again.
  EXPECT_THROW(compile_and_load({bad}, "graph_12"), Error);
}

TEST_F(KernelCache, MissingCompilerSaysHowToSetSinterCxx) {
  setenv("SINTER_CXX", "/nonexistent", 1);
  std::string message;
  try {
    compile_and_load({returning(19)}, "graph_13");
  } catch (const Error& e) {
    message = e.what();
  }
  unsetenv("SINTER_CXX");
  EXPECT_TRUE(contains(message, "SINTER_CXX")) << message;
  EXPECT_TRUE(contains(message, "/nonexistent")) << message;
  EXPECT_EQ(call(compile_and_load({returning(19)}, "graph_13")), 19);  // the default compiler still works
}

TEST_F(KernelCache, DebugDirGetsACopyOfEverySource) {
  std::string debug = dir_ + "/debug";
  setenv("SINTER_DEBUG_DIR", debug.c_str(), 1);
  CompiledObject obj = compile_and_load({returning(20)}, "graph_14");
  unsetenv("SINTER_DEBUG_DIR");
  EXPECT_TRUE(contains(obj.source_path, debug)) << obj.source_path;
  EXPECT_TRUE(contains(obj.source_path, "graph_14")) << obj.source_path;
  std::ifstream f(obj.source_path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, returning(20));
}

TEST_F(KernelCache, OutputCodeLogPrintsTheSource) {
  setenv("SINTER_LOGS", "output_code", 1);
  reload_log_settings();
  ::testing::internal::CaptureStderr();
  compile_and_load({returning(21, "fn_in_the_log")}, "graph_15");
  std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("SINTER_LOGS");
  reload_log_settings();
  EXPECT_TRUE(contains(err, "[sinter:output_code]")) << err;
  EXPECT_TRUE(contains(err, "fn_in_the_log")) << err;
}

TEST_F(KernelCache, KeyCoversSourcesAndFlags) {
  std::string k = kernel_cache_key({returning(1)});
  EXPECT_EQ(k, kernel_cache_key({returning(1)}));
  EXPECT_NE(k, kernel_cache_key({returning(2)}));
  EXPECT_NE(k, kernel_cache_key({returning(1)}, {.extra_flags = {"-O2"}}));
  // Splitting the same text differently is a different program.
  EXPECT_NE(kernel_cache_key({"ab", "c"}), kernel_cache_key({"a", "bc"}));
}

TEST_F(KernelCache, WarmLoadOfA50KBSourceIsFast) {
  std::string src;
  for (int i = 0; src.size() < 50000; ++i)
    src += fmt::format(
        "extern \"C\" void kernel_{0}(const float* __restrict a, float* __restrict out, long n) {{\n"
        "  // a pointwise chain, like a generated kernel\n"
        "  for (long i = 0; i < n; ++i) {{ float x = a[i] * {1}.5f + 1.0f; out[i] = x > 0 ? x : x * 0.01f; }}\n}}\n",
        i, i);
  src += returning(22);
  double cold = compile_and_load({src}, "graph_50kb").seconds;
  double best = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    clear_memory_cache();
    CompiledObject warm = compile_and_load({src}, "graph_50kb");
    ASSERT_EQ(warm.from, CompiledObject::From::kDisk);
    EXPECT_EQ(call(warm), 22);
    best = std::min(best, warm.seconds);
  }
  std::printf("[ measure  ] %zu-byte source: cold compile+load %.3f s, warm (disk hit: hash check + dlopen) %.2f ms, "
              "object %ju bytes\n", src.size(), cold, best * 1e3,
              uintmax_t(fs::file_size(compile_and_load({src}, "graph_50kb").library->path())));
  EXPECT_LT(best, 0.020);
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// The SHA extensions' path (where this CPU has it) against the portable one, at every length around the block size
// and on a large input.
TEST(Sha256, ExtensionsAndPortablePathAgree) {
  std::string text;
  for (int i = 0; i < (1 << 20) + 77; ++i) text.push_back(char((i * 2654435761u) >> 13));
  for (size_t n = 0; n < 300; ++n) {
    Sha256 fast(true), slow(false);
    fast.update(std::string_view(text).substr(0, n));
    slow.update(std::string_view(text).substr(0, n));
    EXPECT_EQ(fast.hex_digest(), slow.hex_digest()) << n;
  }
  Sha256 fast(true), slow(false);
  fast.update(text);
  slow.update(text);
  EXPECT_EQ(fast.hex_digest(), slow.hex_digest());
}

TEST(Sha256, PiecewiseUpdatesEqualOneUpdate) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text.push_back(char(i * 37 + 11));
  for (size_t split : {0, 1, 55, 56, 63, 64, 65, 500}) {
    Sha256 h;
    h.update(std::string_view(text).substr(0, split));
    h.update(std::string_view(text).substr(split));
    EXPECT_EQ(h.hex_digest(), sha256_hex(text)) << split;
  }
}

TEST(Toolchain, ResolvesACompilerAndExplicitCpuFlags) {
  const codegen::cpp::Toolchain& tc = codegen::cpp::host_toolchain();
  EXPECT_EQ(tc.compiler[0], '/');
  EXPECT_FALSE(codegen::cpp::compiler_version(tc.compiler).empty());
  EXPECT_FALSE(tc.cpu_features.empty());
  EXPECT_FALSE(contains(tc.cpu_features, "native"));
  for (const std::string& f : tc.flags) EXPECT_FALSE(contains(f, "native")) << f;
  auto has = [&](const char* flag) { return std::find(tc.flags.begin(), tc.flags.end(), flag) != tc.flags.end(); };
  EXPECT_TRUE(has("-O3") && has("-fPIC") && has("-shared") && has("-fopenmp-simd"));
  const auto& cpu = codegen::cpp::host_cpu_features();
  if (cpu.avx2) {
    EXPECT_TRUE(has("-mavx2") && has("-mfma") && has("-mf16c"));
  }
  int w = codegen::cpp::vector_width_floats();
  EXPECT_TRUE(w == 4 || w == 8 || w == 16) << w;
  std::printf("[ measure  ] toolchain %s (%s), cpu %s, %d floats per vector\n", tc.compiler.c_str(),
              codegen::cpp::compiler_version(tc.compiler).c_str(), tc.cpu_features.c_str(), w);
}

// The compiler's version line (part of every key) is asked once per compiler file and then read from the cache
// directory by later processes; a compiler replaced in place (new size or time) is asked again.
TEST_F(KernelCache, CompilerVersionIsAskedOncePerCompilerFile) {
  const std::string script = dir_ + "/fake-c++", log = dir_ + "/asked";
  auto write_script = [&](const std::string& version) {
    std::filesystem::remove(script);
    std::ofstream(script) << "#!/bin/sh\necho asked >> " << log << "\necho '" << version << "'\necho second line\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  };
  auto asked = [&] {
    std::ifstream in(log);
    return static_cast<int>(std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  };
  write_script("fake-c++ 1.0");
  EXPECT_EQ(codegen::cpp::compiler_version(script), "fake-c++ 1.0");
  EXPECT_EQ(codegen::cpp::compiler_version(script), "fake-c++ 1.0");
  EXPECT_EQ(asked(), 1);
  codegen::cpp::clear_memory_cache();  // as a new process: the line comes from the cache directory
  EXPECT_EQ(codegen::cpp::compiler_version(script), "fake-c++ 1.0");
  EXPECT_EQ(asked(), 1);
  write_script("fake-c++ 2.00");  // another size: another compiler
  codegen::cpp::clear_memory_cache();
  EXPECT_EQ(codegen::cpp::compiler_version(script), "fake-c++ 2.00");
  EXPECT_EQ(asked(), 2);
}

TEST_F(KernelCache, ClangAndGccBothWorkThroughSinterCxx) {
  for (const char* cxx : {"g++", "clang++"}) {
    if (fs::exists(std::string("/usr/bin/") + cxx) == false) continue;
    setenv("SINTER_CXX", cxx, 1);
    CompiledObject obj = compile_and_load({returning(23)}, "graph_16");
    EXPECT_EQ(call(obj), 23) << cxx;
    EXPECT_TRUE(contains(codegen::cpp::host_toolchain().compiler, cxx));
  }
  unsetenv("SINTER_CXX");
  EXPECT_EQ(delta().compiled, fs::exists("/usr/bin/clang++") ? 2 : 1);
}

}  // namespace
}  // namespace sinter::codegen::cpp
