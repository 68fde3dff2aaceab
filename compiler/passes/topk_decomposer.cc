// topk as a stable sort of (values, positions) along the last dimension, in IEEE
// totalOrder for floats, and slices of its first k (XLA's TopkDecomposer;
// make_topk_decomposer in pass.h). Exact: the evaluator's topk orders the same way.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "compiler/passes/pass.h"
#include "compiler/passes/pass_util.h"

namespace podsim::passes {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

// (a, b, position a, position b) -> a comes first: a > b (largest) or a < b.
ir::Computation* comparator(ir::Module& module, PrimitiveType type, bool largest,
                            const std::string& prefix) {
  auto c = std::make_unique<ir::Computation>(module.unique_computation_name(prefix));
  std::vector<Instruction*> params;
  for (int64_t k = 0; k < 4; ++k) {
    auto p = std::make_unique<Instruction>(fmt::format("p{}", k), Opcode::kParameter,
                                           Shape::scalar(k < 2 ? type : PrimitiveType::kS32));
    p->attrs().parameter_number = k;
    params.push_back(c->add(std::move(p)));
  }
  auto cmp =
      std::make_unique<Instruction>("first", Opcode::kCompare, Shape::scalar(PrimitiveType::kPred));
  cmp->set_operands({params[0], params[1]});
  cmp->attrs().direction = largest ? ir::ComparisonDirection::kGt : ir::ComparisonDirection::kLt;
  if (ir::is_float(type)) cmp->attrs().comparison_type = ir::ComparisonType::kTotalOrder;
  c->set_root(c->add(std::move(cmp)));
  return module.add_computation(std::move(c));
}

Instruction* expand(ir::Module& module, Instruction& topk) {
  internal::Builder b(topk);
  Instruction* x = topk.operand(0);
  const std::vector<int64_t>& dims = x->shape().dims();
  const auto last = static_cast<int64_t>(dims.size()) - 1;
  Instruction* positions = b.add(Opcode::kIota, Shape(PrimitiveType::kS32, dims), {});
  positions->attrs().iota_dimension = last;
  const Shape sorted_shape = Shape::tuple({Shape(x->shape().type(), dims), positions->shape()});
  Instruction* sorted = b.add(Opcode::kSort, sorted_shape, {x, positions});
  sorted->attrs().dimensions = {last};
  sorted->attrs().is_stable = true;
  sorted->add_called(
      comparator(module, x->shape().type(), topk.attrs().largest, topk.name() + ".compare"));
  std::vector<ir::SliceDim> window;
  for (int64_t d : dims) window.push_back({0, d, 1});
  window.back().limit = topk.attrs().k;
  std::vector<Instruction*> parts;
  for (int64_t e = 0; e < 2; ++e) {
    Instruction* part = b.add(Opcode::kGetTupleElement, sorted_shape.element(e), {sorted});
    part->attrs().tuple_index = e;
    parts.push_back(b.slice(part, window));
  }
  return b.add(Opcode::kTuple, parts);
}

}  // namespace

std::unique_ptr<Pass> make_topk_decomposer() {
  return internal::make_opcode_expander("topk-decomposer", {Opcode::kTopK}, expand);
}

}  // namespace podsim::passes
