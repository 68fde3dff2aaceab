// Verifier: every class of structural, shape, header and collective error, reported as
// "FILE:LINE:COLUMN: in computation C, instruction I: what", all of them at once.
#include "compiler/ir/verifier.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "tests/compiler/ir/ir_builder_test_util.h"

namespace podsim::ir {
namespace {

using namespace podsim::ir::testing;

std::string joined(const std::vector<std::string>& errors) {
  return fmt::format("{}", fmt::join(errors, "\n"));
}

class VerifierTest : public ::testing::Test {
 protected:
  std::vector<std::string> check() { return check_module(b.module()); }
  // The one error the module has (fails the test when there are more or none).
  std::string only_error() {
    std::vector<std::string> errors = check();
    EXPECT_EQ(errors.size(), 1u) << joined(errors);
    return errors.empty() ? "" : errors[0];
  }
  static std::string at(const Instruction* i) {
    return fmt::format("<input>:0:0: in computation {}, instruction {}: ", i->parent()->name(),
                       i->name());
  }
  ModuleBuilder b;
};

TEST_F(VerifierTest, ValidParsedModuleHasNoErrors) {
  auto m = parse_module(
      R"(HloModule valid, replica_count=2, entry_computation_layout={(f32[4,3]{1,0}, s32[])->(f32[4]{0}, s32[])}

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

cond {
  st = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  st = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  v = f32[4] get-tuple-element(st), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  v2 = f32[4] all-reduce(v), replica_groups={{0,1}}, to_apply=add
  ROOT t = (s32[], f32[4]) tuple(i2, v2)
}

ENTRY main {
  p = f32[4,3] parameter(0)
  k = s32[] parameter(1)
  z = f32[] constant(0)
  r = f32[4] reduce(p, z), dimensions={1}, to_apply=add
  init = (s32[], f32[4]) tuple(k, r)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  out = f32[4] get-tuple-element(w), index=1
  b = f32[2,4] broadcast(out), dimensions={1}
  tr = f32[4,2] transpose(b), dimensions={1,0}
  d = f32[4,4] dot(tr, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[4] slice(out), slice={[0:4]}
  ROOT res = (f32[4], s32[]) tuple(s, k)
}
)",
      "valid.hlo");
  EXPECT_EQ(joined(check_module(*m, "valid.hlo")), "");
  EXPECT_NO_THROW(verify_module(*m, "valid.hlo"));
}

TEST_F(VerifierTest, ParsedModuleReportsEveryErrorWithItsLine) {
  auto m = parse_module(R"(HloModule bad

ENTRY main {
  p = f32[2,3] parameter(0)
  q = s32[3] parameter(1)
  a = f32[2,3] add(p, q)
  t = f32[3,2] transpose(p), dimensions={0,0}
  ROOT n = f32[3] negate(p)
}
)",
                        "bad.hlo");
  std::vector<std::string> errors = check_module(*m, "bad.hlo");
  ASSERT_EQ(errors.size(), 3u) << joined(errors);
  EXPECT_EQ(errors[0].rfind("bad.hlo:6:", 0), 0u) << errors[0];
  EXPECT_PRED2(
      has, errors[0],
      "in computation main, instruction a: add: operand shapes f32[2,3] and s32[3] differ");
  EXPECT_EQ(errors[1].rfind("bad.hlo:7:", 0), 0u) << errors[1];
  EXPECT_PRED2(has, errors[1], "instruction t: transpose: permutation {0,0} repeats dimension 0");
  EXPECT_EQ(errors[2].rfind("bad.hlo:8:", 0), 0u) << errors[2];
  EXPECT_PRED2(
      has, errors[2],
      "instruction n: negate: declared shape f32[3] does not match the inferred shape f32[2,3]");
  try {
    verify_module(*m, "bad.hlo");
    ADD_FAILURE() << "verify_module accepted a bad module";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), joined(errors));
  }
}

TEST_F(VerifierTest, PositionOfInstructionsBuiltInCode) {
  Instruction* x = b.param(sh(kF32, {2}));
  Instruction* n = b.add(Opcode::kNegate, sh(kF32, {3}), {x});
  EXPECT_EQ(only_error(),
            at(n) + "negate: declared shape f32[3] does not match the inferred shape f32[2]");
  n->set_pos({12, 5});
  EXPECT_EQ(check_module(b.module(), "model.hlo")[0],
            "model.hlo:12:5: in computation main, instruction " + n->name() +
                ": negate: declared shape f32[3] does not match the inferred shape f32[2]");
}

TEST_F(VerifierTest, LayoutsAreIgnored) {
  Shape with_layout = sh(kF32, {2, 3});
  with_layout.set_layout({{0, 1}, ""});
  Instruction* x = b.param(with_layout);
  b.add(Opcode::kNegate, sh(kF32, {2, 3}), {x});
  EXPECT_EQ(joined(check()), "");
}

TEST_F(VerifierTest, OperandFromAnotherComputation) {
  Computation* other = b.computation("other");
  Instruction* q = b.param(other, sh(kF32, {2}));
  Instruction* p = b.param(sh(kF32, {2}));
  Instruction* a = b.add(Opcode::kAdd, sh(kF32, {2}), {p, q});
  EXPECT_EQ(only_error(), at(a) + "operand 1 (" + q->name() +
                              ") is not in this computation (it belongs to computation other)");
}

TEST_F(VerifierTest, OperandUsedBeforeDefinition) {
  Instruction* p = b.param(sh(kF32, {2}));
  auto later = std::make_unique<Instruction>("later", Opcode::kNegate, sh(kF32, {2}));
  later->add_operand(p);
  Instruction* use = b.add(Opcode::kNegate, sh(kF32, {2}), {later.get()});
  b.main()->add(std::move(later));
  EXPECT_EQ(only_error(), at(use) + "operand 0 (later) is used before it is defined (a cycle)");
  use->set_operand(0, use);
  EXPECT_PRED2(has, only_error(),
               "operand 0 (the instruction itself) is used before it is defined");
}

TEST_F(VerifierTest, ControlPredecessorCycle) {
  Instruction* p = b.param(sh(kF32, {2}));
  Instruction* first = b.add(Opcode::kNegate, sh(kF32, {2}), {p});
  Instruction* second = b.add(Opcode::kNegate, sh(kF32, {2}), {first});
  first->add_control_predecessor(second);
  EXPECT_EQ(only_error(), at(first) + "is on a cycle of operands and control-predecessors");
}

TEST_F(VerifierTest, RootMustBeSetAndLocal) {
  b.param(sh(kF32, {2}));
  b.main()->set_root(nullptr);
  EXPECT_EQ(only_error(),
            "<input>:0:0: in computation main: the computation has no root instruction");
  Computation* other = b.computation("other");
  Instruction* q = b.param(other, sh(kF32));
  b.main()->set_root(q);
  EXPECT_PRED2(has, only_error(),
               "root " + q->name() + " is not an instruction of this computation");
}

TEST_F(VerifierTest, ParameterNumbers) {
  Instruction* p0 = b.param(sh(kF32));
  Instruction* p1 = b.param(sh(kF32));
  p1->attrs().parameter_number = 2;
  EXPECT_EQ(
      only_error(),
      "<input>:0:0: in computation main: parameter numbers must be 0..1 without gaps; parameter 1 "
      "is missing");
  p1->attrs().parameter_number = 0;
  EXPECT_EQ(only_error(), at(p1) + "parameter number 0 is already used by " + p0->name());
  p1->attrs().parameter_number = -1;
  EXPECT_EQ(only_error(), at(p1) + "parameter number -1 is negative");
}

TEST_F(VerifierTest, CallGraphCycles) {
  Computation* a = b.computation("a");
  Computation* c = b.computation("b");
  Instruction* call_b = b.add(a, Opcode::kCall, sh(kF32, {2}), {b.param(a, sh(kF32, {2}))});
  call_b->add_called(c);
  Instruction* call_a = b.add(c, Opcode::kCall, sh(kF32, {2}), {b.param(c, sh(kF32, {2}))});
  call_a->add_called(a);
  Instruction* entry_call = b.add(Opcode::kCall, sh(kF32, {2}), {b.param(sh(kF32, {2}))});
  entry_call->add_called(a);
  EXPECT_EQ(only_error(), at(call_a) + "call graph cycle: a -> b -> a");

  Computation* self = b.computation("self");
  Instruction* again = b.add(self, Opcode::kCall, sh(kF32), {b.param(self, sh(kF32))});
  again->add_called(self);
  std::vector<std::string> errors = check();
  ASSERT_EQ(errors.size(), 2u) << joined(errors);
  EXPECT_EQ(errors[1], at(again) + "call graph cycle: self -> self");
}

TEST_F(VerifierTest, CalledComputationsMustExistInTheModule) {
  Computation outside("outside");
  Instruction* op = outside.add(std::make_unique<Instruction>("op", Opcode::kParameter, sh(kF32)));
  outside.set_root(op);
  Instruction* call = b.add(Opcode::kCall, sh(kF32), {b.param(sh(kF32))});
  call->add_called(&outside);
  EXPECT_EQ(only_error(), at(call) + "calls computation outside, which is not in the module");
  Instruction* cond = b.add(Opcode::kConditional, sh(kF32), {b.param(sh(kPred)), call, call});
  cond->add_called(nullptr);
  cond->add_called(nullptr);
  std::vector<std::string> errors = check();
  ASSERT_EQ(errors.size(), 3u) << joined(errors);
  EXPECT_EQ(errors[1], at(cond) + "called computation 0 is missing");
  EXPECT_EQ(errors[2], at(cond) + "called computation 1 is missing");
}

TEST_F(VerifierTest, OperandCountAndCalledCount) {
  Instruction* x = b.param(sh(kF32, {2}));
  Instruction* add = b.add(Opcode::kAdd, sh(kF32, {2}), {x});
  EXPECT_EQ(only_error(), at(add) + "add expects 2 operands, got 1");
  add->add_operand(x);
  Instruction* r = b.add(Opcode::kReduce, sh(kF32), {x, b.param(sh(kF32))});
  r->attrs().dimensions = {0};
  EXPECT_EQ(only_error(), at(r) + "reduce: expects 1 called computation, got 0");
}

TEST_F(VerifierTest, EntryComputation) {
  Module m("m");
  Computation* c = m.add_computation(std::make_unique<Computation>("c"));
  c->set_root(c->add(std::make_unique<Instruction>("p", Opcode::kParameter, sh(kF32))));
  std::vector<std::string> errors = check_module(m);
  ASSERT_EQ(errors.size(), 1u) << joined(errors);
  EXPECT_EQ(errors[0], "<input>:0:0: in module m: the module has no entry computation");

  b.param(sh(kF32));
  Computation* second = b.computation("second");
  b.param(second, sh(kF32));
  second->set_entry(true);
  EXPECT_EQ(
      only_error(),
      "<input>:0:0: in computation second: is marked as an entry computation, but the module's "
      "entry is main");
}

TEST_F(VerifierTest, DuplicateNames) {
  Instruction* p = b.param(sh(kF32));
  auto dup = std::make_unique<Instruction>(p->name(), Opcode::kNegate, sh(kF32));
  dup->add_operand(p);
  b.main()->set_root(b.main()->add(std::move(dup)));
  EXPECT_PRED2(has, only_error(), "instruction name " + p->name() + " is used twice");
  b.main()->instructions().back()->set_name("other");
  b.param(b.computation("main"), sh(kF32));
  EXPECT_PRED2(has, only_error(), "computation name main is used twice in the module");
}

TEST_F(VerifierTest, EntryComputationLayout) {
  Instruction* p = b.param(sh(kF32, {2}));
  Instruction* root = b.add(Opcode::kNegate, sh(kF32, {2}), {p});
  b.module().entry_parameter_layouts = std::vector<Shape>{sh(kF32, {2}), sh(kS32)};
  EXPECT_PRED2(has, only_error(),
               "in computation main: entry_computation_layout has 2 parameters but the entry "
               "computation takes 1");
  b.module().entry_parameter_layouts = std::vector<Shape>{sh(kF32, {3})};
  EXPECT_EQ(
      only_error(),
      at(p) + "entry_computation_layout gives parameter 0 the shape f32[3], but it is f32[2]");
  b.module().entry_parameter_layouts = std::vector<Shape>{sh(kF32, {2})};
  b.module().entry_result_layout = sh(kS32);
  EXPECT_EQ(
      only_error(),
      at(root) +
          "entry_computation_layout gives the result the shape s32[], but the root is f32[2]");
}

TEST_F(VerifierTest, InputOutputAlias) {
  Instruction* p0 = b.param(sh(kF32, {2}));
  Instruction* p1 = b.param(sh(kS32));
  b.add(Opcode::kTuple, tup({sh(kF32, {2}), sh(kS32)}), {p0, p1});
  auto& aliases = b.module().input_output_alias;
  aliases = {{{0}, 0, {}, false}, {{1}, 1, {}, true}};
  EXPECT_EQ(joined(check()), "");
  aliases = {{{1}, 0, {}, false}};
  EXPECT_EQ(only_error(), at(p0) +
                              "input_output_alias {1}: (0, {}) aliases the output s32[] with the "
                              "parameter buffer f32[2] of another shape");
  aliases = {{{0}, 0, {}, false}, {{0}, 0, {}, false}};
  std::vector<std::string> errors = check();
  ASSERT_EQ(errors.size(), 2u) << joined(errors);
  EXPECT_PRED2(has, errors[0], "aliases an output index twice");
  EXPECT_PRED2(has, errors[1], "aliases a parameter buffer that another output already aliases");
  aliases = {{{2}, 1, {}, false}};
  EXPECT_PRED2(has, only_error(), "names no buffer of output shape (f32[2], s32[])");
  aliases = {{{1}, 1, {0}, false}};
  EXPECT_PRED2(has, only_error(), "names no buffer of parameter shape s32[]");
  aliases = {{{0}, 5, {}, false}};
  EXPECT_EQ(only_error(),
            "<input>:0:0: in computation main: input_output_alias {0}: (5, {}) refers to "
            "parameter 5, which the entry computation lacks");
}

TEST_F(VerifierTest, ReplicaGroupIds) {
  b.module().replica_count = 4;
  Instruction* x = b.param(sh(kF32, {4}));
  Instruction* ar = b.add(Opcode::kAllReduce, sh(kF32, {4}), {x});
  ar->add_called(b.scalar_add(kF32));
  ar->attrs().replica_groups = ReplicaGroups{{{0, 1}, {1, 2, 3}}, {}};
  EXPECT_EQ(only_error(), at(ar) + "replica_groups repeat replica id 1");
  ar->attrs().replica_groups = ReplicaGroups{{{0, 1}, {2, 3, 4}}, {}};
  std::vector<std::string> errors = check();
  ASSERT_EQ(errors.size(), 2u) << joined(errors);
  EXPECT_EQ(errors[0], at(ar) + "replica_groups has replica id 4, but the module has 4 replicas");
  EXPECT_EQ(errors[1], at(ar) + "replica_groups cover 5 replicas, but the module has 4");
  ar->attrs().replica_groups = ReplicaGroups{{{0, 1}, {2, -3}}, {}};
  EXPECT_PRED2(has, check()[0], "replica_groups has a negative replica id -3");
  // Flattened device ids are bounded by replicas x partitions.
  b.module().replica_count = 1;
  b.module().num_partitions = 4;
  ar->attrs().channel_id = 1;
  ar->attrs().use_global_device_ids = true;
  ar->attrs().replica_groups = ReplicaGroups{{{0, 1}, {2, 3}}, {}};
  EXPECT_EQ(joined(check()), "");
  ar->attrs().replica_groups = ReplicaGroups{{{0, 4}}, {}};
  EXPECT_EQ(only_error(), at(ar) + "replica_groups has device id 4, but the module has 4 devices");
}

TEST_F(VerifierTest, DeviceCountsMustBePositive) {
  b.module().replica_count = 2;
  b.module().num_partitions = 0;
  Instruction* rs = b.add(Opcode::kReduceScatter, sh(kF32, {4}), {b.param(sh(kF32, {8}))});
  rs->attrs().dimensions = {0};
  rs->attrs().channel_id = 1;
  rs->attrs().replica_groups = ReplicaGroups{{{0, 1}}, {}};
  rs->add_called(b.scalar_add(kF32));
  std::vector<std::string> errors = check();
  ASSERT_EQ(errors.size(), 2u) << joined(errors);
  EXPECT_EQ(errors[0], "<input>:0:0: in module m: num_partitions 0 must be at least 1");
  EXPECT_EQ(errors[1], at(rs) + "reduce-scatter: group size 0 is not positive (num_partitions 0)");
}

TEST_F(VerifierTest, CollectivePermuteIds) {
  b.module().num_partitions = 2;
  Instruction* cp = b.add(Opcode::kCollectivePermute, sh(kF32, {4}), {b.param(sh(kF32, {4}))});
  cp->attrs().channel_id = 1;
  cp->attrs().source_target_pairs = {{0, 1}, {1, 0}};
  EXPECT_EQ(joined(check()), "");
  cp->attrs().source_target_pairs = {{0, 1}, {1, 2}};
  EXPECT_EQ(only_error(),
            at(cp) + "source_target_pairs has partition id 2, but the module has 2 partitions");
  // Without the counts in the module header nothing bounds the ids.
  b.module().num_partitions = 1;
  EXPECT_EQ(joined(check()), "");
}

TEST_F(VerifierTest, AbsurdShapesAreErrors) {
  Instruction* p = b.param(sh(kF32, {-1}));
  EXPECT_EQ(only_error(), at(p) +
                              "the result has an invalid shape f32[-1] (negative dimension or more "
                              "than 2^40 elements)");
  Instruction* n = b.add(Opcode::kNegate, sh(kF32, {-1}), {p});
  // The user's own declared shape is invalid too; its operand's is not reported again.
  std::vector<std::string> errors = check();
  ASSERT_EQ(errors.size(), 2u) << joined(errors);
  EXPECT_PRED2(has, errors[1], n->name() + ": the result has an invalid shape");
  Instruction* big = b.param(sh(kF32, {int64_t{1} << 30, int64_t{1} << 30}));
  EXPECT_PRED2(has, joined(check()), big->name() + ": the result has an invalid shape");
}

TEST_F(VerifierTest, MalformedInstructionsAreReportedNotCrashed) {
  Instruction* x = b.param(sh(kF32, {2}));
  Instruction* g = b.add(Opcode::kGetTupleElement, sh(kF32), {x});
  Instruction* w = b.add(Opcode::kWhile, sh(kF32, {2}), {x});
  Instruction* missing = b.add(Opcode::kNegate, sh(kF32, {2}), {nullptr});
  std::vector<std::string> errors = check();
  ASSERT_EQ(errors.size(), 3u) << joined(errors);
  EXPECT_EQ(errors[0], at(g) + "get-tuple-element: operand f32[2] is not a tuple");
  EXPECT_EQ(errors[1], at(w) + "while: expects 2 called computations, got 0");
  EXPECT_EQ(errors[2], at(missing) + "operand 0 is missing");
}

}  // namespace
}  // namespace podsim::ir
