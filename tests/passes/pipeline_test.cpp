// The pass pipeline: runs its passes in order with a timed record each, logs to the "passes" channel,
// SINTER_DISABLE_PASSES switches passes off by name, and the whole pipeline keeps results equal.
#include "passes/pipeline.h"

#include <cstdlib>
#include <regex>

#include "pass_testing.h"
#include "support/log.h"

namespace sinter {
namespace {

using testing::count_ops;

// Sets an environment variable for one scope (and re-reads the log settings).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    setenv(name, value, 1);
    reload_log_settings();
  }
  ~ScopedEnv() {
    unsetenv(name_);
    reload_log_settings();
  }

 private:
  const char* name_;
};

const char* kBlock =
    "graph(%x: f32[4, 10, 32], %w: f32[32], %b: f32[32], %k: f32[4, 12, 32], %v: f32[4, 12, 32]):\n"
    "  %5 = layer_norm(%x, [32], %w, %b)  # f32[4, 10, 32]\n"
    "  %6 = transpose.int(%k, -2, -1)  # f32[4, 32, 12]{384, 1, 32}\n"
    "  %7 = matmul(%5, %6)  # f32[4, 10, 12]\n"
    "  %8 = mul.Scalar(%7, 0.125)  # f32[4, 10, 12]\n"
    "  %9 = softmax.int(%8, -1)  # f32[4, 10, 12]\n"
    "  %10 = matmul(%9, %v)  # f32[4, 10, 32]\n"
    "  %11 = gelu(%10)  # f32[4, 10, 32]\n"
    "  %12 = mul.Scalar(%11, 1)  # f32[4, 10, 32]\n"
    "  %13 = add.Tensor(%12, %x)  # f32[4, 10, 32]\n"
    "  return (%13)\n";

TEST(Pipeline, RunsEveryPassInOrderWithRecords) {
  Graph g = parse_graph(kBlock);
  Graph before = g.clone();
  std::vector<passes::PassRecord> records = passes::run_inductor_passes(g, {});
  std::vector<std::string> names;
  for (const auto& r : records) {
    names.push_back(r.name);
    EXPECT_GE(r.ms, 0);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"functionalize", "patterns", "decompose", "simplify", "layout"}));
  EXPECT_EQ(names, passes::inductor_pass_names());
  EXPECT_FALSE(records[0].changed);  // already functional
  EXPECT_TRUE(records[1].changed);   // attention
  EXPECT_TRUE(records[2].changed);   // layer_norm, gelu
  EXPECT_TRUE(records[3].changed);   // x * 1
  EXPECT_FALSE(records[4].changed);  // no conv
  verify(g);
  EXPECT_EQ(count_ops(g, OpId::scaled_dot_product_attention), 1);
  for (OpId op : {OpId::layer_norm, OpId::gelu, OpId::softmax_int, OpId::matmul})
    EXPECT_EQ(count_ops(g, op), 0) << op_name(op) << "\n" << g;
  EXPECT_FALSE(std::regex_search(g.str(), std::regex(R"(mul\.Scalar\(%\d+, 1\))"))) << g;  // x * 1 is gone
  testing::expect_same_results(before, g, testing::random_inputs(before), 1e-5);
}

TEST(Pipeline, LogsEachPassOnThePassesChannel) {
  ScopedEnv logs("SINTER_LOGS", "passes");
  Graph g = parse_graph(kBlock);
  ::testing::internal::CaptureStderr();
  passes::run_inductor_passes(g, {});
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("[sinter:passes] functionalize: (unchanged)"), std::string::npos) << err;
  EXPECT_NE(err.find("[sinter:passes] decompose: changed"), std::string::npos) << err;
  EXPECT_NE(err.find("scaled_dot_product_attention("), std::string::npos) << err;  // the graph after patterns
  EXPECT_NE(err.find("[sinter:passes] simplify: changed"), std::string::npos) << err;
}

TEST(Pipeline, DisabledPassesDoNotRun) {
  ScopedEnv off("SINTER_DISABLE_PASSES", "decompose,patterns");
  Graph g = parse_graph(kBlock);
  std::vector<passes::PassRecord> records = passes::run_inductor_passes(g, {});
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].name, "functionalize");
  EXPECT_EQ(records[1].name, "simplify");
  EXPECT_EQ(records[2].name, "layout");
  EXPECT_EQ(count_ops(g, OpId::gelu), 1);
  EXPECT_EQ(count_ops(g, OpId::layer_norm), 1);
  EXPECT_EQ(count_ops(g, OpId::matmul), 2);
}

TEST(Pipeline, UnknownDisabledPassIsAnError) {
  ScopedEnv off("SINTER_DISABLE_PASSES", "decompose,fusion");
  Graph g = parse_graph(kBlock);
  EXPECT_ERROR(passes::run_inductor_passes(g, {}), "SINTER_DISABLE_PASSES names 'fusion'", "decompose");
}

TEST(Pipeline, VerifiesAroundPassesWhenAsked) {
  ScopedEnv verify_env("SINTER_VERIFY_PASSES", "1");
  Graph g = parse_graph(kBlock);
  EXPECT_EQ(passes::run_inductor_passes(g, {}).size(), 5u);
}

TEST(Pipeline, FrozenConvBatchNormFoldsAfterFunctionalization) {
  // Capture records batch_norm (a writer of its running stats); in eval it writes nothing, functionalize makes
  // it batch_norm_functional, and the pattern folds it into the frozen conv.
  ParseOptions options;
  options.constants["w"] = testing::random({4, 3, 3, 3}, kFloat32, 1);
  options.constants["m"] = testing::random({4}, kFloat32, 2);
  options.constants["v"] = testing::random_positive({4}, kFloat32, 0.5, 2.0, 3);
  Graph g = parse_graph(
      "graph(%x: f32[1, 3, 8, 8]):\n"
      "  %w = constant()  # f32[4, 3, 3, 3]\n"
      "  %m = constant()  # f32[4]\n"
      "  %v = constant()  # f32[4]\n"
      "  %4 = conv2d(%x, %w)  # f32[1, 4, 6, 6]\n"
      "  %5 = batch_norm(%4, None, None, %m, %v, False, 0.1, 1e-05)  # f32[1, 4, 6, 6]\n"
      "  %6 = relu(%5)  # f32[1, 4, 6, 6]\n"
      "  return (%6)\n",
      options);
  Graph before = g.clone();
  std::vector<passes::PassRecord> records = passes::run_inductor_passes(g, {.freeze = true});
  EXPECT_TRUE(records[0].changed);
  EXPECT_TRUE(records[1].changed);
  EXPECT_EQ(g.num_ops(), 2) << g;  // conv2d with the folded weights, relu
  testing::expect_same_results(before, g, testing::random_inputs(before), 1e-5);
}

TEST(Pipeline, MutatingGraphsAreFunctionalizedAndReportTheirWrites) {
  std::string text =
      "graph(%x: f32[4, 8]):\n"
      "  %1 = add_.Scalar(%x, 1)  # f32[4, 8]\n"
      "  %2 = gelu(%x)  # f32[4, 8]\n"
      "  return (%2)\n";
  Graph g = parse_graph(text);
  EXPECT_ERROR(passes::run_inductor_passes(g, {}), "writes into 1 of its inputs");
  Graph h = parse_graph(text);
  FunctionalizeResult result;
  std::vector<passes::PassRecord> records = passes::run_inductor_passes(h, {.functionalized = &result});
  EXPECT_TRUE(records[0].changed);
  ASSERT_EQ(result.mutations.size(), 1u);
  EXPECT_EQ(result.mutations[0].input_index, 0);
  EXPECT_EQ(count_ops(h, OpId::gelu), 0);
  verify(h);
}

}  // namespace
}  // namespace sinter
