// Helpers for the timing model's tests: assemble hand-written kernels, make parameters,
// run the functional model for comparison, and check a profile's shape.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "isa/isa.h"
#include "sim/functional/functional_model.h"
#include "sim/timing/timed_chip.h"

namespace podsim::sim::timing::testing {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline isa::Executable testdata_kernel(const std::string& name) {
  std::string path = std::string(PODSIM_SOURCE_DIR) + "/tests/isa/testdata/" + name;
  return isa::assemble(read_text(path), path);
}

// A program on tiny:4x1 in which every chip sends 8 KiB (VMEM to VMEM) to the chip `ahead`
// places on in device order and waits until its own has gone and another has landed.
inline isa::Executable ring_shift(int ahead) {
  return isa::assemble(R"(.pod "tiny:4x1"
.region a vmem[0] 0 8192
.region b vmem[0] 8192 8192
.descriptor d0 src=a dst=b elem=4 sizes=[2048] src_strides=[4] dst_strides=[4]
.program core 0
  sdev s1, 0
  sdev s2, 5
  saddi s4, s1, )" + std::to_string(ahead) + R"(
  srem s4, s4, s2
  dma.remote d0, s0, s0, s4, q1, q2
  sem.wait q1, 1
  sem.wait q2, 1
  halt
)");
}

inline int64_t binding_bytes(const isa::Binding& b) {
  int64_t n = isa::dtype_bytes(b.dtype);
  for (int64_t d : b.dims) n *= d;
  return n;
}

// Parameters whose elements are small finite values of their dtype (f32: k/8 for k in
// [-8, 8]; other types: raw bytes of small integers).
inline std::vector<std::vector<uint8_t>> small_parameters(const isa::Executable& exe,
                                                          uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint8_t>> out;
  for (const isa::Binding& b : exe.parameters) {
    std::vector<uint8_t> bytes(static_cast<size_t>(binding_bytes(b)), 0);
    int eb = isa::dtype_bytes(b.dtype);
    for (size_t i = 0; i + static_cast<size_t>(eb) <= bytes.size(); i += static_cast<size_t>(eb)) {
      int k = std::uniform_int_distribution<int>(-8, 8)(rng);
      if (b.dtype == isa::DType::kF32) {
        float f = static_cast<float>(k) / 8.0f;
        std::memcpy(&bytes[i], &f, 4);
      } else if (b.dtype == isa::DType::kBF16) {
        float f = static_cast<float>(k) / 8.0f;
        uint32_t u;
        std::memcpy(&u, &f, 4);
        uint16_t h = static_cast<uint16_t>(u >> 16);  // k/8 is exact in bf16
        std::memcpy(&bytes[i], &h, 2);
      } else {
        bytes[i] = static_cast<uint8_t>(k & 0x7);
      }
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

// Outputs of a plain functional run.
inline std::vector<std::vector<uint8_t>> functional_outputs(
    const isa::Executable& exe, const std::vector<std::vector<uint8_t>>& params) {
  FunctionalModel model(exe);
  for (size_t k = 0; k < params.size(); ++k) model.set_parameter(static_cast<int>(k), params[k]);
  model.run_to_completion(int64_t{1} << 32);
  std::vector<std::vector<uint8_t>> out;
  for (size_t k = 0; k < exe.outputs.size(); ++k)
    out.push_back(model.read_output(static_cast<int>(k)));
  return out;
}

// Every track's spans sorted by start and pairwise disjoint or nested; inside the run.
inline ::testing::AssertionResult well_formed(const traces::Profile& p) {
  for (const traces::ChipProfile& c : p.chips)
    for (const traces::Track& t : c.tracks) {
      std::vector<const traces::Span*> open;
      for (size_t i = 0; i < t.spans.size(); ++i) {
        const traces::Span& s = t.spans[i];
        if (s.end <= s.start || s.end > c.total_cycles)
          return ::testing::AssertionFailure()
                 << t.name << " span " << i << " [" << s.start << ", " << s.end
                 << ") is empty or past the run's " << c.total_cycles << " cycles";
        if (i > 0 && s.start < t.spans[i - 1].start)
          return ::testing::AssertionFailure() << t.name << " span " << i << " is out of order";
        while (!open.empty() && open.back()->end <= s.start) open.pop_back();
        if (!open.empty() && s.end > open.back()->end)
          return ::testing::AssertionFailure()
                 << t.name << " span " << i << " [" << s.start << ", " << s.end << ") overlaps ["
                 << open.back()->start << ", " << open.back()->end << ") partially";
        open.push_back(&s);
      }
    }
  return ::testing::AssertionSuccess();
}

inline const traces::Track* find_track(const traces::Profile& p, const std::string& name) {
  for (const traces::Track& t : p.chips.at(0).tracks)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace podsim::sim::timing::testing
