#include "view_checks.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "testing.h"

namespace sinter::view_checks {

std::string layout_name(Layout layout) {
  switch (layout) {
    case Layout::kContiguous: return "contiguous";
    case Layout::kTransposed: return "transposed";
    case Layout::kPermuted: return "permuted";
    case Layout::kSlicedStep: return "sliced with step 2";
    case Layout::kExpanded: return "expanded";
  }
  return "?";
}

Tensor make_input(const std::vector<int64_t>& sizes, Layout layout, uint64_t seed) {
  int64_t r = static_cast<int64_t>(sizes.size());
  SymIntList shape(sizes);
  switch (layout) {
    case Layout::kContiguous: break;
    case Layout::kTransposed:
      if (r < 2) break;
      {
        SymIntList s = shape;
        std::swap(s[r - 1], s[r - 2]);
        return testing::random(s, kFloat32, seed).transpose(-1, -2);
      }
    case Layout::kPermuted:
      if (r < 2) break;
      {
        SymIntList s(std::vector<int64_t>(sizes.rbegin(), sizes.rend()));
        DimList dims;
        for (int64_t d = r - 1; d >= 0; --d) dims.push_back(d);
        return testing::random(s, kFloat32, seed).permute(dims);
      }
    case Layout::kSlicedStep:
      if (r < 1) break;
      {
        SymIntList s = shape;
        s[r - 1] = s[r - 1] * 2;
        return testing::random(s, kFloat32, seed).slice(r - 1, 0, std::nullopt, 2);
      }
    case Layout::kExpanded:
      if (r < 1) break;
      {
        SymIntList s = shape;
        s[0] = 1;
        return testing::random(s, kFloat32, seed).expand(shape);
      }
  }
  return testing::random(shape, kFloat32, seed);
}

std::string compare_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want, bool exact) {
  if (got.size() != want.size()) return fmt::format("{} outputs, eager gives {}", got.size(), want.size());
  std::string diff;
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor &g = got[i], &w = want[i];
    if (g.dtype() != w.dtype()) {
      diff += fmt::format("output {}: dtype {}, eager {}\n", i, dtype_name(g.dtype()), dtype_name(w.dtype()));
      continue;
    }
    if (g.sizes().hints() != w.sizes().hints()) {
      diff += fmt::format("output {}: sizes {}, eager {}\n", i, g.sizes().str(), w.sizes().str());
      continue;
    }
    bool strides = true;
    for (int64_t d = 0; d < w.dim(); ++d)
      if (w.size(d).hint() > 1 && g.stride(d).hint() != w.stride(d).hint()) strides = false;
    if (!strides)
      diff += fmt::format("output {} of sizes {}: strides {}, eager {}\n", i, w.sizes().str(), g.strides().str(),
                          w.strides().str());
    // The inductor within float32's tolerance (these tests compute in float32 whatever dtype they return).
    ::testing::AssertionResult values = testing::close(g, w, exact ? 0 : std::max(testing::tolerance(w.dtype()), 1e-5));
    if (!values) diff += fmt::format("output {}: {}\n", i, values.message());
  }
  return diff;
}

std::vector<Tensor> one_input(const std::vector<int64_t>& sizes, Layout layout, uint64_t seed) {
  return {make_input(sizes, layout, seed)};
}

namespace {

struct Table {
  const std::vector<Case>& cases;
  const std::vector<Layout>& layouts;
  size_t inputs_per_layout;
  // Runs every case on every layout's inputs (concatenated in `flat`); `labels`, when given, names each output.
  std::vector<Tensor> run(const std::vector<Tensor>& flat, std::vector<std::string>* labels) const {
    std::vector<Tensor> out;
    for (size_t l = 0; l < layouts.size(); ++l) {
      std::vector<Tensor> in(flat.begin() + l * inputs_per_layout, flat.begin() + (l + 1) * inputs_per_layout);
      for (const Case& c : cases) {
        std::vector<Tensor> r = c.fn(in);
        for (size_t k = 0; k < r.size(); ++k) {
          out.push_back(r[k]);
          if (labels) labels->push_back(fmt::format("{}, {} input, output {}", c.name, layout_name(layouts[l]), k));
        }
      }
    }
    return out;
  }
};

// Compares output by output, naming each failure.
void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                 const std::vector<std::string>& labels, bool exact, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < got.size(); ++i) {
    std::string diff = compare_outputs({got[i]}, {want[i]}, exact);
    EXPECT_TRUE(diff.empty()) << labels[i] << ", " << where << ":\n" << diff;
  }
}

}  // namespace

void check_cases(const std::vector<Case>& cases, const std::vector<std::vector<int64_t>>& sizes,
                 const std::vector<Layout>& layouts, const MakeInputs& make) {
  size_t per_layout = make(sizes.at(0), layouts.at(0), 0).size();
  Table table{cases, layouts, per_layout};
  auto inputs = [&](size_t k) {
    std::vector<Tensor> flat;
    for (size_t l = 0; l < layouts.size(); ++l)
      for (const Tensor& t : make(sizes[k], layouts[l], 1000 * k + 17 * l)) flat.push_back(t);
    return flat;
  };
  auto all = [&table](const std::vector<Tensor>& flat) { return table.run(flat, nullptr); };
  for (const std::string& backend : kBackends) {
    for (const Policy& policy : kPolicies) {
      auto compiled = compile(all, {.backend = backend, .dynamic = policy.dynamic});
      for (size_t k = 0; k < sizes.size(); ++k) {
        std::string where = fmt::format("{}, {}, sizes [{}] (call {})", backend, policy.name,
                                        fmt::join(sizes[k], ", "), k + 1);
        std::vector<std::string> labels;
        std::vector<Tensor> want = table.run(inputs(k), &labels), got;
        try {
          got = compiled(inputs(k));
        } catch (const std::exception& e) {
          // Name the cases that fail, each compiled alone on this call's inputs.
          for (const Case& c : cases) {
            Table one{std::vector<Case>{c}, layouts, per_layout};
            auto fn = [&one](const std::vector<Tensor>& flat) { return one.run(flat, nullptr); };
            std::vector<std::string> one_labels;
            std::vector<Tensor> one_want = one.run(inputs(k), &one_labels);
            try {
              auto c1 = compile(fn, {.backend = backend, .dynamic = policy.dynamic});
              expect_same(c1(inputs(k)), one_want, one_labels, backend == "aot_eager", where);
            } catch (const std::exception& e1) {
              ADD_FAILURE() << c.name << ", " << where << ": compiled threw: " << e1.what();
            }
          }
          ADD_FAILURE() << where << ": the table compiled threw: " << e.what();
          return;
        }
        expect_same(got, want, labels, backend == "aot_eager", where);
      }
    }
  }
}

}  // namespace sinter::view_checks
