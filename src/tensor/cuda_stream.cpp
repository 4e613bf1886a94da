// cuda::Stream and cuda::Event (sinter/cuda.h). A Stream is the device's default stream, on which sinter queues
// all its work (the null stream of the device's primary context); an Event wraps a driver event created on the
// first record. On the simulated device work is done when it returns: a stream is always idle and an event
// holds the host time it was recorded at.
#include <fmt/format.h>

#include <chrono>
#include <utility>

#include "sinter/cuda.h"
#include "sinter/error.h"
#include "tensor/cuda_driver.h"

namespace sinter::cuda {

namespace {

void check_simulated_device(int device) {
  if (device != 0) throw Error(fmt::format("cuda:{} does not exist: the simulated device is cuda:0", device));
}

// Whether a query's result says done; throws Error naming `call` for anything but done or not ready.
bool done(driver::CUresult r, const char* call) {
  if (r == driver::kNotReady) return false;
  driver::check(r, call);
  return true;
}

}  // namespace

Stream current_stream(int device) {
  if (is_simulated()) check_simulated_device(device);
  else driver::use_device(device);  // throws when the driver or the device is missing
  return Stream(device);
}

bool Stream::query() const {
  if (is_simulated()) return true;
  driver::use_device(device_);
  return done(driver::require().cuStreamQuery(nullptr), "cuStreamQuery");
}

void Stream::synchronize() const {
  if (is_simulated()) return;
  driver::use_device(device_);
  driver::check(driver::require().cuStreamSynchronize(nullptr), "cuStreamSynchronize");
}

struct Event::Impl {
  bool timing = false;
  int device = -1;                      // the device of the first record; -1 before it
  driver::CUevent event = nullptr;      // created on the first record (GPU)
  std::chrono::steady_clock::time_point host_time;  // when recorded (simulated device)
};

Event::Event(bool enable_timing) : impl_(std::make_unique<Impl>()) { impl_->timing = enable_timing; }

Event::~Event() {
  // Not checked: a destructor cannot throw, and at process exit the driver may already be shut down.
  if (impl_ && impl_->event != nullptr) driver::api()->cuEventDestroy(impl_->event);
}

Event::Event(Event&& other) noexcept = default;
Event& Event::operator=(Event&& other) noexcept {
  std::swap(impl_, other.impl_);
  return *this;
}

void Event::record() { record(current_stream()); }

void Event::record(const Stream& stream) {
  Impl& e = *impl_;
  if (e.device >= 0 && e.device != stream.device_index())
    throw Error(fmt::format("Event::record: the event was recorded on cuda:{} and cannot be recorded on a stream of "
                            "cuda:{}",
                            e.device, stream.device_index()));
  e.device = stream.device_index();
  if (is_simulated()) {
    e.host_time = std::chrono::steady_clock::now();
    return;
  }
  const driver::Api& a = driver::require();
  driver::use_device(e.device);
  if (e.event == nullptr)
    driver::check(a.cuEventCreate(&e.event, e.timing ? driver::kEventDefault : driver::kEventDisableTiming),
                  "cuEventCreate");
  driver::check(a.cuEventRecord(e.event, nullptr), "cuEventRecord");
}

bool Event::query() const {
  if (impl_->device < 0 || is_simulated()) return true;
  return done(driver::require().cuEventQuery(impl_->event), "cuEventQuery");
}

void Event::synchronize() const {
  if (impl_->device < 0 || is_simulated()) return;
  driver::check(driver::require().cuEventSynchronize(impl_->event), "cuEventSynchronize");
}

float Event::elapsed_time(const Event& end) const {
  const Impl &a = *impl_, &b = *end.impl_;
  if (!a.timing || !b.timing)
    throw Error("Event::elapsed_time: both events must be created with enable_timing = true");
  if (a.device < 0 || b.device < 0)
    throw Error("Event::elapsed_time: both events must be recorded before the time between them is asked for");
  if (is_simulated())
    return std::chrono::duration<float, std::milli>(b.host_time - a.host_time).count();
  float ms = 0;
  driver::check(driver::require().cuEventElapsedTime(&ms, a.event, b.event), "cuEventElapsedTime");
  return ms;
}

}  // namespace sinter::cuda
