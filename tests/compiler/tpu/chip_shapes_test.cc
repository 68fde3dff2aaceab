// Chip parameters are data: the same modules on chips whose tiles are lopsided (vector
// registers of 2 x 16, 3 x 8 MXUs, two of them, 3 vector-register tiles), so that no
// lowering may assume square tiles, equal MXU and vector sizes, or one MXU.
#include "tests/compiler/tpu/tpu_test_util.h"

namespace podsim::tpu::testing {
namespace {

topology::ChipConfig lopsided() {
  topology::ChipConfig c = topology::preset("tiny");
  c.name = "lopsided";
  c.vpu_sublanes = 2;
  c.vpu_lanes = 16;
  c.mxu_rows = 3;
  c.mxu_cols = 8;
  c.mxus_per_core = 2;
  c.vector_registers = 24;
  return c;
}

Case on_lopsided(std::string hlo, bool fuse = false) {
  Case c{std::move(hlo)};
  c.custom_chip = lopsided();
  c.fuse = fuse;
  return c;
}

TEST(TpuChipShapes, ElementwiseReduceAndDot) {
  Case e = on_lopsided(R"(HloModule m
ENTRY e {
  x = f32[7,19] parameter(0)
  b = f32[19] parameter(1)
  bb = f32[7,19] broadcast(b), dimensions={1}
  ROOT r = f32[7,19] multiply(x, bb)
})",
                       true);
  check(e);
  Case r = on_lopsided(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[5,7,9] parameter(0)
  z = f32[] constant(0)
  r0 = f32[7,9] reduce(x, z), dimensions={0}, to_apply=add
  r2 = f32[5,7] reduce(x, z), dimensions={2}, to_apply=add
  ra = f32[] reduce(x, z), dimensions={0,1,2}, to_apply=add
  ROOT t = (f32[7,9], f32[5,7], f32[]) tuple(r0, r2, ra)
})");
  r.integral_floats = true;
  r.lo = -9;
  r.hi = 9;
  check(r);
  Case d = on_lopsided(R"(HloModule m
ENTRY e {
  x = f32[2,7,10] parameter(0)
  w = f32[2,10,17] parameter(1)
  ROOT d = f32[2,7,17] dot(x, w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})");
  d.bf16_values = true;
  d.abs = 10 * 10.0 / (1 << 24);
  check(d);
}

}  // namespace
}  // namespace podsim::tpu::testing
