// Internals shared by the shape_inference_*.cc files and the verifier: checked shape
// arithmetic, access to operands and called computations that fails with podsim::Error
// instead of crashing, and the per-opcode inference functions the dispatcher calls.
// Messages here carry no opcode prefix; infer_shape() adds it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/collective_groups.h"
#include "compiler/ir/instruction.h"
#include "compiler/ir/module.h"

namespace podsim::ir::infer {

// Shape text without layout, and "{1,2}" for dimension lists.
std::string str(const Shape& shape);
std::string str(const std::vector<int64_t>& values);

// Throws when a dimension is negative, the element count is absurd, or tuples nest
// deeper than any real module does.
void validate_shape(const Shape& shape, std::string_view what);

int64_t add_checked(int64_t a, int64_t b);
int64_t mul_checked(int64_t a, int64_t b);
// A copy of shape without layouts (inference never infers layouts).
Shape without_layout(const Shape& shape);
// An array shape whose element count is checked (throws "result shape ... too large").
Shape make_shape(PrimitiveType type, std::vector<int64_t> dims);

const Shape& operand_shape(const Instruction& inst, int64_t i);
void expect_operand_count(const Instruction& inst, int64_t count);
void expect_array(const Shape& shape, std::string_view what);
void expect_scalar(const Shape& shape, std::string_view what);
// Each value in [0, rank) and no value twice.
void check_dims(const std::vector<int64_t>& dims, int64_t rank, std::string_view what);
void check_sorted(const std::vector<int64_t>& dims, std::string_view what);
bool contains(const std::vector<int64_t>& values, int64_t v);

// Called computations.
void expect_called_count(const Instruction& inst, int64_t count);
const Computation& called_computation(const Instruction& inst, int64_t i);
// Parameter shapes by number; throws on missing or repeated parameter numbers.
std::vector<Shape> parameter_shapes(const Computation& c);
const Shape& root_shape(const Computation& c);
// Throws unless c has exactly these parameter shapes and (when result is given) this
// root shape; role names the computation in the message ("to_apply", "condition").
void check_signature(const Computation& c, const std::vector<Shape>& params, const Shape* result,
                     std::string_view role);
// A reduction computation: N scalar accumulators then N scalar inputs, returning the
// accumulators (a scalar for N = 1, else a tuple).
void check_reducer(const Computation& c, const std::vector<PrimitiveType>& accumulator_types,
                   const std::vector<PrimitiveType>& input_types, std::string_view role);

// XLA's windowed output size per dimension of base (padding, base and window dilation).
std::vector<int64_t> window_output_dims(const Shape& base, const Window& window);

// Exclusive bound on the ids a collective's replica_groups or source_target_pairs may
// use, from the module's replica_count / num_partitions; 0 where nothing bounds them
// (the counts are at their default of 1, or the instruction is in no module).
int64_t collective_id_bound(const Instruction& inst, GroupMode mode);

// Per-opcode inference, grouped by file.
// shape_inference.cc
Shape infer_elementwise(const Instruction& inst);
// shape_inference_data.cc
Shape infer_source(const Instruction& inst);  // parameter, constant, iota
Shape infer_broadcast(const Instruction& inst);
Shape infer_reshape(const Instruction& inst);
Shape infer_transpose(const Instruction& inst);
Shape infer_slice(const Instruction& inst);
Shape infer_dynamic_slice(const Instruction& inst);
Shape infer_dynamic_update_slice(const Instruction& inst);
Shape infer_concatenate(const Instruction& inst);
Shape infer_pad(const Instruction& inst);
Shape infer_reverse(const Instruction& inst);
Shape infer_bitcast(const Instruction& inst);
Shape infer_copy_start(const Instruction& inst);  // (destination, source, u32[])
Shape infer_copy_done(const Instruction& inst);
Shape infer_reduce_precision(const Instruction& inst);
// shape_inference_reduce.cc
Shape infer_reduce(const Instruction& inst);
Shape infer_reduce_window(const Instruction& inst);
Shape infer_select_and_scatter(const Instruction& inst);
Shape infer_sort(const Instruction& inst);
Shape infer_map(const Instruction& inst);
Shape infer_batch_norm(const Instruction& inst);  // batch-norm-training, -inference, -grad
Shape infer_topk(const Instruction& inst);
// shape_inference_linalg.cc
Shape infer_dot(const Instruction& inst);
Shape infer_convolution(const Instruction& inst);
// shape_inference_gather.cc
Shape infer_gather(const Instruction& inst);
Shape infer_scatter(const Instruction& inst);
// shape_inference_control.cc
Shape infer_tuple(const Instruction& inst);
Shape infer_get_tuple_element(const Instruction& inst);
Shape infer_call(const Instruction& inst);  // call, fusion
// async-start (as a call of its computation: (operands, result[, the declared context])),
// async-update and async-done.
Shape infer_generic_async(const Instruction& inst);
Shape infer_while(const Instruction& inst);
Shape infer_conditional(const Instruction& inst);
Shape infer_custom_call(const Instruction& inst);
Shape infer_rng_bit_generator(const Instruction& inst);
// shape_inference_collective.cc
Shape infer_all_reduce(const Instruction& inst);
Shape infer_all_gather(const Instruction& inst);
Shape infer_reduce_scatter(const Instruction& inst);
Shape infer_all_to_all(const Instruction& inst);
Shape infer_collective_permute(const Instruction& inst);
Shape infer_collective_broadcast(const Instruction& inst);
// all-reduce-start and the like: the shape XLA gives the start of inst's collective.
Shape infer_async_start(const Instruction& inst);
Shape infer_async_done(const Instruction& inst);

}  // namespace podsim::ir::infer
