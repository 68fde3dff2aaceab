// The hyperbolic tangent every podsim target computes, so that the reference evaluator,
// the CPU target and the simulated vector unit agree bit for bit. f32 (and the 16-bit
// floats, computed in f32) follows XLA's CPU and GPU backends, which use Eigen's fast
// tanh: x itself where |x| < 0.0004, else an odd degree-13 over even degree-6 rational
// function of x clamped to +-7.90531110763549805; within 4 ulp of the correctly rounded
// value. Unlike Eigen, |x| >= 9.1 (where the correctly rounded tanh is +-1) gives +-1
// exactly, so that 1 + tanh(x) is 0 there (GELU's tail), as in PyTorch. It is branch-free, so
// loops over it vectorize, and it is written with std::fma, which is exactly rounded,
// so no compiler's contraction choice (FMA or not, per target clone) changes a bit.
// f64 keeps the C library's tanh.
#pragma once

#include <algorithm>
#include <cmath>

namespace podsim {

inline float tanh_op(float x) {
  constexpr float kClamp = 7.90531110763549805f;
  const float c = std::min(std::max(x, -kClamp), kClamp);  // NaN stays NaN
  const float c2 = c * c;
  float p = -2.76076847742355e-16f;
  p = std::fma(p, c2, 2.00018790482477e-13f);
  p = std::fma(p, c2, -8.60467152213735e-11f);
  p = std::fma(p, c2, 5.12229709037114e-08f);
  p = std::fma(p, c2, 1.48572235717979e-05f);
  p = std::fma(p, c2, 6.37261928875436e-04f);
  p = std::fma(p, c2, 4.89352455891786e-03f);
  float q = 1.19825839466702e-06f;
  q = std::fma(q, c2, 1.18534705686654e-04f);
  q = std::fma(q, c2, 2.26843463243900e-03f);
  q = std::fma(q, c2, 4.89352518554385e-03f);
  const float r = (c * p) / q;
  const float a = std::fabs(x);
  return a < 0.0004f ? x : a >= 9.1f ? std::copysign(1.0f, x) : r;
}

inline double tanh_op(double x) { return std::tanh(x); }

}  // namespace podsim
