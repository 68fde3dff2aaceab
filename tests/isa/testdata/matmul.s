# c = a x b for bf16[8, 8] inputs and an f32[8, 8] result on the tiny chip (one 8x8 MXU).
.chip tiny

.region a_hbm hbm 0 128
.region b_hbm hbm 128 128
.region c_hbm hbm 256 256
.region a vmem[0] 0 128
.region b vmem[0] 128 128
.region c vmem[0] 256 256
.descriptor d0 src=a_hbm dst=a elem=2 sizes=[64] src_strides=[2] dst_strides=[2]
.descriptor d1 src=b_hbm dst=b elem=2 sizes=[64] src_strides=[2] dst_strides=[2]
.descriptor d2 src=c dst=c_hbm elem=4 sizes=[64] src_strides=[4] dst_strides=[4]
.param a a_hbm bf16[8, 8]
.param b b_hbm bf16[8, 8]
.output c c_hbm f32[8, 8]
.source 0 "dot.1" "dot" "jit(f)/dot_general" "model.py" 4

.program core 0
  dma d0, s0, s0, q0
  dma d1, s0, s0, q0
  sem.wait q0, 2             # both copies done
  sli s1, 16                 # bf16 row stride: 8 x 2 bytes
  sli s2, 8                  # K: rows of weights
  mldw.bf16 m0, b[s0], s1, s2          @0
  mmul.bf16 m0, a[s0], s1, 0           @0  # overwrite the accumulator
  sli s3, 32                 # f32 row stride
  mpop.f32 m0, c[s0], s3               @0
  dma d2, s0, s0, q1
  sem.wait q1, 1
  halt
