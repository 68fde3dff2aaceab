// Reference evaluation of reduce, reduce-window and select-and-scatter. The reducer
// computation is called through Context::call on scalar literals; a to_apply that is a
// single add / multiply / maximum / minimum / and / or of its two parameters takes a
// typed fast path that performs the same operations in the same order, so both paths
// give identical results (up to the sign and payload of NaNs, which C++ compilers do
// not preserve across operand order).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "compiler/ir/eval/internal.h"
#include "compiler/ir/native_types.h"

namespace podsim::ir::eval {
namespace {

Literal scalar_at(const Literal& l, int64_t i) {
  Literal s(Shape::scalar(l.type()));
  const size_t es = static_cast<size_t>(type_byte_size(l.type()));
  std::memcpy(s.bytes().data(), l.bytes().data() + static_cast<size_t>(i) * es, es);
  return s;
}

void store_scalar(Literal& l, int64_t i, const Literal& scalar) {
  const size_t es = static_cast<size_t>(type_byte_size(l.type()));
  std::memcpy(l.bytes().data() + static_cast<size_t>(i) * es, scalar.bytes().data(), es);
}

// ---------------------------------------------------------------------------
// Accumulators: per result element, start() from the init values, add() input
// elements in iteration order, finish() into the results.

class Accumulator {
 public:
  virtual ~Accumulator() = default;
  virtual void start() = 0;
  virtual void add(int64_t input_offset) = 0;
  virtual void finish(int64_t output_offset) = 0;
};

// The general path: (acc_0..acc_{N-1}, x_0..x_{N-1}) -> scalar or N-tuple of scalars.
class CallAccumulator : public Accumulator {
 public:
  CallAccumulator(const Instruction& instruction, Context& context, const Computation& computation,
                  std::vector<const Literal*> inputs, std::vector<const Literal*> inits,
                  std::vector<Literal>& outputs)
      : instruction_(instruction),
        context_(context),
        computation_(computation),
        inputs_(std::move(inputs)),
        inits_(std::move(inits)),
        outputs_(outputs) {}

  void start() override {
    acc_.clear();
    for (const Literal* init : inits_) acc_.push_back(*init);
  }

  void add(int64_t input_offset) override {
    std::vector<Literal> args = std::move(acc_);
    for (const Literal* input : inputs_) args.push_back(scalar_at(*input, input_offset));
    Literal result = context_.call(computation_, std::move(args));
    acc_.clear();
    if (inits_.size() == 1) {
      acc_.push_back(std::move(result));
    } else if (result.shape().is_tuple()) {
      acc_ = std::move(result.elements());
    }
    check_result();
  }

  void finish(int64_t output_offset) override {
    for (size_t i = 0; i < acc_.size(); ++i) store_scalar(outputs_[i], output_offset, acc_[i]);
  }

 private:
  void check_result() const {
    bool ok = acc_.size() == inits_.size();
    for (size_t i = 0; ok && i < acc_.size(); ++i)
      ok = acc_[i].shape().is_scalar() && acc_[i].type() == inits_[i]->type();
    if (!ok) {
      std::vector<std::string> expected;
      for (const Literal* init : inits_) expected.push_back(init->shape().to_string(false));
      op_fail(instruction_, "computation '{}' must return {} ({}), one scalar per init value",
              computation_.name(), inits_.size() == 1 ? "a scalar" : "a tuple",
              fmt::join(expected, ", "));
    }
  }

  const Instruction& instruction_;
  Context& context_;
  const Computation& computation_;
  std::vector<const Literal*> inputs_;
  std::vector<const Literal*> inits_;
  std::vector<Literal>& outputs_;
  std::vector<Literal> acc_;
};

enum class FastOp : uint8_t { kAdd, kMultiply, kMaximum, kMinimum, kAnd, kOr };

// Recognizes `ROOT r = op(p0, p1)` on scalars of type t.
std::optional<FastOp> match_fast_op(const Computation& c, PrimitiveType t) {
  if (c.parameter_count() != 2 || c.instruction_count() != 3 || c.root() == nullptr)
    return std::nullopt;
  const Instruction& root = *c.root();
  if (root.operand_count() != 2 || root.operand(0) != c.parameter(0) ||
      root.operand(1) != c.parameter(1))
    return std::nullopt;
  const Shape scalar = Shape::scalar(t);
  if (!root.shape().compatible(scalar) || !c.parameter(0)->shape().compatible(scalar) ||
      !c.parameter(1)->shape().compatible(scalar))
    return std::nullopt;
  const bool is_pred = t == PrimitiveType::kPred;
  switch (root.opcode()) {
    case Opcode::kAdd:
      return is_pred ? std::nullopt : std::optional(FastOp::kAdd);
    case Opcode::kMultiply:
      return is_pred ? std::nullopt : std::optional(FastOp::kMultiply);
    case Opcode::kMaximum:
      return is_pred ? std::nullopt : std::optional(FastOp::kMaximum);
    case Opcode::kMinimum:
      return is_pred ? std::nullopt : std::optional(FastOp::kMinimum);
    case Opcode::kAnd:
      return is_float(t) ? std::nullopt : std::optional(FastOp::kAnd);
    case Opcode::kOr:
      return is_float(t) ? std::nullopt : std::optional(FastOp::kOr);
    default:
      return std::nullopt;
  }
}

template <typename T>
T apply_fast(FastOp op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return op == FastOp::kAnd ? (a && b) : (a || b);  // only and/or match for pred
  } else if constexpr (is_float_v<T>) {
    const compute_t<T> x = widen(a), y = widen(b);
    switch (op) {
      case FastOp::kAdd:
        return narrow<T>(x + y);
      case FastOp::kMultiply:
        return narrow<T>(x * y);
      case FastOp::kMaximum:
        return narrow<T>(float_max(x, y));
      default:
        return narrow<T>(float_min(x, y));  // and/or never match floats
    }
  } else {
    // Integer add/multiply wrap: compute modulo 2^64, then truncate.
    const uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);
    switch (op) {
      case FastOp::kAdd:
        return static_cast<T>(x + y);
      case FastOp::kMultiply:
        return static_cast<T>(x * y);
      case FastOp::kMaximum:
        return a > b ? a : b;
      case FastOp::kMinimum:
        return a < b ? a : b;
      case FastOp::kAnd:
        return static_cast<T>(a & b);
      case FastOp::kOr:
        return static_cast<T>(a | b);
    }
    return a;
  }
}

template <typename T>
class FastAccumulator : public Accumulator {
 public:
  FastAccumulator(FastOp op, const Literal& input, const Literal& init, Literal& output)
      : op_(op), input_(input.data<T>()), init_(init.data<T>()[0]), output_(output.data<T>()) {}
  void start() override { acc_ = init_; }
  void add(int64_t input_offset) override {
    acc_ = apply_fast<T>(op_, acc_, input_[static_cast<size_t>(input_offset)]);
  }
  void finish(int64_t output_offset) override {
    output_[static_cast<size_t>(output_offset)] = acc_;
  }

 private:
  FastOp op_;
  std::span<const T> input_;
  T init_;
  std::span<T> output_;
  T acc_{};
};

// Splits operands into N inputs and N scalar init values, checking their shapes.
struct ReduceOperands {
  std::vector<const Literal*> inputs;
  std::vector<const Literal*> inits;
};

ReduceOperands split_reduce_operands(const Instruction& instruction, Operands operands) {
  if (operands.empty() || operands.size() % 2 != 0)
    op_fail(instruction, "expected N inputs followed by N init values, got {} operands",
            operands.size());
  const size_t n = operands.size() / 2;
  ReduceOperands r;
  for (size_t i = 0; i < n; ++i) {
    const Literal& input = *operands[i];
    const Literal& init = *operands[n + i];
    if (input.shape().is_tuple() || init.shape().is_tuple())
      op_fail(instruction, "inputs and init values must be arrays");
    if (input.shape().dims() != operands[0]->shape().dims())
      op_fail(instruction, "input {} has shape {}, input 0 has {}", i,
              input.shape().to_string(false), operands[0]->shape().to_string(false));
    if (!init.shape().is_scalar() || init.type() != input.type())
      op_fail(instruction, "init value {} has shape {}; expected {}[]", i,
              init.shape().to_string(false), type_name(input.type()));
    r.inputs.push_back(&input);
    r.inits.push_back(&init);
  }
  return r;
}

// Result literals of out_dims, one per input; checks the instruction's shape.
std::vector<Literal> make_outputs(const Instruction& instruction, const ReduceOperands& r,
                                  const std::vector<int64_t>& out_dims) {
  std::vector<Literal> outputs;
  std::vector<Shape> shapes;
  for (const Literal* init : r.inits) {
    shapes.emplace_back(init->type(), out_dims);
    outputs.emplace_back(shapes.back());
  }
  Shape expected = shapes.size() == 1 ? shapes[0] : Shape::tuple(shapes);
  if (!instruction.shape().compatible(expected))
    op_fail(instruction, "result shape {} does not match the computed shape {}",
            instruction.shape().to_string(false), expected.to_string(false));
  return outputs;
}

Literal pack(std::vector<Literal> outputs) {
  if (outputs.size() == 1) return std::move(outputs[0]);
  return Literal::tuple(std::move(outputs));
}

std::unique_ptr<Accumulator> make_accumulator(const Instruction& instruction, Context& context,
                                              const ReduceOperands& r,
                                              std::vector<Literal>& outputs) {
  const Computation& computation = called_computation(instruction, 0);
  if (r.inputs.size() == 1) {
    if (std::optional<FastOp> op = match_fast_op(computation, r.inputs[0]->type())) {
      return visit_type(r.inputs[0]->type(), [&]<typename T>() -> std::unique_ptr<Accumulator> {
        return std::make_unique<FastAccumulator<T>>(*op, *r.inputs[0], *r.inits[0], outputs[0]);
      });
    }
  }
  return std::make_unique<CallAccumulator>(instruction, context, computation, r.inputs, r.inits,
                                           outputs);
}

Literal eval_reduce(const Instruction& instruction, Operands operands, Context& context) {
  ReduceOperands r = split_reduce_operands(instruction, operands);
  const std::vector<int64_t>& in_dims = r.inputs[0]->shape().dims();
  std::vector<bool> reduced(in_dims.size(), false);
  for (int64_t d : instruction.attrs().dimensions) {
    if (d < 0 || d >= static_cast<int64_t>(in_dims.size()) || reduced[static_cast<size_t>(d)])
      op_fail(instruction, "reduce dimension {} is out of range or repeated", d);
    reduced[static_cast<size_t>(d)] = true;
  }
  const std::vector<int64_t> strides = row_major_strides(in_dims);
  std::vector<int64_t> out_dims, kept_strides, reduced_dims, reduced_strides;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (reduced[d]) {
      reduced_dims.push_back(in_dims[d]);
      reduced_strides.push_back(strides[d]);
    } else {
      out_dims.push_back(in_dims[d]);
      kept_strides.push_back(strides[d]);
    }
  }
  std::vector<Literal> outputs = make_outputs(instruction, r, out_dims);
  std::unique_ptr<Accumulator> acc = make_accumulator(instruction, context, r, outputs);

  // Offsets of the reduced elements relative to an output element's first input,
  // visited in row-major order of the reduced dimensions.
  std::vector<int64_t> reduced_offsets;
  for_each_index(reduced_dims, [&](const std::vector<int64_t>& index) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) offset += index[k] * reduced_strides[k];
    reduced_offsets.push_back(offset);
  });
  int64_t out = 0;
  for_each_index(out_dims, [&](const std::vector<int64_t>& index) {
    int64_t base = 0;
    for (size_t k = 0; k < index.size(); ++k) base += index[k] * kept_strides[k];
    acc->start();
    for (int64_t offset : reduced_offsets) acc->add(base + offset);
    acc->finish(out++);
  });
  return pack(std::move(outputs));
}

// ---------------------------------------------------------------------------
// Windows (reduce-window, select-and-scatter).

const Window& checked_window(const Instruction& instruction, int64_t rank, bool allow_dilation) {
  if (!instruction.attrs().window) op_fail(instruction, "missing window attribute");
  const Window& window = *instruction.attrs().window;
  if (static_cast<int64_t>(window.dims.size()) != rank)
    op_fail(instruction, "window has {} dimensions for an operand of rank {}", window.dims.size(),
            rank);
  for (size_t d = 0; d < window.dims.size(); ++d) {
    const WindowDim& w = window.dims[d];
    if (w.size < 1 || w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1)
      op_fail(instruction, "window dimension {} needs size, stride and dilations >= 1", d);
    if (w.reversal) op_fail(instruction, "window reversal is not allowed here");
    if (!allow_dilation && (w.lhs_dilation != 1 || w.rhs_dilation != 1))
      op_fail(instruction, "window dilation is not allowed here");
  }
  return window;
}

// Number of window positions along each dimension (XLA's window output shape).
std::vector<int64_t> window_output_dims(const Window& window, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    const WindowDim& w = window.dims[d];
    const int64_t base = dims[d] == 0 ? 0 : (dims[d] - 1) * w.lhs_dilation + 1;
    const int64_t padded = w.pad_low + base + w.pad_high;
    const int64_t extent = (w.size - 1) * w.rhs_dilation + 1;
    out[d] = padded < extent ? 0 : (padded - extent) / w.stride + 1;
  }
  return out;
}

// Calls f(input_offset) for each element of the window at out_index that lies on a
// real input element, in row-major window order. Padding and base-dilation holes are
// not visited (they act as the init value). Only the window positions that can reach
// the input are enumerated, so huge padded windows cost nothing.
template <typename F>
void for_each_in_window(const Window& window, const std::vector<int64_t>& in_dims,
                        const std::vector<int64_t>& in_strides,
                        const std::vector<int64_t>& window_sizes,
                        const std::vector<int64_t>& out_index, F&& f) {
  const size_t rank = in_dims.size();
  // Window position w along d reads dilated input position first[d] + w * rhs_dilation.
  std::vector<int64_t> first(rank), lo(rank), extent(rank);
  for (size_t d = 0; d < rank; ++d) {
    const WindowDim& wd = window.dims[d];
    if (in_dims[d] == 0) return;
    first[d] = out_index[d] * wd.stride - wd.pad_low;
    const int64_t last = (in_dims[d] - 1) * wd.lhs_dilation;  // last real position
    lo[d] = first[d] >= 0 ? 0 : (-first[d] + wd.rhs_dilation - 1) / wd.rhs_dilation;
    const int64_t hi =
        last < first[d] ? 0 : std::min(window_sizes[d], (last - first[d]) / wd.rhs_dilation + 1);
    if (hi <= lo[d]) return;
    extent[d] = hi - lo[d];
  }
  for_each_index(extent, [&](const std::vector<int64_t>& k) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) {
      const WindowDim& wd = window.dims[d];
      const int64_t pos = first[d] + (lo[d] + k[d]) * wd.rhs_dilation;
      if (pos % wd.lhs_dilation != 0) return;
      offset += pos / wd.lhs_dilation * in_strides[d];
    }
    f(offset);
  });
}

std::vector<int64_t> window_sizes(const Window& window) {
  std::vector<int64_t> sizes;
  for (const WindowDim& w : window.dims) sizes.push_back(w.size);
  return sizes;
}

Literal eval_reduce_window(const Instruction& instruction, Operands operands, Context& context) {
  ReduceOperands r = split_reduce_operands(instruction, operands);
  const std::vector<int64_t>& in_dims = r.inputs[0]->shape().dims();
  const Window& window =
      checked_window(instruction, static_cast<int64_t>(in_dims.size()), /*allow_dilation=*/true);
  const std::vector<int64_t> out_dims = window_output_dims(window, in_dims);
  std::vector<Literal> outputs = make_outputs(instruction, r, out_dims);
  std::unique_ptr<Accumulator> acc = make_accumulator(instruction, context, r, outputs);
  const std::vector<int64_t> in_strides = row_major_strides(in_dims);
  const std::vector<int64_t> sizes = window_sizes(window);
  int64_t out = 0;
  for_each_index(out_dims, [&](const std::vector<int64_t>& index) {
    acc->start();
    for_each_in_window(window, in_dims, in_strides, sizes, index,
                       [&](int64_t offset) { acc->add(offset); });
    acc->finish(out++);
  });
  return pack(std::move(outputs));
}

bool read_pred(const Instruction& instruction, const Computation& select, const Literal& l) {
  if (!l.shape().is_scalar() || l.type() != PrimitiveType::kPred)
    op_fail(instruction, "select computation '{}' returned {}; expected pred[]", select.name(),
            l.shape().to_string(false));
  return l.data<bool>()[0];
}

// XLA semantics: for each source element, select one operand element in its window
// (the first, replaced by each later candidate for which select(current, candidate)
// is false), then result[selected] = scatter(result[selected], source). The result
// starts as init_value everywhere.
Literal eval_select_and_scatter(const Instruction& instruction, Operands operands,
                                Context& context) {
  if (operands.size() != 3) op_fail(instruction, "expected 3 operands, got {}", operands.size());
  const Literal& operand = *operands[0];
  const Literal& source = *operands[1];
  const Literal& init = *operands[2];
  if (operand.shape().is_tuple() || source.shape().is_tuple() || !init.shape().is_scalar() ||
      source.type() != operand.type() || init.type() != operand.type())
    op_fail(instruction, "operand {}, source {} and init value {} must be arrays of one type",
            operand.shape().to_string(false), source.shape().to_string(false),
            init.shape().to_string(false));
  const std::vector<int64_t>& dims = operand.shape().dims();
  const Window& window =
      checked_window(instruction, static_cast<int64_t>(dims.size()), /*allow_dilation=*/false);
  if (window_output_dims(window, dims) != source.shape().dims())
    op_fail(instruction, "source shape {} does not match the {} windows of the operand",
            source.shape().to_string(false),
            Shape(operand.type(), window_output_dims(window, dims)).to_string(false));
  if (!instruction.shape().compatible(operand.shape()))
    op_fail(instruction, "result shape {} must equal the operand shape {}",
            instruction.shape().to_string(false), operand.shape().to_string(false));
  const Computation& select = called_computation(instruction, 0);
  const Computation& scatter = called_computation(instruction, 1);

  Literal result(operand.shape());
  for (int64_t i = 0; i < result.num_elements(); ++i) store_scalar(result, i, init);
  const std::vector<int64_t> strides = row_major_strides(dims);
  const std::vector<int64_t> sizes = window_sizes(window);
  int64_t source_offset = 0;
  for_each_index(source.shape().dims(), [&](const std::vector<int64_t>& index) {
    int64_t selected = -1;
    Literal selected_value;
    for_each_in_window(window, dims, strides, sizes, index, [&](int64_t offset) {
      Literal candidate = scalar_at(operand, offset);
      if (selected >= 0) {
        Literal keep = context.call(select, {selected_value, candidate});
        if (read_pred(instruction, select, keep)) return;
      }
      selected = offset;
      selected_value = std::move(candidate);
    });
    if (selected >= 0) {
      Literal combined =
          context.call(scatter, {scalar_at(result, selected), scalar_at(source, source_offset)});
      if (!combined.shape().is_scalar() || combined.type() != result.type())
        op_fail(instruction, "scatter computation '{}' returned {}; expected {}[]", scatter.name(),
                combined.shape().to_string(false), type_name(result.type()));
      store_scalar(result, selected, combined);
    }
    ++source_offset;
  });
  return result;
}

// map: result[i] = computation(operand_0[i], operand_1[i], ...).
Literal eval_map(const Instruction& instruction, Operands operands, Context& context) {
  if (operands.empty()) op_fail(instruction, "expected at least one operand");
  const Computation& computation = called_computation(instruction, 0);
  Literal result(instruction.shape());
  if (result.shape().is_tuple()) op_fail(instruction, "the result must be an array");
  for (const Literal* o : operands)
    if (o->shape().is_tuple() || o->shape().dims() != result.shape().dims())
      op_fail(instruction, "operand {} does not have the result's dimensions {}",
              o->shape().to_string(false), result.shape().to_string(false));
  for (int64_t i = 0; i < result.num_elements(); ++i) {
    std::vector<Literal> args;
    for (const Literal* o : operands) args.push_back(scalar_at(*o, i));
    Literal r = context.call(computation, std::move(args));
    if (!r.shape().is_scalar() || r.type() != result.type())
      op_fail(instruction, "computation '{}' returned {}; expected {}[]", computation.name(),
              r.shape().to_string(false), type_name(result.type()));
    store_scalar(result, i, r);
  }
  return result;
}

}  // namespace

Literal eval_reduction(const Instruction& instruction, Operands operands, Context& context) {
  switch (instruction.opcode()) {
    case Opcode::kReduce:
      return eval_reduce(instruction, operands, context);
    case Opcode::kReduceWindow:
      return eval_reduce_window(instruction, operands, context);
    case Opcode::kSelectAndScatter:
      return eval_select_and_scatter(instruction, operands, context);
    case Opcode::kMap:
      return eval_map(instruction, operands, context);
    default:
      op_fail(instruction, "internal: not a reduction");
  }
}

}  // namespace podsim::ir::eval
