// Pinned host memory and non-blocking copies between the host and a CUDA device, with the stream and events of
// sinter/cuda.h: pin_memory and the pinned factories, round trips from pinned and pageable memory in several
// dtypes and layouts with and without non_blocking, kernels queued after a non-blocking copy (they must see its
// values), the pinned allocator's counts and its holding back of blocks a queued copy still uses, events' times,
// and the errors. On the simulated device copies are done when they return; on a GPU they are not, so the tests
// synchronise wherever PyTorch requires it and use sizes whose copies take a while.
#include <gtest/gtest.h>

#include <sstream>

#include "sinter/cuda.h"
#include "sinter/ops.h"
#include "sinter/random.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

const TensorOptions kPinned = TensorOptions(kFloat32).pinned_memory(true);

// Elements in a tensor whose copy takes long enough on a GPU for a missing wait to show (small when simulated).
int64_t large() { return cuda::is_simulated() ? int64_t{1} << 12 : int64_t{1} << 24; }

TEST(CudaPinned, PinMemoryCopiesIntoPinnedMemory) {
  Tensor x = random({4, 6}, kFloat32, 1);
  EXPECT_FALSE(x.is_pinned());
  Tensor p = x.pin_memory();
  EXPECT_TRUE(p.is_pinned());
  EXPECT_TRUE(p.is_cpu());
  EXPECT_FALSE(p.is_same(x));
  EXPECT_TENSOR_EQ(p, x);
  EXPECT_TRUE(p.pin_memory().is_same(p));  // pinned already
  // Strides are kept; broadcast dims become dense.
  Tensor t = x.t().pin_memory();
  EXPECT_EQ(t.strides().hints(), x.t().strides().hints());
  EXPECT_TENSOR_EQ(t, x.t());
  Tensor e = x.select(0, 1).expand({3, 6}).pin_memory();
  EXPECT_TRUE(e.is_contiguous());
  EXPECT_TENSOR_EQ(e, x.select(0, 1).expand({3, 6}));
  // Views of pinned memory are pinned; copies are not, as in PyTorch.
  EXPECT_TRUE(p.narrow(1, 2, 3).is_pinned());
  EXPECT_FALSE(p.clone().is_pinned());
  EXPECT_FALSE(p.to(kCUDA).is_pinned());
  EXPECT_TRUE(p.to(kCPU).is_same(p));
}

TEST(CudaPinned, FactoriesHonourPinnedMemory) {
  EXPECT_TRUE(kPinned.pinned_memory());
  EXPECT_FALSE(TensorOptions().pinned_memory());
  std::ostringstream os;
  os << kPinned;
  EXPECT_NE(os.str().find("pinned_memory=true"), std::string::npos) << os.str();
  Tensor e = empty({3, 5}, kPinned);
  EXPECT_TRUE(e.is_pinned());
  EXPECT_EQ(e.sizes().hints(), (std::vector<int64_t>{3, 5}));
  Tensor z = zeros({3, 5}, kPinned.dtype(kInt32));
  EXPECT_TRUE(z.is_pinned());
  EXPECT_EQ(z.dtype(), kInt32);
  EXPECT_TENSOR_EQ(z, zeros({3, 5}, kInt32));
  EXPECT_TENSOR_EQ(ones({4}, kPinned), ones({4}));
  EXPECT_TENSOR_EQ(full({2, 2}, 7, kPinned), full({2, 2}, 7.0));
  EXPECT_TENSOR_EQ(arange(0, 10, 1, kPinned.dtype(kInt64)), arange(0, 10, 1, TensorOptions(kInt64)));
  EXPECT_TRUE(arange(0, 10, 1, kPinned).is_pinned());
  Tensor channels_last = empty({2, 3, 4, 5}, kPinned, kChannelsLast);
  EXPECT_TRUE(channels_last.is_pinned());
  EXPECT_TRUE(channels_last.is_contiguous(kChannelsLast));
  manual_seed(3);
  Tensor r = randn({16}, kPinned);
  manual_seed(3);
  EXPECT_TRUE(r.is_pinned());
  EXPECT_TENSOR_EQ(r, randn({16}));
  Tensor data = tensor({1, 2, 3}, TensorOptions().pinned_memory(true));
  EXPECT_TRUE(data.is_pinned());
  EXPECT_EQ(data.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(empty({3}, kPinned.requires_grad(true)).requires_grad());
}

TEST(CudaPinned, RoundTripsFromPinnedAndPageableMemory) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32, kUInt8, kBool}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random({33, 17}, dt, 1);
    for (bool pinned : {false, true}) {
      for (bool non_blocking : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "pinned " << pinned << ", non_blocking " << non_blocking);
        Tensor src = pinned ? x.pin_memory() : x;
        Tensor d = src.to(kCUDA, non_blocking);
        EXPECT_TRUE(d.is_cuda());
        EXPECT_EQ(d.dtype(), dt);
        Tensor back = d.to(kCPU, non_blocking);
        EXPECT_EQ(back.is_pinned(), non_blocking);  // a non-blocking copy to the host lands in pinned memory
        cuda::current_stream().synchronize();      // before reading what a non-blocking copy wrote
        EXPECT_TENSOR_EQ(back, x);
        // Non-contiguous sources: transposed (same layout on the device), sliced (a span with gaps), and a
        // conversion on the way, each from pinned memory when `pinned`.
        Tensor t = (pinned ? x.t().pin_memory() : x.t()).to(kCUDA, non_blocking);
        Tensor sliced = (pinned ? x.narrow(1, 3, 9).pin_memory() : x.narrow(1, 3, 9)).to(kCUDA, non_blocking);
        Tensor converted = src.to(kCUDA, kFloat64, non_blocking);
        Tensor t_back = t.to(kCPU, non_blocking), sliced_back = sliced.to(kCPU, non_blocking);
        Tensor converted_back = converted.to(kCPU, kFloat32, non_blocking);
        cuda::current_stream().synchronize();
        EXPECT_TENSOR_EQ(t_back, x.t());
        EXPECT_EQ(t_back.strides().hints(), x.t().strides().hints());
        EXPECT_TENSOR_EQ(sliced_back, x.narrow(1, 3, 9));
        EXPECT_TENSOR_EQ(converted_back, x.to(kFloat64).to(kFloat32));
      }
    }
  }
}

TEST(CudaPinned, CopyIntoExistingTensorsBothWays) {
  Tensor x = random({8, 12}, kFloat32, 2);
  Tensor px = x.pin_memory();
  for (bool non_blocking : {false, true}) {
    SCOPED_TRACE(non_blocking);
    // Into a device view that does not cover its span: the elements between stay.
    Tensor d = full({8, 12}, -1.0, TensorOptions(kFloat32).device(kCUDA));
    d.narrow(1, 2, 5).copy_(px.narrow(1, 0, 5), non_blocking);
    Tensor want = full({8, 12}, -1.0);
    want.narrow(1, 2, 5).copy_(x.narrow(1, 0, 5));
    // Broadcast and converted sources.
    Tensor row = zeros({8, 12}, TensorOptions(kFloat64).device(kCUDA));
    row.copy_(px.select(0, 3), non_blocking);
    // Back into pinned destinations: dense (queued), transposed and converting (synchronous).
    Tensor host = empty({8, 12}, kPinned), host_t = empty({12, 8}, kPinned);
    Tensor host_f64 = empty({8, 12}, kPinned.dtype(kFloat64));
    host.copy_(d, non_blocking);
    host_t.t().copy_(d, non_blocking);
    host_f64.copy_(d, non_blocking);
    Tensor row_back = row.to(kCPU, non_blocking);
    cuda::current_stream().synchronize();
    EXPECT_TENSOR_EQ(host, want);
    EXPECT_TENSOR_EQ(host_t, want.t());
    EXPECT_TENSOR_EQ(host_f64, want.to(kFloat64));
    EXPECT_TENSOR_EQ(row_back, x.select(0, 3).to(kFloat64).expand({8, 12}));
  }
}

TEST(CudaPinned, KernelsAfterANonBlockingCopySeeItsValues) {
  int64_t n = large();
  auto f = compile([](const Tensor& a, const Tensor& b) { return a * 2 + b; });
  for (DType dt : {kFloat32, kInt64}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random({n}, dt, 3), y = random({n}, dt, 4);
    Tensor px = x.pin_memory(), py = y.pin_memory();
    // Generated kernels, queued behind the copies on the same stream.
    Tensor out = f(px.to(kCUDA, true), py.to(kCUDA, true)).to(kCPU, true);
    EXPECT_TRUE(out.is_pinned());
    cuda::current_stream().synchronize();
    EXPECT_TENSOR_EQ(out, x * 2 + y);
    // Eager ops in place after copies into existing device tensors.
    Tensor d = empty({n}, TensorOptions(dt).device(kCUDA));
    d.copy_(px, true);
    d.add_(py.to(kCUDA, true));
    Tensor back = empty({n}, kPinned.dtype(dt));
    back.copy_(d, true);
    cuda::synchronize();
    EXPECT_TENSOR_EQ(back, x + y);
  }
}

TEST(CudaPinned, AFreedBlockWaitsForItsCopies) {
  int64_t n = large();
  // A pinned source freed while its copy to the device may still read it: the next block of its size must not
  // be it until the copy is done, or the device would see the new values.
  Tensor d;
  {
    Tensor p = full({n}, 1.0, kPinned);
    d = p.to(kCUDA, true);
  }
  Tensor q = full({n}, 2.0, kPinned);
  // A pinned destination freed before its copy from the device has landed: reusing it early would let the copy
  // overwrite the next tensor's values.
  Tensor threes = full({n}, 3.0, TensorOptions(kFloat32).device(kCUDA));
  threes.to(kCPU, true);
  Tensor r = empty({n}, kPinned);
  r.fill_(5.0);
  cuda::current_stream().synchronize();
  EXPECT_TENSOR_EQ(d.cpu(), ones({n}));
  EXPECT_TENSOR_EQ(q, full({n}, 2.0));
  EXPECT_TENSOR_EQ(r, full({n}, 5.0));
}

TEST(CudaPinned, PinnedBytesAreCountedAndCached) {
  cuda::current_stream().synchronize();
  cuda::host_empty_cache();
  cuda::MemoryStats before = cuda::host_memory_stats();
  EXPECT_EQ(before.reserved, before.allocated);
  {
    Tensor p = empty({1000, 1000}, kPinned);
    EXPECT_GE(cuda::host_memory_stats().allocated - before.allocated, 4000000);
    EXPECT_GE(cuda::host_memory_stats().peak, cuda::host_memory_stats().allocated);
  }
  cuda::MemoryStats freed = cuda::host_memory_stats();
  EXPECT_EQ(freed.allocated, before.allocated);
  EXPECT_GE(freed.reserved - before.reserved, 4000000);  // the block stays cached for the next pinned tensor
  {
    Tensor again = empty({1000, 1000}, kPinned);
    EXPECT_EQ(cuda::host_memory_stats().reserved, freed.reserved);  // served from the cache
  }
  cuda::host_empty_cache();
  EXPECT_EQ(cuda::host_memory_stats().reserved, cuda::host_memory_stats().allocated);
  cuda::reset_peak_host_memory_stats();
  EXPECT_EQ(cuda::host_memory_stats().peak, cuda::host_memory_stats().allocated);
}

TEST(CudaPinned, EventsTimeAndOrderTheStream) {
  cuda::Stream stream = cuda::current_stream();
  EXPECT_EQ(stream.device_index(), 0);
  EXPECT_TRUE(stream == cuda::current_stream(0));
  cuda::Event start(/*enable_timing=*/true), end(true), later(true);
  EXPECT_TRUE(start.query());  // not recorded yet: nothing to wait for
  start.synchronize();
  Tensor x = random({large()}, kFloat32, 5);
  start.record();
  Tensor d = x.pin_memory().to(kCUDA, true);
  Tensor back = (d * 3).to(kCPU, true);
  end.record(stream);
  end.synchronize();
  EXPECT_TRUE(end.query());
  EXPECT_TRUE(start.query());
  EXPECT_TENSOR_EQ(back, x * 3);  // the event was recorded after the copy, and has been reached
  later.record();
  stream.synchronize();
  EXPECT_TRUE(stream.query());
  float ms = start.elapsed_time(end);
  EXPECT_GE(ms, 0);
  EXPECT_GE(start.elapsed_time(later), ms);
  EXPECT_GE(end.elapsed_time(later), 0);
  // Recorded again, an event marks the new point.
  start.record();
  start.synchronize();
  EXPECT_GE(later.elapsed_time(start), 0);
  cuda::Event moved = std::move(start);
  EXPECT_GE(later.elapsed_time(moved), 0);
}

TEST(CudaPinned, ToKeepsWhatOptionsLeaveUnsetAndCopiesOnRequest) {
  Tensor x = random({5}, kInt32, 6);
  Tensor d = x.to(TensorOptions(kCUDA), true);
  EXPECT_EQ(d.dtype(), kInt32);
  Tensor f = d.to(TensorOptions(kFloat64), true);
  EXPECT_TRUE(f.is_cuda());
  EXPECT_EQ(f.dtype(), kFloat64);
  EXPECT_TRUE(x.to(kCPU, false).is_same(x));
  Tensor copied = x.to(kCPU, false, /*copy=*/true);
  EXPECT_FALSE(copied.is_same(x));
  EXPECT_TENSOR_EQ(copied, x);
  EXPECT_TRUE(d.to(d, true).is_same(d));
  // pinned_memory in the options pins a copy to the host (a copy that is made: to() may return self).
  Tensor pinned = f.to(TensorOptions(kCPU).pinned_memory(true));
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_TRUE(x.to(TensorOptions(kFloat64).pinned_memory(true)).is_pinned());
  cuda::synchronize();
  EXPECT_TENSOR_EQ(f.cpu(), x.to(kFloat64));
  EXPECT_TENSOR_EQ(pinned, x.to(kFloat64));
}

TEST(CudaPinned, InsideCompiledFunctions) {
  Tensor x = random({4}, kFloat32, 1);
  // A pinned factory is traced, and its result pinned at a graph break.
  auto f = compile([](const Tensor& a) { return a + ones({4}, kPinned); });
  EXPECT_TENSOR_EQ(f(x), x + 1);
  // Non-blocking copies are traced as such; a traced copy to the host has no pinned memory to land in.
  auto to_device = compile([](const Tensor& a) { return a.to(kCUDA, true) * 2; });
  auto to_host = compile([](const Tensor& a) { return (a * 2).to(kCPU, true); });
  Tensor d = to_device(x.pin_memory());
  Tensor h = to_host(x.to(kCUDA));
  cuda::synchronize();
  EXPECT_TRUE(d.is_cuda());
  EXPECT_TENSOR_EQ(d.cpu(), x * 2);
  EXPECT_TRUE(h.is_cpu());
  EXPECT_TENSOR_EQ(h, x * 2);
}

TEST(CudaPinned, Errors) {
  EXPECT_ERROR(random({3}).to(kCUDA).pin_memory(), "only dense CPU tensors can be pinned", "cuda:0");
  EXPECT_ERROR(Tensor().pin_memory(), "undefined");
  EXPECT_ERROR(empty({3}, kPinned.device(kCUDA)), "only dense CPU tensors can be pinned", "cuda:0");
  EXPECT_ERROR(zeros({3}, kPinned.device(kCUDA)), "only dense CPU tensors can be pinned");
  EXPECT_ERROR(random({3}).to(kPinned.device(kCUDA)), "only dense CPU tensors can be pinned");
  cuda::Event untimed, timed(true), never(true);
  untimed.record();
  timed.record();
  timed.synchronize();
  EXPECT_ERROR(untimed.elapsed_time(timed), "enable_timing");
  EXPECT_ERROR(timed.elapsed_time(never), "recorded");
  EXPECT_ERROR(cuda::current_stream(64), "cuda:64");
}

}  // namespace
}  // namespace sinter
