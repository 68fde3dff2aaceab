#include "compiler/tpu/vector_codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>

#include "common/error.h"

namespace podsim::tpu {
namespace {

using isa::DType;
using isa::Opcode;
using ir::PrimitiveType;

// vcmp immediates follow ir::ComparisonDirection's order: EQ NE LT LE GT GE.
int64_t compare_imm(ir::ComparisonDirection d) { return static_cast<int64_t>(d); }
constexpr int64_t kEq = 0, kNe = 1, kLt = 2, kGt = 4, kGe = 5;

bool is_16bit_float(PrimitiveType t) { return t == PrimitiveType::kBF16 || t == PrimitiveType::kF16; }

}  // namespace

VRegs::VRegs(int count, std::string kernel) : free_(static_cast<size_t>(count), true), kernel_(std::move(kernel)) {}

int VRegs::take() {
  for (size_t r = 0; r < free_.size(); ++r)
    if (free_[r]) {
      free_[r] = false;
      return static_cast<int>(r);
    }
  fail("not supported on the TPU target: kernel '{}' needs more than the chip's {} vector registers (split the "
       "fusion, e.g. with a smaller max_fused_instructions)",
       kernel_, free_.size());
}

void VRegs::give(int reg) { free_[static_cast<size_t>(reg)] = true; }

void vop(ProgramBuilder& pb, Opcode op, DType t, int dst, int a, int b) { pb.emit(op, t, {dst, a, b}); }
void vop(ProgramBuilder& pb, Opcode op, DType t, int dst, int a) { pb.emit(op, t, {dst, a}); }

VectorCodegen::VectorCodegen(ProgramBuilder& pb, VRegs& regs, const Expr& expr, std::vector<int> roots)
    : pb_(pb), regs_(regs), e_(expr), roots_(std::move(roots)) {
  const size_t n = e_.nodes.size();
  needed_.assign(n, false);
  is_root_.assign(n, false);
  last_use_.assign(n, 0);
  for (int r : roots_) needed_[static_cast<size_t>(r)] = is_root_[static_cast<size_t>(r)] = true;
  for (size_t k = n; k-- > 0;) {
    if (!needed_[k]) continue;
    for (int o : e_.nodes[k].operands) {
      needed_[static_cast<size_t>(o)] = true;
      last_use_[static_cast<size_t>(o)] = std::max(last_use_[static_cast<size_t>(o)], k);
    }
  }
}

DType VectorCodegen::lane(const ExprNode& n, PrimitiveType t) const {
  if (t == PrimitiveType::kPred) return DType::kU32;  // masks: all ones or zero
  if (n.origin) return isa_dtype(*n.origin, t);
  return memory_dtype(t);
}

std::vector<int> VectorCodegen::emit(const std::function<LeafLocation(int leaf)>& where) {
  return emit_impl(&where, nullptr);
}

std::vector<int> VectorCodegen::emit_on(const std::vector<int>& leaf_regs) { return emit_impl(nullptr, &leaf_regs); }

std::vector<int> VectorCodegen::emit_impl(const std::function<LeafLocation(int leaf)>* where,
                                          const std::vector<int>* leaf_regs) {
  std::vector<int> reg(e_.nodes.size(), -1);
  auto borrowed = [&](size_t k) { return leaf_regs && e_.nodes[k].kind == ExprNode::Kind::kLeaf; };
  for (size_t k = 0; k < e_.nodes.size(); ++k) {
    if (!needed_[k]) continue;
    const ExprNode& n = e_.nodes[k];
    if (borrowed(k)) {
      reg[k] = (*leaf_regs)[static_cast<size_t>(n.leaf)];
      continue;
    }
    int r = regs_.take();
    switch (n.kind) {
      case ExprNode::Kind::kLeaf: {
        LeafLocation loc = (*where)(n.leaf);
        pb_.vld(r, loc.region, loc.offset, loc.row_stride, memory_dtype(n.type));
        if (n.type == PrimitiveType::kPred) {  // 0 / 1 in memory, masks in registers
          int zero = regs_.take();
          pb_.vimm(zero, 0);
          pb_.emit(Opcode::kVcmp, DType::kU32, {r, r, zero, kNe});
          regs_.give(zero);
        }
        break;
      }
      case ExprNode::Kind::kConstant: pb_.vimm(r, n.bits); break;
      case ExprNode::Kind::kOp: {
        std::vector<int> src;
        for (int o : n.operands) src.push_back(reg[static_cast<size_t>(o)]);
        emit_op(n, r, src);
        break;
      }
    }
    reg[k] = r;
    std::vector<int> done;
    for (int o : n.operands)
      if (last_use_[static_cast<size_t>(o)] == k && !is_root_[static_cast<size_t>(o)] &&
          !borrowed(static_cast<size_t>(o)) && std::find(done.begin(), done.end(), o) == done.end()) {
        regs_.give(reg[static_cast<size_t>(o)]);
        done.push_back(o);
      }
  }
  std::vector<int> out;
  for (int root : roots_) {
    int r = reg[static_cast<size_t>(root)];
    if (borrowed(static_cast<size_t>(root))) {
      int copy = regs_.take();
      vop(pb_, Opcode::kVor, DType::kU32, copy, r, r);
      r = copy;
    }
    out.push_back(r);
  }
  return out;
}

void VectorCodegen::give_back(const std::vector<int>& regs) {
  std::vector<int> done;
  for (int r : regs)
    if (std::find(done.begin(), done.end(), r) == done.end()) {
      regs_.give(r);
      done.push_back(r);
    }
}

void VectorCodegen::emit_op(const ExprNode& n, int dst, const std::vector<int>& src) {
  const ir::Instruction& origin = *n.origin;
  const PrimitiveType t = n.type;
  const PrimitiveType ot = e_.nodes[static_cast<size_t>(n.operands[0])].type;
  const DType dt = lane(n, t);
  auto no_pred = [&] {
    if (t == PrimitiveType::kPred) unsupported(origin, "arithmetic on pred");
  };
  auto float_only = [&] {
    if (!ir::is_float(t)) unsupported(origin, fmt::format("on {}", ir::type_name(t)));
  };
  auto with_temp = [&](auto&& f) {
    int tmp = regs_.take();
    f(tmp);
    regs_.give(tmp);
  };
  // reg's low `width` bits, zero- or sign-extended to the lane's 32.
  auto zero_extend = [&](int reg, int width) {
    with_temp([&](int mask) {
      pb_.vimm(mask, (1u << width) - 1);
      vop(pb_, Opcode::kVand, DType::kU32, reg, reg, mask);
    });
  };
  auto sign_extend = [&](int reg, int width) {
    with_temp([&](int by) {
      pb_.vimm(by, static_cast<uint32_t>(32 - width));
      vop(pb_, Opcode::kVshl, DType::kU32, reg, reg, by);
      vop(pb_, Opcode::kVshra, DType::kU32, reg, reg, by);
    });
  };
  // dst = probe == value ? then : dst (k: scratch).
  auto where_equals = [&](int probe, float value, int then, int k) {
    pb_.vimm(k, std::bit_cast<uint32_t>(value));
    pb_.emit(Opcode::kVcmp, dt, {k, probe, k, kEq});
    pb_.emit(Opcode::kVsel, DType::kU32, {dst, k, then, dst});
  };
  // The composed functions compute in f32 (16-bit floats are held so); their result
  // rounds to the op's type once, as the evaluator's does.
  const DType f32 = DType::kF32;
  auto to_lane_type = [&] {
    if (dt != f32) pb_.emit(Opcode::kVcvt, dt, {dst, dst, static_cast<int64_t>(f32)});
  };
  // dst (not negative) takes src[0]'s sign bit (k: scratch).
  auto sign_of_x = [&](int k) {
    pb_.vimm(k, 0x80000000u);
    vop(pb_, Opcode::kVand, DType::kU32, k, src[0], k);
    vop(pb_, Opcode::kVor, DType::kU32, dst, dst, k);
  };
  switch (n.opcode) {
    case ir::Opcode::kAdd: no_pred(); return vop(pb_, Opcode::kVadd, dt, dst, src[0], src[1]);
    case ir::Opcode::kSubtract: no_pred(); return vop(pb_, Opcode::kVsub, dt, dst, src[0], src[1]);
    case ir::Opcode::kMultiply: no_pred(); return vop(pb_, Opcode::kVmul, dt, dst, src[0], src[1]);
    case ir::Opcode::kDivide: no_pred(); return vop(pb_, Opcode::kVdiv, dt, dst, src[0], src[1]);
    case ir::Opcode::kMaximum: no_pred(); return vop(pb_, Opcode::kVmax, dt, dst, src[0], src[1]);
    case ir::Opcode::kMinimum: no_pred(); return vop(pb_, Opcode::kVmin, dt, dst, src[0], src[1]);
    case ir::Opcode::kPower: no_pred(); return vop(pb_, Opcode::kVpow, dt, dst, src[0], src[1]);
    case ir::Opcode::kRemainder:
      // Integer remainder as a - b * (a / b): the vector unit's division by zero gives
      // all ones and so a % 0 = a, and INT_MIN % -1 wraps to 0, as XLA defines them.
      if (ir::is_float(t)) return float_remainder(dst, src[0], src[1]);
      if (!ir::is_integral(t)) unsupported(origin, fmt::format("on {}", ir::type_name(t)));
      vop(pb_, Opcode::kVdiv, dt, dst, src[0], src[1]);
      vop(pb_, Opcode::kVmul, dt, dst, src[1], dst);
      return vop(pb_, Opcode::kVsub, dt, dst, src[0], dst);
    case ir::Opcode::kAnd: return vop(pb_, Opcode::kVand, DType::kU32, dst, src[0], src[1]);
    case ir::Opcode::kOr: return vop(pb_, Opcode::kVor, DType::kU32, dst, src[0], src[1]);
    case ir::Opcode::kXor: return vop(pb_, Opcode::kVxor, DType::kU32, dst, src[0], src[1]);
    case ir::Opcode::kShiftLeft:
    case ir::Opcode::kShiftRightLogical:
    case ir::Opcode::kShiftRightArithmetic: {
      // Narrower integers live extended in 32-bit lanes: a logical right shift first
      // drops the extension of a signed value, an arithmetic one first extends an
      // unsigned value's sign, and the result is extended again from its width. Shift
      // amounts are unsigned in XLA; a narrow amount of the width or more (a negative one
      // extends to 2^32 - k) shifts every bit out (or fills with the sign), as in 32 bits.
      const int width = ir::type_bit_width(t);
      if (!ir::is_integral(t) || width > 32) unsupported(origin, fmt::format("on {}", ir::type_name(t)));
      const Opcode op = n.opcode == ir::Opcode::kShiftLeft           ? Opcode::kVshl
                        : n.opcode == ir::Opcode::kShiftRightLogical ? Opcode::kVshrl
                                                                     : Opcode::kVshra;
      if (width == 32) return vop(pb_, op, DType::kU32, dst, src[0], src[1]);
      const bool is_signed = ir::is_signed_int(t);
      vop(pb_, Opcode::kVor, DType::kU32, dst, src[0], src[0]);
      if (op == Opcode::kVshrl && is_signed) zero_extend(dst, width);
      if (op == Opcode::kVshra && !is_signed) sign_extend(dst, width);
      vop(pb_, op, DType::kU32, dst, dst, src[1]);
      return is_signed ? sign_extend(dst, width) : zero_extend(dst, width);
    }
    case ir::Opcode::kPopcnt:
    case ir::Opcode::kClz: {
      // On the value's own bits (zero-extended from its width): count-leading-zeros is
      // the width less the population count of the value with every bit below its
      // highest set bit set too (x |= x >> 1, 2, 4, 8, 16); the count adds bits in pairs,
      // nibbles and bytes, then sums the bytes with one multiply.
      const int width = ir::type_bit_width(t);
      if (!ir::is_integral(t) || width > 32) unsupported(origin, fmt::format("on {}", ir::type_name(t)));
      const int k = regs_.take(), m = regs_.take();
      auto shifted = [&](Opcode op, int from, uint32_t by) {  // k = from shifted by `by`
        pb_.vimm(k, by);
        vop(pb_, op, DType::kU32, k, from, k);
      };
      auto masked = [&](int reg, uint32_t mask) {  // reg &= mask
        pb_.vimm(m, mask);
        vop(pb_, Opcode::kVand, DType::kU32, reg, reg, m);
      };
      vop(pb_, Opcode::kVor, DType::kU32, dst, src[0], src[0]);
      if (width < 32) zero_extend(dst, width);
      if (n.opcode == ir::Opcode::kClz)
        for (uint32_t by = 1; by < static_cast<uint32_t>(width); by *= 2) {
          shifted(Opcode::kVshrl, dst, by);
          vop(pb_, Opcode::kVor, DType::kU32, dst, dst, k);
        }
      shifted(Opcode::kVshrl, dst, 1);
      masked(k, 0x55555555u);
      vop(pb_, Opcode::kVsub, DType::kU32, dst, dst, k);
      shifted(Opcode::kVshrl, dst, 2);
      masked(k, 0x33333333u);
      masked(dst, 0x33333333u);
      vop(pb_, Opcode::kVadd, DType::kU32, dst, dst, k);
      shifted(Opcode::kVshrl, dst, 4);
      vop(pb_, Opcode::kVadd, DType::kU32, dst, dst, k);
      masked(dst, 0x0F0F0F0Fu);
      pb_.vimm(m, 0x01010101u);
      vop(pb_, Opcode::kVmul, DType::kU32, dst, dst, m);
      pb_.vimm(m, 24);
      vop(pb_, Opcode::kVshrl, DType::kU32, dst, dst, m);
      if (n.opcode == ir::Opcode::kClz) {
        pb_.vimm(m, static_cast<uint32_t>(width));
        vop(pb_, Opcode::kVsub, DType::kU32, dst, m, dst);
      }
      regs_.give(k);
      regs_.give(m);
      return;
    }
    case ir::Opcode::kNot:
      vop(pb_, Opcode::kVnot, DType::kU32, dst, src[0]);
      if (t == PrimitiveType::kU8 || t == PrimitiveType::kU16) zero_extend(dst, ir::type_bit_width(t));  // keep it so
      return;
    case ir::Opcode::kNegate: no_pred(); return vop(pb_, Opcode::kVneg, dt, dst, src[0]);
    case ir::Opcode::kAbs: no_pred(); return vop(pb_, Opcode::kVabs, dt, dst, src[0]);
    case ir::Opcode::kExp: float_only(); return vop(pb_, Opcode::kVexp, dt, dst, src[0]);
    case ir::Opcode::kLog: float_only(); return vop(pb_, Opcode::kVlog, dt, dst, src[0]);
    case ir::Opcode::kSqrt: float_only(); return vop(pb_, Opcode::kVsqrt, dt, dst, src[0]);
    case ir::Opcode::kRsqrt: float_only(); return vop(pb_, Opcode::kVrsqrt, dt, dst, src[0]);
    case ir::Opcode::kTanh: float_only(); return vop(pb_, Opcode::kVtanh, dt, dst, src[0]);
    case ir::Opcode::kLogistic: float_only(); return vop(pb_, Opcode::kVlogistic, dt, dst, src[0]);
    case ir::Opcode::kFloor: float_only(); return vop(pb_, Opcode::kVfloor, dt, dst, src[0]);
    case ir::Opcode::kCeil: float_only(); return vop(pb_, Opcode::kVceil, dt, dst, src[0]);
    case ir::Opcode::kSign: {
      // x > 0 ? 1 : (x < 0 ? -1 : x): keeps +-0 and NaN as they are.
      no_pred();
      if (ir::is_unsigned_int(t)) unsupported(origin, fmt::format("on {}", ir::type_name(t)));
      bool f = ir::is_float(t);
      with_temp([&](int zero) {
        with_temp([&](int mask) {
          pb_.vimm(zero, 0);
          pb_.emit(Opcode::kVcmp, dt, {mask, src[0], zero, kGt});
          pb_.vimm(zero, f ? std::bit_cast<uint32_t>(1.0f) : 1u);
          pb_.emit(Opcode::kVsel, dt, {dst, mask, zero, src[0]});
          pb_.vimm(zero, 0);
          pb_.emit(Opcode::kVcmp, dt, {mask, src[0], zero, kLt});
          pb_.vimm(zero, f ? std::bit_cast<uint32_t>(-1.0f) : 0xFFFFFFFFu);
          pb_.emit(Opcode::kVsel, dt, {dst, mask, zero, dst});
        });
      });
      return;
    }
    case ir::Opcode::kRoundNearestAfz:
    case ir::Opcode::kRoundNearestEven: {
      // On |x|: f = floor, d = |x| - f (exact); f + 1 where d > 0.5, and where d is 0.5
      // away from zero, or to even where f is odd; then x's sign bit. NaN and
      // infinities give d NaN, integral values (all from 2^23 on) d 0: they stay as they are.
      float_only();
      const int a = regs_.take(), m = regs_.take(), k = regs_.take();
      vop(pb_, Opcode::kVabs, dt, a, src[0]);
      vop(pb_, Opcode::kVfloor, dt, dst, a);
      vop(pb_, Opcode::kVsub, dt, a, a, dst);
      pb_.vimm(k, std::bit_cast<uint32_t>(0.5f));
      if (n.opcode == ir::Opcode::kRoundNearestAfz) {
        pb_.emit(Opcode::kVcmp, dt, {m, a, k, kGe});
      } else {
        pb_.emit(Opcode::kVcmp, dt, {m, a, k, kGt});
        pb_.emit(Opcode::kVcmp, dt, {a, a, k, kEq});  // a tie
        vop(pb_, Opcode::kVmul, dt, k, dst, k);      // f odd: f - 2 floor(f / 2) > 0
        vop(pb_, Opcode::kVfloor, dt, k, k);
        vop(pb_, Opcode::kVadd, dt, k, k, k);
        vop(pb_, Opcode::kVsub, dt, k, dst, k);
        with_temp([&](int zero) {
          pb_.vimm(zero, 0);
          pb_.emit(Opcode::kVcmp, dt, {k, k, zero, kGt});
        });
        vop(pb_, Opcode::kVand, DType::kU32, a, a, k);
        vop(pb_, Opcode::kVor, DType::kU32, m, m, a);
      }
      pb_.vimm(k, std::bit_cast<uint32_t>(1.0f));
      vop(pb_, Opcode::kVadd, dt, a, dst, k);
      pb_.emit(Opcode::kVsel, DType::kU32, {dst, m, a, dst});
      sign_of_x(k);
      regs_.give(a);
      regs_.give(m);
      regs_.give(k);
      return;
    }
    case ir::Opcode::kExpm1: {
      // Kahan's: (e^x - 1) x / log(e^x), exact where e^x rounds to 1 (then x), e^x - 1
      // to -1 (then -1) or e^x to infinity.
      float_only();
      const int u = regs_.take(), d = regs_.take(), k = regs_.take();
      vop(pb_, Opcode::kVexp, dt, u, src[0]);
      pb_.vimm(k, std::bit_cast<uint32_t>(1.0f));
      vop(pb_, Opcode::kVsub, dt, d, u, k);
      vop(pb_, Opcode::kVlog, dt, k, u);
      vop(pb_, Opcode::kVdiv, dt, k, src[0], k);
      vop(pb_, Opcode::kVmul, dt, dst, d, k);
      where_equals(u, 1.0f, src[0], k);
      where_equals(u, std::numeric_limits<float>::infinity(), u, k);
      where_equals(d, -1.0f, d, k);
      regs_.give(u);
      regs_.give(d);
      regs_.give(k);
      return;
    }
    case ir::Opcode::kLog1p: {
      // Kahan's: log(1 + x) x / ((1 + x) - 1), exact where 1 + x rounds to 1 (then x) or
      // to infinity.
      float_only();
      const int u = regs_.take(), q = regs_.take(), k = regs_.take();
      pb_.vimm(k, std::bit_cast<uint32_t>(1.0f));
      vop(pb_, Opcode::kVadd, dt, u, src[0], k);
      vop(pb_, Opcode::kVsub, dt, q, u, k);
      vop(pb_, Opcode::kVdiv, dt, q, src[0], q);
      vop(pb_, Opcode::kVlog, dt, k, u);
      vop(pb_, Opcode::kVmul, dt, dst, k, q);
      where_equals(u, 1.0f, src[0], k);
      where_equals(u, std::numeric_limits<float>::infinity(), u, k);
      regs_.give(u);
      regs_.give(q);
      regs_.give(k);
      return;
    }
    case ir::Opcode::kCbrt: {
      // r = |x|^(1/3) (1/3 rounded to f32 costs |log x| x 1e-8 of relative error), then a
      // Newton step (2 r + |x| / r^2) / 3 (none where r^2 is 0 or infinite), with x's sign
      // bit.
      float_only();
      const int a = regs_.take(), m = regs_.take(), k = regs_.take();
      vop(pb_, Opcode::kVabs, dt, a, src[0]);
      pb_.vimm(k, std::bit_cast<uint32_t>(1.0f / 3.0f));
      vop(pb_, Opcode::kVpow, dt, dst, a, k);
      vop(pb_, Opcode::kVmul, dt, k, dst, dst);
      vop(pb_, Opcode::kVdiv, dt, m, a, k);
      vop(pb_, Opcode::kVadd, dt, m, m, dst);
      vop(pb_, Opcode::kVadd, dt, m, m, dst);
      pb_.vimm(a, std::bit_cast<uint32_t>(3.0f));
      vop(pb_, Opcode::kVdiv, dt, m, m, a);
      with_temp([&](int keep) {  // r^2 is 0 or infinite: r as it is
        pb_.vimm(a, 0);
        pb_.emit(Opcode::kVcmp, dt, {keep, k, a, kEq});
        pb_.vimm(a, std::bit_cast<uint32_t>(std::numeric_limits<float>::infinity()));
        pb_.emit(Opcode::kVcmp, dt, {k, k, a, kEq});
        vop(pb_, Opcode::kVor, DType::kU32, keep, keep, k);
        pb_.emit(Opcode::kVsel, DType::kU32, {dst, keep, dst, m});
      });
      sign_of_x(k);
      regs_.give(a);
      regs_.give(m);
      regs_.give(k);
      return;
    }
    case ir::Opcode::kErf:
      float_only();
      erf(dst, src[0]);
      return to_lane_type();
    case ir::Opcode::kAtan2:
      float_only();
      atan2(dst, src[0], src[1]);
      return to_lane_type();
    case ir::Opcode::kSin:
    case ir::Opcode::kCos:
    case ir::Opcode::kTan:
      float_only();
      trigonometric(dst, src[0], n.opcode);
      return to_lane_type();
    case ir::Opcode::kIsFinite:
      // x - x is 0 for finite x and NaN for infinities and NaN.
      with_temp([&](int zero) {
        vop(pb_, Opcode::kVsub, DType::kF32, dst, src[0], src[0]);
        pb_.vimm(zero, 0);
        pb_.emit(Opcode::kVcmp, DType::kF32, {dst, dst, zero, kEq});
      });
      return;
    case ir::Opcode::kCompare: {
      DType ct = lane(n, ot);
      if (ot != PrimitiveType::kPred) {
        auto ctype = origin.attrs().comparison_type;
        if (ctype == ir::ComparisonType::kSigned && !ir::is_signed_int(ot)) ct = DType::kS32;
        if (ctype == ir::ComparisonType::kUnsigned && !ir::is_unsigned_int(ot)) ct = DType::kU32;
      }
      if (origin.attrs().comparison_type == ir::ComparisonType::kTotalOrder && ir::is_float(ot)) {
        // IEEE totalOrder as signed order of the f32 bits with the magnitude bits of
        // negative values flipped (16-bit floats held as f32 keep their order).
        const int a = regs_.take(), b = regs_.take();
        auto key = [&](int to, int from) {  // to = from ^ ((from >>a 31) & 0x7FFFFFFF)
          pb_.vimm(dst, 31);
          vop(pb_, Opcode::kVshra, DType::kU32, to, from, dst);
          pb_.vimm(dst, 0x7FFFFFFFu);
          vop(pb_, Opcode::kVand, DType::kU32, to, to, dst);
          vop(pb_, Opcode::kVxor, DType::kU32, to, to, from);
        };
        key(a, src[0]);
        key(b, src[1]);
        pb_.emit(Opcode::kVcmp, DType::kS32, {dst, a, b, compare_imm(n.direction)});
        regs_.give(a);
        regs_.give(b);
        return;
      }
      pb_.emit(Opcode::kVcmp, ct, {dst, src[0], src[1], compare_imm(n.direction)});
      return;
    }
    case ir::Opcode::kSelect: pb_.emit(Opcode::kVsel, DType::kU32, {dst, src[0], src[1], src[2]}); return;
    case ir::Opcode::kClamp: {
      no_pred();
      vop(pb_, Opcode::kVmax, dt, dst, src[1], src[0]);
      return vop(pb_, Opcode::kVmin, dt, dst, dst, src[2]);
    }
    case ir::Opcode::kConvert: {
      if (ot == PrimitiveType::kPred) {
        with_temp([&](int one) {
          pb_.vimm(one, 1);
          vop(pb_, Opcode::kVand, DType::kU32, dst, src[0], one);
        });
        if (t != PrimitiveType::kU32 && t != PrimitiveType::kS32 && t != PrimitiveType::kPred)
          pb_.emit(Opcode::kVcvt, dt, {dst, dst, static_cast<int64_t>(DType::kU32)});
        return;
      }
      DType from = lane(e_.nodes[static_cast<size_t>(n.operands[0])], ot);
      if (t == PrimitiveType::kPred) {
        with_temp([&](int zero) {
          pb_.vimm(zero, 0);
          pb_.emit(Opcode::kVcmp, from, {dst, src[0], zero, kNe});
        });
        return;
      }
      // 16-bit floats are held as f32: converting from one reads f32 lanes.
      if (is_16bit_float(ot)) from = DType::kF32;
      pb_.emit(Opcode::kVcvt, dt, {dst, src[0], static_cast<int64_t>(from)});
      return;
    }
    case ir::Opcode::kBitcastConvert: return vop(pb_, Opcode::kVor, DType::kU32, dst, src[0], src[0]);
    default: unsupported(origin);
  }
}

}  // namespace podsim::tpu
