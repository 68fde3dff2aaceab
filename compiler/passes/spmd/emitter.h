// Writing the program every partition runs (the SPMD partitioner and its helpers in
// halos.h): instructions added to the computation being written, constants, values that
// differ per partition (a table indexed by partition-id), and the attributes of the
// collectives and of what is added for an instruction.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/passes/spmd/tiling.h"

namespace podsim::passes::spmd {

class Emitter {
 public:
  // Channel ids continue after the largest the module already uses.
  Emitter(ir::Module& module, int64_t devices);

  int64_t devices() const { return devices_; }

  ir::Instruction* add(ir::Opcode op, ir::Shape shape, std::vector<ir::Instruction*> operands,
                       std::string_view name);
  ir::Instruction* constant(ir::Literal value, std::string_view name);
  // This partition's entry of `values` (one per partition), as an s32 scalar.
  ir::Instruction* per_partition(const std::vector<int64_t>& values);
  // `scalar` broadcast to `shape`.
  ir::Instruction* splat(ir::Instruction* scalar, const ir::Shape& shape);
  // x's elements [offsets[p], offsets[p] + width) along d on partition p, every element
  // of the other dimensions.
  ir::Instruction* dynamic_slice(ir::Instruction* x, int64_t d, const std::vector<int64_t>& offsets, int64_t width);
  // x sent from the first partition of each pair to the second (one that receives
  // nothing gets zeros), attributed as below.
  ir::Instruction* permute(ir::Instruction* x, std::vector<std::pair<int64_t, int64_t>> pairs);
  // a on the partitions p where on[p] is true, else b (arrays of one shape).
  ir::Instruction* choose(const std::vector<bool>& on, ir::Instruction* a, ir::Instruction* b);
  // The first row of this partition's piece of a table split by rows under t (`rows`
  // each), as a scalar of `type`.
  ir::Instruction* first_row(const Tiling& t, int64_t rows, ir::PrimitiveType type);
  // c, added for the instruction being partitioned, carries its metadata (its name
  // where it has none), so that profiles attribute c to it.
  void attribute(ir::Instruction* c);
  // Groups of partitions, as XLA's partitioner writes them: a channel_id and global
  // device ids (replica * partitions + partition), the same groups in every replica;
  // attributed as above.
  void collective_attrs(ir::Instruction* c, const std::vector<std::vector<int64_t>>& partitions);
  int64_t next_channel() { return next_channel_++; }

 protected:
  ir::Module& module_;
  int64_t devices_;
  ir::Computation* out_ = nullptr;             // the computation being written
  ir::Instruction* partition_ = nullptr;       // its partition-id, as s32, once needed
  const ir::Instruction* current_ = nullptr;  // the instruction being partitioned

 private:
  int64_t next_channel_ = 1;
};

}  // namespace podsim::passes::spmd
