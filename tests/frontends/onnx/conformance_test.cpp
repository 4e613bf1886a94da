// ONNX's own conformance suites under aot_eager (all of them) and a fixed subset under inductor. The data comes
// from the pinned onnx package (scripts/conformance_data.sh; `make test` installs it); without it these tests
// skip and say so. SINTER_ONNX_DATA overrides where the data is.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "frontends/onnx/conformance.h"
#include "sinter/compile.h"

namespace sinter {
namespace {
namespace fs = std::filesystem;

std::string data_dir() {
  if (const char* env = std::getenv("SINTER_ONNX_DATA")) return env;
  return (fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path() / ".cache" / "onnx-data").string();
}

// Cases known to fail, each with the reason; every other case must pass or be unsupported.
const std::set<std::string> kKnownFailures = {
    // Ill-conditioned. The light model's weights and biases are all 0.02, so its 1000 logits are mathematically
    // equal (9475690528.04) and the expected softmax is exactly 0.001 everywhere; one float32 ulp there is 1024,
    // so a one-ulp difference between two logits saturates the softmax. The reference's own last conv differs
    // across channels by up to 36 ulps (as ours does, up to 39); its logits coincide only because numpy's float32
    // pairwise mean in GlobalAveragePool happened to round all channels alike. Averaging the reference's own conv
    // output in float64, or sequentially in float32, gives two distinct logits and fails the same way; random
    // one-ulp perturbations of it give 3-7 distinct logits even under numpy's pairwise order. Our logits are
    // within one ulp of the exact value; passing would need bit-identical conv and mean rounding.
    "light/test_squeezenet",
};

void run_suites(const std::string& backend, const std::vector<std::string>& suites) {
  std::string dir = data_dir();
  if (!fs::is_directory(dir)) GTEST_SKIP() << "ONNX conformance data not found at " << dir
                                           << " (run scripts/conformance_data.sh; make test does)";
  onnx::ConformanceOptions o{.data_dir = dir, .suites = suites, .backend = backend};
  std::vector<onnx::CaseResult> results = onnx::run_conformance(o);
  std::cout << "ONNX conformance under " << backend << "\n" << onnx::pass_table(results, false);
  int passed = 0;
  for (const onnx::CaseResult& r : results) {
    std::string id = r.suite + "/" + r.name;
    if (r.status == onnx::CaseStatus::kPassed) ++passed;
    if (r.status == onnx::CaseStatus::kFailed && !kKnownFailures.count(id)) ADD_FAILURE() << id << ": " << r.message;
    // An implemented operator is unsupported only for float8/int4/string/complex/sequence/optional values
    // (int16/uint16/uint32/uint64 are emulated by the importer, so they must pass).
    std::string why = r.status == onnx::CaseStatus::kUnsupported ? onnx::unsupported_reason(r.message) : "";
    if (why == "other" || why == "integer_dtype")
      ADD_FAILURE() << id << " is unsupported for another reason: " << r.message;
  }
  EXPECT_GT(passed, 0);
}

TEST(OnnxConformance, AllSuitesUnderAotEager) { run_suites("aot_eager", {}); }

// The inductor subset (documented): the operator-level PyTorch exports and the light CNNs.
TEST(OnnxConformance, SubsetUnderInductor) {
  try {
    find_backend("inductor");
  } catch (const Error& e) {
    GTEST_SKIP() << "backend 'inductor' is not registered yet: ONNX conformance under inductor SKIPPED";
  }
  run_suites("inductor", {"pytorch-operator", "light"});
}

}  // namespace
}  // namespace sinter
