// The functions the vector unit has no instruction for, composed of its instructions
// (VectorCodegen members, called by emit_op in vector_codegen.cc): erf, atan2, sine,
// cosine and tangent (polynomials fitted by weighted least squares on Chebyshev nodes,
// in double with NumPy), and fmod exactly. All compute in f32 lanes.
#include <array>
#include <bit>
#include <limits>
#include <numbers>
#include <span>

#include "compiler/tpu/vector_codegen.h"

namespace podsim::tpu {
namespace {

using isa::DType;
using isa::Opcode;

// vcmp immediates follow ir::ComparisonDirection's order.
constexpr auto kEq = static_cast<int64_t>(ir::ComparisonDirection::kEq);
constexpr auto kNe = static_cast<int64_t>(ir::ComparisonDirection::kNe);
constexpr auto kLt = static_cast<int64_t>(ir::ComparisonDirection::kLt);
constexpr auto kLe = static_cast<int64_t>(ir::ComparisonDirection::kLe);
constexpr auto kGt = static_cast<int64_t>(ir::ComparisonDirection::kGt);
constexpr auto kGe = static_cast<int64_t>(ir::ComparisonDirection::kGe);
constexpr DType f32 = DType::kF32;

// out = c[0] + s (c[1] + s (c[2] + ...)) in f32 lanes (Horner's; k: scratch; all three
// distinct).
void polynomial(ProgramBuilder& pb, int out, std::span<const float> c, int s, int k) {
  pb.vimm(out, std::bit_cast<uint32_t>(c.back()));
  for (size_t i = c.size() - 1; i-- > 0;) {
    pb.emit(Opcode::kVmul, f32, {out, out, s});
    pb.vimm(k, std::bit_cast<uint32_t>(c[i]));
    pb.emit(Opcode::kVadd, f32, {out, out, k});
  }
}

// dst (not negative) takes from's sign bit (k: scratch).
void with_sign_of(ProgramBuilder& pb, int dst, int from, int k) {
  pb.vimm(k, 0x80000000u);
  pb.emit(Opcode::kVand, DType::kU32, {k, from, k});
  pb.emit(Opcode::kVor, DType::kU32, {dst, dst, k});
}

}  // namespace

// |x| < 1: x P(x^2); 1 <= |x|: 1 - e^(-x^2) R(|x| - 2.5) on |x| clamped to 4 (from
// there erf rounds to 1), with x's sign bit; NaN stays NaN. P and R are least-squares
// fits (relative error weighted, Chebyshev nodes) of erf(x) / x and erfc(x) e^(x^2),
// 2.2 and 1.5 ulps at most in f32 (elementwise_test holds 4).
void VectorCodegen::erf(int dst, int x) {
  static constexpr float kSmall[] = {1.1283791065e+00f,  -3.7612318993e-01f, 1.1280130595e-01f,
                                     -2.6709949598e-02f, 4.9160234630e-03f,  -5.6253961520e-04f};
  static constexpr float kLarge[] = {2.1080636978e-01f,  -7.4347555637e-02f, 2.4937804788e-02f,
                                     -7.9996092245e-03f, 2.4674453307e-03f,  -7.3856639210e-04f,
                                     2.1110837406e-04f,  -5.3845422372e-05f, 1.5317162251e-05f,
                                     -6.3341831265e-06f, 1.4981338836e-06f};
  const int a = regs_.take(), p = regs_.take(), q = regs_.take(), k = regs_.take();
  vop(pb_, Opcode::kVabs, f32, a, x);
  vop(pb_, Opcode::kVmul, f32, q, a, a);
  polynomial(pb_, p, kSmall, q, k);
  vop(pb_, Opcode::kVmul, f32, p, p, a);  // erf(|x|) for |x| < 1
  pb_.vimm(k, std::bit_cast<uint32_t>(4.0f));
  vop(pb_, Opcode::kVmin, f32, a, a, k);
  vop(pb_, Opcode::kVmul, f32, dst, a, a);
  vop(pb_, Opcode::kVneg, f32, dst, dst);
  vop(pb_, Opcode::kVexp, f32, dst, dst);  // e^(-x^2)
  pb_.vimm(k, std::bit_cast<uint32_t>(2.5f));
  vop(pb_, Opcode::kVsub, f32, q, a, k);
  const int r = regs_.take();
  polynomial(pb_, r, kLarge, q, k);
  vop(pb_, Opcode::kVmul, f32, dst, dst, r);
  pb_.vimm(r, std::bit_cast<uint32_t>(1.0f));
  vop(pb_, Opcode::kVsub, f32, dst, r, dst);
  pb_.emit(Opcode::kVcmp, f32, {r, a, r, kLt});
  pb_.emit(Opcode::kVsel, DType::kU32, {dst, r, p, dst});
  regs_.give(r);
  with_sign_of(pb_, dst, x, k);
  pb_.emit(Opcode::kVcmp, f32, {k, x, x, kNe});  // NaN stays NaN
  pb_.emit(Opcode::kVsel, DType::kU32, {dst, k, x, dst});
  for (int reg : {a, p, q, k}) regs_.give(reg);
}

// t = min(|x|, |y|) / max(|x|, |y|) (0 for two zeros, 1 for two infinities); above
// tan(pi / 8), atan t = pi / 4 + atan((t - 1) / (t + 1)); atan u = u + u^3 Q(u^2) (a
// least-squares fit, as for erf); then pi / 2 - r where |y| > |x|, pi - r where x's
// sign bit is set, and y's sign bit. NaN in either gives NaN. 2.9 ulps at most in f32
// (10^6 random pairs at each of five scales against arctan2 in f64; elementwise_test
// holds 4).
void VectorCodegen::atan2(int dst, int y, int x) {
  static constexpr float kQ[] = {-3.3333331347e-01f, 1.9999536872e-01f, -1.4263844490e-01f,
                                 1.0742709041e-01f, -6.4489662647e-02f};
  const int a = regs_.take(), b = regs_.take(), m = regs_.take(), k = regs_.take(),
            u = regs_.take();
  vop(pb_, Opcode::kVabs, f32, a, x);
  vop(pb_, Opcode::kVabs, f32, b, y);
  vop(pb_, Opcode::kVmax, f32, m, a, b);
  vop(pb_, Opcode::kVmin, f32, dst, a, b);
  vop(pb_, Opcode::kVdiv, f32, dst, dst, m);
  pb_.emit(Opcode::kVcmp, f32, {b, b, a, kGt});  // b: |y| > |x|, from here on
  pb_.vimm(a, std::bit_cast<uint32_t>(std::numeric_limits<float>::infinity()));
  pb_.emit(Opcode::kVcmp, f32, {m, m, a, kEq});
  pb_.vimm(a, std::bit_cast<uint32_t>(1.0f));
  pb_.emit(Opcode::kVsel, DType::kU32, {m, m, a, m});  // 1 where max is infinite, else 0
  pb_.emit(Opcode::kVcmp, f32, {a, dst, dst, kNe});
  pb_.emit(Opcode::kVsel, DType::kU32, {dst, a, m, dst});
  pb_.vimm(k, std::bit_cast<uint32_t>(0.41421356f));
  pb_.emit(Opcode::kVcmp, f32, {m, dst, k, kGt});  // m: reduced by pi / 4
  pb_.vimm(k, std::bit_cast<uint32_t>(1.0f));
  vop(pb_, Opcode::kVsub, f32, a, dst, k);
  vop(pb_, Opcode::kVadd, f32, k, dst, k);
  vop(pb_, Opcode::kVdiv, f32, a, a, k);
  pb_.emit(Opcode::kVsel, DType::kU32, {dst, m, a, dst});
  vop(pb_, Opcode::kVmul, f32, u, dst, dst);
  polynomial(pb_, a, kQ, u, k);
  vop(pb_, Opcode::kVmul, f32, a, a, u);
  vop(pb_, Opcode::kVmul, f32, a, a, dst);
  vop(pb_, Opcode::kVadd, f32, dst, dst, a);
  auto where = [&](int mask, float c, bool minus) {  // dst = mask ? c + dst (c - dst) : dst
    pb_.vimm(k, std::bit_cast<uint32_t>(c));
    vop(pb_, minus ? Opcode::kVsub : Opcode::kVadd, f32, a, k, dst);
    pb_.emit(Opcode::kVsel, DType::kU32, {dst, mask, a, dst});
  };
  where(m, std::numbers::pi_v<float> / 4, false);
  where(b, std::numbers::pi_v<float> / 2, true);
  pb_.vimm(k, 0);
  pb_.emit(Opcode::kVcmp, DType::kS32, {m, x, k, kLt});  // x's sign bit
  where(m, std::numbers::pi_v<float>, true);
  with_sign_of(pb_, dst, y, k);
  pb_.emit(Opcode::kVcmp, f32, {k, x, x, kNe});
  pb_.emit(Opcode::kVcmp, f32, {m, y, y, kNe});
  vop(pb_, Opcode::kVor, DType::kU32, k, k, m);
  vop(pb_, Opcode::kVadd, f32, a, x, y);  // NaN where either is
  pb_.emit(Opcode::kVsel, DType::kU32, {dst, k, a, dst});
  for (int r : {a, b, m, k, u}) regs_.give(r);
}

// fmod as C defines it (16-bit floats held as f32 too: their fmod is exact in f32). A
// finite float is m 2^(e - 150) with an integer m < 2^24 and biased exponent e >= 1
// (subnormals: e = 1, no implicit bit), so with d = ex - ey >= 0, fmod(|x|, |y|) =
// (mx 2^d mod my) 2^(ey - 150): the remainder taken 8 bits of d at a time, (r << 8) % my
// fitting u32 (r < my < 2^24), 32 steps covering any d (at most 253); the result, below
// my, is exact in f32 and scaled by a power of two built from its bits (a subnormal one
// below 2^-126). d < 0 (|x| < |y|, y infinite) gives x; x infinite, y 0 or NaN give NaN.
void VectorCodegen::float_remainder(int dst, int x, int y) {
  const DType u = DType::kU32, s = DType::kS32;
  const int mx = regs_.take(), ex = regs_.take(), my = regs_.take(), ey = regs_.take(),
            k = regs_.take(), t = regs_.take();
  auto constant = [&](int reg, uint32_t bits) { pb_.vimm(reg, bits); };
  auto parts = [&](int from, int m, int e) {  // m: mantissa, e: biased exponent (>= 1)
    constant(k, 0x7FFFFFFFu);
    vop(pb_, Opcode::kVand, u, m, from, k);
    constant(k, 23);
    vop(pb_, Opcode::kVshrl, u, e, m, k);
    constant(k, 0x7FFFFFu);
    vop(pb_, Opcode::kVand, u, m, m, k);
    constant(k, 0);
    pb_.emit(Opcode::kVcmp, u, {t, e, k, kGt});  // normal: the implicit bit
    constant(k, 0x800000u);
    vop(pb_, Opcode::kVand, u, t, t, k);
    vop(pb_, Opcode::kVor, u, m, m, t);
    constant(k, 1);
    vop(pb_, Opcode::kVmax, u, e, e, k);
  };
  auto remainder = [&](int of) {  // mx = of % my
    vop(pb_, Opcode::kVdiv, u, t, of, my);
    vop(pb_, Opcode::kVmul, u, t, t, my);
    vop(pb_, Opcode::kVsub, u, mx, of, t);
  };
  parts(x, mx, ex);
  parts(y, my, ey);
  vop(pb_, Opcode::kVsub, s, ex, ex, ey);  // ex: d from here on
  remainder(mx);
  for (int step = 0; step < 32; ++step) {
    constant(k, 8);
    vop(pb_, Opcode::kVmin, s, dst, ex, k);
    constant(k, 0);
    vop(pb_, Opcode::kVmax, s, dst, dst, k);  // this step's bits: clamp(d, 0, 8)
    vop(pb_, Opcode::kVsub, s, ex, ex, dst);
    vop(pb_, Opcode::kVshl, u, dst, mx, dst);
    remainder(dst);
  }
  // 2^(ey - 150): exponent bits ey - 23 from ey = 24 on, else the subnormal 1 << (ey - 1).
  constant(k, 23);
  vop(pb_, Opcode::kVsub, u, t, ey, k);
  constant(k, 23);
  vop(pb_, Opcode::kVshl, u, t, t, k);
  constant(k, 1);
  vop(pb_, Opcode::kVsub, u, my, ey, k);
  vop(pb_, Opcode::kVshl, u, my, k, my);
  constant(k, 24);
  pb_.emit(Opcode::kVcmp, u, {ey, ey, k, kGe});
  pb_.emit(Opcode::kVsel, u, {t, ey, t, my});
  pb_.emit(Opcode::kVcvt, DType::kF32, {dst, mx, static_cast<int64_t>(u)});
  vop(pb_, Opcode::kVmul, DType::kF32, dst, dst, t);
  constant(k, 0x80000000u);  // x's sign
  vop(pb_, Opcode::kVand, u, k, x, k);
  vop(pb_, Opcode::kVor, u, dst, dst, k);
  constant(k, 0);
  pb_.emit(Opcode::kVcmp, s, {t, ex, k, kLt});  // d < 0 (the steps left it so): x
  pb_.emit(Opcode::kVsel, u, {dst, t, x, dst});
  // NaN: x infinite or NaN, y NaN or 0.
  constant(k, 0x7FFFFFFFu);
  vop(pb_, Opcode::kVand, u, mx, x, k);
  vop(pb_, Opcode::kVand, u, my, y, k);
  constant(k, 0x7F800000u);
  pb_.emit(Opcode::kVcmp, u, {t, mx, k, kGe});
  pb_.emit(Opcode::kVcmp, u, {mx, my, k, kGt});
  vop(pb_, Opcode::kVor, u, t, t, mx);
  constant(k, 0);
  pb_.emit(Opcode::kVcmp, u, {mx, my, k, kEq});
  vop(pb_, Opcode::kVor, u, t, t, mx);
  constant(k, 0x7FC00000u);
  pb_.emit(Opcode::kVsel, u, {dst, t, k, dst});
  for (int r : {mx, ex, my, ey, k, t}) regs_.give(r);
}

// Sine, cosine and tangent: |x| = m 2^(e - 23) (m < 2^24) is reduced by pi / 2 exactly
// enough for any f32 (Payne and Hanek's method in integers): the 96 bits of 2 / pi from
// fraction bit e - 24 on (bits above it make multiples of 4 quadrants; below, under
// 2^-71) times m, in 16-bit digits (the vector unit multiplies 32 x 32 -> 32 bits: 16-bit
// halves make exact products), leave the quadrant count mod 4 in two bits and 64 bits of
// fraction below them, rounded to the nearest quadrant (fraction in [-1/2, 1/2)), whose
// magnitude converts to f32 without cancellation and times pi / 2 is r in [-pi / 4,
// pi / 4]. Below pi / 4, r = |x|. Then sin r = r + r^3 S(r^2), cos r = 1 + r^2 C(r^2)
// (least-squares fits: 0.7 and 1.1 ulps), tan r = sin r / cos r, by quadrant and x's
// sign: sine and cosine within 2 ulps of the evaluator, tangent 4 (elementwise_test).
// Infinities and NaN give NaN.
void VectorCodegen::trigonometric(int dst, int x, ir::Opcode op) {
  const DType u = DType::kU32, s = DType::kS32, f = DType::kF32;
  // 2 / pi: a zero word (the integer part, for small exponents), then 224 fraction bits.
  static constexpr uint32_t kTwoOverPi[] = {0,          0xA2F9836E, 0x4E441529, 0xFC2757D1,
                                            0xF534DDC0, 0xDB629599, 0x3C439041, 0xFE5163AB};
  static constexpr float kSin[] = {-1.6666667163e-01f, 8.3333319053e-03f, -1.9840087043e-04f,
                                   2.7249864161e-06f};
  static constexpr float kCos[] = {-5.0e-01f, 4.1666649282e-02f, -1.3887579553e-03f,
                                   2.4462795409e-05f};
  // Registers are few (16 on small chips, shared with the rest of a fused kernel): each is
  // taken where its value starts and given back where it ends; dst is scratch until the end.
  const int k = regs_.take(), t = regs_.take(), m = regs_.take();
  auto imm = [&](int reg, uint32_t bits) { pb_.vimm(reg, bits); };
  auto op_imm = [&](Opcode o, DType d, int to, int from, uint32_t bits) {
    imm(k, bits);
    vop(pb_, o, d, to, from, k);
  };
  op_imm(Opcode::kVand, u, dst, x, 0x7FFFFFFFu);  // |x|'s bits
  op_imm(Opcode::kVand, u, m, dst, 0x7FFFFFu);
  op_imm(Opcode::kVor, u, m, m, 0x800000u);
  // The slice of 2 / pi: 96 bits from bit e + 7 of the padded table (fraction bit e - 24),
  // in words w[0] (most significant) .. w[2]; word j + i of the table chosen among the five
  // j can be.
  const int j = regs_.take(), sh = regs_.take(), next = regs_.take();
  op_imm(Opcode::kVshrl, u, j, dst, 23);
  op_imm(Opcode::kVsub, u, j, j, 127 - 7);
  op_imm(Opcode::kVmax, s, j, j, 0);  // (|x| below pi / 4 takes the other path)
  op_imm(Opcode::kVand, u, sh, j, 31);
  op_imm(Opcode::kVshrl, u, j, j, 5);
  auto table_word = [&](int to, int i) {
    imm(to, 0);
    for (int c = 0; c < 5; ++c) {
      imm(k, static_cast<uint32_t>(c));
      pb_.emit(Opcode::kVcmp, u, {t, j, k, kEq});
      imm(k, kTwoOverPi[c + i]);
      pb_.emit(Opcode::kVsel, u, {to, t, k, to});
    }
  };
  std::array<int, 3> w{};
  table_word(next, 0);
  for (int i = 0; i < 3; ++i) {  // w[i] = words i, i + 1 from bit sh on
    w[static_cast<size_t>(i)] = regs_.take();
    const int wi = w[static_cast<size_t>(i)];
    vop(pb_, Opcode::kVshl, u, wi, next, sh);
    table_word(next, i + 1);
    imm(dst, 32);  // next >> (32 - sh): a shift by 32 leaves 0
    vop(pb_, Opcode::kVsub, u, dst, dst, sh);
    vop(pb_, Opcode::kVshrl, u, t, next, dst);
    vop(pb_, Opcode::kVor, u, wi, wi, t);
  }
  for (int r : {j, sh, next}) regs_.give(r);
  // m x slice in 16-bit digits (products of 16-bit halves are exact in 32 bits); only
  // digits 2 .. 5 (bits 32 - 95) are kept: what the lower ones would carry is below
  // 2^-60 of a quadrant.
  std::array<int, 6> d{-1, -1, regs_.take(), regs_.take(), regs_.take(), regs_.take()};
  for (size_t c = 2; c < 6; ++c) imm(d[c], 0);
  const int half = regs_.take();
  auto add_at = [&](int digit, int value) {
    if (digit >= 2 && digit < 6)
      vop(pb_, Opcode::kVadd, u, d[static_cast<size_t>(digit)], d[static_cast<size_t>(digit)],
          value);
  };
  auto multiply_half = [&](int digit) {  // m x half, half at `digit`
    op_imm(Opcode::kVand, u, t, m, 0xFFFF);
    vop(pb_, Opcode::kVmul, u, t, t, half);  // < 2^32
    op_imm(Opcode::kVand, u, dst, t, 0xFFFF);
    add_at(digit, dst);
    op_imm(Opcode::kVshrl, u, dst, t, 16);
    add_at(digit + 1, dst);
    op_imm(Opcode::kVshrl, u, t, m, 16);
    vop(pb_, Opcode::kVmul, u, t, t, half);  // < 2^24
    op_imm(Opcode::kVand, u, dst, t, 0xFFFF);
    add_at(digit + 1, dst);
    op_imm(Opcode::kVshrl, u, dst, t, 16);
    add_at(digit + 2, dst);
  };
  for (int i = 0; i < 3; ++i) {
    const int wi = w[static_cast<size_t>(i)], digit = 2 * (2 - i);
    op_imm(Opcode::kVand, u, half, wi, 0xFFFF);
    multiply_half(digit);
    op_imm(Opcode::kVshrl, u, half, wi, 16);
    multiply_half(digit + 1);
    regs_.give(wi);
  }
  for (size_t c = 2; c < 5; ++c) {  // carries
    op_imm(Opcode::kVshrl, u, t, d[c], 16);
    vop(pb_, Opcode::kVadd, u, d[c + 1], d[c + 1], t);
    op_imm(Opcode::kVand, u, d[c], d[c], 0xFFFF);
  }
  // The binary point is below bit 94: quadrant bits 94-95, fraction hi = bits 93-62, lo =
  // bits 61-32 (and two zero bits).
  const int hi = half, lo = m;
  auto join = [&](int to, int top, int middle,
                  int bottom) {  // (top & 0x3FFF) << 18 | middle << 2 | bottom >> 14
    op_imm(Opcode::kVand, u, to, top, 0x3FFF);
    op_imm(Opcode::kVshl, u, to, to, 18);
    op_imm(Opcode::kVshl, u, t, middle, 2);
    vop(pb_, Opcode::kVor, u, to, to, t);
    if (bottom < 0) return;
    op_imm(Opcode::kVshrl, u, t, bottom, 14);
    vop(pb_, Opcode::kVor, u, to, to, t);
  };
  join(hi, d[5], d[4], d[3]);
  join(lo, d[3], d[2], -1);
  const int q = d[5], neg = d[4], a = d[3], sn = d[2];
  op_imm(Opcode::kVshrl, u, q, d[5], 14);
  // A fraction of 1/2 or more rounds to the next quadrant: (hi, lo) is then negative.
  imm(k, 0);
  pb_.emit(Opcode::kVcmp, s, {neg, hi, k, kLt});
  op_imm(Opcode::kVshrl, u, t, neg, 31);
  vop(pb_, Opcode::kVadd, u, q, q, t);
  // |(hi, lo)| where negative: ~hi + (lo == 0), -lo.
  vop(pb_, Opcode::kVnot, u, t, hi);
  imm(k, 0);
  pb_.emit(Opcode::kVcmp, u, {dst, lo, k, kEq});
  op_imm(Opcode::kVshrl, u, dst, dst, 31);
  vop(pb_, Opcode::kVadd, u, t, t, dst);
  pb_.emit(Opcode::kVsel, u, {hi, neg, t, hi});
  imm(k, 0);
  vop(pb_, Opcode::kVsub, u, t, k, lo);
  pb_.emit(Opcode::kVsel, u, {lo, neg, t, lo});
  // To f32: (hi & ~0xFF) is exact; (hi & 0xFF) + lo 2^-32 carries the rest.
  op_imm(Opcode::kVand, u, t, hi, 0xFFFFFF00u);
  pb_.emit(Opcode::kVcvt, f, {t, t, static_cast<int64_t>(u)});
  op_imm(Opcode::kVand, u, hi, hi, 0xFFu);
  pb_.emit(Opcode::kVcvt, f, {hi, hi, static_cast<int64_t>(u)});
  pb_.emit(Opcode::kVcvt, f, {lo, lo, static_cast<int64_t>(u)});
  op_imm(Opcode::kVmul, f, lo, lo, std::bit_cast<uint32_t>(0x1p-32f));
  vop(pb_, Opcode::kVadd, f, hi, hi, lo);
  vop(pb_, Opcode::kVadd, f, hi, t, hi);
  op_imm(Opcode::kVmul, f, hi, hi,
         std::bit_cast<uint32_t>(static_cast<float>(std::numbers::pi / 2 * 0x1p-32)));
  op_imm(Opcode::kVand, u, t, neg, 0x80000000u);
  vop(pb_, Opcode::kVxor, u, hi, hi, t);  // r
  // Below pi / 4: r = |x|, quadrant 0.
  op_imm(Opcode::kVand, u, a, x, 0x7FFFFFFFu);
  imm(k, std::bit_cast<uint32_t>(static_cast<float>(std::numbers::pi / 4)));
  pb_.emit(Opcode::kVcmp, f, {t, a, k, kLe});
  pb_.emit(Opcode::kVsel, u, {hi, t, a, hi});
  imm(k, 0);
  pb_.emit(Opcode::kVsel, u, {q, t, k, q});
  // sin r (sn) and cos r (cs, in neg).
  const int r = hi, r2 = lo, cs = neg;
  vop(pb_, Opcode::kVmul, f, r2, r, r);
  polynomial(pb_, sn, kSin, r2, k);
  vop(pb_, Opcode::kVmul, f, sn, sn, r2);
  vop(pb_, Opcode::kVmul, f, sn, sn, r);
  vop(pb_, Opcode::kVadd, f, sn, sn, r);
  polynomial(pb_, cs, kCos, r2, k);
  vop(pb_, Opcode::kVmul, f, cs, cs, r2);
  op_imm(Opcode::kVadd, f, cs, cs, std::bit_cast<uint32_t>(1.0f));
  // By quadrant: odd ones swap sin and cos; the sign bit flips as each function's does.
  op_imm(Opcode::kVand, u, t, q, 1);
  imm(k, 0);
  pb_.emit(Opcode::kVcmp, u, {t, t, k, kNe});
  const int sign = r2;
  op_imm(Opcode::kVand, u, sign, x, 0x80000000u);  // x's (sine and tangent are odd)
  if (op == ir::Opcode::kTan) {
    vop(pb_, Opcode::kVdiv, f, dst, sn, cs);
    vop(pb_, Opcode::kVdiv, f, r, cs, sn);
    op_imm(Opcode::kVxor, u, r, r, 0x80000000u);  // -cos / sin
    pb_.emit(Opcode::kVsel, u, {dst, t, r, dst});
  } else {
    const bool sine = op == ir::Opcode::kSin;
    pb_.emit(Opcode::kVsel, u, {dst, t, sine ? cs : sn, sine ? sn : cs});
    // sin: quadrants 2, 3 negative; cos: 1, 2 (bit 1 of q + 1).
    if (sine) {
      vop(pb_, Opcode::kVor, u, t, q, q);
    } else {
      op_imm(Opcode::kVadd, u, t, q, 1);
      imm(sign, 0);  // cosine is even
    }
    op_imm(Opcode::kVand, u, t, t, 2);
    op_imm(Opcode::kVshl, u, t, t, 30);
    vop(pb_, Opcode::kVxor, u, sign, sign, t);
  }
  vop(pb_, Opcode::kVxor, u, dst, dst, sign);
  imm(k, 0x7F800000u);  // infinities and NaN
  pb_.emit(Opcode::kVcmp, u, {t, a, k, kGe});
  imm(k, 0x7FC00000u);
  pb_.emit(Opcode::kVsel, u, {dst, t, k, dst});
  for (int reg : {k, t, m, half, d[2], d[3], d[4], d[5]}) regs_.give(reg);
}

}  // namespace podsim::tpu
