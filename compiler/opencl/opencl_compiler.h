// The OpenCL target: compiles an IR module into a Program - OpenCL C source for every
// kernel plus the ordered steps that launch them - which runtime/pjrt/opencl runs on
// an OpenCL device. The compiler itself calls no OpenCL API: a Program is plain data, so
// it is built, tested and cached without a device.
//
// The module goes through the shared pass pipeline (simplification, fusion); then each
// instruction of the entry computation becomes one step:
//   * a fusion, or an unfused elementwise / index-remapping op, gather, dynamic slice or
//     update, reduce, reduce-window, floating-point convolution, sort, select-and-scatter
//     or rng-bit-generator: one generated kernel (kernel_source.h); a scatter: a copy
//     kernel per operand, then an update kernel;
//   * a dot on floating-point operands: a GEMM step (row-major [batch, M, K] x [batch,
//     K, N], operands transposed in place where the dimension order allows, else by a
//     transpose kernel first); the runtime runs it with the target's own kernel
//     (gemm_source.h) or CLBlast, whichever it measured faster for that shape;
//   * parameters, constants, tuples, get-tuple-element and byte-for-byte aliases
//     (reshape, row-major copy and bitcast): no step, their buffers are reused;
//   * while, conditional and call: control on the host (a while reads its condition
//     back each iteration), the called computations as plans of their own on the device;
//   * everything else (integer convolution, collectives, custom calls, sorts of lines
//     longer than 16384, scatters whose windows extend along an indexed dimension with
//     more than 65536 updates, ops without an OpenCL lowering yet): a host step, run by
//     the CPU target's kernel for that instruction on data copied to and from the device.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/literal.h"
#include "compiler/ir/module.h"
#include "compiler/opencl/gemm_source.h"

namespace podsim::cpu {
class Kernel;
}

namespace podsim::opencl {

// Bumped whenever generated programs could change: part of every compile-cache key.
inline constexpr std::string_view kCompilerVersion = "podsim-opencl-1";

// One array buffer a step reads or writes.
struct BufferRef {
  enum class Kind : uint8_t { kArgument, kConstant, kTemp };
  Kind kind = Kind::kTemp;
  int32_t index = 0;  // argument leaf (every parameter's leaves in order), constant, or temp
  bool operator==(const BufferRef&) const = default;
};

// A one-dimensional launch of a generated kernel.
struct KernelLaunch {
  std::string name;
  int64_t global = 0;  // work-items, a multiple of local
  int64_t local = 0;
};

struct Step {
  // kWhile, kConditional, kCall: control on the host, the called computations' plans on
  // the device (a while reads its condition's pred back each iteration, a conditional
  // its selector).
  enum class Kind : uint8_t { kKernel, kGemm, kHost, kWhile, kConditional, kCall };
  Kind kind = Kind::kKernel;
  const ir::Instruction* instruction = nullptr;  // what the step computes (or prepares)
  KernelLaunch launch;                           // kKernel
  GemmShape gemm;                                // kGemm: inputs {A, B}, outputs {C}
  // kGemm: the own kernel per kGemmTilings entry ("" where not generated: see
  // kTimedGemmFlops).
  std::vector<std::string> gemm_kernels;
  std::shared_ptr<const cpu::Kernel> host;  // kHost
  // Plans run: kWhile {condition, body}; kConditional the branches; kCall {callee}.
  std::vector<int> plans;
  // Kernel arguments (then the outputs); kWhile, kCall: the operand's leaves;
  // kConditional: the selector, then every branch operand's leaves in order.
  std::vector<BufferRef> inputs;
  std::vector<BufferRef> outputs;
};

// The steps of one computation and the buffers they use.
struct Plan {
  std::string computation;           // its name, for messages
  std::vector<ir::Shape> arguments;  // the parameters' leaves, in order
  std::vector<Step> steps;
  std::vector<ir::Shape> temps;
  // Device memory of the temporaries: temp t lives in slot temp_slots[t]. Temporaries
  // whose lives do not overlap share a slot (a slot is free again after the last step
  // that reads it); each result has a slot of its own.
  std::vector<int32_t> temp_slots;
  std::vector<int64_t> slot_bytes;
  std::vector<BufferRef> results;  // the root's leaves
  int32_t temp_slot(int32_t temp) const { return temp_slots[static_cast<size_t>(temp)]; }
  const ir::Shape& shape(const BufferRef& r, std::span<const ir::Literal* const> constants) const;
};

struct CompileOptions {
  bool run_passes = true;  // the default pipeline of compiler/passes
};

struct ProgramStats {
  int64_t kernels = 0;
  int64_t gemms = 0;
  int64_t host_steps = 0;
  int64_t control_steps = 0;  // while, conditional, call
};

class Program {
 public:
  explicit Program(std::unique_ptr<ir::Module> module);
  ~Program();

  const ir::Module& module() const { return *module_; }
  // Every kernel's source, after the prelude; built with build_options().
  const std::string& source() const { return source_; }
  static std::string_view build_options() { return "-cl-fp32-correctly-rounded-divide-sqrt"; }
  bool uses_fp64() const { return uses_fp64_; }
  // plans()[0] is the entry computation's; the others are those of the computations its
  // while loops, conditionals and calls run.
  const std::deque<Plan>& plans() const { return plans_; }
  const Plan& entry() const { return plans_.front(); }
  const std::vector<Step>& steps() const { return entry().steps; }
  const std::vector<ir::Shape>& temps() const { return entry().temps; }
  int32_t temp_slot(int32_t temp) const { return entry().temp_slot(temp); }
  const std::vector<int64_t>& slot_bytes() const { return entry().slot_bytes; }
  const std::vector<BufferRef>& results() const { return entry().results; }
  // Array constants of every plan (BufferRef::kConstant indexes this list).
  const std::vector<const ir::Literal*>& constants() const { return constants_; }
  // The entry's result shapes: a tuple root's elements, else the root's shape.
  const std::vector<ir::Shape>& result_shapes() const { return result_shapes_; }
  const ProgramStats& stats() const { return stats_; }
  // The optimized module's HLO text: compile_serialized() rebuilds the program from it.
  std::string serialize() const;

 private:
  std::unique_ptr<ir::Module> module_;
  std::string source_;
  bool uses_fp64_ = false;
  std::deque<Plan> plans_;  // a deque: building a plan adds the plans it calls
  std::vector<const ir::Literal*> constants_;
  std::vector<ir::Shape> result_shapes_;
  ProgramStats stats_;
};

// Runs a kHost step on host copies of its buffers: inputs[k] / outputs[k] hold step.inputs[k]
// / step.outputs[k] (row-major, of the shapes the instruction declares).
void run_host_step(const Step& step, std::span<const std::byte* const> inputs,
                   std::span<std::byte* const> outputs);

std::unique_ptr<Program> compile(const ir::Module& module, CompileOptions options = {});
std::unique_ptr<Program> compile_serialized(std::string_view serialized);

}  // namespace podsim::opencl
