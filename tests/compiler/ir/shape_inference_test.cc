// Shape inference of elementwise, data-movement, reduction, sort and control-flow
// opcodes. Expected shapes are worked out by hand from XLA's operation semantics.
#include "compiler/ir/shape_inference.h"

#include <gtest/gtest.h>

#include "tests/compiler/ir/ir_builder_test_util.h"

namespace podsim::ir {
namespace {

using namespace podsim::ir::testing;

class ShapeInferenceTest : public ::testing::Test {
 protected:
  ModuleBuilder b;
};

TEST_F(ShapeInferenceTest, BinaryElementwise) {
  Instruction* x = b.param(sh(kF32, {2, 3}));
  EXPECT_EQ(inferred(b.add(Opcode::kAdd, sh(kF32, {2, 3}), {x, x})), "f32[2,3]");
  EXPECT_EQ(inferred(b.add(Opcode::kPower, sh(kF32, {2, 3}), {x, x})), "f32[2,3]");
  Instruction* y = b.param(sh(kF32, {2}));
  Instruction* z = b.param(sh(kF32, {3}));
  EXPECT_EQ(error_of(b.add(Opcode::kAdd, sh(kF32, {2}), {y, z})),
            "add: operand shapes f32[2] and f32[3] differ");
  Instruction* i = b.param(sh(kS32, {2}));
  EXPECT_PRED2(has, error_of(b.add(Opcode::kMultiply, sh(kF32, {2}), {y, i})),
               "multiply: operand shapes f32[2] and s32[2] differ");
}

TEST_F(ShapeInferenceTest, BinaryTypeRules) {
  Instruction* f = b.param(sh(kF32, {4}));
  Instruction* p = b.param(sh(kPred, {4}));
  Instruction* u = b.param(sh(kU8, {4}));
  Instruction* s = b.param(sh(kS32, {4}));
  EXPECT_EQ(inferred(b.add(Opcode::kAnd, sh(kPred, {4}), {p, p})), "pred[4]");
  EXPECT_EQ(inferred(b.add(Opcode::kXor, sh(kU8, {4}), {u, u})), "u8[4]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kOr, sh(kF32, {4}), {f, f})),
               "or: operand type f32 is not pred or an integer type");
  EXPECT_EQ(inferred(b.add(Opcode::kShiftLeft, sh(kU8, {4}), {u, u})), "u8[4]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kShiftRightLogical, sh(kPred, {4}), {p, p})),
               "not an integer type");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kAtan2, sh(kS32, {4}), {s, s})),
               "atan2: operand type s32 is not a floating-point type");
  EXPECT_EQ(inferred(b.add(Opcode::kAtan2, sh(kF32, {4}), {f, f})), "f32[4]");
}

TEST_F(ShapeInferenceTest, Compare) {
  Instruction* f = b.param(sh(kF32, {4}));
  Instruction* p = b.param(sh(kPred, {4}));
  EXPECT_EQ(inferred(b.add(Opcode::kCompare, sh(kPred, {4}), {f, f})), "pred[4]");
  Instruction* total = b.add(Opcode::kCompare, sh(kPred, {4}), {f, f});
  total->attrs().comparison_type = ComparisonType::kTotalOrder;
  EXPECT_EQ(inferred(total), "pred[4]");
  Instruction* signed_cmp = b.add(Opcode::kCompare, sh(kPred, {4}), {f, f});
  signed_cmp->attrs().comparison_type = ComparisonType::kSigned;
  EXPECT_PRED2(has, error_of(signed_cmp), "comparison type SIGNED does not apply to f32 operands");
  Instruction* unsigned_pred = b.add(Opcode::kCompare, sh(kPred, {4}), {p, p});
  unsigned_pred->attrs().comparison_type = ComparisonType::kUnsigned;
  EXPECT_EQ(inferred(unsigned_pred), "pred[4]");
}

TEST_F(ShapeInferenceTest, UnaryTypeRules) {
  Instruction* f = b.param(sh(kF16, {3}));
  Instruction* s = b.param(sh(kS32, {3}));
  Instruction* u = b.param(sh(kU32, {3}));
  Instruction* p = b.param(sh(kPred, {3}));
  EXPECT_EQ(inferred(b.add(Opcode::kExp, sh(kF16, {3}), {f})), "f16[3]");
  EXPECT_EQ(error_of(b.add(Opcode::kLog, sh(kS32, {3}), {s})),
            "log: operand type s32 is not a floating-point type");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kFloor, sh(kS32, {3}), {s})), "floor:");
  EXPECT_EQ(inferred(b.add(Opcode::kNegate, sh(kU32, {3}), {u})), "u32[3]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kNegate, sh(kPred, {3}), {p})), "negate:");
  EXPECT_EQ(inferred(b.add(Opcode::kAbs, sh(kS32, {3}), {s})), "s32[3]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kAbs, sh(kU32, {3}), {u})),
               "abs: operand type u32 is not a signed integer or floating-point type");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kSign, sh(kU32, {3}), {u})), "sign:");
  EXPECT_EQ(inferred(b.add(Opcode::kNot, sh(kPred, {3}), {p})), "pred[3]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kNot, sh(kF16, {3}), {f})), "not pred or an integer");
  EXPECT_EQ(inferred(b.add(Opcode::kIsFinite, sh(kPred, {3}), {f})), "pred[3]");
  Instruction* t = b.param(tup({sh(kF32)}));
  EXPECT_PRED2(has, error_of(b.add(Opcode::kTanh, sh(kF32), {t})),
               "tanh: operand must be an array");
}

TEST_F(ShapeInferenceTest, ConvertAndBitcastConvert) {
  Instruction* s = b.param(sh(kS32, {2, 2}));
  EXPECT_EQ(inferred(b.add(Opcode::kConvert, sh(kF16, {2, 2}), {s})), "f16[2,2]");
  Instruction* f = b.param(sh(kF32, {3}));
  EXPECT_EQ(inferred(b.add(Opcode::kBitcastConvert, sh(kS32, {3}), {f})), "s32[3]");
  // 32 bits into four 8-bit values: a new minor dimension of 4.
  EXPECT_EQ(inferred(b.add(Opcode::kBitcastConvert, sh(kU8, {3, 4}), {f})), "u8[3,4]");
  Instruction* d = b.param(sh(kF64, {2}));
  EXPECT_EQ(inferred(b.add(Opcode::kBitcastConvert, sh(kF32, {2, 2}), {d})), "f32[2,2]");
  Instruction* bytes = b.param(sh(kU8, {3, 4}));
  EXPECT_EQ(inferred(b.add(Opcode::kBitcastConvert, sh(kF32, {3}), {bytes})), "f32[3]");
  Instruction* short_bytes = b.param(sh(kU8, {3, 2}));
  EXPECT_PRED2(has, error_of(b.add(Opcode::kBitcastConvert, sh(kF32, {3}), {short_bytes})),
               "needs a last dimension of 4");
}

TEST_F(ShapeInferenceTest, ClampAndSelect) {
  Instruction* lo = b.param(sh(kF32));
  Instruction* x = b.param(sh(kF32, {5}));
  Instruction* bad = b.param(sh(kF32, {4}));
  Instruction* int_lo = b.param(sh(kS32));
  EXPECT_EQ(inferred(b.add(Opcode::kClamp, sh(kF32, {5}), {lo, x, lo})), "f32[5]");
  EXPECT_EQ(inferred(b.add(Opcode::kClamp, sh(kF32, {5}), {x, x, x})), "f32[5]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kClamp, sh(kF32, {5}), {bad, x, lo})),
               "clamp: min f32[4] must be a scalar or the operand's shape f32[5]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kClamp, sh(kF32, {5}), {lo, x, int_lo})), "max s32[]");

  Instruction* p = b.param(sh(kPred, {2, 3}));
  Instruction* ps = b.param(sh(kPred));
  Instruction* p3 = b.param(sh(kPred, {3}));
  Instruction* t = b.param(sh(kF32, {2, 3}));
  Instruction* t2 = b.param(sh(kS32, {2, 3}));
  EXPECT_EQ(inferred(b.add(Opcode::kSelect, sh(kF32, {2, 3}), {p, t, t})), "f32[2,3]");
  EXPECT_EQ(inferred(b.add(Opcode::kSelect, sh(kF32, {2, 3}), {ps, t, t})), "f32[2,3]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kSelect, sh(kF32, {2, 3}), {p3, t, t})),
               "predicate pred[3] must be a scalar or have the dimensions of f32[2,3]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kSelect, sh(kF32, {2, 3}), {p, t, t2})),
               "on_true f32[2,3] and on_false s32[2,3] differ");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kSelect, sh(kF32, {2, 3}), {t, t, t})),
               "must be of type pred");
}

TEST_F(ShapeInferenceTest, Broadcast) {
  Instruction* x = b.param(sh(kF32, {3}));
  Instruction* ok = b.add(Opcode::kBroadcast, sh(kF32, {2, 3}), {x});
  ok->attrs().dimensions = {1};
  EXPECT_EQ(inferred(ok), "f32[2,3]");
  Instruction* size = b.add(Opcode::kBroadcast, sh(kF32, {2, 3}), {x});
  size->attrs().dimensions = {0};
  EXPECT_PRED2(has, error_of(size),
               "broadcast: operand dimension 0 (size 3) maps to result dimension 0 of size 2");
  Instruction* range = b.add(Opcode::kBroadcast, sh(kF32, {2, 3}), {x});
  range->attrs().dimensions = {2};
  EXPECT_PRED2(has, error_of(range), "out of range [0, 2)");
  Instruction* count = b.add(Opcode::kBroadcast, sh(kF32, {2, 3}), {x});
  count->attrs().dimensions = {0, 1};
  EXPECT_PRED2(has, error_of(count), "one entry per operand dimension");
  // The element type follows the operand, so a declared s32 result is a mismatch.
  Instruction* typed = b.add(Opcode::kBroadcast, sh(kS32, {2, 3}), {x});
  typed->attrs().dimensions = {1};
  EXPECT_EQ(inferred(typed), "f32[2,3]");
}

TEST_F(ShapeInferenceTest, ReshapeTransposeReverseCopy) {
  Instruction* x = b.param(sh(kF32, {2, 3}));
  EXPECT_EQ(inferred(b.add(Opcode::kReshape, sh(kF32, {6}), {x})), "f32[6]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kReshape, sh(kF32, {5}), {x})),
               "cannot reshape f32[2,3] (6 elements) to f32[5] (5 elements)");
  Instruction* y = b.param(sh(kF32, {2, 3, 4}));
  Instruction* t = b.add(Opcode::kTranspose, sh(kF32, {4, 2, 3}), {y});
  t->attrs().dimensions = {2, 0, 1};
  EXPECT_EQ(inferred(t), "f32[4,2,3]");
  Instruction* rep = b.add(Opcode::kTranspose, sh(kF32, {2, 2, 3}), {y});
  rep->attrs().dimensions = {0, 0, 1};
  EXPECT_PRED2(has, error_of(rep), "transpose: permutation {0,0,1} repeats dimension 0");
  Instruction* short_perm = b.add(Opcode::kTranspose, sh(kF32, {2, 3}), {y});
  short_perm->attrs().dimensions = {0, 1};
  EXPECT_PRED2(has, error_of(short_perm), "is not a permutation");
  Instruction* r = b.add(Opcode::kReverse, sh(kF32, {2, 3}), {x});
  r->attrs().dimensions = {1};
  EXPECT_EQ(inferred(r), "f32[2,3]");
  r->attrs().dimensions = {2};
  EXPECT_PRED2(has, error_of(r), "reverse: dimensions {2} has dimension 2 out of range");
  EXPECT_EQ(inferred(b.add(Opcode::kCopy, sh(kF32, {2, 3}), {x})), "f32[2,3]");
}

TEST_F(ShapeInferenceTest, Slice) {
  Instruction* x = b.param(sh(kF32, {10}));
  Instruction* s = b.add(Opcode::kSlice, sh(kF32, {3}), {x});
  s->attrs().slice = {{2, 9, 3}};  // elements 2, 5, 8
  EXPECT_EQ(inferred(s), "f32[3]");
  s->attrs().slice = {{0, 11, 1}};
  EXPECT_PRED2(has, error_of(s), "slice: slice dimension 0 [0:11] is out of bounds for size 10");
  s->attrs().slice = {{0, 4, 0}};
  EXPECT_PRED2(has, error_of(s), "non-positive stride 0");
  s->attrs().slice = {{5, 4, 1}};
  EXPECT_PRED2(has, error_of(s), "out of bounds");
  Instruction* m = b.param(sh(kF32, {4, 6}));
  Instruction* s2 = b.add(Opcode::kSlice, sh(kF32, {2, 3}), {m});
  s2->attrs().slice = {{1, 3, 1}, {0, 6, 2}};
  EXPECT_EQ(inferred(s2), "f32[2,3]");
}

TEST_F(ShapeInferenceTest, DynamicSliceAndUpdate) {
  Instruction* x = b.param(sh(kF32, {5, 6}));
  Instruction* i = b.param(sh(kS32));
  Instruction* f = b.param(sh(kF32));
  Instruction* u = b.param(sh(kU32));
  Instruction* ds = b.add(Opcode::kDynamicSlice, sh(kF32, {2, 3}), {x, i, i});
  ds->attrs().dynamic_slice_sizes = {2, 3};
  EXPECT_EQ(inferred(ds), "f32[2,3]");
  ds->attrs().dynamic_slice_sizes = {6, 1};
  EXPECT_PRED2(has, error_of(ds),
               "dynamic-slice: slice size 6 of dimension 0 is out of range [0, 5]");
  Instruction* bad_index = b.add(Opcode::kDynamicSlice, sh(kF32, {2, 3}), {x, i, f});
  bad_index->attrs().dynamic_slice_sizes = {2, 3};
  EXPECT_PRED2(has, error_of(bad_index), "start index (operand 2) must be an integer scalar");
  Instruction* mixed = b.add(Opcode::kDynamicSlice, sh(kF32, {2, 3}), {x, i, u});
  mixed->attrs().dynamic_slice_sizes = {2, 3};
  EXPECT_PRED2(has, error_of(mixed), "must all have one type");
  Instruction* few = b.add(Opcode::kDynamicSlice, sh(kF32, {2, 3}), {x, i});
  few->attrs().dynamic_slice_sizes = {2, 3};
  EXPECT_PRED2(has, error_of(few), "expects 2 start indices");

  Instruction* up = b.param(sh(kF32, {2, 6}));
  EXPECT_EQ(inferred(b.add(Opcode::kDynamicUpdateSlice, sh(kF32, {5, 6}), {x, up, i, i})),
            "f32[5,6]");
  Instruction* big = b.param(sh(kF32, {6, 6}));
  EXPECT_PRED2(has, error_of(b.add(Opcode::kDynamicUpdateSlice, sh(kF32, {5, 6}), {x, big, i, i})),
               "update f32[6,6] is larger than the operand f32[5,6] in dimension 0");
}

TEST_F(ShapeInferenceTest, Concatenate) {
  Instruction* a = b.param(sh(kF32, {2, 3}));
  Instruction* c = b.param(sh(kF32, {4, 3}));
  Instruction* d = b.param(sh(kF32, {2, 4}));
  Instruction* rows = b.add(Opcode::kConcatenate, sh(kF32, {6, 3}), {a, c});
  rows->attrs().dimensions = {0};
  EXPECT_EQ(inferred(rows), "f32[6,3]");
  Instruction* cols = b.add(Opcode::kConcatenate, sh(kF32, {2, 7}), {a, d});
  cols->attrs().dimensions = {1};
  EXPECT_EQ(inferred(cols), "f32[2,7]");
  Instruction* bad = b.add(Opcode::kConcatenate, sh(kF32, {4, 3}), {a, d});
  bad->attrs().dimensions = {0};
  EXPECT_PRED2(
      has, error_of(bad),
      "concatenate: operand 1 f32[2,4] does not match operand 0 f32[2,3] outside dimension 0");
  bad->attrs().dimensions = {2};
  EXPECT_PRED2(has, error_of(bad), "dimension 2 is out of range");
}

TEST_F(ShapeInferenceTest, Pad) {
  Instruction* x = b.param(sh(kF32, {3}));
  Instruction* v = b.param(sh(kF32));
  Instruction* p = b.add(Opcode::kPad, sh(kF32, {8}), {x, v});
  p->attrs().padding = {{1, 2, 1}};  // 1 + 3 + 2 interior + 2
  EXPECT_EQ(inferred(p), "f32[8]");
  p->attrs().padding = {{-1, -1, 0}};
  EXPECT_EQ(inferred(p), "f32[1]");
  p->attrs().padding = {{-2, -2, 0}};
  EXPECT_PRED2(has, error_of(p), "pad: padding -2_-2_0 makes dimension 0 (size 3) negative");
  p->attrs().padding = {{0, 0, -1}};
  EXPECT_PRED2(has, error_of(p), "negative interior padding");
  Instruction* vec = b.param(sh(kF32, {1}));
  Instruction* q = b.add(Opcode::kPad, sh(kF32, {3}), {x, vec});
  q->attrs().padding = {{0, 0, 0}};
  EXPECT_PRED2(has, error_of(q), "padding value must be a scalar");
}

TEST_F(ShapeInferenceTest, BitcastIotaParameterConstant) {
  Instruction* x = b.param(sh(kF32, {2, 3}));
  EXPECT_EQ(inferred(b.add(Opcode::kBitcast, sh(kS32, {6}), {x})), "s32[6]");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kBitcast, sh(kF16, {6}), {x})),
               "cannot bitcast f32[2,3] (24 bytes) to f16[6] (12 bytes)");
  Instruction* iota = b.add(Opcode::kIota, sh(kS32, {4, 5}), {});
  iota->attrs().iota_dimension = 1;
  EXPECT_EQ(inferred(iota), "s32[4,5]");
  iota->attrs().iota_dimension = 2;
  EXPECT_PRED2(has, error_of(iota), "iota: iota_dimension 2 is out of range for s32[4,5]");
  EXPECT_EQ(inferred(x), "f32[2,3]");
  Instruction* c = b.add(Opcode::kConstant, sh(kF32, {2}), {});
  c->attrs().literal = Literal(sh(kF32, {2}));
  EXPECT_EQ(inferred(c), "f32[2]");
  c->attrs().literal = Literal(sh(kF32, {3}));
  EXPECT_PRED2(has, error_of(c),
               "constant: literal of shape f32[3] does not match the declared shape f32[2]");
}

TEST_F(ShapeInferenceTest, Reduce) {
  Instruction* x = b.param(sh(kF32, {2, 3, 4}));
  Instruction* init = b.param(sh(kF32));
  Instruction* r = b.add(Opcode::kReduce, sh(kF32, {2, 4}), {x, init});
  r->attrs().dimensions = {1};
  r->add_called(b.scalar_add(kF32));
  EXPECT_EQ(inferred(r), "f32[2,4]");
  r->attrs().dimensions = {1, 1};
  EXPECT_PRED2(has, error_of(r), "reduce: dimensions {1,1} repeats dimension 1");

  Instruction* wrong = b.add(Opcode::kReduce, sh(kF32, {2, 4}), {x, init});
  wrong->attrs().dimensions = {1};
  Computation* s32_add = b.scalar_add(kS32);
  wrong->add_called(s32_add);
  EXPECT_PRED2(has, error_of(wrong),
               "reduce: to_apply computation " + s32_add->name() +
                   " has signature (s32[], s32[]) -> s32[], expected (f32[], f32[]) -> f32[]");

  // Variadic: an argmax-style pair reduction returns a tuple of scalars.
  Instruction* v = b.param(sh(kF32, {2, 3}));
  Instruction* k = b.param(sh(kS32, {2, 3}));
  Instruction* vi = b.param(sh(kF32));
  Instruction* ki = b.param(sh(kS32));
  Instruction* pair = b.add(Opcode::kReduce, tup({sh(kF32), sh(kS32)}), {v, k, vi, ki});
  pair->attrs().dimensions = {0, 1};
  pair->add_called(
      b.signature({sh(kF32), sh(kS32), sh(kF32), sh(kS32)}, tup({sh(kF32), sh(kS32)})));
  EXPECT_EQ(inferred(pair), "(f32[], s32[])");
  Instruction* odd = b.add(Opcode::kReduce, sh(kF32), {v, k, vi});
  EXPECT_PRED2(has, error_of(odd), "expects N inputs followed by N init values, got 3 operands");
}

TEST_F(ShapeInferenceTest, ReduceWindow) {
  Instruction* x = b.param(sh(kF32, {4, 5}));
  Instruction* init = b.param(sh(kF32));
  Instruction* r = b.add(Opcode::kReduceWindow, sh(kF32, {2, 3}), {x, init});
  r->add_called(b.scalar_add(kF32));
  Window w;
  w.dims = {{.size = 2, .stride = 2}, {.size = 3, .stride = 1}};
  r->attrs().window = w;
  // (4 - 2) / 2 + 1 = 2 and (5 - 3) / 1 + 1 = 3.
  EXPECT_EQ(inferred(r), "f32[2,3]");
  // Dim 0: padded 1 + 4 + 1 = 6, dilated window 3 -> 4. Dim 1: dilated base 9,
  // window 3, stride 2 -> 4.
  w.dims = {{.size = 2, .stride = 1, .pad_low = 1, .pad_high = 1, .rhs_dilation = 2},
            {.size = 3, .stride = 2, .lhs_dilation = 2}};
  r->attrs().window = w;
  EXPECT_EQ(inferred(r), "f32[4,4]");
  w.dims[1].stride = 0;
  r->attrs().window = w;
  EXPECT_PRED2(has, error_of(r), "reduce-window: window dimension 1 has non-positive stride 0");
  w.dims.pop_back();
  r->attrs().window = w;
  EXPECT_PRED2(has, error_of(r), "window has 1 dimensions but the operand f32[4,5] has rank 2");
}

TEST_F(ShapeInferenceTest, SelectAndScatter) {
  Instruction* x = b.param(sh(kF32, {4, 6}));
  Instruction* src = b.param(sh(kF32, {2, 3}));
  Instruction* init = b.param(sh(kF32));
  Instruction* s = b.add(Opcode::kSelectAndScatter, sh(kF32, {4, 6}), {x, src, init});
  Window w;
  w.dims = {{.size = 2, .stride = 2}, {.size = 2, .stride = 2}};
  s->attrs().window = w;
  Computation* select = b.scalar_binary(Opcode::kCompare, kF32, kPred);
  select->root()->attrs().direction = ComparisonDirection::kGe;
  s->add_called(select);
  s->add_called(b.scalar_add(kF32));
  EXPECT_EQ(inferred(s), "f32[4,6]");
  Instruction* bad_src = b.param(sh(kF32, {2, 2}));
  s->set_operand(1, bad_src);
  EXPECT_PRED2(has, error_of(s), "source f32[2,2] must have the windowed operand's shape f32[2,3]");
}

TEST_F(ShapeInferenceTest, Sort) {
  Instruction* x = b.param(sh(kF32, {3, 4}));
  Instruction* s = b.add(Opcode::kSort, sh(kF32, {3, 4}), {x});
  s->attrs().dimensions = {1};
  s->add_called(b.scalar_binary(Opcode::kCompare, kF32, kPred));
  EXPECT_EQ(inferred(s), "f32[3,4]");
  Instruction* k = b.param(sh(kF32, {5}));
  Instruction* v = b.param(sh(kS32, {5}));
  Instruction* kv = b.add(Opcode::kSort, tup({sh(kF32, {5}), sh(kS32, {5})}), {k, v});
  kv->attrs().dimensions = {0};
  kv->add_called(b.signature({sh(kF32), sh(kF32), sh(kS32), sh(kS32)}, sh(kPred)));
  EXPECT_EQ(inferred(kv), "(f32[5], s32[5])");
  Instruction* bad = b.add(Opcode::kSort, tup({sh(kF32, {5}), sh(kS32, {5})}), {k, v});
  bad->attrs().dimensions = {0};
  bad->add_called(b.scalar_binary(Opcode::kCompare, kF32, kPred));
  EXPECT_PRED2(has, error_of(bad), "sort: comparator computation");
  EXPECT_PRED2(has, error_of(bad), "expected (f32[], f32[], s32[], s32[]) -> pred[]");
}

TEST_F(ShapeInferenceTest, TupleAndGetTupleElement) {
  Instruction* a = b.param(sh(kF32, {2}));
  Instruction* c = b.param(sh(kS32));
  Instruction* t = b.add(Opcode::kTuple, tup({sh(kF32, {2}), sh(kS32)}), {a, c});
  EXPECT_EQ(inferred(t), "(f32[2], s32[])");
  Instruction* g = b.add(Opcode::kGetTupleElement, sh(kS32), {t});
  g->attrs().tuple_index = 1;
  EXPECT_EQ(inferred(g), "s32[]");
  g->attrs().tuple_index = 2;
  EXPECT_PRED2(has, error_of(g),
               "get-tuple-element: index 2 is out of range for a tuple of 2 elements");
  Instruction* not_tuple = b.add(Opcode::kGetTupleElement, sh(kF32), {a});
  EXPECT_PRED2(has, error_of(not_tuple), "operand f32[2] is not a tuple");
  EXPECT_EQ(inferred(b.add(Opcode::kOptimizationBarrier, tup({sh(kF32, {2}), sh(kS32)}), {t})),
            "(f32[2], s32[])");
}

TEST_F(ShapeInferenceTest, CallAndFusion) {
  Computation* callee = b.signature({sh(kF32, {2}), sh(kF32, {2})}, sh(kF32, {2}));
  Instruction* x = b.param(sh(kF32, {2}));
  Instruction* i = b.param(sh(kS32, {2}));
  for (Opcode op : {Opcode::kCall, Opcode::kFusion}) {
    Instruction* c = b.add(op, sh(kF32, {2}), {x, x});
    c->add_called(callee);
    EXPECT_EQ(inferred(c), "f32[2]");
    Instruction* bad = b.add(op, sh(kF32, {2}), {x, i});
    bad->add_called(callee);
    EXPECT_PRED2(has, error_of(bad), "argument 1 s32[2] does not match parameter 1 f32[2]");
    Instruction* few = b.add(op, sh(kF32, {2}), {x});
    few->add_called(callee);
    EXPECT_PRED2(has, error_of(few), "passes 1 arguments to computation " + callee->name());
  }
  Instruction* none = b.add(Opcode::kCall, sh(kF32, {2}), {x});
  EXPECT_PRED2(has, error_of(none), "call: expects 1 called computation, got 0");
}

TEST_F(ShapeInferenceTest, While) {
  Shape state = tup({sh(kS32), sh(kF32, {3})});
  Instruction* init = b.param(state);
  Instruction* w = b.add(Opcode::kWhile, state, {init});
  w->add_called(b.signature({state}, sh(kPred)));
  w->add_called(b.signature({state}, state));
  EXPECT_EQ(inferred(w), "(s32[], f32[3])");
  Instruction* bad = b.add(Opcode::kWhile, state, {init});
  bad->add_called(b.signature({state}, sh(kPred)));
  bad->add_called(b.signature({state}, tup({sh(kS32), sh(kF32, {4})})));
  EXPECT_PRED2(has, error_of(bad), "while: body computation");
  EXPECT_PRED2(has, error_of(bad), "expected ((s32[], f32[3])) -> (s32[], f32[3])");
  Instruction* cond = b.add(Opcode::kWhile, state, {init});
  cond->add_called(b.signature({state}, sh(kPred, {1})));
  cond->add_called(b.signature({state}, state));
  EXPECT_PRED2(has, error_of(cond), "while: condition computation");
}

TEST_F(ShapeInferenceTest, Conditional) {
  Instruction* p = b.param(sh(kPred));
  Instruction* n = b.param(sh(kS32));
  Instruction* x = b.param(sh(kF32, {2}));
  Computation* on_x = b.signature({sh(kF32, {2})}, sh(kF32));
  Computation* on_n = b.signature({sh(kS32)}, sh(kF32));
  Instruction* two = b.add(Opcode::kConditional, sh(kF32), {p, x, n});
  two->add_called(on_x);
  two->add_called(on_n);
  EXPECT_EQ(inferred(two), "f32[]");
  Instruction* three = b.add(Opcode::kConditional, sh(kF32), {n, x, n, x});
  three->add_called(on_x);
  three->add_called(on_n);
  three->add_called(on_x);
  EXPECT_EQ(inferred(three), "f32[]");
  Instruction* pred3 = b.add(Opcode::kConditional, sh(kF32), {p, x, n, x});
  for (Computation* c : {on_x, on_n, on_x}) pred3->add_called(c);
  EXPECT_PRED2(has, error_of(pred3), "a pred selector needs 2 branch computations, got 3");
  Instruction* swapped = b.add(Opcode::kConditional, sh(kF32), {p, n, x});
  swapped->add_called(on_x);
  swapped->add_called(on_n);
  EXPECT_PRED2(has, error_of(swapped), "conditional: branch 0 computation");
  Computation* other = b.signature({sh(kS32)}, sh(kS32));
  Instruction* results = b.add(Opcode::kConditional, sh(kF32), {p, x, n});
  results->add_called(on_x);
  results->add_called(other);
  EXPECT_PRED2(has, error_of(results), "returns s32[] but branch 0 returns f32[]");
  Instruction* bad_selector = b.add(Opcode::kConditional, sh(kF32), {x, x, n});
  EXPECT_PRED2(has, error_of(bad_selector), "branch selector f32[2] must be pred[] or s32[]");
}

TEST_F(ShapeInferenceTest, CustomCallRngAndIds) {
  Instruction* x = b.param(sh(kF32, {2}));
  EXPECT_EQ(inferred(b.add(Opcode::kCustomCall, tup({sh(kF32, {7}), sh(kS8)}), {x, x})),
            "(f32[7], s8[])");
  Instruction* state = b.param(sh(kU64, {2}));
  Shape rng_shape = tup({sh(kU64, {2}), sh(kU32, {4, 4})});
  EXPECT_EQ(inferred(b.add(Opcode::kRngBitGenerator, rng_shape, {state})), "(u64[2], u32[4,4])");
  Instruction* bad_state = b.param(sh(kU32, {4}));
  EXPECT_PRED2(has, error_of(b.add(Opcode::kRngBitGenerator, rng_shape, {bad_state})),
               "rng-bit-generator: state u32[4] must be a u64 array");
  EXPECT_PRED2(has, error_of(b.add(Opcode::kRngBitGenerator, sh(kU32, {4}), {state})),
               "must be a tuple (new state, output array)");
  EXPECT_EQ(inferred(b.add(Opcode::kReplicaId, sh(kU32), {})), "u32[]");
  EXPECT_EQ(inferred(b.add(Opcode::kPartitionId, sh(kU32), {})), "u32[]");
}

}  // namespace
}  // namespace podsim::ir
