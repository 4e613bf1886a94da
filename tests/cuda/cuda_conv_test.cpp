// conv1d and conv2d on CUDA tensors (ops/cuda_conv.cpp: an im2col copy and a cuBLAS GEMM on the device) against
// the CPU kernel: strides, padding (numbers and "same"), dilation, groups up to depthwise, 1x1 convs, with and
// without bias, contiguous, channels-last and non-contiguous inputs, every floating dtype, empty sizes; no call
// takes the CPU kernel; bad arguments raise the CPU's errors; a compiled conv + bias + relu runs the same kernel.
// On the simulated device the products run their CPU kernels except while a CUDA graph is captured (as the
// matrix products do), so there every call is captured and replayed, which runs the kernel under test.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include "ops/cuda_dnn.h"
#include "ops/cuda_fallback.h"
#include "sinter/compile.h"
#include "sinter/cuda.h"
#include "sinter/ops.h"
#include "tensor/cuda_graph.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

double tolerance(DType dt) {
  return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : dt == kBFloat16 ? 2e-2 : 5e-3;
}

// fn() on cuda:0 through the CUDA kernels, checking that no op took its CPU kernel: eagerly on a GPU; captured
// into a CUDA graph and replayed on the simulated device.
Tensor on_device(const std::function<Tensor()>& fn) {
  CudaEagerCounts before = cuda_eager_counts();
  Tensor out;
  try {
    if (cuda::is_simulated()) {
      std::unique_ptr<cuda::Graph> graph = cuda::Graph::capture(0, cuda::new_memory_pool(0), [&] { out = fn(); });
      graph->replay();
    } else {
      out = fn();
    }
  } catch (const Error& e) {  // a failure under the caller's trace, which names the case
    ADD_FAILURE() << e.what();
    return Tensor();
  }
  EXPECT_EQ(cuda_eager_counts().cpu, before.cpu) << "an op ran its CPU kernel";
  return out;
}

Tensor cuda(const Tensor& t) { return t.to(kCUDA); }

struct Case {
  const char* name;
  std::vector<int64_t> x, w;  // input [N, C, H, W], weight [O, C/groups, kh, kw]
  SymIntList stride, padding, dilation;
  int64_t groups = 1;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"3x3 pad 1", {2, 4, 7, 6}, {5, 4, 3, 3}, {1}, {1}, {1}},
      {"3x3 stride 2 pad 1", {2, 3, 9, 8}, {4, 3, 3, 3}, {2}, {1}, {1}},
      {"mixed stride, padding and dilation", {1, 3, 10, 9}, {6, 3, 3, 2}, {2, 1}, {1, 2}, {2, 1}},
      {"dilation 2", {2, 2, 8, 8}, {3, 2, 3, 3}, {1}, {2}, {2}},
      {"groups 2", {2, 6, 6, 5}, {4, 3, 3, 3}, {1}, {1}, {1}, 2},
      {"groups 3 strided", {1, 6, 9, 7}, {6, 2, 2, 3}, {2, 1}, {0, 1}, {1}, 3},
      {"depthwise", {2, 4, 7, 7}, {4, 1, 3, 3}, {1}, {1}, {1}, 4},
      {"depthwise multiplier 2", {1, 3, 6, 6}, {6, 1, 3, 3}, {2}, {1}, {1}, 3},
      {"1x1", {2, 8, 5, 5}, {6, 8, 1, 1}, {1}, {0}, {1}},
      {"1x1 stride 2", {2, 4, 6, 6}, {3, 4, 1, 1}, {2}, {0}, {1}},
      {"1x1 padded", {1, 3, 4, 4}, {2, 3, 1, 1}, {1}, {1}, {1}},
      {"kernel the size of the padded input", {1, 2, 3, 3}, {2, 2, 5, 5}, {1}, {1}, {1}},
      {"no padding", {2, 3, 6, 7}, {4, 3, 3, 3}, {1}, {0}, {1}},
  };
  return all;
}

enum class Layout { kContiguous, kChannelsLast, kStrided };

// `t` in `layout`, on t's device: strided is every second element of a buffer twice as wide.
Tensor laid_out(const Tensor& t, Layout layout) {
  if (layout == Layout::kChannelsLast) return t.contiguous(MemoryFormat::kChannelsLast);
  if (layout == Layout::kContiguous) return t;
  SymIntList wide = t.sizes();
  wide.back() = wide.back() * 2;
  Tensor view = zeros(wide, TensorOptions(t.dtype()).device(t.device())).slice(-1, 0, std::nullopt, 2);
  view.copy_(t);
  return view;
}

const char* layout_name(Layout l) {
  return l == Layout::kContiguous ? "contiguous" : l == Layout::kChannelsLast ? "channels-last" : "strided";
}

void expect_like_cpu(const Case& c, DType dt, Layout layout, bool with_bias) {
  SCOPED_TRACE(fmt::format("{}, {}, {}, {}", c.name, dtype_name(dt), layout_name(layout),
                           with_bias ? "bias" : "no bias"));
  Tensor x = random(SymIntList(c.x), dt, 1), w = random(SymIntList(c.w), dt, 2);
  Tensor b = with_bias ? random({c.w[0]}, dt, 3) : Tensor();
  Tensor want = conv2d(laid_out(x, layout), w, b, c.stride, c.padding, c.dilation, c.groups);
  Tensor dx = laid_out(cuda(x), layout), dw = cuda(w), db = with_bias ? cuda(b) : Tensor();
  Tensor got = on_device([&] { return conv2d(dx, dw, db, c.stride, c.padding, c.dilation, c.groups); });
  ASSERT_TRUE(got.defined() && got.is_cuda());
  EXPECT_EQ(got.strides().hints(), want.strides().hints()) << "the output's layout";
  EXPECT_CLOSE(got.cpu(), want, tolerance(dt));
}

TEST(CudaConv, EveryCaseAndLayoutInFloat32) {
  for (const Case& c : cases())
    for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast, Layout::kStrided})
      for (bool with_bias : {true, false}) expect_like_cpu(c, kFloat32, layout, with_bias);
}

TEST(CudaConv, ReducedAndDoublePrecision) {
  for (DType dt : {kBFloat16, kFloat16, kFloat64})
    for (const Case& c : cases())
      for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast}) expect_like_cpu(c, dt, layout, true);
}

// A channels-last weight makes the output channels-last too (as in PyTorch), with a contiguous input.
TEST(CudaConv, ChannelsLastWeight) {
  Tensor x = random({2, 4, 6, 6}, kFloat32, 4), w = random({6, 2, 3, 3}, kFloat32, 5);
  Tensor wl = w.contiguous(MemoryFormat::kChannelsLast), b = random({6}, kFloat32, 6);
  Tensor want = conv2d(x, wl, b, {1}, {1}, {1}, 2);
  Tensor dx = cuda(x), dwl = cuda(w).contiguous(MemoryFormat::kChannelsLast), db = cuda(b);
  Tensor got = on_device([&] { return conv2d(dx, dwl, db, {1}, {1}, {1}, 2); });
  EXPECT_TRUE(got.is_contiguous(MemoryFormat::kChannelsLast));
  EXPECT_CLOSE(got.cpu(), want, 1e-5);
}

TEST(CudaConv, Conv1dUnbatchedAndSamePadding) {
  Tensor x = random({2, 4, 11}, kFloat32, 7), w = random({6, 2, 3}, kFloat32, 8), b = random({6}, kFloat32, 9);
  Tensor dx = cuda(x), dw = cuda(w), db = cuda(b);
  EXPECT_CLOSE(on_device([&] { return conv1d(dx, dw, db, {2}, {1}, {2}, 2); }).cpu(),
               conv1d(x, w, b, {2}, {1}, {2}, 2), 1e-5);
  EXPECT_CLOSE(on_device([&] { return conv1d(dx, dw, db, {1}, kSame, {2}, 2); }).cpu(),
               conv1d(x, w, b, {1}, kSame, {2}, 2), 1e-5);
  Tensor x3 = random({3, 5, 6}, kFloat32, 10), w3 = random({4, 3, 2, 3}, kFloat32, 11);
  Tensor dx3 = cuda(x3), dw3 = cuda(w3);
  // An unbatched input, and "same" with an even kernel (one more row and column of padding after than before).
  EXPECT_CLOSE(on_device([&] { return conv2d(dx3, dw3, {}, {1}, kSame); }).cpu(), conv2d(x3, w3, {}, {1}, kSame),
               1e-5);
  EXPECT_CLOSE(on_device([&] { return conv2d(dx3, dw3, {}, {1}, {1, 0}); }).cpu(), conv2d(x3, w3, {}, {1}, {1, 0}),
               1e-5);
}

// Sizes with nothing to compute: no images, no output channels; no input channels leaves the bias (or zeros).
TEST(CudaConv, EmptySizes) {
  struct Empty {
    std::vector<int64_t> x, w;
  };
  for (const Empty& e : {Empty{{0, 3, 5, 5}, {4, 3, 3, 3}}, Empty{{2, 3, 5, 5}, {0, 3, 3, 3}},
                         Empty{{2, 0, 5, 5}, {4, 0, 3, 3}}}) {
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(fmt::format("x {}, w {}, {}", fmt::join(e.x, "x"), fmt::join(e.w, "x"), with_bias));
      Tensor x = random(SymIntList(e.x), kFloat32, 12), w = random(SymIntList(e.w), kFloat32, 13);
      Tensor b = with_bias ? random({e.w[0]}, kFloat32, 14) : Tensor();
      Tensor want = conv2d(x, w, b, {1}, {1});
      Tensor dx = cuda(x), dw = cuda(w), db = with_bias ? cuda(b) : Tensor();
      Tensor got = on_device([&] { return conv2d(dx, dw, db, {1}, {1}); });
      EXPECT_EQ(got.sizes().hints(), want.sizes().hints());
      EXPECT_CLOSE(got.cpu(), want, 1e-6);
    }
  }
}

// The shape rule checks the arguments before any kernel runs: CUDA operands get the CPU's messages.
TEST(CudaConv, BadArgumentsRaiseTheCpuErrors) {
  Tensor x = random({1, 4, 5, 5}), w = random({2, 3, 3, 3}), small = random({1, 3, 2, 2});
  // The message's first line: the lines after it name the operands' devices and the caller's line.
  auto cpu_message = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      std::string what = e.what();
      return what.substr(0, what.find('\n'));
    }
    ADD_FAILURE() << "the CPU call did not throw";
    return std::string();
  };
  std::string channels = cpu_message([&] { conv2d(x, w); });
  EXPECT_ERROR(conv2d(cuda(x), cuda(w)), channels);
  std::string too_small = cpu_message([&] { conv2d(small, w); });
  EXPECT_ERROR(conv2d(cuda(small), cuda(w)), too_small);
  std::string groups = cpu_message([&] { conv2d(x, random({3, 2, 3, 3}), {}, {1}, {0}, {1}, 2); });
  EXPECT_ERROR(conv2d(cuda(x), cuda(random({3, 2, 3, 3})), {}, {1}, {0}, {1}, 2), groups);
  std::string dtype = cpu_message([&] { conv2d(x.to(kInt64), w.to(kInt64)); });
  EXPECT_ERROR(conv2d(cuda(x.to(kInt64)), cuda(w.to(kInt64))), dtype);
}

// The inductor runs a conv on CUDA as an extern, i.e. as the eager op: a compiled conv + bias + relu takes the
// CUDA kernel too (on the simulated device: the replayed calls after the first, which compiles).
TEST(CudaConv, CompiledConvBiasReluMatchesEager) {
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) { return relu(conv2d(x, w, b, {1}, {1})); };
  for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast}) {
    SCOPED_TRACE(layout_name(layout));
    Tensor x = laid_out(random({2, 4, 8, 8}, kFloat32, 15), layout), w = random({8, 4, 3, 3}, kFloat32, 16);
    Tensor b = random({8}, kFloat32, 17);
    Tensor dx = laid_out(cuda(x), layout), dw = cuda(w), db = cuda(b);
    auto compiled = compile(fn);
    Tensor first = compiled(dx, dw, db);
    Tensor got = on_device([&] { return compiled(dx, dw, db); });
    EXPECT_EQ(compiled.stats().compiles, 1);
    EXPECT_EQ(compiled.stats().eager_fallbacks, 0);
    EXPECT_CLOSE(first.cpu(), fn(x, w, b), 1e-5);
    EXPECT_CLOSE(got.cpu(), fn(x, w, b), 1e-5);
  }
}

// On a GPU with cuDNN every conv of the cases above runs through it (ops/cuda_dnn.h), in each dtype and layout.
TEST(CudaConv, AGpuRunsTheCasesThroughCudnn) {
  if (cuda::is_simulated() || !cuda::dnn_supported(kFloat32)) GTEST_SKIP() << "needs a GPU with cuDNN";
  for (DType dt : {kFloat32, kBFloat16})
    for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast}) {
      int64_t before = cuda::dnn_calls();
      for (const Case& c : cases()) expect_like_cpu(c, dt, layout, true);
      EXPECT_EQ(cuda::dnn_calls() - before, static_cast<int64_t>(cases().size()))
          << dtype_name(dt) << ", " << layout_name(layout);
    }
}

struct TransposeCase {
  const char* name;
  std::vector<int64_t> x, w;  // input [N, Cin, H, W], weight [Cin, Cout/groups, kh, kw]
  SymIntList stride, padding, output_padding;
  int64_t groups = 1;
  SymIntList dilation = {1};
};

// conv_transpose2d on CUDA (the input gradient of a conv in training): cuDNN's backward data on a GPU, the CPU
// kernel through the fallback where cuDNN is not there; both match the CPU.
TEST(CudaConv, ConvTranspose2dMatchesTheCpu) {
  const std::vector<TransposeCase> all = {
      {"3x3 stride 1 pad 1", {2, 4, 6, 5}, {4, 3, 3, 3}, {1}, {1}, {0}},
      {"stride 2 output padding 1", {2, 3, 5, 4}, {3, 4, 3, 3}, {2}, {1}, {1}},
      {"groups 2", {1, 4, 5, 5}, {4, 3, 3, 3}, {2, 1}, {0, 1}, {1, 0}, 2},
      {"dilation 2", {1, 2, 4, 4}, {2, 3, 3, 3}, {1}, {2}, {0}, 1, {2}},
      {"output padding past the stride, below the dilation", {1, 2, 4, 4}, {2, 2, 3, 3}, {1}, {0}, {1}, 1, {2}},
      {"1x1", {2, 6, 3, 3}, {6, 2, 1, 1}, {1}, {0}, {0}},
  };
  for (DType dt : {kFloat32, kBFloat16, kFloat64})
    for (const TransposeCase& c : all)
      for (bool channels_last : {false, true})
        for (bool with_bias : {true, false}) {
          SCOPED_TRACE(fmt::format("{}, {}, {}, {}", c.name, dtype_name(dt), channels_last ? "channels-last" : "contiguous",
                                   with_bias ? "bias" : "no bias"));
          Tensor x = random(SymIntList(c.x), dt, 21), w = random(SymIntList(c.w), dt, 22);
          if (channels_last) x = x.contiguous(MemoryFormat::kChannelsLast);
          Tensor b = with_bias ? random({c.w[1] * c.groups}, dt, 23) : Tensor();
          Tensor want = conv_transpose2d(x, w, b, c.stride, c.padding, c.output_padding, c.groups, c.dilation);
          Tensor dx = cuda(x), dw = cuda(w), db = with_bias ? cuda(b) : Tensor();
          if (channels_last) dx = dx.contiguous(MemoryFormat::kChannelsLast);
          int64_t before = cuda::dnn_calls();
          Tensor got = conv_transpose2d(dx, dw, db, c.stride, c.padding, c.output_padding, c.groups, c.dilation);
          ASSERT_TRUE(got.is_cuda());
          EXPECT_EQ(got.sizes().hints(), want.sizes().hints());
          EXPECT_EQ(got.strides().hints(), want.strides().hints()) << "the output's layout";
          EXPECT_CLOSE(got.cpu(), want, tolerance(dt));
          bool past_stride = std::string(c.name).find("past the stride") != std::string::npos;
          // cuDNN 9 has no float64 channels-last backward-data engine (an H100 found none): the fallback runs it.
          bool f64_nhwc = dt == kFloat64 && channels_last;
          if (!cuda::is_simulated() && cuda::dnn_supported(dt) && !past_stride && !f64_nhwc)
            EXPECT_EQ(cuda::dnn_calls(), before + 1) << "cuDNN did not run it";
        }
}

// conv2d_weight_grad on CUDA (a conv's weight gradient in training): cuDNN's backward filter on a GPU, the math
// with CUDA ops where cuDNN does not serve; both match the CPU.
TEST(CudaConv, WeightGradMatchesTheCpu) {
  struct Case {
    const char* name;
    std::vector<int64_t> x, w;
    SymIntList stride, padding, dilation;
    int64_t groups = 1;
  };
  const std::vector<Case> all = {
      {"3x3 pad 1", {2, 4, 6, 5}, {3, 4, 3, 3}, {1}, {1}, {1}},
      {"stride 2, dilation", {2, 3, 7, 6}, {4, 3, 3, 2}, {2, 1}, {1, 0}, {1, 2}},
      {"groups 2", {1, 4, 5, 5}, {6, 2, 3, 3}, {1}, {1}, {1}, 2},
      {"1x1", {2, 6, 3, 3}, {5, 6, 1, 1}, {1}, {0}, {1}},
  };
  for (DType dt : {kFloat32, kBFloat16, kFloat64})
    for (const Case& c : all)
      for (const char* layout : {"contiguous", "channels-last", "channels-last input, contiguous gradient"}) {
        SCOPED_TRACE(fmt::format("{}, {}, {}", c.name, dtype_name(dt), layout));
        Tensor x = random(SymIntList(c.x), dt, 31), w = random(SymIntList(c.w), dt, 32);
        Tensor y = conv2d(x, w, {}, c.stride, c.padding, c.dilation, c.groups);
        Tensor g = random(y.sizes(), dt, 33);
        if (std::string(layout) != "contiguous") x = x.contiguous(MemoryFormat::kChannelsLast);
        if (std::string(layout) == "channels-last") g = g.contiguous(MemoryFormat::kChannelsLast);
        Tensor want = conv2d_weight_grad(x, SymIntList(c.w), g, c.stride, c.padding, c.dilation, c.groups);
        int64_t before = cuda::dnn_calls();
        Tensor got = conv2d_weight_grad(cuda(x), SymIntList(c.w), cuda(g), c.stride, c.padding, c.dilation, c.groups);
        ASSERT_TRUE(got.is_cuda());
        EXPECT_EQ(got.sizes().hints(), want.sizes().hints());
        EXPECT_EQ(got.strides().hints(), want.strides().hints()) << "the output's layout";
        EXPECT_CLOSE(got.cpu(), want, dt == kBFloat16 ? 5e-2 : tolerance(dt));
        if (!cuda::is_simulated() && cuda::dnn_supported(dt) && dt != kFloat64)
          EXPECT_EQ(cuda::dnn_calls(), before + 1) << "cuDNN did not run it";
      }
}

}  // namespace
}  // namespace sinter
