// rng-bit-generator, bit-compatible with XLA's RngBitGenerator expander (the CPU and
// GPU backends' lowering) and its ThreeFry / Philox bit generators:
//
// rng_three_fry, state u64[2] = {key, counter}: Threefry-2x32 with 20 rounds, key and
//   counter each split into (low, high) 32-bit words. 64-bit outputs: element k (row
//   major) is Threefry(counter + k) as low | high << 32. 32-bit and narrower outputs:
//   the shape is halved along its first even dimension (else its largest, the first
//   of equals; a scalar counts as [1]); element k of the half shape is Threefry(counter
//   + k) and its two words fill positions 2i and 2i+1 of the split dimension. Narrower
//   types keep the low bits of the 32-bit words. New state {key, counter + elements
//   generated}.
// rng_philox (and rng_default, which XLA's CPU and GPU backends lower to Philox):
//   Philox-4x32 with 10 rounds, key = state[0] as (low, high) words, 128-bit counter
//   {state[1], state[2]} for u64[3] or {state[1], state[0]} (low, high) for u64[2].
//   Block i = Philox(counter + i) gives 4 words: 32-bit outputs take word k % 4 of
//   block k / 4; 64-bit outputs take words (0 | 1 << 32) or (2 | 3 << 32) of block
//   k / 2. New state: counter + blocks used; for u64[2] only the low word is kept.
// Output elements of other types hold the same bits (bf16 gets the low 16 bits).
#include <array>
#include <bit>
#include <cstring>

#include "compiler/ir/eval/elementwise.h"
#include "compiler/ir/rng_layout.h"

namespace podsim::ir::eval {
namespace {

using Words2 = std::array<uint32_t, 2>;
using Words4 = std::array<uint32_t, 4>;

Words2 split64(uint64_t v) { return {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)}; }
uint64_t join64(uint32_t low, uint32_t high) { return uint64_t{low} | (uint64_t{high} << 32); }

Words2 threefry2x32(Words2 x, Words2 key) {
  constexpr std::array<std::array<int, 4>, 2> kRotations = {{{13, 15, 26, 6}, {17, 29, 16, 24}}};
  const std::array<uint32_t, 3> ks = {key[0], key[1], 0x1BD11BDAu ^ key[0] ^ key[1]};
  x[0] += ks[0];
  x[1] += ks[1];
  for (uint32_t block = 0; block < 5; ++block) {
    for (int r : kRotations[block % 2]) {
      x[0] += x[1];
      x[1] = std::rotl(x[1], r);
      x[1] ^= x[0];
    }
    x[0] += ks[(block + 1) % 3];
    x[1] += ks[(block + 2) % 3] + block + 1;
  }
  return x;
}

Words4 philox4x32(Words4 x, Words2 key) {
  auto mul = [](uint32_t a, uint32_t b) { return uint64_t{a} * b; };
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = mul(x[0], 0xD2511F53u);
    uint64_t p1 = mul(x[2], 0xCD9E8D57u);
    x = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ key[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += 0x9E3779B9u;
    key[1] += 0xBB67AE85u;
  }
  return x;
}

// Writes the low bytes of bits into element k of out (literals are little-endian).
void store(Literal& out, int64_t k, uint64_t bits) {
  auto width = static_cast<size_t>(type_byte_size(out.type()));
  std::memcpy(out.bytes().data() + static_cast<size_t>(k) * width, &bits, width);
}

uint64_t three_fry(Literal& out, uint64_t key, uint64_t counter) {
  Words2 k = split64(key);
  const std::vector<int64_t>& dims = out.shape().dims();
  if (type_byte_size(out.type()) == 8) {
    int64_t n = out.num_elements();
    for (int64_t i = 0; i < n; ++i) {
      Words2 y = threefry2x32(split64(counter + static_cast<uint64_t>(i)), k);
      store(out, i, join64(y[0], y[1]));
    }
    return counter + static_cast<uint64_t>(n);
  }
  if (dims.empty()) {
    store(out, 0, threefry2x32(split64(counter), k)[0]);
    return counter + 1;
  }
  const size_t split = three_fry_split_dimension(dims);
  std::vector<int64_t> half = dims;
  half[split] = (dims[split] + 1) / 2;
  int64_t linear = 0;
  for_each_index(half, [&](const std::vector<int64_t>& h) {
    Words2 y = threefry2x32(split64(counter + static_cast<uint64_t>(linear++)), k);
    std::vector<int64_t> index = h;
    for (int64_t w = 0; w < 2; ++w) {
      index[split] = 2 * h[split] + w;
      if (index[split] < dims[split]) store(out, linear_index(dims, index), y[static_cast<size_t>(w)]);
    }
  });
  return counter + static_cast<uint64_t>(checked_num_elements(half));
}

// Returns the new 128-bit counter (low, high).
std::pair<uint64_t, uint64_t> philox(Literal& out, uint64_t key, uint64_t counter_low, uint64_t counter_high) {
  Words2 k = split64(key);
  int64_t n = out.num_elements();
  bool wide = type_byte_size(out.type()) == 8;
  int64_t per_block = wide ? 2 : 4;
  auto blocks = static_cast<uint64_t>((n + per_block - 1) / per_block);
  auto add = [&](uint64_t delta) {
    uint64_t low = counter_low + delta;
    return std::pair{low, low < counter_low ? counter_high + 1 : counter_high};
  };
  for (uint64_t b = 0; b < blocks; ++b) {
    auto [low, high] = add(b);
    Words2 l = split64(low);
    Words2 h = split64(high);
    Words4 y = philox4x32({l[0], l[1], h[0], h[1]}, k);
    for (int64_t j = 0; j < per_block; ++j) {
      int64_t index = static_cast<int64_t>(b) * per_block + j;
      if (index >= n) break;
      auto w = static_cast<size_t>(j);
      store(out, index, wide ? join64(y[2 * w], y[2 * w + 1]) : y[w]);
    }
  }
  return add(blocks);
}

}  // namespace

Literal eval_rng_bit_generator(const Instruction& instruction, Operands operands) {
  const Shape& shape = instruction.shape();
  if (operands.size() != 1) fail("rng-bit-generator of {} takes one operand (the state)", describe(instruction));
  const Literal& state = *operands[0];
  if (!shape.is_tuple() || shape.tuple_size() != 2 || !shape.element(1).is_array() ||
      !shape.element(0).compatible(state.shape()))
    fail("rng-bit-generator of {}: the result must be (state shape, data shape), got {} for state {}",
         describe(instruction), shape.to_string(false), state.shape().to_string(false));
  const Shape& data_shape = shape.element(1);
  if (data_shape.type() == PrimitiveType::kPred)
    fail("rng-bit-generator of {}: cannot generate pred values", describe(instruction));
  RngAlgorithm algorithm = instruction.attrs().rng_algorithm;
  bool threefry = algorithm == RngAlgorithm::kThreeFry;
  int64_t state_size = state.shape().rank() == 1 ? state.shape().dim(0) : 0;
  if (state.type() != PrimitiveType::kU64 || (threefry ? state_size != 2 : (state_size != 2 && state_size != 3)))
    fail("rng-bit-generator of {}: {} needs a {} state, got {}", describe(instruction),
         threefry ? "rng_three_fry" : "rng_philox", threefry ? "u64[2]" : "u64[2] or u64[3]",
         state.shape().to_string(false));

  auto s = state.data<uint64_t>();
  Literal new_state(state.shape());
  auto ns = new_state.data<uint64_t>();
  Literal data(data_shape);
  ns[0] = s[0];
  if (threefry) {
    ns[1] = three_fry(data, s[0], s[1]);
  } else if (state_size == 3) {
    auto [low, high] = philox(data, s[0], s[1], s[2]);
    ns[1] = low;
    ns[2] = high;
  } else {
    ns[1] = philox(data, s[0], s[1], s[0]).first;
  }
  std::vector<Literal> elements;
  elements.push_back(std::move(new_state));
  elements.push_back(std::move(data));
  return Literal::tuple(std::move(elements));
}

}  // namespace podsim::ir::eval
