// ONNX's own conformance suites under aot_eager (all of them) and a fixed subset under inductor. The data comes
// from the pinned onnx package (scripts/conformance_data.sh; `make test` installs it); without it these tests
// skip and say so. SINTER_ONNX_DATA overrides where the data is.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "frontends/onnx/conformance.h"
#include "ops/sgemm.h"
#include "sinter/compile.h"

namespace sinter {
namespace {
namespace fs = std::filesystem;

std::string data_dir() {
  if (const char* env = std::getenv("SINTER_ONNX_DATA")) return env;
  return (fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path() / ".cache" / "onnx-data").string();
}

// Cases known to fail, each with the reason; every other case must pass or be unsupported.
const std::set<std::string> kKnownFailuresWithoutOwnGemm = {
    // Ill-conditioned, and the cause is below the op level (diagnosed with scripts/conformance_diff.py against
    // onnxruntime 1.32). Most of the model's conv weights and biases are the constant 0.02 (ConstantOfShape), so the
    // channels of those convs are one computation each, and the 1000 logits are mathematically equal (about 9475685376; one
    // float32 ulp there is 1024). onnxruntime (whose output equals the expected one exactly) computes each channel
    // bit-identically, so its logits tie and softmax gives 0.001. Every intermediate of ours agrees with
    // onnxruntime's to 5.1e-6 relative (Conv, Relu, MaxPool, Concat, Dropout, GlobalAveragePool: no semantic
    // difference), but OpenBLAS's sgemm (0.3.21, Haswell kernels) rounds identical rows of A differently by their
    // position in its tiles (M=128, K=32, N=729 with all rows equal: 80 of 127 rows differ from row 0), so our
    // channels differ by up to 49 ulps from the first uniform conv (r20, 1x1, 32 -> 128) on. Our logits are the
    // correctly rounded means of our own conv output (within 0.43 ulp) but fall on two values 2 ulps apart
    // (996 and 4 channels), and softmax saturates onto the 4 (0.25 each). With a float32 GEMM that rounds every
    // row alike (sinter's own, on CPUs with AVX2 or AVX-512) the case passes and must; the entry applies only
    // where float32 GEMMs run on OpenBLAS.
    "light/test_squeezenet",
};

void run_suites(const std::string& backend, const std::vector<std::string>& suites, Device device = kCPU) {
  std::string dir = data_dir();
  if (!fs::is_directory(dir)) GTEST_SKIP() << "ONNX conformance data not found at " << dir
                                           << " (run scripts/conformance_data.sh; make test does)";
  onnx::ConformanceOptions o{.data_dir = dir, .suites = suites, .backend = backend, .device = device};
  std::vector<onnx::CaseResult> results = onnx::run_conformance(o);
  std::cout << "ONNX conformance under " << backend << " on " << device.str() << "\n" << onnx::pass_table(results, false);
  int passed = 0;
  for (const onnx::CaseResult& r : results) {
    std::string id = r.suite + "/" + r.name;
    if (r.status == onnx::CaseStatus::kPassed) ++passed;
    bool known = !blas::sgemm_available() && kKnownFailuresWithoutOwnGemm.count(id);
    if (r.status == onnx::CaseStatus::kFailed && !known) ADD_FAILURE() << id << ": " << r.message;
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

// Every suite with its inputs on the GPU (the simulated one without a GPU: the suite turns it on), the model's
// initializers and constants moved where each node computes.
TEST(CudaOnnxConformance, AllSuitesUnderAotEager) { run_suites("aot_eager", {}, kCUDA); }

}  // namespace
}  // namespace sinter
