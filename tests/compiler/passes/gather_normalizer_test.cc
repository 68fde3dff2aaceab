// The batched-gather normalizer: gathers with batching dimensions become gathers without
// them, and compute what they computed on the reference evaluator, bit for bit (random
// indices, clamped as XLA clamps them: the iota columns are in range).
#include <gtest/gtest.h>

#include "tests/compiler/passes/pass_test_util.h"

namespace podsim::passes::testing {
namespace {

void check_normalized(const char* text) {
  auto m = check_pass(text, make_batched_gather_normalizer(), 6);
  for (const auto& i : m->entry()->instructions()) {
    if (i->opcode() == Opcode::kGather) {
      EXPECT_TRUE(i->attrs().gather_dims.operand_batching_dims.empty()) << ir::print_module(*m);
    }
  }
}

TEST(BatchedGatherNormalizer, ImplicitIndexVector) {
  check_normalized(R"(HloModule m
ENTRY e {
  p0 = f32[2,5,3] parameter(0)
  p1 = s32[2,4] parameter(1)
  ROOT g = f32[2,4,3] gather(p0, p1), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,3}
})");
}

TEST(BatchedGatherNormalizer, IndexVectorInTheMiddleAndTwoBatchingDims) {
  check_normalized(R"(HloModule m
ENTRY e {
  p0 = f32[3,6,2,4] parameter(0)
  p1 = s32[2,1,5,3] parameter(1)
  ROOT g = f32[2,5,3,4] gather(p0, p1), offset_dims={3}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0,2}, start_indices_batching_dims={3,0}, index_vector_dim=1, slice_sizes={1,1,1,4}
})");
}

}  // namespace
}  // namespace podsim::passes::testing
