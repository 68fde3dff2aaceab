// sort on the vector unit: an odd-even transposition network along the sort dimension,
// every other dimension across the lanes. The operands go to VMEM with the sort
// dimension outermost (one row of tiles per position); each compare-exchange loads two
// neighbouring rows, evaluates the comparator on the later and the earlier element and
// swaps every operand where it says the later goes first. Exchanging neighbours only
// where the comparator is strict keeps equal elements in order (stable, as the evaluator's
// std::stable_sort); n phases (even pairs, then odd pairs, ceil(n / 2) times: a loop, so
// the program grows with n, the run with n^2) sort any input.
#include <fmt/format.h>

#include "common/error.h"
#include "compiler/tpu/lower_reduce_plan.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/tiling.h"
#include "compiler/tpu/vector_codegen.h"

namespace podsim::tpu {

Value lower_sort(Lowerer& l, const ir::Instruction& i, Scope& s) {
  const int64_t n_ops = i.operand_count();
  std::vector<Leaf> in;
  std::vector<ir::PrimitiveType> types;
  for (int64_t k = 0; k < n_ops; ++k) {
    in.push_back(view_of(l, s, *i.operand(k)));
    types.push_back(i.operand(k)->shape().type());
  }
  const Reducer comparator = build_reducer(l, i, 1);
  l.begin_step(i, s);
  ProgramBuilder& pb = l.pb();
  const topology::ChipConfig& chip = l.chip();
  const std::vector<int64_t>& dims = i.operand(0)->shape().dims();
  const auto dim = static_cast<size_t>(i.attrs().dimensions.at(0));
  const int64_t n = dims[dim];

  std::vector<int32_t> out;
  for (int64_t k = 0; k < n_ops; ++k)
    out.push_back(l.new_buffer(n_ops == 1 ? i.name() : fmt::format("{}.{}", i.name(), k),
                               ir::Shape(types[static_cast<size_t>(k)], dims)));
  const Value result = value_in(i, out);

  // The other dimensions, row-major, across the lanes: a row of `row` elements (whole
  // tiles) per position along the sort dimension.
  std::vector<int64_t> sizes = {n}, other;
  for (size_t d = 0; d < dims.size(); ++d)
    if (d != dim) other.push_back(dims[d]);
  int64_t across = 1;
  for (int64_t d : other) across *= d;
  sizes.insert(sizes.end(), other.begin(), other.end());
  const std::vector<int64_t> out_strides = ir::row_major_strides(dims);
  std::vector<int64_t> out_sorted_strides = {out_strides[dim]};
  for (size_t d = 0; d < dims.size(); ++d)
    if (d != dim) out_sorted_strides.push_back(out_strides[d]);
  auto in_strides = [&](size_t k) {
    std::vector<int64_t> v = {in[k].strides[dim]};
    for (size_t d = 0; d < dims.size(); ++d)
      if (d != dim) v.push_back(in[k].strides[d]);
    return v;
  };
  if (n <= 1 || across == 0) {  // nothing to order: copies
    int copies = 0;
    for (size_t k = 0; k < static_cast<size_t>(n_ops); ++k) {
      const int64_t eb = ir::type_byte_size(types[k]);
      copies += issue_copy(pb, l.use(in[k].buffer), in[k].offset * eb, l.use(out[k]), 0, eb, sizes,
                           in_strides(k), out_sorted_strides, kSemOnce);
    }
    pb.wait(kSemOnce, copies);
    return result;
  }
  const int64_t tile = int64_t{chip.vpu_sublanes} * chip.vpu_lanes;
  const int64_t row = round_up(across, tile);
  std::vector<int64_t> staged_strides = {row};
  for (int64_t st : ir::row_major_strides(other)) staged_strides.push_back(st);
  std::vector<int32_t> staged;
  int copies = 0;
  for (size_t k = 0; k < static_cast<size_t>(n_ops); ++k) {
    const int64_t eb = ir::type_byte_size(types[k]);
    staged.push_back(l.vmem(fmt::format("sort{}", k), n * row * eb));
    copies += issue_copy(pb, l.use(in[k].buffer), in[k].offset * eb, staged.back(), 0, eb, sizes,
                         in_strides(k), staged_strides, kSemOnce);
  }
  pb.wait(kSemOnce, copies);

  VRegs regs(chip.vector_registers, l.step_name());
  VectorCodegen compare(pb, regs, comparator.expr, comparator.roots);
  // Positions a and a + 1, tile t: where comparator(later, earlier), they swap.
  auto exchange = [&](int64_t a, int64_t t) {
    std::vector<int> earlier, later;
    auto at = [&](size_t k, int64_t position) {
      return (position * row + t * tile) * ir::type_byte_size(types[k]);
    };
    auto row_bytes = [&](size_t k) {
      return int64_t{chip.vpu_lanes} * ir::type_byte_size(types[k]);
    };
    for (size_t k = 0; k < static_cast<size_t>(n_ops); ++k) {
      earlier.push_back(regs.take());
      later.push_back(regs.take());
      pb.vld(earlier.back(), staged[k], at(k, a), row_bytes(k), memory_dtype(types[k]));
      pb.vld(later.back(), staged[k], at(k, a + 1), row_bytes(k), memory_dtype(types[k]));
      if (types[k] == ir::PrimitiveType::kPred) {  // 0 / 1 in memory, masks in registers
        const int zero = regs.take();
        const auto ne = static_cast<int64_t>(ir::ComparisonDirection::kNe);
        pb.vimm(zero, 0);
        pb.emit(isa::Opcode::kVcmp, isa::DType::kU32, {earlier.back(), earlier.back(), zero, ne});
        pb.emit(isa::Opcode::kVcmp, isa::DType::kU32, {later.back(), later.back(), zero, ne});
        regs.give(zero);
      }
    }
    std::vector<int> leaf_regs;  // parameters: lhs then rhs of each operand
    for (int param : comparator.leaf_param)
      leaf_regs.push_back(param % 2 == 0 ? later[static_cast<size_t>(param / 2)]
                                         : earlier[static_cast<size_t>(param / 2)]);
    const std::vector<int> swap = compare.emit_on(leaf_regs);
    const int first = regs.take(), second = regs.take();
    for (size_t k = 0; k < static_cast<size_t>(n_ops); ++k) {
      pb.emit(isa::Opcode::kVsel, isa::DType::kU32, {first, swap[0], later[k], earlier[k]});
      pb.emit(isa::Opcode::kVsel, isa::DType::kU32, {second, swap[0], earlier[k], later[k]});
      pb.vst(staged[k], at(k, a), row_bytes(k), first, memory_dtype(types[k]));
      pb.vst(staged[k], at(k, a + 1), row_bytes(k), second, memory_dtype(types[k]));
      regs.give(earlier[k]);
      regs.give(later[k]);
    }
    regs.give(first);
    regs.give(second);
    compare.give_back(swap);
  };
  const int rounds = pb.hold_sreg();
  pb.emit(isa::Opcode::kSli, isa::DType::kF32, {rounds, (n + 1) / 2});
  const int64_t top = pb.pc();
  pb.begin_block();
  for (int64_t phase : {0, 1})
    for (int64_t a = phase; a + 1 < n; a += 2)
      for (int64_t t = 0; t < row / tile; ++t) exchange(a, t);
  pb.emit(isa::Opcode::kSaddi, isa::DType::kF32, {rounds, rounds, -1});
  pb.emit(isa::Opcode::kBnz, isa::DType::kF32, {rounds, top});
  pb.begin_block();
  pb.release_sreg(rounds);

  copies = 0;
  for (size_t k = 0; k < static_cast<size_t>(n_ops); ++k) {
    const int64_t eb = ir::type_byte_size(types[k]);
    copies += issue_copy(pb, staged[k], 0, l.use(out[k]), 0, eb, sizes, staged_strides,
                         out_sorted_strides, kSemOnce);
  }
  pb.wait(kSemOnce, copies);
  return result;
}

}  // namespace podsim::tpu
