# Every instruction of the ISA at least once (assembler_test checks that this file keeps
# up with isa/opcodes.def), on a 2x2x1 pod of v4 chips (each 2 TensorCores, 32 vector
# registers of 8 x 128, 4 MXUs of 128 x 128 per core), all four chips replicas. It shows
# the syntax; it computes nothing useful.
.format 2
.compiler "hand-written"
.pod "v4:2x2x1"
.replicas 4

.region h hbm 0 65536
.region a vmem[0] 0 65536
.region b vmem[1] 0 65536
.descriptor d0 src=h dst=a elem=4 sizes=[16, 16] src_strides=[64, 4] dst_strides=[64, 4]
.descriptor d1 src=b dst=h elem=2 sizes=[2, 4, 8, 16] src_strides=[1024, 256, 32, 2] dst_strides=[0, 256, 32, 2]
.constant h
.bytes 0001020304050607 08090a0b0c0d0e0f   # spaces between hex digits are ignored
.bytes FFfe
.param "p" h bf16[128, 256]
.output out h f32[16, 16]
.source 0 "dot.1" "dot" "jit(f)/dot" "f.py" 3
.source 1 "add.2" "add" "" "" 0

.program core 0
start:
  sli s1, 128
  sadd s2, s1, s1
  saddi s3, s2, 0x7fffffffffffffff
  ssub s4, s3, s1
  smul s5, s4, s2
  smuli s6, s5, -3
  sdiv s7, s6, s1
  srem s8, s7, s1
  smin s9, s8, s7
  smax s10, s9, s8
  slt s11, s10, s9
  seq s12, s11, s0
  sld s13, a[s0]
  sst a[s1], s13
  bz s12, skip
  br skip
skip: bnz s0, start              # a label may precede an instruction on its line
  vld.bf16 v0, a[s0], s1
  vst.f32 a[s1], s1, v0
  vbcast.s32 v1, s2
  vbcasti.f32 v2, 0x3f800000     # 1.0f
  viota.s32 v3, 0                # r * lanes + c
  vadd.f32 v4, v0, v2  @1
  vsub.f32 v5, v4, v2
  vmul.f32 v6, v5, v5
  vdiv.f32 v7, v6, v2
  vmax.f32 v8, v7, v6
  vmin.f32 v9, v8, v7
  vpow.f32 v10, v9, v2
  vand.u32 v11, v3, v1
  vor.u32 v12, v11, v3
  vxor.u32 v13, v12, v11
  vshl.u32 v13, v12, v11
  vshrl.u32 v13, v12, v11
  vshra.u32 v13, v12, v11
  vneg.f32 v14, v13
  vabs.f32 v15, v14
  vexp.f32 v16, v15
  vlog.f32 v17, v16
  vsqrt.f32 v18, v17
  vrsqrt.f32 v19, v18
  vtanh.f32 v20, v19
  vlogistic.f32 v21, v20
  vfloor.f32 v22, v21
  vceil.f32 v23, v22
  vnot.u32 v24, v3
  vcmp.f32 v25, v4, v5, 2        # LT
  vsel.f32 v26, v25, v4, v5
  vcvt.f32 v27, v3, 3            # from s32
  vredl.f32 v28, v27, 0          # sum along lanes
  vreds.f32 v29, v27, 1          # max along sublanes
  vxpose.f32 v0, v16             # 128 / 8 = 16 registers: v16..v31 into v0..v15
  mldw.bf16 m0, a[s0], s1, s1    # K = 128 rows
  mmul.bf16 m1, a[s0], s1, 1  @0
  mpop.f32 m1, a[s0], s2
  dma d0, s0, s0, q0
  sdev s9, 0                     # this chip's device id
  dma.remote d0, s0, s0, s9, q1, q3  # to chip s9: q1 here when read, q3 there when landed
  sem.wait q0, 1
  sem.signal q2, 1
  barrier
  halt

.program core 1
  dma d1, s0, s0, q0
  sem.wait q0, 1
  barrier
  halt
