// A fusion runs as a short sequence of stages over its fused computation:
//  * everything the block engine can evaluate (elementwise ops, broadcasts,
//    transposes, slices, ...) is computed on demand, block by block, by the stage
//    that needs it - never stored;
//  * a reduce with a simple to_apply is a ReduceKernel stage that reads its input
//    through the block engine (kInput fusions: one pass over the producers);
//  * any other op (a dot, a gather, a reduce with a general to_apply, ...) is
//    materialized: its operands are computed into temporary buffers and its own
//    kernel (BLAS or the evaluator) runs on them; later stages read the result.
// The root (or each element of a tuple root) is written straight into the fusion's
// output buffers; a concatenate root piece by piece, each piece over its own indices. Fused
// computations that pass tuples around internally run through the evaluator as a whole.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "compiler/cpu/block_program.h"
#include "compiler/cpu/kernel.h"
#include "compiler/cpu/reduce_kernel.h"

namespace podsim::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;

// Where a stage writes: a temporary buffer of the run, or a leaf of the fusion's result.
struct Dest {
  int temp = -1;
  int output = -1;
};

// One operand of a concatenate root, computed on its own and copied into its place.
struct ConcatPiece {
  std::unique_ptr<BlockProgram> block;
  int temp = -1;
  int64_t begin = 0;  // along the concatenated dimension
  int64_t extent = 0;
};

struct Stage {
  enum class Kind : uint8_t { kBlock, kReduce, kKernel, kCopy, kConcat };
  Kind kind = Kind::kCopy;
  std::unique_ptr<BlockProgram> block;
  std::vector<ConcatPiece> pieces;                     // kConcat
  int64_t outer = 0, inner_bytes = 0, row_extent = 0;  // kConcat: rows of the result
  std::unique_ptr<ReduceKernel> reduce;
  std::unique_ptr<Kernel> kernel;
  std::vector<int> operands;  // kKernel: source of each operand; kCopy: the source copied
  std::vector<Dest> dests;    // one per result leaf
  int defines = -1;           // the source this stage's (array) result becomes
  size_t bytes = 0;           // kCopy
};

bool fusable(const Instruction& fusion) {
  if (fusion.called().size() != 1 || fusion.called(0) == nullptr) return false;
  const ir::Computation& c = *fusion.called(0);
  if (c.root() == nullptr || c.parameter_count() != fusion.operand_count()) return false;
  for (int64_t p = 0; p < c.parameter_count(); ++p)
    if (c.parameter(p) == nullptr || !c.parameter(p)->shape().is_array()) return false;
  for (const auto& i : c.instructions()) {
    if (i.get() == c.root()) continue;
    if (!i->shape().is_array()) return false;
  }
  if (c.root()->opcode() == Opcode::kTuple)
    for (const Instruction* e : c.root()->operands())
      if (!e->shape().is_array()) return false;
  return true;
}

class FusionKernel final : public Kernel {
 public:
  explicit FusionKernel(const Instruction& fusion) {
    const ir::Computation& c = *fusion.called(0);
    params_ = static_cast<int>(c.parameter_count());
    for (int p = 0; p < params_; ++p) source_of_[c.parameter(p)] = p;
    sources_ = params_;
    const Instruction* root = c.root();
    std::vector<const Instruction*> elements;
    if (root->opcode() == Opcode::kTuple)
      elements.assign(root->operands().begin(), root->operands().end());
    else if (root->shape().is_array())
      elements.push_back(root);
    // The output leaf each root element goes to (first occurrence).
    std::unordered_map<const Instruction*, int> output_of;
    for (size_t k = 0; k < elements.size(); ++k)
      output_of.emplace(elements[k], static_cast<int>(k));

    for (const auto& owned : c.instructions()) {
      const Instruction* node = owned.get();
      if (node->opcode() == Opcode::kParameter ||
          (node == root && root->opcode() == Opcode::kTuple))
        continue;
      if (node == root && !root->shape().is_array()) {
        add_kernel_stage(*node, std::nullopt, true);
        continue;
      }
      if (BlockProgram::block_evaluable(*node)) continue;  // computed on demand
      auto out = output_of.find(node);
      add_materialized(*node,
                       out == output_of.end() ? std::nullopt : std::optional<int>(out->second));
    }
    if (!root->shape().is_array() && root->opcode() != Opcode::kTuple)
      return;  // the root kernel wrote them
    for (size_t k = 0; k < elements.size(); ++k) {
      const Instruction* e = elements[k];
      const int leaf = static_cast<int>(k);
      auto produced = produced_into_.find(e);
      if (produced != produced_into_.end() && produced->second == leaf) continue;
      if (auto it = source_of_.find(e); it != source_of_.end()) {
        Stage copy;
        copy.kind = Stage::Kind::kCopy;
        copy.operands = {it->second};
        copy.dests = {Dest{-1, leaf}};
        copy.bytes = static_cast<size_t>(e->shape().byte_size());
        stages_.push_back(std::move(copy));
        continue;
      }
      if (e->opcode() == Opcode::kConcatenate && e->operand_count() > 1 &&
          BlockProgram::block_evaluable(*e)) {
        add_concat_stage(*e, leaf);
        continue;
      }
      Stage block;
      block.kind = Stage::Kind::kBlock;
      block.block = std::make_unique<BlockProgram>(*e, lookup());
      block.dests = {Dest{-1, leaf}};
      stages_.push_back(std::move(block));
    }
  }

  void run(std::span<const std::byte* const> operands,
           std::span<std::byte* const> outputs) const override {
    std::vector<const std::byte*> inputs(static_cast<size_t>(sources_), nullptr);
    for (int p = 0; p < params_; ++p)
      inputs[static_cast<size_t>(p)] = operands[static_cast<size_t>(p)];
    std::vector<std::unique_ptr<std::byte[]>> temps(temp_bytes_.size());
    for (size_t t = 0; t < temps.size(); ++t)
      temps[t].reset(new std::byte[std::max<size_t>(temp_bytes_[t], 1)]);
    auto where = [&](const Dest& d) {
      return d.temp >= 0 ? temps[static_cast<size_t>(d.temp)].get()
                         : outputs[static_cast<size_t>(d.output)];
    };
    for (const Stage& stage : stages_) {
      std::byte* dest = where(stage.dests[0]);
      switch (stage.kind) {
        case Stage::Kind::kBlock:
          stage.block->run(inputs, dest);
          break;
        case Stage::Kind::kReduce:
          stage.reduce->run(inputs, dest);
          break;
        case Stage::Kind::kConcat:
          for (const ConcatPiece& piece : stage.pieces) {
            std::byte* values = temps[static_cast<size_t>(piece.temp)].get();
            piece.block->run(inputs, values);
            const auto row = static_cast<size_t>(piece.extent * stage.inner_bytes);
            for (int64_t o = 0; o < stage.outer; ++o)
              std::memcpy(dest + static_cast<size_t>((o * stage.row_extent + piece.begin) *
                                                     stage.inner_bytes),
                          values + static_cast<size_t>(o) * row, row);
          }
          break;
        case Stage::Kind::kCopy:
          if (stage.bytes > 0)
            std::memcpy(dest, inputs[static_cast<size_t>(stage.operands[0])], stage.bytes);
          break;
        case Stage::Kind::kKernel: {
          std::vector<const std::byte*> args;
          for (int s : stage.operands) args.push_back(inputs[static_cast<size_t>(s)]);
          std::vector<std::byte*> results;
          for (const Dest& d : stage.dests) results.push_back(where(d));
          stage.kernel->run(args, results);
          break;
        }
      }
      if (stage.defines >= 0) inputs[static_cast<size_t>(stage.defines)] = dest;
    }
  }

 private:
  BlockProgram::SourceIndex lookup() const {
    return [this](const Instruction* i) -> int {
      auto it = source_of_.find(i);
      return it == source_of_.end() ? -1 : it->second;
    };
  }

  Dest new_temp(const ir::Shape& shape) {
    temp_bytes_.push_back(static_cast<size_t>(shape.byte_size()));
    return Dest{static_cast<int>(temp_bytes_.size()) - 1, -1};
  }

  // Makes node's value a source, written to output leaf `output` when given.
  void define(Stage& stage, const Instruction& node, std::optional<int> output) {
    stage.dests = {output ? Dest{-1, *output} : new_temp(node.shape())};
    if (output) produced_into_[&node] = *output;
    stage.defines = sources_++;
    source_of_[&node] = stage.defines;
  }

  // The sources holding node's operands, computing the missing ones into temporaries.
  std::vector<int> operand_sources(const Instruction& node) {
    std::vector<int> result;
    for (const Instruction* operand : node.operands()) {
      if (auto it = source_of_.find(operand); it != source_of_.end()) {
        result.push_back(it->second);
        continue;
      }
      Stage block;
      block.kind = Stage::Kind::kBlock;
      block.block = std::make_unique<BlockProgram>(*operand, lookup());
      define(block, *operand, std::nullopt);
      result.push_back(block.defines);
      stages_.push_back(std::move(block));
    }
    return result;
  }

  void add_materialized(const Instruction& node, std::optional<int> output) {
    if (node.opcode() == Opcode::kReduce && ReduceKernel::supported(node)) {
      Stage stage;
      stage.kind = Stage::Kind::kReduce;
      stage.reduce = std::make_unique<ReduceKernel>(node, lookup());
      define(stage, node, output);
      stages_.push_back(std::move(stage));
      return;
    }
    add_kernel_stage(node, output, false);
  }

  // A concatenate root: each piece evaluated over its own indices (the block engine
  // would evaluate every piece at every index and pick), then copied row by row.
  void add_concat_stage(const Instruction& concat, int leaf) {
    Stage stage;
    stage.kind = Stage::Kind::kConcat;
    stage.dests = {Dest{-1, leaf}};
    const auto dim = static_cast<size_t>(concat.attrs().dimensions[0]);
    const std::vector<int64_t>& dims = concat.shape().dims();
    stage.outer = 1;
    for (size_t d = 0; d < dim; ++d) stage.outer *= dims[d];
    stage.inner_bytes = ir::type_byte_size(concat.shape().type());
    for (size_t d = dim + 1; d < dims.size(); ++d) stage.inner_bytes *= dims[d];
    stage.row_extent = dims[dim];
    int64_t begin = 0;
    for (const Instruction* operand : concat.operands()) {
      ConcatPiece piece;
      piece.begin = begin;
      piece.extent = operand->shape().dim(static_cast<int64_t>(dim));
      begin += piece.extent;
      if (operand->shape().num_elements() == 0) continue;
      piece.block = std::make_unique<BlockProgram>(*operand, lookup());
      piece.temp = new_temp(operand->shape()).temp;
      stage.pieces.push_back(std::move(piece));
    }
    stages_.push_back(std::move(stage));
  }

  // node through its own kernel; a tuple-shaped root writes every output leaf.
  void add_kernel_stage(const Instruction& node, std::optional<int> output, bool tuple_root) {
    Stage stage;
    stage.kind = Stage::Kind::kKernel;
    stage.operands = operand_sources(node);
    stage.kernel = make_kernel(node);
    if (tuple_root) {
      const size_t leaves = leaf_shapes(node.shape()).size();
      for (size_t k = 0; k < leaves; ++k) stage.dests.push_back(Dest{-1, static_cast<int>(k)});
    } else {
      define(stage, node, output);
    }
    stages_.push_back(std::move(stage));
  }

  int params_ = 0;
  int sources_ = 0;
  std::unordered_map<const Instruction*, int> source_of_;
  std::unordered_map<const Instruction*, int> produced_into_;
  std::vector<size_t> temp_bytes_;
  std::vector<Stage> stages_;
};

}  // namespace

std::unique_ptr<Kernel> make_fusion_kernel(const Instruction& fusion) {
  if (!fusable(fusion)) return make_evaluator_kernel(fusion);
  try {
    return std::make_unique<FusionKernel>(fusion);
  } catch (const BlockProgram::TooComplex&) {
    return make_evaluator_kernel(fusion);
  }
}

}  // namespace podsim::cpu
