// Whole models on the TPU target: the example MLP, an MLP training step (forward,
// backward, SGD update) and a transformer block (layer norm, multi-head attention,
// tanh-GELU MLP), fused and unfused, on tiny and v5e. The reference is the evaluator
// on the same module with every f32 dot operand rounded to bf16 (DEFAULT precision on
// the MXU), so the remaining differences are f32 summation order and transcendental
// ulps (below 1e-6 relative on these inputs): tolerance 1e-4. A dot operand whose
// reordered f32 value rounded to the neighbouring bf16 value would differ by 2^-8 and
// fail; the inputs are fixed, so that would be deterministic and worth a look.
#include <fstream>
#include <sstream>

#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void check_model(const std::string& hlo, double lo, double hi) {
  for (const char* chip : {"tiny", "v5e"})
    for (bool fuse : {false, true}) {
      Case c{hlo, chip, 1e-4, 1e-5, fuse, lo, hi};
      c.bf16_dots = true;
      check(c);
    }
}

TEST(TpuModels, ExampleMlpForward) {
  check_model(read_file(std::string(PODSIM_SOURCE_DIR) + "/examples/hlo/mlp_forward.hlo"), -1, 1);
}

TEST(TpuModels, MlpTrainingStep) {
  check_model(R"(HloModule train
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
ENTRY step {
  x = f32[12,20] parameter(0)
  w1 = f32[20,16] parameter(1)
  b1 = f32[16] parameter(2)
  w2 = f32[16,5] parameter(3)
  b2 = f32[5] parameter(4)
  y = f32[12,5] parameter(5)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  h0 = f32[12,16] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b1b = f32[12,16] broadcast(b1), dimensions={1}
  h = f32[12,16] add(h0, b1b)
  zeros = f32[12,16] broadcast(zero), dimensions={}
  a = f32[12,16] maximum(h, zeros)
  o0 = f32[12,5] dot(a, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b2b = f32[12,5] broadcast(b2), dimensions={1}
  o = f32[12,5] add(o0, b2b)
  m = f32[12] reduce(o, ninf), dimensions={1}, to_apply=max
  mb = f32[12,5] broadcast(m), dimensions={0}
  sh = f32[12,5] subtract(o, mb)
  ex = f32[12,5] exponential(sh)
  den = f32[12] reduce(ex, zero), dimensions={1}, to_apply=add
  denb = f32[12,5] broadcast(den), dimensions={0}
  p = f32[12,5] divide(ex, denb)
  lp = f32[12,5] log(p)
  ylp = f32[12,5] multiply(y, lp)
  tot = f32[] reduce(ylp, zero), dimensions={0,1}, to_apply=add
  minv = f32[] constant(-0.083333333)
  loss = f32[] multiply(tot, minv)
  inv = f32[] constant(0.083333333)
  invb = f32[12,5] broadcast(inv), dimensions={}
  py = f32[12,5] subtract(p, y)
  do = f32[12,5] multiply(py, invb)
  gw2 = f32[16,5] dot(a, do), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  gb2 = f32[5] reduce(do, zero), dimensions={0}, to_apply=add
  da = f32[12,16] dot(do, w2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  pos = pred[12,16] compare(h, zeros), direction=GT
  dh = f32[12,16] select(pos, da, zeros)
  gw1 = f32[20,16] dot(x, dh), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  gb1 = f32[16] reduce(dh, zero), dimensions={0}, to_apply=add
  lr = f32[] constant(0.1)
  lr1 = f32[20,16] broadcast(lr), dimensions={}
  u1 = f32[20,16] multiply(gw1, lr1)
  w1n = f32[20,16] subtract(w1, u1)
  lrb1 = f32[16] broadcast(lr), dimensions={}
  ub1 = f32[16] multiply(gb1, lrb1)
  b1n = f32[16] subtract(b1, ub1)
  lr2 = f32[16,5] broadcast(lr), dimensions={}
  u2 = f32[16,5] multiply(gw2, lr2)
  w2n = f32[16,5] subtract(w2, u2)
  lrb2 = f32[5] broadcast(lr), dimensions={}
  ub2 = f32[5] multiply(gb2, lrb2)
  b2n = f32[5] subtract(b2, ub2)
  ROOT t = (f32[], f32[20,16], f32[16], f32[16,5], f32[5]) tuple(loss, w1n, b1n, w2n, b2n)
})",
              0, 1);
}

TEST(TpuModels, TransformerBlockForward) {
  check_model(R"(HloModule block
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[10,16] parameter(0)
  g = f32[16] parameter(1)
  bt = f32[16] parameter(2)
  wq = f32[16,16] parameter(3)
  wk = f32[16,16] parameter(4)
  wv = f32[16,16] parameter(5)
  wo = f32[16,16] parameter(6)
  w1 = f32[16,32] parameter(7)
  w2 = f32[32,16] parameter(8)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  sum = f32[10] reduce(x, zero), dimensions={1}, to_apply=add
  inv_d = f32[] constant(0.0625)
  inv_db = f32[10] broadcast(inv_d), dimensions={}
  mean = f32[10] multiply(sum, inv_db)
  meanb = f32[10,16] broadcast(mean), dimensions={0}
  xc = f32[10,16] subtract(x, meanb)
  sq = f32[10,16] multiply(xc, xc)
  ss = f32[10] reduce(sq, zero), dimensions={1}, to_apply=add
  var = f32[10] multiply(ss, inv_db)
  eps = f32[] constant(1e-5)
  epsb = f32[10] broadcast(eps), dimensions={}
  ve = f32[10] add(var, epsb)
  rs = f32[10] rsqrt(ve)
  rsb = f32[10,16] broadcast(rs), dimensions={0}
  xn = f32[10,16] multiply(xc, rsb)
  gb = f32[10,16] broadcast(g), dimensions={1}
  btb = f32[10,16] broadcast(bt), dimensions={1}
  xg = f32[10,16] multiply(xn, gb)
  y = f32[10,16] add(xg, btb)
  q = f32[10,16] dot(y, wq), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  k = f32[10,16] dot(y, wk), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  v = f32[10,16] dot(y, wv), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  q3 = f32[10,2,8] reshape(q)
  k3 = f32[10,2,8] reshape(k)
  v3 = f32[10,2,8] reshape(v)
  qh = f32[2,10,8] transpose(q3), dimensions={1,0,2}
  kh = f32[2,10,8] transpose(k3), dimensions={1,0,2}
  vh = f32[2,10,8] transpose(v3), dimensions={1,0,2}
  s = f32[2,10,10] dot(qh, kh), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  scale = f32[] constant(0.35355339)
  scaleb = f32[2,10,10] broadcast(scale), dimensions={}
  ssc = f32[2,10,10] multiply(s, scaleb)
  m = f32[2,10] reduce(ssc, ninf), dimensions={2}, to_apply=max
  mb = f32[2,10,10] broadcast(m), dimensions={0,1}
  sh = f32[2,10,10] subtract(ssc, mb)
  ex = f32[2,10,10] exponential(sh)
  den = f32[2,10] reduce(ex, zero), dimensions={2}, to_apply=add
  denb = f32[2,10,10] broadcast(den), dimensions={0,1}
  p = f32[2,10,10] divide(ex, denb)
  ctx = f32[2,10,8] dot(p, vh), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ct = f32[10,2,8] transpose(ctx), dimensions={1,0,2}
  c2 = f32[10,16] reshape(ct)
  att = f32[10,16] dot(c2, wo), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r1 = f32[10,16] add(x, att)
  h = f32[10,32] dot(r1, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h2 = f32[10,32] multiply(h, h)
  h3 = f32[10,32] multiply(h2, h)
  c0 = f32[] constant(0.044715)
  c0b = f32[10,32] broadcast(c0), dimensions={}
  t1 = f32[10,32] multiply(h3, c0b)
  t2 = f32[10,32] add(h, t1)
  c1 = f32[] constant(0.7978845608)
  c1b = f32[10,32] broadcast(c1), dimensions={}
  t3 = f32[10,32] multiply(t2, c1b)
  t4 = f32[10,32] tanh(t3)
  one = f32[] constant(1)
  oneb = f32[10,32] broadcast(one), dimensions={}
  t5 = f32[10,32] add(t4, oneb)
  half = f32[] constant(0.5)
  halfb = f32[10,32] broadcast(half), dimensions={}
  t6 = f32[10,32] multiply(h, halfb)
  gelu = f32[10,32] multiply(t6, t5)
  o = f32[10,16] dot(gelu, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = f32[10,16] add(r1, o)
})",
              -0.5, 0.5);
}

}  // namespace
}  // namespace podsim::tpu::testing
