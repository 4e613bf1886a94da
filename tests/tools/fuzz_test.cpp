// The differential fuzzer's programs (tools/fuzz_*.cpp): generation is deterministic for a seed, a program's text
// form replays exactly (the same program, the same eager results), and a case that is correct runs clean.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fuzz.h"
#include "fuzz_program.h"
#include "scoped_env.h"
#include "testing.h"

namespace sinter::tools::fuzz {
namespace {

TEST(Fuzz, GeneratorIsDeterministicForASeed) {
  GenOptions o;
  for (uint64_t c = 0; c < 12; ++c) {
    std::string a = to_text(generate(7, c, o)), b = to_text(generate(7, c, o));
    EXPECT_EQ(a, b) << "case " << c;
  }
  // Different cases (and seeds) give different programs.
  EXPECT_NE(to_text(generate(7, 0, o)), to_text(generate(7, 1, o)));
  EXPECT_NE(to_text(generate(7, 0, o)), to_text(generate(8, 0, o)));
}

TEST(Fuzz, DisabledFeaturesAreNotGenerated) {
  GenOptions o;
  o.disabled = {"inplace", "break", "layout"};
  for (uint64_t c = 0; c < 20; ++c) {
    Program p = generate(3, c, o);
    for (const Step& s : p.steps) {
      EXPECT_NE(s.op.back(), '_') << s.op;
      EXPECT_EQ(s.op.rfind("break_", 0), std::string::npos) << s.op;
    }
    for (const InputSpec& in : p.inputs) EXPECT_EQ(in.layout, Layout::kContiguous);
  }
}

TEST(Fuzz, ReplayedTextIsTheSameProgramWithTheSameResults) {
  GenOptions o;
  int compared = 0;
  for (uint64_t c = 0; c < 12; ++c) {
    Program p = generate(11, c, o);
    std::string text = to_text(p);
    Program q = parse_program(text);
    ASSERT_EQ(to_text(q), text);
    // Eager on the parsed program gives bitwise the same results as on the generated one.
    Context cp = make_context(p), cq = make_context(q);
    std::vector<Tensor> ap = make_inputs(p, 0), aq = make_inputs(q, 0);
    std::vector<Tensor> rp, rq;
    try {
      rp = run_program(p, cp, ap);
    } catch (const Error&) {
      continue;  // generated steps run on every variant, but a program may still be rejected as a whole
    }
    rq = run_program(q, cq, aq);
    ASSERT_EQ(rp.size(), rq.size());
    for (size_t k = 0; k < rp.size(); ++k) {
      ASSERT_EQ(rp[k].sizes().hints(), rq[k].sizes().hints());
      ASSERT_EQ(rp[k].dtype(), rq[k].dtype());
      if (rp[k].numel().hint() > 0 && is_floating(rp[k].dtype())) {
        Tensor a = rp[k].to(kFloat64), b = rq[k].to(kFloat64);
        EXPECT_TRUE(sinter::all(eq(a, b) | (isnan(a) & isnan(b))).item<bool>()) << text;
      } else if (rp[k].numel().hint() > 0) {
        EXPECT_TENSOR_EQ(rq[k], rp[k]);
      }
    }
    ++compared;
  }
  EXPECT_GT(compared, 6);
}

TEST(Fuzz, ParsesAHandWrittenProgramAndRunsItClean) {
  Program p = parse_program(
      "seed 0 case 0 data 5 specials 0 freeze 0\n"
      "class c0 3 4 5\n"
      "class c1 2 2 2\n"
      "v0 = input float32 [c0 1] layout contiguous\n"
      "v1 = input float32 [c0 c1] layout transpose 0 1\n"
      "v2 = add v0 v1 ; ints 1 ; reals 1\n"
      "v3 = sum v2 ; ints 0 0 0\n"
      "out v3 v2\n");
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.num_variants(), 3);
  EXPECT_EQ(input_sizes(p, 1, 2), (std::vector<int64_t>{5, 2}));
  std::vector<Tensor> in = make_inputs(p, 0);
  EXPECT_FALSE(in[1].is_contiguous());
  CaseResult r = run_case(p, {{"eager", false}, {"aot_eager", true}});
  EXPECT_EQ(r.kind, "ok") << r.detail;
  // The C++ printout names the ops and the compile options.
  std::string cpp = to_cpp(p, "aot_eager", true);
  EXPECT_NE(cpp.find("add(x0, x1, 1)"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("Dynamic::kAlways"), std::string::npos);
}

CaseResult run_text(const std::string& text, const std::vector<Config>& configs) {
  return run_case(parse_program("seed 0 case 0 data " + text), configs);
}

// Differences that no float comparison can call a bug get kinds of their own (make test ignores them; found by
// sinter fuzz on the 16-core host, seeds 101-108). Which of them shows depends on the host's vector width, so
// each may also come out equal; a wrong result is still a mismatch.
TEST(Fuzz, ClassifiesDifferencesThatAreNotBugs) {
  const std::vector<Config> inductor = {{"inductor", false}}, aot = {{"aot_eager", false}};
  auto expect_kind = [](const CaseResult& r, const std::string& kind) {
    EXPECT_TRUE(r.kind == "ok" || r.kind == kind) << r.kind << ": " << r.detail;
  };
  // copysign of the NaN that acosh makes of a value below 1: the NaN's sign is unspecified.
  expect_kind(run_text("276516451713075 specials 0 freeze 0\nclass c0 1\nclass c1 1\n"
                       "v0 = input float32 [c0 c0 c1] layout contiguous\n"
                       "v1 = acosh v0\nv2 = copysign v0 v1\nout v2\n",
                       inductor),
              "nan-sign");
  // The std of erf where erf saturates (a variance of nearly equal values): eager is itself far from float64.
  const std::string saturated_std =
      "130574766324525 specials 0 freeze 0\nclass c0 2\nv0 = input float32 [c0 c0] layout contiguous\n"
      "v1 = erf v0\nv2 = std v1 ; ints 0 1 0\n";
  expect_kind(run_text(saturated_std + "v3 = div_s_ v2 ; ints 0 ; reals 0.001\nout v3\n", inductor),
              "rounding-amplified");
  // A float16 prod that overflows in eager's float16 result and stays finite in a fused cast to bfloat16.
  expect_kind(run_text("98840084660292 specials 0 freeze 0\nclass c0 3\nclass c1 2\n"
                       "v0 = input float16 [c0 c1 c0] layout contiguous\n"
                       "v1 = prod v0 ; ints 1 0 1\nv2 = to v1 ; ints 3\nout v2\n",
                       inductor),
              "rounding-amplified");
  // A remainder by a divisor that cancellation made small (v2 * (1 + 0.5 * -1.98)): the quotient, about 130,
  // multiplies the divisor's rounding error, so a 1-ulp difference in hypot or mish moves the result by 8e-4
  // relative (seed 2026120712, case 1339); eager happens to be the nearer to float64 there.
  const std::string small_divisor =
      "69974513120906 specials 0 freeze 0\nclass c0 2\nclass c1 4\n"
      "v0 = input float32 [c0 c1] layout contiguous\nv1 = input float32 [1 c1] layout contiguous\n"
      "v2 = hypot v0 v0\nv3 = sum v1 ; ints 0 0 1\nv4 = addcmul v2 v2 v3 ; reals 0.5\nv5 = mish v2\n"
      "v6 = remainder v5 v4\nout v6\n";
  expect_kind(run_text(small_divisor, inductor), "rounding-amplified");
  // A dot after a write into a strided input: aot_eager's dense value sums in another order.
  expect_kind(run_text("150964423732198 specials 0 freeze 0\nclass c0 8\nv0 = input float32 [c0] layout step 0 2\n"
                       "v1 = mul_ v0 v0\nv2 = matmul v0 v0\nout v2\n",
                       aot),
              "rounding-mismatch");
  // A backend that is off by 1% is a mismatch, even where the program amplifies rounding.
  register_backend(
      "test_fuzz_off_by_one_percent",
      [](const Graph& g, const std::vector<Tensor>& examples) {
        CompiledGraph inner = find_backend("aot_eager")(g, examples);
        return CompiledGraph([inner](const std::vector<Tensor>& in) {
          std::vector<Tensor> out = inner(in);
          for (Tensor& t : out)
            if (is_floating(t.dtype())) t = t * 1.01;
          return out;
        });
      },
      {.replace = true});
  CaseResult off = run_text(saturated_std + "v3 = exp v0\nout v2 v3\n", {{"test_fuzz_off_by_one_percent", false}});
  EXPECT_EQ(off.kind, "mismatch") << off.detail;
  off = run_text(small_divisor, {{"test_fuzz_off_by_one_percent", false}});
  EXPECT_EQ(off.kind, "mismatch") << off.detail;
}

// A host compiler that fails on the generated code makes the graph run on aot_eager, which gives eager's
// results: the fuzzer still reports it, since sinter must then generate code that compiles.
TEST(Fuzz, ACompilerFailureIsAFinding) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sinter-fuzz-cxx-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path script = dir / "c++";
  std::ofstream(script) << "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo 'failing-c++ 1.0'; exit 0; fi\n"
                           "echo 'injected failure' >&2\nexit 1\n";
  fs::permissions(script, fs::perms::owner_all);
  {
    sinter::testing::ScopedEnv cxx("SINTER_CXX", script.string()), cache("SINTER_CACHE_DIR", (dir / "cache").string());
    CaseResult r = run_text("0 specials 0 freeze 0\nclass c0 3\nv0 = input float32 [c0] layout contiguous\n"
                            "v1 = exp v0\nout v1\n",
                            {{"inductor", false}});
    EXPECT_EQ(r.kind, "compiler-fallback") << r.detail;
  }
  fs::remove_all(dir);
}

TEST(Fuzz, ParseErrorsNameTheLine) {
  EXPECT_THROW(parse_program("seed 0 case 0 data 5 specials 0 freeze 0\nv0 = bogus_op v1\n"), Error);
}

}  // namespace
}  // namespace sinter::tools::fuzz
