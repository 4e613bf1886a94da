// The special functions of the pointwise family that have no std:: version (erfinv, digamma) and a thread-safe
// lgamma. Computed in double; float callers round once.
#include "ops/pointwise_math.h"

#include <math.h>  // lgamma_r (glibc)

namespace sinter::pmath {

// Giles' single-precision approximation ("Approximating the erfinv function", 2010) as the start, then Newton
// steps against std::erf (or std::erfc in the tails, where 1 - |y| is exact and erf has no digits left) until they
// stop moving: two from the 1e-7 start in float's range, a few more in the far tails that only double reaches.
double erfinv(double y) {
  if (!(y == y)) return y;
  double a = std::fabs(y);
  if (a > 1) return std::numeric_limits<double>::quiet_NaN();
  if (a == 1) return std::copysign(std::numeric_limits<double>::infinity(), y);
  double w = -std::log((1.0 - a) * (1.0 + a)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double z = p * a;
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int i = 0; i < 8; ++i) {
    double slope = two_over_sqrt_pi * std::exp(-z * z);
    double residual = a < 0.5 ? std::erf(z) - a : (1.0 - a) - std::erfc(z);
    if (slope == 0) break;
    double step = residual / slope;
    z -= step;
    if (std::fabs(step) <= 1e-16 * z) break;
  }
  return std::copysign(z, y);
}

// PyTorch's calc_digamma: reflection for negative x, recurrence up to x >= 10, then the asymptotic series.
double digamma(double x) {
  const double kPsi10 = 2.25175258906672110764;
  const double kPi = 3.14159265358979323846;
  if (x == 0) return std::copysign(std::numeric_limits<double>::infinity(), -x);
  if (x < 0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
    double q, r = std::modf(x, &q);
    return digamma(1 - x) - kPi / std::tan(kPi * r);
  }
  if (!(x == x)) return x;
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return result + kPsi10;
  static const double kA[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                              -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                              8.33333333333333333333E-2};
  double y = 0;
  if (x < 1.0e17) {
    double z = 1.0 / (x * x), poly = 0;
    for (double c : kA) poly = poly * z + c;
    y = z * poly;
  }
  return result + std::log(x) - (0.5 / x) - y;
}

double lgamma(double x) {
  int sign;
  return ::lgamma_r(x, &sign);
}

}  // namespace sinter::pmath
