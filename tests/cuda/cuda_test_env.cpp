// Every CUDA test runs in CI: where this machine has no usable GPU, the test binary makes kCUDA the simulated
// device (SINTER_CUDA_SIM=1) before anything reads the setting; with a GPU the same tests run on it. Setting
// SINTER_CUDA_SIM yourself wins either way. Where the toolkit is, NVRTC also compiles every simulated kernel.
#include <cstdlib>

#include "tensor/cuda_driver.h"

namespace {

const bool kSimulatedWithoutGpu = [] {
  if (std::getenv("SINTER_CUDA_SIM") == nullptr && sinter::cuda::driver::api() == nullptr)
    setenv("SINTER_CUDA_SIM", "1", 0);
#ifdef SINTER_CUDA_TOOLKIT
  // With the toolkit, every kernel the simulated tests generate is also compiled by NVRTC for sm_90.
  setenv("SINTER_CUDA_SIM_NVRTC", "1", 0);
#endif
  return true;
}();

}  // namespace
