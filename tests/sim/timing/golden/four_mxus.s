# The same 128x128 bf16 tile product on each of v4's four MXUs of core 0, issued back to
# back so that their weight loads and passes overlap, then popped one after the other.
.chip v4
.region a_hbm hbm 0 32768
.region b_hbm hbm 32768 32768
.region c_hbm hbm 65536 65536
.region a vmem[0] 0 32768
.region b vmem[0] 32768 32768
.region c vmem[0] 65536 65536
.descriptor d0 src=a_hbm dst=a elem=2 sizes=[16384] src_strides=[2] dst_strides=[2]
.descriptor d1 src=b_hbm dst=b elem=2 sizes=[16384] src_strides=[2] dst_strides=[2]
.descriptor d2 src=c dst=c_hbm elem=4 sizes=[16384] src_strides=[4] dst_strides=[4]
.param a a_hbm bf16[128, 128]
.param b b_hbm bf16[128, 128]
.output c c_hbm f32[128, 128]
.source 0 "dot.1" "dot" "jit(f)/dot_general" "model.py" 4
.source 1 "add.2" "add" "jit(f)/add" "model.py" 5

.program core 0
  dma d0, s0, s0, q0
  dma d1, s0, s0, q0
  sem.wait q0, 2
  sli s1, 256                # bf16 row stride: 128 x 2 bytes
  sli s2, 128                # K
  sli s3, 512                # f32 row stride
  mldw.bf16 m0, b[s0], s1, s2    @0
  mmul.bf16 m0, a[s0], s1, 0     @0
  mldw.bf16 m1, b[s0], s1, s2    @0
  mmul.bf16 m1, a[s0], s1, 0     @0
  mldw.bf16 m2, b[s0], s1, s2    @0
  mmul.bf16 m2, a[s0], s1, 0     @0
  mldw.bf16 m3, b[s0], s1, s2    @0
  mmul.bf16 m3, a[s0], s1, 0     @0
  mpop.f32 m0, c[s0], s3         @0
  mpop.f32 m1, c[s0], s3         @0
  mpop.f32 m2, c[s0], s3         @0
  mpop.f32 m3, c[s0], s3         @0
  vld.f32 v0, c[s0], s3          @1
  vexp.f32 v1, v0                @1
  vadd.f32 v2, v1, v0            @1
  vst.f32 c[s0], s3, v2          @1
  dma d2, s0, s0, q1
  sem.wait q1, 1
  halt
