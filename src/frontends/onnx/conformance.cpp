// The conformance runner (see conformance.h).
#include "frontends/onnx/conformance.h"
#include "frontends/onnx/importer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "sinter/compile.h"
#include "sinter/onnx.h"
#include "support/check.h"

namespace sinter::onnx {
namespace fs = std::filesystem;

Comparison compare_outputs(const Tensor& out_in, const Tensor& expected_in, Tolerance tol) {
  Comparison r;
  if (!out_in.defined()) return {"the output is undefined"};
  if (out_in.dtype() != expected_in.dtype()) {
    r.mismatch = fmt::format("dtype {} but expected {}", dtype_name(out_in.dtype()), dtype_name(expected_in.dtype()));
    return r;
  }
  if (out_in.sizes().hints() != expected_in.sizes().hints()) {
    r.mismatch = fmt::format("sizes {} but expected {}", out_in.sizes().str(), expected_in.sizes().str());
    return r;
  }
  Tensor out = out_in.is_cpu() ? out_in : out_in.to(kCPU);
  std::vector<double> a = out.to_vector<double>(), b = expected_in.to_vector<double>();
  bool exact = !is_floating(out.dtype());
  int64_t bad = 0, first_bad = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    double x = a[i], y = b[i];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) {
        if (bad++ == 0) first_bad = static_cast<int64_t>(i);
      }
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y && bad++ == 0) first_bad = static_cast<int64_t>(i);
      continue;
    }
    double err = std::abs(x - y);
    r.max_abs_error = std::max(r.max_abs_error, err);
    if (y != 0) r.max_rel_error = std::max(r.max_rel_error, err / std::abs(y));
    bool ok = exact ? x == y : err <= tol.atol + tol.rtol * std::abs(y);
    if (!ok && bad++ == 0) first_bad = static_cast<int64_t>(i);
  }
  if (bad > 0)
    r.mismatch = fmt::format("{} of {} values differ (first at flat index {}: {} vs expected {}); max abs error {:.3g}, "
                             "max rel error {:.3g}",
                             bad, a.size(), first_bad, a[first_bad], b[first_bad], r.max_abs_error, r.max_rel_error);
  return r;
}

namespace {

std::vector<std::string> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> files;
  for (int k = 0;; ++k) {
    fs::path p = dir / fmt::format("{}_{}.pb", prefix, k);
    if (!fs::exists(p)) break;
    files.push_back(p.string());
  }
  return files;
}

// A data file of a case. numpy has no bfloat16, so ONNX's case generator stores bfloat16 values as their uint16
// bit patterns: where the model declares bfloat16 and the file holds uint16, the bits are read as bfloat16 (what
// the data means), as the onnx runner hands the raw array to the backend.
Tensor read_case_tensor(const std::string& path, const std::vector<ValueInfo>& declared, size_t k) {
  if (k >= declared.size() || declared[k].dtype != kBFloat16) return read_tensor(path);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  proto::TensorProto t = proto::decode_tensor(bytes);
  if (t.data_type == proto::kDtUInt16) t.data_type = proto::kDtBFloat16;
  return to_tensor(t, "", fmt::format("tensor file '{}'", path));
}

}  // namespace

CaseResult run_case(const std::string& dir, const std::string& suite, const std::string& backend, Tolerance tol,
                    Device device) {
  CaseResult r;
  r.suite = suite;
  r.name = fs::path(dir).filename().string();
  auto start = std::chrono::steady_clock::now();
  try {
    Model model = load((fs::path(dir) / "model.onnx").string());
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    SINTER_CHECK(!sets.empty(), "no test_data_set_* folder in {}", dir);
    std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
    if (backend == "eager") fn = model;
    else fn = compile(model, CompileOptions{.backend = backend});
    std::vector<std::string> problems;
    for (const fs::path& set : sets) {
      std::vector<Tensor> inputs;
      for (const std::string& f : numbered(set, "input")) {
        Tensor t = read_case_tensor(f, model.inputs(), inputs.size());
        inputs.push_back(device.is_cpu() ? t : t.to(device));
      }
      std::vector<Tensor> expected;
      for (const std::string& f : numbered(set, "output"))
        expected.push_back(read_case_tensor(f, model.outputs(), expected.size()));
      std::vector<Tensor> outs = fn(inputs);
      if (outs.size() < expected.size()) {
        problems.push_back(fmt::format("{}: {} outputs, expected {}", set.filename().string(), outs.size(), expected.size()));
        continue;
      }
      for (size_t k = 0; k < expected.size(); ++k) {
        Comparison c = compare_outputs(outs[k].defined() ? outs[k].to(kCPU) : outs[k], expected[k], tol);
        if (!c.mismatch.empty()) problems.push_back(fmt::format("{} output {}: {}", set.filename().string(), k, c.mismatch));
      }
    }
    r.status = problems.empty() ? CaseStatus::kPassed : CaseStatus::kFailed;
    r.message = fmt::format("{}", fmt::join(problems, "; "));
  } catch (const UnsupportedError& e) {
    r.status = CaseStatus::kUnsupported;
    r.message = e.what();
  } catch (const std::exception& e) {
    r.status = CaseStatus::kFailed;
    r.message = e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<CaseResult> run_conformance(const ConformanceOptions& o) {
  SINTER_CHECK(fs::is_directory(o.data_dir), "conformance data folder '{}' does not exist (run scripts/conformance_data.sh)",
               o.data_dir);
  std::vector<std::string> suites = o.suites;
  if (suites.empty()) {
    for (const auto& e : fs::directory_iterator(o.data_dir))
      if (e.is_directory()) suites.push_back(e.path().filename().string());
    std::sort(suites.begin(), suites.end());
  }
  std::vector<CaseResult> results;
  for (const std::string& suite : suites) {
    fs::path sdir = fs::path(o.data_dir) / suite;
    SINTER_CHECK(fs::is_directory(sdir), "no suite folder {}", sdir.string());
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(sdir))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    for (const fs::path& c : cases) {
      if (!o.filter.empty() && c.filename().string().find(o.filter) == std::string::npos) continue;
      CaseResult r = run_case(c.string(), suite, o.backend, Tolerance{}, o.device);
      if (o.verbose) {
        const char* s = r.status == CaseStatus::kPassed ? "PASS" : r.status == CaseStatus::kFailed ? "FAIL" : "UNSUP";
        fmt::print("{:5} {}/{} ({:.2f}s) {}\n", s, suite, r.name, r.seconds, r.message.substr(0, 300));
        std::fflush(stdout);
      }
      results.push_back(std::move(r));
    }
  }
  return results;
}

std::string unsupported_reason(const std::string& message) {
  if (message.find("unsupported ONNX operators") != std::string::npos) return "operator";
  for (const char* kind : {"float8", "int4", "string", "complex", "sequence", "optional"})
    if (message.find(kind) != std::string::npos) return "value_kind";
  for (const char* d : {"dtype int16", "dtype uint16", "dtype uint32", "dtype uint64"})
    if (message.find(d) != std::string::npos) return "integer_dtype";
  return "other";
}

namespace {
struct Counts {
  int passed = 0, failed = 0, unsupported = 0;
  int total() const { return passed + failed + unsupported; }
};
std::map<std::string, Counts> count(const std::vector<CaseResult>& results) {
  std::map<std::string, Counts> m;
  for (const CaseResult& r : results) {
    Counts& c = m[r.suite];
    (r.status == CaseStatus::kPassed ? c.passed : r.status == CaseStatus::kFailed ? c.failed : c.unsupported)++;
  }
  return m;
}
std::map<std::string, int> reason_counts(const std::vector<CaseResult>& results, const std::string& suite) {
  std::map<std::string, int> m;
  for (const CaseResult& r : results)
    if (r.status == CaseStatus::kUnsupported && (suite.empty() || r.suite == suite)) ++m[unsupported_reason(r.message)];
  return m;
}
std::string json_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\', out += ch;
    else if (ch == '\n') out += "\\n";
    else if (static_cast<unsigned char>(ch) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(ch));
    else out += ch;
  }
  return out;
}
}  // namespace

std::string pass_table(const std::vector<CaseResult>& results, bool list_cases) {
  std::ostringstream os;
  os << fmt::format("{:<20} {:>7} {:>7} {:>12} {:>7}\n", "suite", "passed", "failed", "unsupported", "total");
  Counts all;
  for (const auto& [suite, c] : count(results)) {
    os << fmt::format("{:<20} {:>7} {:>7} {:>12} {:>7}\n", suite, c.passed, c.failed, c.unsupported, c.total());
    all.passed += c.passed, all.failed += c.failed, all.unsupported += c.unsupported;
  }
  os << fmt::format("{:<20} {:>7} {:>7} {:>12} {:>7}\n", "all", all.passed, all.failed, all.unsupported, all.total());
  std::map<std::string, int> why = reason_counts(results, "");
  if (all.unsupported > 0)
    os << fmt::format("unsupported: {} operator not implemented, {} float8/int4/string/complex/sequence/optional, "
                      "{} int16/uint16/uint32/uint64 dtypes, {} other\n",
                      why["operator"], why["value_kind"], why["integer_dtype"], why["other"]);
  if (list_cases) {
    for (CaseStatus want : {CaseStatus::kFailed, CaseStatus::kUnsupported}) {
      for (const CaseResult& r : results) {
        if (r.status != want) continue;
        os << fmt::format("  {} {}/{}: {}\n", want == CaseStatus::kFailed ? "FAILED" : "unsupported", r.suite, r.name,
                          r.message.substr(0, 240));
      }
    }
  }
  return os.str();
}

std::string results_json(const std::vector<CaseResult>& results, const std::string& backend, const std::string& device) {
  std::ostringstream os;
  os << "{\n  \"backend\": \"" << json_escape(backend) << "\",\n  \"device\": \"" << json_escape(device)
     << "\",\n  \"suites\": {";
  bool first = true;
  for (const auto& [suite, c] : count(results)) {
    os << (first ? "\n" : ",\n")
       << fmt::format("    \"{}\": {{\"passed\": {}, \"failed\": {}, \"unsupported\": {}, \"total\": {}", json_escape(suite),
                      c.passed, c.failed, c.unsupported, c.total());
    std::map<std::string, int> why = reason_counts(results, suite);
    os << fmt::format(", \"unsupported_by_reason\": {{\"operator\": {}, \"value_kind\": {}, \"integer_dtype\": {}, \"other\": {}}}}}",
                      why["operator"], why["value_kind"], why["integer_dtype"], why["other"]);
    first = false;
  }
  os << "\n  },\n  \"cases\": [";
  first = true;
  for (const CaseResult& r : results) {
    const char* s = r.status == CaseStatus::kPassed ? "passed" : r.status == CaseStatus::kFailed ? "failed" : "unsupported";
    os << (first ? "\n" : ",\n")
       << fmt::format("    {{\"suite\": \"{}\", \"name\": \"{}\", \"status\": \"{}\", \"seconds\": {:.4f}, \"message\": \"{}\"",
                      json_escape(r.suite), json_escape(r.name), s, r.seconds, json_escape(r.message.substr(0, 400)));
    if (r.status == CaseStatus::kUnsupported) os << ", \"reason\": \"" << unsupported_reason(r.message) << "\"";
    os << "}";
    first = false;
  }
  os << "\n  ]\n}\n";
  return os.str();
}

}  // namespace sinter::onnx
