# Core 0 copies x into core 1's VMEM and waits for it; a barrier hands it to core 1,
# which doubles it and copies it out; a second barrier ends the run together.
.chip v4
.region x_hbm hbm 0 4096
.region y_hbm hbm 4096 4096
.region x1 vmem[1] 0 4096
.region y1 vmem[1] 4096 4096
.descriptor d0 src=x_hbm dst=x1 elem=4 sizes=[1024] src_strides=[4] dst_strides=[4]
.descriptor d1 src=y1 dst=y_hbm elem=4 sizes=[1024] src_strides=[4] dst_strides=[4]
.param x x_hbm f32[8, 128]
.output y y_hbm f32[8, 128]
.source 0 "copy.0" "copy" "" "" 0
.source 1 "double.1" "add" "" "" 0

.program core 0
  dma d0, s0, s0, q0 @0
  sem.wait q0, 1
  barrier
  barrier
  halt

.program core 1
  barrier
  sli s1, 512
  vld.f32 v0, x1[s0], s1 @1
  vadd.f32 v0, v0, v0 @1
  vst.f32 y1[s0], s1, v0 @1
  dma d1, s0, s0, q0
  sem.wait q0, 1
  barrier
  halt
