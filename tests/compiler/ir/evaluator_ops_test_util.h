// Helpers of the evaluator op tests (evaluator_ops*_test.cc): literals from values, the
// computations the tested ops call, and Op, which parses one op from HLO text and runs
// it through its eval_* function. Called computations run through TestContext, which
// interprets parameters, constants, tuples and elementwise ops.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/eval/internal.h"
#include "compiler/ir/parser.h"

namespace podsim::ir::ops_testing {

using PT = PrimitiveType;

inline Literal make(PT type, std::vector<int64_t> dims, const std::vector<double>& values) {
  Literal l(Shape(type, std::move(dims)));
  EXPECT_EQ(static_cast<int64_t>(values.size()), l.num_elements());
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < l.num_elements(); ++i)
    l.set_from_double(static_cast<int64_t>(i), values[i]);
  return l;
}

inline Literal f32(std::vector<int64_t> dims, const std::vector<double>& v) {
  return make(PT::kF32, std::move(dims), v);
}
inline Literal s32(std::vector<int64_t> dims, const std::vector<double>& v) {
  return make(PT::kS32, std::move(dims), v);
}

inline std::vector<double> values(const Literal& l) {
  std::vector<double> v;
  for (int64_t i = 0; i < l.num_elements(); ++i) v.push_back(l.get_as_double(i));
  return v;
}

// Element i of l as a scalar literal (bit-exact).
inline Literal scalar_at_for_test(const Literal& l, int64_t i) {
  Literal s(Shape::scalar(l.type()));
  const auto size = static_cast<size_t>(type_byte_size(l.type()));
  std::copy_n(l.bytes().begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(i) * size), size,
              s.bytes().begin());
  return s;
}

inline Literal random_ints(PT type, std::vector<int64_t> dims, std::mt19937& rng, int lo = -8,
                           int hi = 8) {
  Literal l(Shape(type, std::move(dims)));
  std::uniform_int_distribution<int> dist(lo, hi);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_from_int64(i, dist(rng));
  return l;
}

// Runs called computations made of parameters, constants, tuples and elementwise ops.
class TestContext : public eval::Context {
 public:
  Literal call(const Computation& computation, std::vector<Literal> args) override {
    ++calls;
    std::map<const Instruction*, Literal> values;
    for (const auto& owned : computation.instructions()) {
      const Instruction& instr = *owned;
      std::vector<const Literal*> ops;
      for (const Instruction* op : instr.operands()) ops.push_back(&values.at(op));
      if (instr.opcode() == Opcode::kParameter) {
        values[&instr] = args.at(static_cast<size_t>(instr.attrs().parameter_number));
      } else if (instr.opcode() == Opcode::kConstant) {
        values[&instr] = *instr.attrs().literal;
      } else if (instr.opcode() == Opcode::kTuple) {
        std::vector<Literal> elements;
        for (const Literal* l : ops) elements.push_back(*l);
        values[&instr] = Literal::tuple(std::move(elements));
      } else {
        values[&instr] = eval::eval_elementwise(instr, ops);
      }
    }
    return values.at(computation.root());
  }
  int64_t replica_id() const override { return 0; }
  int64_t partition_id() const override { return 0; }

  int64_t calls = 0;
};

// Reducers NAME_TYPE = NAME(p0, p1) for every element type, e.g. add_f32, max_bf16,
// and_pred, and NAME_TYPE_slow, the same with a dead instruction, which keeps it off
// the reducers' typed fast path.
inline std::string binary_computations() {
  const std::pair<const char*, const char*> ops[] = {{"add", "add"},     {"mul", "multiply"},
                                                     {"max", "maximum"}, {"min", "minimum"},
                                                     {"and", "and"},     {"or", "or"}};
  const char* types[] = {"pred", "s8", "s32", "u8", "u64", "f16", "bf16", "f32", "f64"};
  std::string text;
  for (const auto& [name, opcode] : ops) {
    for (const char* t : types) {
      for (const char* suffix : {"", "_slow"}) {
        text += fmt::format("{}_{}{} {{\n  a = {}[] parameter(0)\n  b = {}[] parameter(1)\n", name,
                            t, suffix, t, t);
        if (*suffix)
          text += fmt::format("  unused = {}[] constant({})\n", t,
                              t == std::string("pred") ? "false" : "0");
        text += fmt::format("  ROOT r = {}[] {}(a, b)\n}}\n", t, opcode);
      }
    }
  }
  return text;
}

// Other computations the tests' ops call.
inline constexpr const char* kComputations = R"(
ge_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE
}
argmax {
  a = f32[] parameter(0)
  ai = s32[] parameter(1)
  b = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  eq = pred[] compare(a, b), direction=EQ
  first = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, first)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, a, b)
  i = s32[] select(keep, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
pair_add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  x = f32[] add(a, c)
  y = f32[] add(b, d)
  ROOT t = (f32[], f32[]) tuple(x, y)
}
add_and_max {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  x = f32[] add(a, c)
  y = s32[] maximum(b, d)
  ROOT t = (f32[], s32[]) tuple(x, y)
}
less_key_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
less_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
bad_comparator {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
)";

// One op under test: the root of an entry computation whose operands are parameters.
class Op {
 public:
  explicit Op(const std::string& entry)
      : module_(parse_module(std::string("HloModule test\n") + binary_computations() +
                             kComputations + "ENTRY e {\n" + entry + "\n}\n")) {}

  const Instruction& instruction() const { return *module_->entry()->root(); }

  Literal run(const std::vector<Literal>& operands) {
    std::vector<const Literal*> ops;
    for (const Literal& l : operands) ops.push_back(&l);
    const Instruction& op = instruction();
    switch (op.opcode()) {
      case Opcode::kReduce:
      case Opcode::kReduceWindow:
      case Opcode::kSelectAndScatter:
        return eval::eval_reduction(op, ops, context);
      case Opcode::kDot:
      case Opcode::kConvolution:
        return eval::eval_linalg(op, ops);
      case Opcode::kGather:
      case Opcode::kScatter:
      case Opcode::kSort:
        return eval::eval_indexing(op, ops, context);
      default:
        return eval::eval_shape_op(op, ops);
    }
  }

  TestContext context;

 private:
  std::unique_ptr<Module> module_;
};

}  // namespace podsim::ir::ops_testing
