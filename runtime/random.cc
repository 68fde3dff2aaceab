// The device random number generators. Each device (and the host) has a generator
// state: a u64[2] {key, counter} tensor that rand/randn read through a Threefry
// rng-bit-generator and replace with the advanced state. The state is an ordinary live
// tensor, so mark_step carries it forward on the device, and a graph that draws random
// numbers has the same hash whatever the seed.
#include <cmath>
#include <map>
#include <mutex>
#include <numbers>

#include "runtime/tensor_impl.h"

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
  std::map<runtime::Device*, ImplPtr> states;  // nullptr: the host
};

Generators& generators() {
  static Generators* instance = new Generators;  // tensors in it may outlive statics
  return *instance;
}

ImplPtr& state_for(Generators& g, runtime::Device* device) {
  ImplPtr& state = g.states[device];
  if (!state) {
    ir::Literal initial(ir::Shape(DType::kU64, {2}));
    initial.set_from_uint64(0, g.seed);
    initial.set_from_uint64(1, 0);
    state = Tensor::from_literal(std::move(initial), device).impl();
  }
  return state;
}

struct FloatBits {
  DType bits;
  int mantissa;
  double one;  // the bit pattern of 1.0
};

FloatBits float_bits(DType type) {
  switch (type) {
    case DType::kF16:
      return {DType::kU16, 10, 0x3C00};
    case DType::kBF16:
      return {DType::kU16, 7, 0x3F80};
    case DType::kF32:
      return {DType::kU32, 23, 0x3F800000};
    default:
      return {DType::kU64, 52, static_cast<double>(0x3FF0000000000000ull)};
  }
}

// Uniform [0, 1) values of a float type from fresh random bits: the top mantissa bits
// under the exponent of 1.0 give [1, 2); subtracting 1 is exact.
NodePtr uniform(Generators& g, runtime::Device* device, DType type, const Dims& dims,
                const OpSite& site) {
  ImplPtr& state = state_for(g, device);
  FloatBits f = float_bits(type);
  NodePtr rng = lazy::make_node(site, Opcode::kRngBitGenerator, f.bits, dims,
                                {lazy::value_of(*state, site).get()},
                                {static_cast<int64_t>(ir::RngAlgorithm::kThreeFry)});
  state->set_node(
      lazy::make_node(site, Opcode::kGetTupleElement, DType::kU64, Dims{2}, {rng.get()}, {0}));
  int width = ir::type_bit_width(f.bits);
  NodePtr shifted =
      lazy::elementwise(Opcode::kShiftRightLogical, rng,
                        lazy::constant_operand(width - f.mantissa, f.bits, site), site);
  NodePtr with_exponent =
      lazy::elementwise(Opcode::kOr, shifted, lazy::constant_operand(f.one, f.bits, site), site);
  NodePtr one_to_two = lazy::unary_node(site, Opcode::kBitcastConvert, type, dims, with_exponent);
  return lazy::elementwise(Opcode::kSubtract, one_to_two, lazy::constant_operand(1.0, type, site),
                           site);
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
Tensor finish(Generators& g, NodePtr value, runtime::Device* device, const OpSite& site) {
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
