# z = x + y for f32[8, 8] on the tiny chip: copy both inputs to VMEM, add them as one
# vector register (8 sublanes x 8 lanes), copy the sum back to HBM.
.format 1
.compiler "hand-written"
.chip tiny

.region x_hbm hbm 0 256
.region y_hbm hbm 256 256
.region z_hbm hbm 512 256
.region x vmem[0] 0 256
.region y vmem[0] 256 256
.region z vmem[0] 512 256
.descriptor d0 src=x_hbm dst=x elem=4 sizes=[64] src_strides=[4] dst_strides=[4]
.descriptor d1 src=y_hbm dst=y elem=4 sizes=[64] src_strides=[4] dst_strides=[4]
.descriptor d2 src=z dst=z_hbm elem=4 sizes=[8, 8] src_strides=[32, 4] dst_strides=[32, 4]
.param x x_hbm f32[8, 8]
.param y y_hbm f32[8, 8]
.output z z_hbm f32[8, 8]
.source 0 "add.3" "add" "jit(f)/add" "model.py" 7

.program core 0
  dma d0, s0, s0, q0        # s0 reads as zero: offset 0 in both regions
  dma d1, s0, s0, q1
  sem.wait q0, 1
  sem.wait q1, 1
  sli s1, 32                # row stride: 8 lanes x 4 bytes
  vld.f32 v0, x[s0], s1
  vld.f32 v1, y[s0], s1
  vadd.f32 v2, v0, v1  @0
  vst.f32 z[s0], s1, v2
  dma d2, s0, s0, q2
  sem.wait q2, 1
  halt
