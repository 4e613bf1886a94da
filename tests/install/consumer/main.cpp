// A separate project built against an installed sinter: checks that headers, library and the CMake package work.
#include <sinter/sinter.h>

#include <cstdio>

int main() {
  using namespace sinter;
  Tensor x = arange(6, TensorOptions{.dtype = kFloat32}).view({2, 3});
  Tensor y = (x * 2.0).sum();
  if (y.item<float>() != 30.0f) {
    std::printf("install test: wrong result %f\n", y.item<float>());
    return 1;
  }
  std::printf("install test: find_package(sinter) works (sum = %.1f)\n", y.item<float>());
  return 0;
}
