// Internal to the OpenCL target: the emitter of OpenCL C statements that compute an
// instruction's value at a symbolic index (kernel_source.cc and placement_source.cc
// assemble kernels from them).
// Index math folds broadcasts, transposes, reshapes, slices, pads, concatenations,
// reverses, gathers and dynamic slices into the loads of the kernel's inputs; 16-bit
// floats compute in f32 and round after every op, as the reference evaluator does. Also
// how each element type is stored, computed, loaded and stored in OpenCL C.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/instruction.h"

namespace podsim::opencl {

inline bool is_16bit_float(ir::PrimitiveType t) {
  return t == ir::PrimitiveType::kF16 || t == ir::PrimitiveType::kBF16;
}

// OpenCL C names of the storage and compute types of an element type; nullopt for types
// the target does not handle.
std::optional<std::string> storage_type(ir::PrimitiveType type);
std::optional<std::string> compute_type(ir::PrimitiveType type);

// `expr` (of compute type) loaded from / stored to element `index` of buffer `buffer` of
// element type `type`.
std::string load_expr(ir::PrimitiveType type, const std::string& buffer, const std::string& index);
std::string store_stmt(ir::PrimitiveType type, const std::string& buffer, const std::string& index,
                       const std::string& value);

// Row-major strides of dims.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);

// Emits the statements computing instruction values at symbolic indices. Every value and
// every composite index gets a const temporary, so expressions never grow.
class Emitter {
 public:
  Emitter(std::map<const ir::Instruction*, int> inputs, std::string& body, int& counter)
      : inputs_(std::move(inputs)), body_(body), counter_(counter) {}

  bool ok() const { return ok_; }

  // The linear index of idx in a row-major array of dims, as an index temporary.
  std::string linear(const std::vector<int64_t>& dims, const std::vector<std::string>& idx);

  // The multi-index of linear index `lin` in a row-major array of dims.
  std::vector<std::string> delinearize(const std::vector<int64_t>& dims, const std::string& lin);

  std::string temp(const std::string& type, const std::string& expr);

  // The value of i (of compute type) at multi-index idx of i's shape.
  std::string value(const ir::Instruction* i, const std::vector<std::string>& idx);

  // Makes `expr` the value of scalar i (a parameter of a computation applied per element).
  void bind(const ir::Instruction* i, const std::string& expr);
  // The values of computation c (one per element of a tuple root) on scalar arguments.
  std::vector<std::string> apply(const ir::Computation& c, const std::vector<std::string>& args);
  // The combination of two values of type t by a reducer's op; nullopt if unsupported.
  std::optional<std::string> binary(ir::Opcode op, ir::PrimitiveType t, const std::string& x,
                                    const std::string& y);

 private:
  std::string fail_unsupported();

  std::string compute(const ir::Instruction* i, const std::vector<std::string>& idx);

  static bool row_major(const ir::Shape& s);

  std::vector<std::string> reshape_index(const std::vector<int64_t>& to,
                                         const std::vector<int64_t>& from,
                                         const std::vector<std::string>& idx);

  std::string pad(const ir::Instruction* i, const std::vector<std::string>& idx);

  // An index value (a scalar of any integer type) clamped to [0, max] as an index temporary;
  // unsigned values beyond int64 saturate first, as the evaluator reads them.
  std::string index_value(const ir::Instruction* index, const std::vector<std::string>& at,
                          int64_t max);
  std::string start_index(const ir::Instruction* index, int64_t max);

  // XLA gather: result index -> batch index G (the dimensions that are not offset_dims)
  // -> start vector read from the indices at G, clamped so the slice fits; plus the
  // offsets (and batching dimensions) -> the operand element.
  std::string gather(const ir::Instruction* i, const std::vector<std::string>& idx);

  std::string concatenate(const ir::Instruction* i, const std::vector<std::string>& idx);

  std::string convert(const ir::Instruction* i, const std::string& x);

  std::string bitcast_convert(const ir::Instruction* i, const std::string& x);

  std::string compare(const ir::Instruction* i, std::string x, std::string y);

  std::optional<std::string> unary(ir::Opcode op, ir::PrimitiveType t, const std::string& x);

  std::map<const ir::Instruction*, int> inputs_;
  std::string& body_;
  int& counter_;
  std::map<std::pair<const ir::Instruction*, std::string>, std::string> memo_;
  bool ok_ = true;
};

}  // namespace podsim::opencl
