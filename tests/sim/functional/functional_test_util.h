// Helpers for the functional model's tests: kernels from assembler text, and typed views
// of the bytes that go in and out.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "isa/isa.h"
#include "sim/functional/functional_model.h"

namespace podsim::sim::testing {

// The tiny chip (8x8 registers and MXU, 16 vector registers, 1 MiB VMEM) with `cores`
// TensorCores, as the assembler's .chip_toml block.
inline std::string tiny_chip(int cores = 1) {
  if (cores == 1) return ".chip tiny\n";
  return ".chip_toml \"tiny" + std::to_string(cores) +
         "\" \"tiny with more cores\"\nbase = \"tiny\"\ntensor_cores = " + std::to_string(cores) +
         "\n.end\n";
}

inline isa::Executable assemble(std::string_view text) { return isa::assemble(text, "test"); }

template <typename T>
std::vector<uint8_t> to_bytes(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> from_bytes(const std::vector<uint8_t>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

inline float bits_to_float(uint32_t bits) { return std::bit_cast<float>(bits); }
inline uint32_t float_to_bits(float f) { return std::bit_cast<uint32_t>(f); }

// Register v of core as floats / raw lanes.
inline std::vector<uint32_t> lanes_of(FunctionalModel& model, int core, int v) {
  int64_t n = model.state().lanes_per_register();
  const uint32_t* p = model.state().vreg(core, v);
  return std::vector<uint32_t>(p, p + n);
}

inline std::vector<float> floats_of(FunctionalModel& model, int core, int v) {
  std::vector<float> out;
  for (uint32_t lane : lanes_of(model, core, v)) out.push_back(bits_to_float(lane));
  return out;
}

}  // namespace podsim::sim::testing
