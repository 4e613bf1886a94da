// ONNX's conformance data (model.onnx + test_data_set_*/input_K.pb, output_K.pb per case) run under a backend and
// compared with the expected outputs at the suite's tolerance. Shared by `sinter conformance`, `sinter run
// --expected` and the tests. Internal to sinter (tools and tests include it from src/).
#pragma once
#include <string>
#include <vector>

#include "sinter/tensor.h"

namespace sinter::onnx {

struct Tolerance {
  double rtol = 1e-3;  // onnx.backend.test's defaults
  double atol = 1e-7;
};

// Compares one output: dtype, sizes, then |out - expected| <= atol + rtol * |expected| elementwise (NaN matches
// NaN; integers and bools exactly). Returns "" when they match, else what differs. Reports the largest errors.
struct Comparison {
  std::string mismatch;  // empty when within tolerance
  double max_abs_error = 0, max_rel_error = 0;
};
Comparison compare_outputs(const Tensor& out, const Tensor& expected, Tolerance tol);

enum class CaseStatus { kPassed, kFailed, kUnsupported };
struct CaseResult {
  std::string suite, name;
  CaseStatus status = CaseStatus::kFailed;
  std::string message;  // why it failed or is unsupported
  double seconds = 0;
};

// Runs one case folder (model.onnx and its data sets) with backend "eager" (the model called directly) or any
// registered backend through compile(), its inputs on `device` (the outputs are compared on the host).
CaseResult run_case(const std::string& dir, const std::string& suite, const std::string& backend, Tolerance tol,
                    Device device = kCPU);

struct ConformanceOptions {
  std::string data_dir;                // holds one folder per suite, each one folder per case
  std::vector<std::string> suites;     // empty: every suite folder found
  std::string backend = "aot_eager";
  Device device = kCPU;                // where the inputs are made
  std::string filter;                  // run only cases whose name contains this
  bool verbose = false;                // print every case as it finishes
};
std::vector<CaseResult> run_conformance(const ConformanceOptions& options);

// Why a case is unsupported, from its message: "operator" (an operator type sinter does not implement),
// "value_kind" (float8, int4, string, complex, sequence or optional values), "integer_dtype" (int16, uint16,
// uint32, uint64, which sinter's tensors lack), or "other".
std::string unsupported_reason(const std::string& message);

// "suite  passed failed unsupported total" rows, then the lists of failures and unsupported cases.
std::string pass_table(const std::vector<CaseResult>& results, bool list_cases = true);
// One JSON object: {"backend": ..., "suites": {name: {passed, failed, unsupported, total}}, "cases": [...]}.
std::string results_json(const std::vector<CaseResult>& results, const std::string& backend,
                         const std::string& device = "cpu");

}  // namespace sinter::onnx
