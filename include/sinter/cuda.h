// sinter::cuda: whether this process can use an NVIDIA GPU (or the simulated one), and what it is (torch.cuda's queries). The CUDA driver
// (libcuda.so.1) is loaded at run time on first use, so one libsinter serves machines with and without a GPU:
// without a driver or a device, is_available() is false and device_count() 0, and calls that need a device throw
// sinter::Error saying why (the driver's own error name and text when it answered).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace sinter::cuda {

bool is_available();  // the driver loads, initialises, and reports at least one device
int device_count();   // 0 when the driver is missing or reports none
// Why the GPU is unusable ("libcuda.so.1 not found: ...", "cuInit: CUDA_ERROR_NO_DEVICE ..."), "" when usable.
std::string unavailable_reason();

struct DeviceProperties {
  std::string name;            // "NVIDIA H200"
  int major = 0, minor = 0;    // compute capability (9.0 for sm_90)
  int multiprocessors = 0;
  int64_t total_memory = 0;    // bytes
  int warp_size = 0;
  int max_shared_memory_per_block = 0;  // bytes, with the opt-in carve-out
  int l2_cache_size = 0;                // bytes
};
DeviceProperties get_device_properties(int device = 0);  // throws Error when there is no such device
// Waits for all work on `device` (its primary context) to finish.
void synchronize(int device = 0);

// The simulated device: with SINTER_CUDA_SIM=1 (read once per process) kCUDA is a CPU-backed model of one sm_90
// GPU. Device memory is host memory, copies are memcpy, and every CUDA kernel sinter generates is compiled from
// the same source by the host compiler and run with every thread of a block on the CPU. It is for testing and
// debugging without a GPU: it does not model timing, tensor-core instructions or races between threads.
bool is_simulated();

// The caching device allocator (torch.cuda's memory queries). Freed blocks stay reserved for reuse.
struct MemoryStats {
  int64_t allocated = 0;  // bytes in live tensors (rounded to the allocator's size classes)
  int64_t reserved = 0;   // allocated plus cached free blocks
  int64_t peak = 0;       // the most `allocated` has been since the last reset_peak_memory_stats
};
MemoryStats memory_stats(int device = 0);
int64_t memory_allocated(int device = 0);
int64_t memory_reserved(int device = 0);
int64_t max_memory_allocated(int device = 0);
void reset_peak_memory_stats(int device = 0);
void empty_cache();  // returns every cached free block of every device to the driver

// Pinned (page-locked) host memory, behind Tensor::pin_memory() and TensorOptions::pinned_memory(true): a caching
// allocator over cuMemHostAlloc, counted as the device allocator is (torch.cuda.host_memory_stats). A freed block
// that an asynchronous copy still uses is reused only once the copy has completed. On the simulated device it is
// ordinary host memory marked pinned; without a CUDA device, pinning throws Error.
MemoryStats host_memory_stats();
void reset_peak_host_memory_stats();
void host_empty_cache();  // returns the cached free pinned blocks to the driver

// Streams. sinter queues all of a device's work (generated kernels, cuBLAS calls, copies and fills) on one stream,
// the device's default stream, so work runs in the order it is issued. Stream names that stream: current_stream
// is the only way to get one, and there are no others to create or switch to. Synchronise with it (or with an
// Event) before reading the destination of a non_blocking copy to the host.
class Stream {
 public:
  int device_index() const { return device_; }
  bool query() const;        // whether all work queued on it has completed
  void synchronize() const;  // waits until it has
  friend bool operator==(const Stream&, const Stream&) = default;

 private:
  friend Stream current_stream(int device);
  explicit Stream(int device) : device_(device) {}
  int device_ = 0;
};
Stream current_stream(int device = 0);  // throws Error when cuda:<device> cannot be used

// A CUDA event, as torch.cuda.Event: record() marks a point in a stream's work; query() and synchronize() ask
// whether it has been reached and wait until it has; elapsed_time(end) is the time in milliseconds from this
// event to `end`, both recorded with timing enabled (enable_timing, off by default as in PyTorch) and both
// reached (synchronize `end` first). An event not yet recorded counts as reached. The driver's event is created
// on the first record, on the stream's device. On the simulated device, whose work is done when it returns,
// record() reads the host's clock.
class Event {
 public:
  explicit Event(bool enable_timing = false);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record();  // on current_stream()
  void record(const Stream& stream);
  bool query() const;
  void synchronize() const;
  float elapsed_time(const Event& end) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// float32 matrix products on a GPU are computed in float32 unless TF32 is allowed (torch's
// backends.cuda.matmul.allow_tf32; off by default). One setting for the process.
void set_matmul_allow_tf32(bool allow);
bool matmul_allow_tf32();

}  // namespace sinter::cuda
