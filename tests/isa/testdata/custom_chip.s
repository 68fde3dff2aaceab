# A chip that is no preset: tiny with two TensorCores. The block between .chip_toml and
# .end is a topology chip file (units allowed); name and description come first.
.chip_toml "tiny-2core" "tiny with two TensorCores and 2 MiB of VMEM each"
base = "tiny"
tensor_cores = 2
vmem_bytes = "2 MiB"
clock_hz = "1.5 GHz"
.end

.region buf0 vmem[0] 0 4096
.region buf1 vmem[1] 1572864 4096
.region out hbm 0 4096
.descriptor d0 src=buf0 dst=out elem=4 sizes=[1024] src_strides=[4] dst_strides=[4]
.descriptor d1 src=buf1 dst=out elem=4 sizes=[1024] src_strides=[4] dst_strides=[4]
.output "out" out s32[1024]

.program core 0
  viota.s32 v0, 0
  vst.s32 buf0[s0], s0, v0   # row stride 0: every row to the same place
  barrier
  dma d0, s0, s0, q0
  sem.wait q0, 1
  halt

.program core 1
  barrier
  halt
