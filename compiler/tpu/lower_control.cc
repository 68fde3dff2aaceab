// while and conditional as real control flow in the program. A while loop's state gets
// buffers of its own; the condition is lowered, its pred DMAed to VMEM and loaded into a
// scalar register (sld) for bz; the body's result is copied back into the state and
// `br` returns to the condition. Buffers read inside a loop stay live until its end. A
// conditional loads its pred or branch index the same way, runs one branch (an index
// out of range runs the last, as XLA does) and copies its result into buffers of the
// conditional's own. Every join point forgets the scalar-register cache.
#include <fmt/format.h>

#include <set>

#include "common/error.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/tiling.h"

namespace podsim::tpu {
namespace {

using ir::Instruction;

Value fresh(Lowerer& l, const ir::Shape& shape, const std::string& name) {
  Value v;
  v.shape = shape;
  if (!shape.is_tuple()) {
    v.buffer = l.new_buffer(name, shape);
    return v;
  }
  for (int64_t k = 0; k < shape.tuple_size(); ++k) v.elements.push_back(fresh(l, shape.element(k), fmt::format("{}.{}", name, k)));
  return v;
}

void leaves(const Value& v, std::vector<const Value*>& out) {
  if (!v.shape.is_tuple()) {
    out.push_back(&v);
    return;
  }
  for (const Value& e : v.elements) leaves(e, out);
}

// Copies the arrays of `from` into the buffers of `to` (same structure). A source that
// is another leaf's destination (a body returning its state permuted) is staged in a
// temporary first, so that every old value is read before any is overwritten.
void assign(Lowerer& l, const Value& from, const Value& to, const std::string& name) {
  std::vector<const Value*> src, dst;
  leaves(from, src);
  leaves(to, dst);
  if (src.size() != dst.size()) fail("internal: assigning {} arrays to {}", src.size(), dst.size());
  std::set<int32_t> destinations;
  for (const Value* d : dst) destinations.insert(d->buffer);
  std::vector<int32_t> source(src.size());
  for (size_t k = 0; k < src.size(); ++k) {
    source[k] = src[k]->buffer;
    if (source[k] != dst[k]->buffer && destinations.count(source[k])) {
      int32_t staged = l.new_buffer(name + ".stage", src[k]->shape);
      copy_buffer(l, source[k], staged, src[k]->shape.byte_size());
      source[k] = staged;
    }
  }
  for (size_t k = 0; k < src.size(); ++k)
    if (source[k] != dst[k]->buffer) copy_buffer(l, source[k], dst[k]->buffer, src[k]->shape.byte_size());
}

// The pred or s32 scalar in v's buffer, zero-extended into a held scalar register.
int load_scalar(Lowerer& l, const Value& v) {
  ProgramBuilder& pb = l.pb();
  int32_t slot = l.vmem("scalar", 8);
  pb.emit(isa::Opcode::kSst, isa::DType::kF32, {slot, 0, 0});  // 8 zero bytes
  int64_t bytes = v.shape.byte_size();
  int n = issue_copy(pb, l.use(v.buffer), 0, slot, 0, bytes, {1}, {1}, {1}, kSemOnce);
  pb.wait(kSemOnce, n);
  int r = pb.hold_sreg();
  pb.emit(isa::Opcode::kSld, isa::DType::kF32, {r, slot, 0});
  return r;
}

}  // namespace

Value lower_while(Lowerer& l, const Instruction& i, Scope& s) {
  const ir::Computation& condition = *i.called(0);
  const ir::Computation& body = *i.called(1);
  const Value init = l.value_of(*i.operand(0), s);
  ProgramBuilder& pb = l.pb();

  l.begin_step(i, s);
  Value state = fresh(l, i.shape(), i.name() + ".state");
  assign(l, init, state, i.name());

  const int64_t first = l.step() + 1;
  const int64_t top = pb.pc();
  pb.begin_block();
  Value pred = l.lower_called(condition, {state});
  l.begin_step(i, s);
  int r = load_scalar(l, pred);
  const int64_t exit = pb.pc();
  pb.emit(isa::Opcode::kBz, isa::DType::kF32, {r, 0});
  pb.release_sreg(r);

  Value next = l.lower_called(body, {state});
  l.begin_step(i, s);
  assign(l, next, state, i.name());
  pb.emit(isa::Opcode::kBr, isa::DType::kF32, {top});
  l.keep_live_through_loop(first, l.step());
  pb.set_branch_target(exit, pb.pc());
  pb.begin_block();
  return state;
}

Value lower_conditional(Lowerer& l, const Instruction& i, Scope& s) {
  const Instruction& selector = *i.operand(0);
  const auto n = static_cast<int64_t>(i.called().size());
  std::vector<Value> args;
  for (int64_t k = 0; k < n; ++k) args.push_back(l.value_of(*i.operand(k + 1), s));
  const Value sel = l.value_of(selector, s);
  ProgramBuilder& pb = l.pb();

  l.begin_step(i, s);
  Value result = fresh(l, i.shape(), i.name());
  int r = load_scalar(l, sel);
  // Branch k < n - 1 runs when the pred is true (k = 0) or the index equals k; the last
  // branch otherwise (it falls through).
  std::vector<int64_t> jumps;
  for (int64_t k = 0; k + 1 < n; ++k) {
    if (selector.shape().type() == ir::PrimitiveType::kPred) {
      jumps.push_back(pb.pc());
      pb.emit(isa::Opcode::kBnz, isa::DType::kF32, {r, 0});
      continue;
    }
    int t = pb.hold_sreg();
    pb.emit(isa::Opcode::kSeq, isa::DType::kF32, {t, r, pb.sreg(k)});
    jumps.push_back(pb.pc());
    pb.emit(isa::Opcode::kBnz, isa::DType::kF32, {t, 0});
    pb.release_sreg(t);
  }
  pb.release_sreg(r);

  std::vector<int64_t> to_end;
  auto branch = [&](int64_t k) {
    Value out = l.lower_called(*i.called(k), {args[static_cast<size_t>(k)]});
    l.begin_step(i, s);
    assign(l, out, result, i.name());
    to_end.push_back(pb.pc());
    pb.emit(isa::Opcode::kBr, isa::DType::kF32, {0});
  };
  branch(n - 1);
  for (int64_t k = 0; k + 1 < n; ++k) {
    pb.set_branch_target(jumps[static_cast<size_t>(k)], pb.pc());
    pb.begin_block();
    branch(k);
  }
  for (int64_t b : to_end) pb.set_branch_target(b, pb.pc());
  pb.begin_block();
  return result;
}

}  // namespace podsim::tpu
