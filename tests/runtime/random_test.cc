// rand's bit stream: Threefry-2x32-20 written as 32-bit integer ops in the runtime, so it
// must equal the reference evaluator's rng-bit-generator (XLA's rng_three_fry, itself
// checked against Random123's known answers in evaluator_test) for the same key and
// counter: a draw of n values takes the first words of ceil(n / 2) counters, then their
// second words, and advances the counter by ceil(n / 2). Host tensors (evaluator) and CPU
// device tensors (compiled) give the same values.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <vector>

#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "runtime/tensor/tensor.h"

namespace podsim {
namespace {

// XLA's rng_three_fry for u64[blocks] from {key, counter}: element k = Threefry(counter
// + k) as first word | second word << 32.
std::vector<uint64_t> threefry_blocks(uint64_t key, uint64_t counter, int64_t blocks) {
  auto module = ir::parse_module(
      "HloModule m\nENTRY e {\n  s = u64[2] parameter(0)\n  r = (u64[2], u64[" +
      std::to_string(blocks) + "]) rng-bit-generator(s), algorithm=rng_three_fry\n  ROOT b = u64[" +
      std::to_string(blocks) + "] get-tuple-element(r), index=1\n}\n");
  ir::Literal state(ir::Shape(ir::PrimitiveType::kU64, {2}));
  state.set_from_uint64(0, key);
  state.set_from_uint64(1, counter);
  ir::Literal out = ir::evaluate(*module, std::vector<ir::Literal>{state});
  std::vector<uint64_t> words(static_cast<size_t>(blocks));
  std::memcpy(words.data(), out.bytes().data(), words.size() * sizeof(uint64_t));
  return words;
}

// The n 32-bit values of a draw at `counter`: first words, then second words.
std::vector<uint32_t> expected_bits(uint64_t key, uint64_t counter, int64_t n) {
  const int64_t blocks = (n + 1) / 2;
  std::vector<uint64_t> b = threefry_blocks(key, counter, blocks);
  std::vector<uint32_t> bits;
  for (uint64_t w : b) bits.push_back(static_cast<uint32_t>(w));
  for (uint64_t w : b) bits.push_back(static_cast<uint32_t>(w >> 32));
  bits.resize(static_cast<size_t>(n));
  return bits;
}

float f32_uniform(uint32_t bits) { return std::bit_cast<float>((bits >> 9) | 0x3F800000u) - 1.0f; }

class RandomStream : public ::testing::TestWithParam<bool> {
 protected:
  pjrt::Device* device() const { return GetParam() ? &podsim::device(0) : nullptr; }
};

TEST_P(RandomStream, F32DrawsFollowTheThreefryCounterStream) {
  const uint64_t seed = 0x0123456789abcdefull;
  manual_seed(seed);
  // 7 (odd: the last second word is dropped), then 6, continue the counter at 4.
  Tensor a = rand({7}, device()), b = rand({2, 3}, device());
  mark_step();
  std::vector<float> want_a, want_b;
  for (uint32_t bits : expected_bits(seed, 0, 7)) want_a.push_back(f32_uniform(bits));
  for (uint32_t bits : expected_bits(seed, 4, 6)) want_b.push_back(f32_uniform(bits));
  EXPECT_EQ(a.to_vector<float>(), want_a);
  EXPECT_EQ(b.to_vector<float>(), want_b);
}

TEST_P(RandomStream, NarrowAndWideFloatsTakeTheirMantissaFromTheSameBits) {
  const uint64_t seed = 99;
  manual_seed(seed);
  Tensor h = rand({5}, TensorOptions(kBFloat16, device()));
  Tensor d = rand({3}, TensorOptions(kFloat64, device()));
  mark_step();
  std::vector<uint32_t> bits = expected_bits(seed, 0, 5);
  std::vector<float> got_h = h.to(kFloat32).to_vector<float>();
  for (size_t i = 0; i < bits.size(); ++i)
    EXPECT_EQ(got_h[i], std::bit_cast<float>(((bits[i] >> 25) | 0x3F80u) << 16) - 1.0f) << i;
  // f64: 32 bits from a block's first word, 20 from its second; 3 blocks after 3 used.
  std::vector<uint64_t> blocks = threefry_blocks(seed, 3, 3);
  std::vector<double> got_d = d.to_vector<double>();
  for (size_t i = 0; i < blocks.size(); ++i) {
    uint64_t mantissa = ((blocks[i] & 0xFFFFFFFFu) << 20) | (blocks[i] >> 44);
    EXPECT_EQ(got_d[i], std::bit_cast<double>(mantissa | 0x3FF0000000000000ull) - 1.0) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(HostAndDevice, RandomStream, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Cpu" : "Host"; });

}  // namespace
}  // namespace podsim
