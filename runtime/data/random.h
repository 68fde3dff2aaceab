// The random numbers of the data folder (shuffling, synthetic datasets): SplitMix64 with
// explicit conversions, so that a seed gives the same data on every platform and
// standard library (std::*_distribution differ between libraries). Not a public header.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace podsim::data {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound > 0, without modulo bias (rejection).
  uint64_t below(uint64_t bound) {
    uint64_t limit = ~uint64_t{0} - (~uint64_t{0} % bound);
    uint64_t x;
    do x = next();
    while (x >= limit);
    return x % bound;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller; one value per call).
  double normal() {
    double u1 = 1.0 - uniform();  // (0, 1]
    double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace podsim::data
