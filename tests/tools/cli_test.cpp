// The `sinter` program's options, run as a child process (the binary is built beside this test binary: CMake
// makes sinter_tests depend on sinter_cli). A check built on `sinter run --expected` must fail when it cannot
// compare; bad values name the option; every command answers --help.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "frontends/onnx/onnx_writer.h"
#include "scoped_env.h"
#include "support/subprocess.h"
#include "sinter/sinter.h"

namespace sinter {
namespace {

namespace fs = std::filesystem;
namespace w = onnx_writer;

struct Result {
  int rc = -1;
  std::string output;
};

Result sinter_cli(const std::vector<std::string>& args) {
  fs::path exe = fs::read_symlink("/proc/self/exe").parent_path() / "sinter";
  EXPECT_TRUE(fs::exists(exe)) << exe << " is missing (build the sinter_cli target)";
  std::vector<std::string> argv{exe.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  support::ProcessOutput out = support::run_and_capture(argv);
  Result r;
  r.rc = WIFEXITED(out.status) ? WEXITSTATUS(out.status) : -1;
  r.output = out.output;
  return r;
}

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// A Relu model on a float [2, 3] input, with an input folder and a matching expected-output folder.
class CliRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("sinter_cli_test_{}", ::getpid());
    fs::create_directories(dir_ / "inputs");
    fs::create_directories(dir_ / "expected");
    fs::create_directories(dir_ / "empty");
    std::string graph = w::node({"x"}, {"y"}, "Relu", "relu0") + w::field_bytes(2, "g") +
                        w::value_info(11, "x", 1, {2, 3}) + w::value_info(12, "y", 1, {2, 3});
    model_ = (dir_ / "relu.onnx").string();
    write(model_, w::model(graph, 17));
    write(dir_ / "inputs/input_0.pb", w::float_tensor("x", {2, 3}, {-1, 2, -3, 4, -5, 6}));
    write(dir_ / "expected/output_0.pb", w::float_tensor("y", {2, 3}, {0, 2, 0, 4, 0, 6}));
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> run_args(std::vector<std::string> extra) {
    std::vector<std::string> a{"run", model_, "--inputs", (dir_ / "inputs").string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  fs::path dir_;
  std::string model_;
};

TEST_F(CliRun, ExpectedFolderThatMatchesPasses) {
  Result r = sinter_cli(run_args({"--expected", (dir_ / "expected").string()}));
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("match"), std::string::npos) << r.output;
}

TEST_F(CliRun, ExpectedFolderThatDiffersFails) {
  write(dir_ / "expected/output_0.pb", w::float_tensor("y", {2, 3}, {1, 2, 0, 4, 0, 6}));
  Result r = sinter_cli(run_args({"--expected", (dir_ / "expected").string()}));
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("MISMATCH"), std::string::npos) << r.output;
}

TEST_F(CliRun, MissingExpectedFolderIsAnError) {
  std::string missing = (dir_ / "no_such_folder").string();
  Result r = sinter_cli(run_args({"--expected", missing}));
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("error: --expected " + missing + ": no such folder"), std::string::npos) << r.output;
}

TEST_F(CliRun, ExpectedFolderWithoutAnOutputFileIsAnError) {
  Result r = sinter_cli(run_args({"--expected", (dir_ / "empty").string()}));
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("no output_0.pb for output 0"), std::string::npos) << r.output;
}

TEST_F(CliRun, ExpectedFolderWithMoreOutputsThanTheModelIsAnError) {
  write(dir_ / "expected/output_1.pb", w::float_tensor("z", {1}, {0}));
  Result r = sinter_cli(run_args({"--expected", (dir_ / "expected").string()}));
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("has output_1.pb but the model has only 1 outputs"), std::string::npos) << r.output;
}

TEST_F(CliRun, MatmulPrecisionIsTorchsSetting) {
  Result ok = sinter_cli(run_args({"--matmul-precision", "medium", "--expected", (dir_ / "expected").string()}));
  EXPECT_EQ(ok.rc, 0) << ok.output;
  Result bad = sinter_cli(run_args({"--matmul-precision", "low"}));
  EXPECT_EQ(bad.rc, 1) << bad.output;
  EXPECT_NE(bad.output.find("'low' is not one of highest, high, medium"), std::string::npos) << bad.output;
}

TEST_F(CliRun, MissingInputsFolderIsAnError) {
  Result r = sinter_cli({"run", model_, "--inputs", (dir_ / "nope").string()});
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("--inputs"), std::string::npos) << r.output;
}

TEST_F(CliRun, BadNumbersNameTheOptionAndTheValue) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"--rtol", "abc"}, "error: --rtol: 'abc' is not a finite number"},
      {{"--atol", "1e-3x"}, "error: --atol: '1e-3x' is not a finite number"},
      {{"--rtol", "-1"}, "error: --rtol: -1 is too small"},
      {{"--atol", "nan"}, "error: --atol: 'nan' is not a finite number"},
      {{"--bench", "-1"}, "error: --bench: -1 is too small (give 1 or more)"},
      {{"--bench", "0"}, "error: --bench: 0 is too small (give 1 or more)"},
      {{"--bench", "3x"}, "error: --bench: '3x' is not a whole number"},
      {{"--bench", "99999999999"}, "error: --bench: '99999999999' is not a whole number"},
      {{"--bench"}, "error: run: --bench needs a value"},
      {{"--frobnicate"}, "error: run: unknown option --frobnicate"},
  };
  for (const Case& c : cases) {
    Result r = sinter_cli(run_args(c.args));
    EXPECT_EQ(r.rc, 1) << c.args[0] << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("stod"), std::string::npos) << r.output;
  }
}

TEST_F(CliRun, BenchTimesTheGivenNumberOfCalls) {
  Result r = sinter_cli(run_args({"--bench", "2"}));
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("bench (2 calls, median)"), std::string::npos) << r.output;
}

// `sinter compile` saves an artifact that `sinter run DIR` runs where SINTER_CXX names no compiler.
TEST_F(CliRun, ACompiledArtifactRunsWithoutACompiler) {
  std::string artifact = (dir_ / "relu.sinter").string();
  Result c = sinter_cli({"compile", model_, "-o", artifact, "--inputs", (dir_ / "inputs").string()});
  ASSERT_EQ(c.rc, 0) << c.output;
  EXPECT_NE(c.output.find("saved " + artifact), std::string::npos) << c.output;
  testing::ScopedEnv cxx("SINTER_CXX", "/nonexistent/c++");
  Result r = sinter_cli({"run", artifact, "--inputs", (dir_ / "inputs").string(), "--expected",
                         (dir_ / "expected").string()});
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("loaded in"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("match"), std::string::npos) << r.output;
  Result missing = sinter_cli({"compile", model_});
  EXPECT_EQ(missing.rc, 1) << missing.output;
  EXPECT_NE(missing.output.find("-o DIR"), std::string::npos) << missing.output;
}

TEST(Cli, EveryCommandAnswersHelpWithItsUsage) {
  for (std::string cmd : {"run", "bench", "conformance", "demo", "compile"}) {
    for (std::string flag : {"--help", "-h"}) {
      Result r = sinter_cli({cmd, flag});
      EXPECT_EQ(r.rc, 0) << cmd << " " << flag << "\n" << r.output;
      EXPECT_NE(r.output.find("usage: sinter"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("  " + cmd), std::string::npos) << r.output;
    }
  }
  Result top = sinter_cli({"--help"});
  EXPECT_EQ(top.rc, 0) << top.output;
  Result none = sinter_cli({});
  EXPECT_EQ(none.rc, 2) << none.output;
}

TEST(Cli, BenchOptionsCheckTheirValues) {
  Result r = sinter_cli({"bench", "--threads", "abc"});
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("error: --threads: 'abc' is not a whole number"), std::string::npos) << r.output;
  r = sinter_cli({"bench", "--threads", "0"});
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("error: --threads: 0 is too small"), std::string::npos) << r.output;
  r = sinter_cli({"bench", "--suite", "nope"});
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("unknown bench suite 'nope'"), std::string::npos) << r.output;
  r = sinter_cli({"demo", "--fast"});
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_NE(r.output.find("demo: unknown option --fast"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace sinter
