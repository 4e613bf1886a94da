// A separate project built against an installed sinter: checks that headers, library and the CMake package work.
#include <sinter/sinter.h>

#include <cstdio>

int main() {
  using namespace sinter;
  Tensor x = arange(6, TensorOptions(kFloat32)).view({2, 3});
  Tensor y = (x * 2.0).sum();
  if (y.item<float>() != 30.0f) {
    std::printf("install test: wrong result %f\n", y.item<float>());
    return 1;
  }
  // compile() comes with the umbrella header too.
  auto f = compile([](const Tensor& t) { return (t * 2.0).sum(); });
  if (f(x).item<float>() != 30.0f || f(x).item<float>() != 30.0f || f.stats().compiles != 1) {
    std::printf("install test: compiled function gave a wrong result\n");
    return 1;
  }
  std::printf("install test: find_package(sinter) works (sum = %.1f, compiled too)\n", y.item<float>());
  return 0;
}
