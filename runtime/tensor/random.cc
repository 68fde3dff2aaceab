// The device random number generators. Each device (and the host) has a generator
// state: a u32[4] {key low, key high, counter low, counter high} tensor that rand/randn
// read and replace with the advanced state. The bits are Threefry-2x32 with 20 rounds
// (Random123), written out as 32-bit integer ops (add, xor, shifts) rather than as an
// rng-bit-generator with a u64 state: every target runs them, the simulated TPU
// included, which has no 64-bit lanes. Counter c + k gives the k-th pair of words, so
// the stream equals XLA's rng_three_fry with state {key, c} for 64-bit outputs. The
// state is an ordinary live tensor, so mark_step carries it forward on the device, and
// a graph that draws random numbers has the same hash whatever the seed.
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <numbers>

#include "runtime/lazy/tensor_impl.h"

namespace podsim {
namespace {

using ir::Opcode;
using lazy::Dims;
using lazy::ImplPtr;
using lazy::NodePtr;
using lazy::OpSite;

struct Generators {
  std::mutex mutex;
  uint64_t seed = 0;
  std::map<pjrt::Device*, ImplPtr> states;  // nullptr: the host
};

Generators& generators() {
  static Generators* instance = new Generators;  // tensors in it may outlive statics
  return *instance;
}

ImplPtr& state_for(Generators& g, pjrt::Device* device) {
  ImplPtr& state = g.states[device];
  if (!state) {
    ir::Literal initial(ir::Shape(DType::kU32, {4}));
    initial.set_from_uint64(0, g.seed & 0xFFFFFFFFu);
    initial.set_from_uint64(1, g.seed >> 32);
    initial.set_from_uint64(2, 0);
    initial.set_from_uint64(3, 0);
    state = Tensor::from_literal(std::move(initial), device).impl();
  }
  return state;
}

// 32-bit integer ops on lazy nodes; rank-0 operands broadcast.
class U32Ops {
 public:
  explicit U32Ops(const OpSite& site) : site_(site) {}
  NodePtr constant(uint32_t v) const { return lazy::constant_operand(v, DType::kU32, site_); }
  NodePtr add(const NodePtr& a, const NodePtr& b) const { return op(Opcode::kAdd, a, b); }
  NodePtr add(const NodePtr& a, uint32_t b) const { return b == 0 ? a : add(a, constant(b)); }
  NodePtr bit_xor(const NodePtr& a, const NodePtr& b) const { return op(Opcode::kXor, a, b); }
  NodePtr bit_or(const NodePtr& a, const NodePtr& b) const { return op(Opcode::kOr, a, b); }
  NodePtr shift_right(const NodePtr& a, int n) const {
    return op(Opcode::kShiftRightLogical, a, constant(static_cast<uint32_t>(n)));
  }
  NodePtr rotate_left(const NodePtr& a, int n) const {
    return bit_or(op(Opcode::kShiftLeft, a, constant(static_cast<uint32_t>(n))),
                  shift_right(a, 32 - n));
  }
  // 1 where a + b wrapped (the sum is below an addend), else 0.
  NodePtr carry(const NodePtr& sum, const NodePtr& addend) const {
    return lazy::convert(lazy::compare_nodes(ir::ComparisonDirection::kLt, sum, addend, site_),
                         DType::kU32, site_);
  }
  // Element i of the u32 vector v as a rank-0 node.
  NodePtr word(const NodePtr& v, int64_t i) const {
    const int64_t attrs[] = {i, i + 1, 1};
    return lazy::reshape_node(
        lazy::unary_node(site_, Opcode::kSlice, DType::kU32, Dims{1}, v, attrs), Dims{}, site_);
  }

 private:
  NodePtr op(Opcode code, const NodePtr& a, const NodePtr& b) const {
    return lazy::elementwise(code, a, b, site_);
  }
  const OpSite& site_;
};

// Threefry-2x32-20 of the counters state.counter + k, k in [0, blocks): both words of
// each block, as u32[blocks] nodes. Advances the state by `blocks`.
std::array<NodePtr, 2> threefry_words(ImplPtr& state, int64_t blocks, const OpSite& site) {
  if (blocks >= (int64_t{1} << 32))
    lazy::op_fail(site, "{} random values in one draw is too many (at most 2^33)", 2 * blocks);
  U32Ops u(site);
  NodePtr s = lazy::value_of(*state, site);
  const NodePtr key[3] = {
      u.word(s, 0), u.word(s, 1),
      u.bit_xor(u.bit_xor(u.word(s, 0), u.word(s, 1)), u.constant(0x1BD11BDAu))};
  const NodePtr counter_low = u.word(s, 2), counter_high = u.word(s, 3);

  NodePtr index = lazy::make_node(site, Opcode::kIota, DType::kU32, Dims{blocks}, {}, {0});
  NodePtr low = u.add(index, counter_low);
  NodePtr high = u.add(u.carry(low, index), counter_high);
  std::array<NodePtr, 2> x = {u.add(low, key[0]), u.add(high, key[1])};
  constexpr int kRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  for (uint32_t group = 0; group < 5; ++group) {
    for (int r : kRotations[group % 2]) {
      x[0] = u.add(x[0], x[1]);
      x[1] = u.bit_xor(u.rotate_left(x[1], r), x[0]);
    }
    x[0] = u.add(x[0], key[(group + 1) % 3]);
    x[1] = u.add(u.add(x[1], key[(group + 2) % 3]), group + 1);
  }

  NodePtr next_low = u.add(counter_low, static_cast<uint32_t>(blocks));
  NodePtr next_high = u.add(u.carry(next_low, counter_low), counter_high);
  const int64_t keep[] = {0, 2, 1};
  NodePtr key_words = lazy::unary_node(site, Opcode::kSlice, DType::kU32, Dims{2}, s, keep);
  NodePtr parts[] = {key_words, lazy::reshape_node(next_low, Dims{1}, site),
                     lazy::reshape_node(next_high, Dims{1}, site)};
  state->set_node(lazy::make_node(site, Opcode::kConcatenate, DType::kU32, Dims{4},
                                  {parts[0].get(), parts[1].get(), parts[2].get()}, {0}));
  return x;
}

// `n` random u32 values with dims: the first words of ceil(n / 2) blocks, then their
// second words.
NodePtr random_u32(ImplPtr& state, const Dims& dims, const OpSite& site) {
  const int64_t n = lazy::num_elements(dims);
  const int64_t blocks = (n + 1) / 2;
  std::array<NodePtr, 2> words = threefry_words(state, blocks, site);
  NodePtr both = lazy::make_node(site, Opcode::kConcatenate, DType::kU32, Dims{2 * blocks},
                                 {words[0].get(), words[1].get()}, {0});
  if (2 * blocks != n) {
    const int64_t first[] = {0, n, 1};
    both = lazy::unary_node(site, Opcode::kSlice, DType::kU32, Dims{n}, both, first);
  }
  return lazy::reshape_node(both, dims, site);
}

// Uniform [0, 1) values of a float type from fresh random bits: the top mantissa bits
// under the exponent of 1.0 give [1, 2); subtracting 1 is exact.
NodePtr uniform(Generators& g, pjrt::Device* device, DType type, const Dims& dims,
                const OpSite& site) {
  ImplPtr& state = state_for(g, device);
  U32Ops u(site);
  NodePtr pattern;
  if (type == DType::kF64) {
    // 52 mantissa bits: 32 from the first word of a block, 20 from its second.
    std::array<NodePtr, 2> w = threefry_words(state, lazy::num_elements(dims), site);
    auto wide = [&](const NodePtr& x) {
      return lazy::convert(lazy::reshape_node(x, dims, site), DType::kU64, site);
    };
    NodePtr high = lazy::elementwise(Opcode::kShiftLeft, wide(w[0]),
                                     lazy::constant_operand(20, DType::kU64, site), site);
    NodePtr mantissa = lazy::elementwise(Opcode::kOr, high, wide(u.shift_right(w[1], 12)), site);
    pattern = lazy::elementwise(
        Opcode::kOr, mantissa,
        lazy::constant_operand(static_cast<double>(0x3FF0000000000000ull), DType::kU64, site),
        site);
  } else {
    // f16 and bf16 keep the top 10 or 7 of the 23 bits: computed in f32, where the
    // value is exact in the narrow type, so no 16-bit bit pattern is needed.
    int mantissa = type == DType::kF16 ? 10 : type == DType::kBF16 ? 7 : 23;
    NodePtr top = u.shift_right(random_u32(state, dims, site), 32 - mantissa);
    if (mantissa != 23)
      top = lazy::elementwise(Opcode::kShiftLeft, top,
                              u.constant(static_cast<uint32_t>(23 - mantissa)), site);
    pattern = u.bit_or(top, u.constant(0x3F800000u));
  }
  const DType compute = type == DType::kF64 ? type : DType::kF32;
  NodePtr one_to_two = lazy::unary_node(site, Opcode::kBitcastConvert, compute, dims, pattern);
  return lazy::convert(lazy::elementwise(Opcode::kSubtract, one_to_two,
                                         lazy::constant_operand(1.0, compute, site), site),
                       type, site);
}

DType checked_float_type(const OpSite& site, const TensorOptions& options,
                         const std::vector<int64_t>& shape) {
  DType type = options.dtype().value_or(lazy::default_float());
  if (!ir::is_float(type))
    lazy::op_fail(site, "expected a floating-point dtype, got {}", ir::type_name(type));
  if (ir::checked_num_elements(shape) < 0)
    lazy::op_fail(site, "shape {} is invalid (a negative dimension, or too many elements)",
                  lazy::shape_string(type, shape));
  return type;
}

// The result and the advanced state run together when they run at once (host tensors,
// eager mode); otherwise both wait for the next sync.
Tensor finish(Generators& g, NodePtr value, pjrt::Device* device, const OpSite& site) {
  ImplPtr result = lazy::make_pending(std::move(value), device);
  if (device == nullptr || eager_mode()) {
    ImplPtr both[] = {result, g.states[device]};
    lazy::sync_tensors(both, lazy::SyncCause::kEager, site.loc);
  }
  return Tensor(std::move(result));
}

}  // namespace

Tensor rand(std::vector<int64_t> shape, TensorOptions options, Loc loc) {
  OpSite site{"rand", loc};
  DType type = checked_float_type(site, options, shape);
  Generators& g = generators();
  std::lock_guard guard(g.mutex);
  NodePtr u = uniform(g, options.device(), type, Dims(shape), site);
  return finish(g, std::move(u), options.device(), site);
}

Tensor randn(std::vector<int64_t> shape, TensorOptions options, Loc loc) {
  OpSite site{"randn", loc};
  DType type = checked_float_type(site, options, shape);
  DType compute = type == DType::kF64 ? DType::kF64 : DType::kF32;
  Dims dims(shape);
  Generators& g = generators();
  std::lock_guard guard(g.mutex);
  // Box-Muller: sqrt(-2 log(1 - u1)) cos(2 pi u2); 1 - u1 is in (0, 1], so the log is finite.
  NodePtr u1 = uniform(g, options.device(), compute, dims, site);
  NodePtr u2 = uniform(g, options.device(), compute, dims, site);
  auto c = [&](double v) { return lazy::constant_operand(v, compute, site); };
  NodePtr log_term =
      lazy::elementwise(Opcode::kLog, lazy::elementwise(Opcode::kSubtract, c(1.0), u1, site), site);
  NodePtr radius = lazy::elementwise(
      Opcode::kSqrt, lazy::elementwise(Opcode::kMultiply, c(-2.0), log_term, site), site);
  NodePtr angle = lazy::elementwise(Opcode::kMultiply, c(2 * std::numbers::pi), u2, site);
  NodePtr z = lazy::elementwise(Opcode::kMultiply, radius,
                                lazy::elementwise(Opcode::kCos, angle, site), site);
  return finish(g, lazy::convert(z, type, site), options.device(), site);
}

namespace lazy {
void drop_generator_states() {
  Generators& g = generators();
  std::lock_guard guard(g.mutex);
  g.states.clear();
}
}  // namespace lazy

void manual_seed(uint64_t seed) {
  Generators& g = generators();
  std::lock_guard guard(g.mutex);
  g.seed = seed;
  g.states.clear();  // each generator restarts from the new seed on its next use
}

}  // namespace podsim
