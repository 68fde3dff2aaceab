# z[i, j] = sum over t of x[t, i, j] for f32[4, 8, 8] on the tiny chip: a counted loop
# over the four 8x8 tiles.
.chip tiny

.region x_hbm hbm 0 1024
.region z_hbm hbm 1024 256
.region x vmem[0] 0 1024
.region z vmem[0] 1024 256
.descriptor d0 src=x_hbm dst=x elem=4 sizes=[256] src_strides=[4] dst_strides=[4]
.descriptor d1 src=z dst=z_hbm elem=4 sizes=[64] src_strides=[4] dst_strides=[4]
.param x x_hbm f32[4, 8, 8]
.output z z_hbm f32[8, 8]
.source 0 "reduce.5" "reduce" "jit(f)/reduce_sum" "model.py" 9

.program core 0
  dma d0, s0, s0, q0
  sem.wait q0, 1
  sli s1, 32                 # row stride
  sli s2, 0                  # offset of the current tile
  sli s3, 4                  # tiles left
  vbcasti.f32 v0, 0          # the sum (0.0f)
loop:
  vld.f32 v1, x[s2], s1
  vadd.f32 v0, v0, v1  @0
  saddi s2, s2, 256          # next tile: 8 x 8 x 4 bytes
  saddi s3, s3, -1
  bnz s3, loop
  vst.f32 z[s0], s1, v0
  dma d1, s0, s0, q0
  sem.wait q0, 1
  halt
