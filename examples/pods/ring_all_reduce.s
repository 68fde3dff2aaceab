# Ring all-reduce over every chip of a pod, by remote DMA: each chip holds x (f32[512, 128],
# 64 vector tiles of 8 x 128) and ends with y, the sum of every chip's x.
#
# One SPMD program for every chip: a chip reads its device id r and the pod's chip count N
# with sdev and sends to the next chip of the ring, (r + 1) mod N, in device order (the
# hardware routes: ICI inside a slice, DCN between slices). x is cut into N chunks of
# 64 / N tiles (N must divide 64: 1 to 64 chips). Reduce-scatter: in step k a chip sends
# its chunk (r - k) mod N into slot k of the next chip's `recv`, waits for the chunk
# (r - k - 1) mod N from the previous chip and adds it to its own. After N - 1 steps chip r
# holds the whole sum of chunk (r + 1) mod N. All-gather: in step k it forwards chunk
# (r + 1 - k) mod N of `out` into the same place of the next chip's `out`.
#
# Synchronisation: dma.remote signals q1 here when its source has been read and q2 (or q3)
# on the next chip when the data has landed there; every region a chip reads was either
# written by the chip itself or waited for. Transfers from one chip to another land in the
# order they were issued, so counting landings on one semaphore is enough.
#
# Run it: podsim run examples/pods/ring_all_reduce.s --topology v5e:2x2   (or any pod of
# 8 x 128 f32 tiles: v5e, v6e, v4, v5p)
.format 2
.pod "v5e:2x2"

.region x_hbm hbm 0 262144
.region y_hbm hbm 262144 262144
.region acc vmem[0] 0 262144          # x, then the partial sums
.region recv vmem[0] 262144 262144    # reduce-scatter slots, written by the previous chip
.region out vmem[0] 524288 262144     # the result, chunk by chunk
.descriptor d0 src=x_hbm dst=acc elem=4 sizes=[65536] src_strides=[4] dst_strides=[4]
.descriptor d1 src=acc dst=recv elem=4 sizes=[1024] src_strides=[4] dst_strides=[4]
.descriptor d2 src=out dst=out elem=4 sizes=[1024] src_strides=[4] dst_strides=[4]
.descriptor d3 src=out dst=y_hbm elem=4 sizes=[65536] src_strides=[4] dst_strides=[4]
.param x x_hbm f32[512, 128]
.output y y_hbm f32[512, 128]

.program core 0
  sdev s1, 0                  # r
  sdev s2, 5                  # N
  sli s3, 64
  sdiv s3, s3, s2             # T = 64 / N tiles per chunk
  saddi s4, s1, 1
  srem s4, s4, s2             # next = (r + 1) mod N
  sli s6, 4096                # bytes of a tile
  sli s7, 512                 # bytes of a tile row
  smul s8, s3, s6             # bytes of a chunk
  saddi s9, s2, -1            # steps = N - 1
  dma d0, s0, s0, q0          # x into acc
  sem.wait q0, 1

  sli s10, 0                  # k
rs_step:
  slt s17, s10, s9
  bz s17, rs_done
  ssub s11, s1, s10
  sadd s11, s11, s2
  srem s11, s11, s2
  smul s11, s11, s8           # acc offset of chunk (r - k) mod N
  smul s12, s10, s8           # recv offset of slot k
  sli s13, 0                  # t
rs_send:
  smul s14, s13, s6
  sadd s15, s11, s14
  sadd s16, s12, s14
  dma.remote d1, s15, s16, s4, q1, q2
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, rs_send
  sli s13, 0
rs_wait:                      # the previous chip's T tiles have landed in slot k
  sem.wait q2, 1
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, rs_wait
  ssub s18, s1, s10
  saddi s18, s18, -1
  sadd s18, s18, s2
  srem s18, s18, s2
  smul s18, s18, s8           # acc offset of chunk (r - k - 1) mod N
  sli s13, 0
rs_add:
  smul s14, s13, s6
  sadd s15, s18, s14
  sadd s16, s12, s14
  vld.f32 v0, acc[s15], s7
  vld.f32 v1, recv[s16], s7
  vadd.f32 v0, v0, v1
  vst.f32 acc[s15], s7, v0
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, rs_add
  sli s13, 0
rs_sent:                      # this step's sends have been read
  sem.wait q1, 1
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, rs_sent
  saddi s10, s10, 1
  br rs_step
rs_done:

  smul s11, s4, s8            # chunk (r + 1) mod N is complete: acc -> out
  sli s13, 0
own_copy:
  smul s14, s13, s6
  sadd s15, s11, s14
  vld.f32 v0, acc[s15], s7
  vst.f32 out[s15], s7, v0
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, own_copy

  sli s10, 0                  # k
ag_step:
  slt s17, s10, s9
  bz s17, ag_done
  saddi s11, s1, 1
  ssub s11, s11, s10
  sadd s11, s11, s2
  srem s11, s11, s2
  smul s11, s11, s8           # out offset of chunk (r + 1 - k) mod N
  sli s13, 0
ag_send:
  smul s14, s13, s6
  sadd s15, s11, s14
  dma.remote d2, s15, s15, s4, q1, q3
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, ag_send
  sli s13, 0
ag_wait:                      # chunk (r - k) mod N has landed, and our sends were read
  sem.wait q3, 1
  sem.wait q1, 1
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, ag_wait
  saddi s10, s10, 1
  br ag_step
ag_done:

  dma d3, s0, s0, q0          # out into y
  sem.wait q0, 1
  halt
