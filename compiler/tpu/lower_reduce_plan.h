// What the reduce lowerings share (lower_reduce.cc: add / maximum / minimum folded by the
// cross-lane units; lower_reduce_general.cc: any elementwise reducer, variadic reduce
// included): the operand's index space collapsed into reduced and kept groups, how the
// groups map onto tiles, and init values. Internal to compiler/tpu.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/tpu/expr.h"
#include "compiler/tpu/tiling.h"

namespace podsim::tpu {

inline constexpr int kReduced = 1;
inline constexpr int kKept = 0;

// kRow: the innermost group is reduced (kept rows on sublanes, reduced along lanes);
// kCol: the innermost group is kept (reduced along sublanes, kept along lanes); kFlat:
// every group is reduced (the innermost along whole registers).
enum class Mode { kRow, kCol, kFlat };

struct Plan {
  Mode mode = Mode::kRow;
  Collapsed c;
  int rin = -1, kin = -1;                  // collapsed dims: innermost reduced / kept (-1: none)
  std::vector<int> outer_kept, outer_red;  // the other groups, outer to inner
  size_t out_access = 0;                   // index of the output in c.strides
};

inline int64_t size_of(const Plan& p, int g) { return g < 0 ? 1 : p.c.dims[static_cast<size_t>(g)]; }
inline int64_t stride_of(const Plan& p, size_t a, int g) {
  return g < 0 ? 0 : p.c.strides[a][static_cast<size_t>(g)];
}
// Element offset of linear index `index` over the groups `gs` for access a.
int64_t groups_offset(const Plan& p, size_t a, const std::vector<int>& gs, int64_t index);
int64_t groups_count(const Plan& p, const std::vector<int>& gs);

// The init value as the kernel reads it: lane bits, or one element of a buffer.
struct Init {
  bool constant = true;
  uint32_t bits = 0;
  Leaf leaf;
};
Init init_of(Lowerer& l, Scope& s, const ir::Instruction& init);

// A reducer computation as a vector expression over its 2N scalar parameters (the N
// accumulated values, then the N new ones): one root per result.
struct Reducer {
  Expr expr;
  std::vector<int> roots;
  std::vector<int> leaf_param;  // the parameter number each leaf reads
};
// podsim::Error (unsupported) unless every instruction of i's to_apply is an elementwise
// op on scalars and it returns `results` values.
Reducer build_reducer(Lowerer& l, const ir::Instruction& i, int64_t results);
// Adds the reducer's computation to expr, parameter k reading node params[k]; returns
// the nodes of its results.
std::vector<int> splice_reducer(Expr& expr, const Reducer& reducer, const std::vector<int>& params);

// Reduces the expression's nodes (one per reduce operand, over e.dims) with the reducer,
// in index order, into out_buffers; within a step. The plan has reduced groups.
void emit_general_reduce_kernel(Lowerer& l, const Expr& e, const std::vector<int>& nodes, const Plan& p,
                                const Reducer& reducer, const std::vector<Init>& inits,
                                const std::vector<int32_t>& out_buffers, const std::vector<ir::PrimitiveType>& out_types);

}  // namespace podsim::tpu
