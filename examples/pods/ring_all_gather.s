# Ring all-gather over every chip of a pod, by remote DMA: x is f32[512, 128] (64 vector
# tiles of 8 x 128) on every chip, of which chip r owns chunk r (rows r * 512/N up to
# (r + 1) * 512/N); y, on every chip, is every chip's own chunk in device order. In XLA's
# terms: y = all-gather(dynamic-slice(x, replica-id * 512/N), dimensions={0}).
#
# One SPMD program for every chip (sdev gives r and N; N must divide 64): a chip puts its
# own chunk into `out`, then in step k (k = 0 .. N-2) forwards chunk (r - k) mod N of
# `out` into the same place of the next chip's `out`, (r + 1) mod N in device order, and
# waits for chunk (r - k - 1) mod N to land from the previous chip. dma.remote signals q1
# here when a tile has been read and q3 on the next chip when it has landed; transfers
# from one chip to another land in the order they were issued.
#
# Run it: podsim run examples/pods/ring_all_gather.s --topology v5e:4x4
.format 2
.pod "v5e:2x2"

.region x_hbm hbm 0 262144
.region y_hbm hbm 262144 262144
.region out vmem[0] 0 262144          # y, chunk by chunk: this chip's, then the others'
.descriptor d0 src=x_hbm dst=out elem=4 sizes=[1024] src_strides=[4] dst_strides=[4]
.descriptor d1 src=out dst=out elem=4 sizes=[1024] src_strides=[4] dst_strides=[4]
.descriptor d2 src=out dst=y_hbm elem=4 sizes=[65536] src_strides=[4] dst_strides=[4]
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
  smul s8, s3, s6             # bytes of a chunk
  saddi s9, s2, -1            # steps = N - 1

  smul s11, s1, s8            # own chunk: x -> out, tile by tile
  sli s13, 0
own:
  smul s14, s13, s6
  sadd s15, s11, s14
  dma d0, s15, s15, q0
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, own
  sli s13, 0
own_wait:
  sem.wait q0, 1
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, own_wait

  sli s10, 0                  # k
step:
  slt s17, s10, s9
  bz s17, done
  ssub s11, s1, s10
  sadd s11, s11, s2
  srem s11, s11, s2
  smul s11, s11, s8           # offset of chunk (r - k) mod N
  sli s13, 0
send:
  smul s14, s13, s6
  sadd s15, s11, s14
  dma.remote d1, s15, s15, s4, q1, q3
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, send
  sli s13, 0
wait:                         # chunk (r - k - 1) mod N has landed, and our sends were read
  sem.wait q3, 1
  sem.wait q1, 1
  saddi s13, s13, 1
  slt s17, s13, s3
  bnz s17, wait
  saddi s10, s10, 1
  br step
done:

  dma d2, s0, s0, q0          # out into y
  sem.wait q0, 1
  halt
