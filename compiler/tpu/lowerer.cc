// The lowering driver: walks the entry computation, defers what kernels can compute
// inline, dispatches every other instruction to its lowering, binds the outputs, and
// places every buffer in HBM by liveness.
#include "compiler/tpu/lowerer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <unordered_map>

#include "common/error.h"
#include "compiler/ir/collective_groups.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pass.h"
#include "compiler/tpu/buffer_assignment.h"
#include "compiler/tpu/lowerings.h"
#include "compiler/tpu/tiling.h"

namespace podsim::tpu {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

// value_of() nests (materializing an operand while lowering an op) no deeper than this.
constexpr int kMaxLoweringDepth = 200;
constexpr int64_t kVmemAlignment = 128;

std::string line_of(const Instruction& i) {
  if (i.pos().line > 0) return fmt::format("line {}", i.pos().line);
  return fmt::format("instruction '{}'", i.name());
}

std::vector<uint8_t> literal_bytes(const ir::Literal& lit) {
  std::vector<uint8_t> data(lit.bytes().size());
  if (!data.empty()) std::memcpy(data.data(), lit.bytes().data(), data.size());
  return data;
}

}  // namespace

void unsupported(const Instruction& i, std::string_view detail) {
  unsupported_what(i, ir::opcode_name(i.opcode()), detail);
}

void unsupported_what(const Instruction& i, std::string_view what, std::string_view detail) {
  fail("not supported on the TPU target: {} ({}){}{}", what, line_of(i), detail.empty() ? "" : ": ", detail);
}

isa::DType memory_dtype(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kPred: return isa::DType::kPred;
    case PrimitiveType::kS8: return isa::DType::kS8;
    case PrimitiveType::kS16: return isa::DType::kS16;
    case PrimitiveType::kS32: return isa::DType::kS32;
    case PrimitiveType::kS64: return isa::DType::kS64;
    case PrimitiveType::kU8: return isa::DType::kU8;
    case PrimitiveType::kU16: return isa::DType::kU16;
    case PrimitiveType::kU32: return isa::DType::kU32;
    case PrimitiveType::kU64: return isa::DType::kU64;
    case PrimitiveType::kF16: return isa::DType::kF16;
    case PrimitiveType::kBF16: return isa::DType::kBF16;
    case PrimitiveType::kF32: return isa::DType::kF32;
    case PrimitiveType::kF64: return isa::DType::kF64;
    case PrimitiveType::kTuple: break;
  }
  fail("internal: a tuple has no element type");
}

isa::DType isa_dtype(const Instruction& i, PrimitiveType t) {
  if (t == PrimitiveType::kS64 || t == PrimitiveType::kU64 || t == PrimitiveType::kF64)
    unsupported(i, fmt::format("{} (64-bit types have no vector lane form)", ir::type_name(t)));
  if (t == PrimitiveType::kTuple) unsupported(i, "a tuple where an array is needed");
  return memory_dtype(t);
}

Lowerer::Lowerer(const ir::Module& module, const Target& target, const Options& options)
    : module_(module),
      target_(target),
      options_(options),
      pb_(target.chip, options.core),
      vmem_used_(static_cast<size_t>(std::max(target.chip.tensor_cores, 1)), 0) {
  if (options.core < 0 || options.core >= chip_.tensor_cores)
    fail("TPU compile: core {} does not exist on chip '{}' ({} TensorCores)", options.core,
         chip_.name, chip_.tensor_cores);
  if (options.max_tile_vregs < 1) fail("TPU compile: max_tile_vregs must be at least 1");
  if (target.pod && target.devices() > 1) {
    flags_bytes_ = round_up(16 * (target.devices() + 2), kVmemAlignment);
    plan_mailbox();
  }
  if (target.pod && target.devices() < target.pod->chips()) pb_.run_on_devices_below(target.devices());
}

void Lowerer::plan_mailbox() {
  // The candidates: all-reduces, reduce-scatters, all-gathers and all-to-alls whose
  // group's arrays (a tuple's operands concatenated, or else a two-shot all-reduce's
  // chunks twice; a reduce-scatter's chunks; an all-gather's operands, an all-to-all's
  // blocks, at kMailboxAlignment) fit the cap; per set of device groups, how many and
  // the largest.
  const int64_t cap = std::min<int64_t>(kOneShotMaxBytes, chip_.vmem_bytes / 16);
  struct Candidate {
    std::vector<std::vector<int64_t>> groups;
    bool in_entry = false;
  };
  std::vector<Candidate> candidates;
  std::map<std::vector<std::vector<int64_t>>, std::pair<int64_t, int64_t>> sets;  // -> (collectives, bytes)
  for (const auto& c : module_.computations())
    for (const auto& i : c->instructions()) {
      const Opcode op = i->opcode();
      if (op != Opcode::kAllReduce && op != Opcode::kReduceScatter && op != Opcode::kAllGather &&
          op != Opcode::kAllToAll)
        continue;
      auto groups = ir::collective_device_groups(*i, target_.replicas, target_.partitions);
      const auto g = static_cast<int64_t>(groups.at(0).size());
      if (g < 2) continue;
      int64_t bytes = 0, element_bytes = 4;
      for (const Instruction* operand : i->operands())
        if (operand->shape().is_array()) {
          bytes += operand->shape().byte_size();
          element_bytes = ir::type_byte_size(operand->shape().type());
        }
      if (op == Opcode::kReduceScatter || op == Opcode::kAllToAll) bytes = ceil_div(bytes, g);
      const int64_t tile =
          op == Opcode::kAllGather || op == Opcode::kAllToAll ? kMailboxAlignment : int64_t{chip_.vpu_sublanes} * chip_.vpu_lanes * element_bytes;
      int64_t need = g * round_up(std::max<int64_t>(bytes, 1), tile);
      if (op == Opcode::kAllReduce && need > cap) {  // the two-shot's chunks, and their gathering
        const int64_t chunk = ceil_div(std::max<int64_t>(bytes, 1) / element_bytes, g) * element_bytes;
        need = g * (round_up(chunk, tile) + round_up(chunk, kMailboxAlignment));
      }
      if (need > cap) continue;
      auto& [count, most] = sets[groups];
      ++count;
      most = std::max(most, need);
      candidates.push_back(Candidate{std::move(groups), c.get() == module_.entry()});
    }
  // The set most of them use.
  for (auto& [groups, use] : sets)
    if (mailbox_groups_.empty() || use.first > sets[mailbox_groups_].first) {
      mailbox_groups_ = groups;
      mailbox_bytes_ = round_up(use.second, kVmemAlignment);
    }
  for (const Candidate& c : candidates)
    if (c.groups == mailbox_groups_) {
      mailbox_candidates_ += c.in_entry ? 1 : 0;
      mailbox_in_calls_ = mailbox_in_calls_ || !c.in_entry;
    }
  // Collective-permutes whose pairs each lie within a group of those (without those,
  // the groups are the chips the permutes' pairs connect, where they are of one size).
  std::vector<const Instruction*> permutes;
  for (const auto& c : module_.computations())
    for (const auto& i : c->instructions())
      if (i->opcode() == Opcode::kCollectivePermute && i->shape().is_array() &&
          round_up(std::max<int64_t>(i->shape().byte_size(), 1), kMailboxAlignment) <= cap)
        permutes.push_back(i.get());
  if (mailbox_groups_.empty() && !permutes.empty()) {
    std::vector<int64_t> root(static_cast<size_t>(target_.devices()));
    std::iota(root.begin(), root.end(), 0);
    auto find = [&](int64_t d) {
      while (root[static_cast<size_t>(d)] != d) d = root[static_cast<size_t>(d)];
      return d;
    };
    for (const Instruction* i : permutes)
      for (const auto& [from, to] : permute_device_pairs(*i, target_))
        root[static_cast<size_t>(find(from))] = find(to);
    std::map<int64_t, std::vector<int64_t>> components;
    for (int64_t d = 0; d < target_.devices(); ++d) components[find(d)].push_back(d);
    for (auto& [r, devices] : components) mailbox_groups_.push_back(std::move(devices));
    if (mailbox_groups_.front().size() < 2 ||
        std::any_of(mailbox_groups_.begin(), mailbox_groups_.end(),
                    [&](const std::vector<int64_t>& g) { return g.size() != mailbox_groups_.front().size(); }))
      mailbox_groups_.clear();
  }
  if (mailbox_groups_.empty()) return;
  for (const auto& c : module_.computations())
    for (const auto& i : c->instructions()) {
      if (std::find(permutes.begin(), permutes.end(), i.get()) == permutes.end() ||
          !pairs_within_mailbox_groups(permute_device_pairs(*i, target_)))
        continue;
      const int64_t need = round_up(std::max<int64_t>(i->shape().byte_size(), 1), kMailboxAlignment);
      mailbox_bytes_ = std::max(mailbox_bytes_, round_up(need, kVmemAlignment));
      mailbox_candidates_ += c.get() == module_.entry() ? 1 : 0;
      mailbox_in_calls_ = mailbox_in_calls_ || c.get() != module_.entry();
    }
}

bool Lowerer::pairs_within_mailbox_groups(const std::vector<std::pair<int64_t, int64_t>>& pairs) const {
  std::vector<int64_t> group_of(static_cast<size_t>(target_.devices()), -1);
  for (size_t g = 0; g < mailbox_groups_.size(); ++g)
    for (int64_t d : mailbox_groups_[g]) group_of[static_cast<size_t>(d)] = static_cast<int64_t>(g);
  for (const auto& [from, to] : pairs)  // (a chip gives itself no credits)
    if (from == to || group_of[static_cast<size_t>(from)] < 0 ||
        group_of[static_cast<size_t>(from)] != group_of[static_cast<size_t>(to)])
      return false;
  return true;
}

int32_t Lowerer::new_buffer(std::string_view name, const ir::Shape& shape) {
  Buffer b;
  b.name = std::string(name);
  b.kind = BufferKind::kTemp;
  b.bytes = shape.byte_size();
  b.region = pb_.add_region(name, isa::MemorySpace::kHbm, 0, b.bytes);
  b.first_step = b.last_step = std::max<int64_t>(step_, 0);
  buffers_.push_back(std::move(b));
  return static_cast<int32_t>(buffers_.size() - 1);
}

int32_t Lowerer::constant_buffer(std::string_view name, std::vector<uint8_t> data) {
  std::string key = fmt::format("{}#{}", name, data.size());
  if (name.starts_with("iota.")) {
    if (auto it = iota_buffers_.find(key); it != iota_buffers_.end()) return it->second;
  }
  Buffer b;
  b.name = std::string(name);
  b.kind = BufferKind::kConstant;
  b.bytes = static_cast<int64_t>(data.size());
  b.region = pb_.add_region(name, isa::MemorySpace::kHbm, 0, b.bytes);
  pb_.executable().constants.push_back(isa::Constant{b.region, std::move(data)});
  buffers_.push_back(std::move(b));
  auto id = static_cast<int32_t>(buffers_.size() - 1);
  if (name.starts_with("iota.")) iota_buffers_.emplace(key, id);
  return id;
}

Lowerer::Flags Lowerer::collective_flags() {
  if (flags_.region < 0) {
    if (flags_bytes_ == 0) fail("TPU compile: collective handshakes need a pod");
    if (pb_.core() != options_.core) fail("TPU compile: a collective handshake off the main core");
    flags_.region = pb_.add_region(isa::kFlagsRegion, isa::MemorySpace::kVmem,
                                   chip_.vmem_bytes - flags_bytes_, flags_bytes_);
    flags_.out = 8 * target_.devices();
    flags_.counter = flags_.out + 8;
  }
  return flags_;
}

Lowerer::Flags Lowerer::mailbox_flags() {
  Flags f = collective_flags();
  f.words = f.counter + 8;
  f.out = f.words + 8 * target_.devices();
  f.counter = f.out + 8;
  return f;
}

int32_t Lowerer::mailbox(const Instruction& i, int64_t bytes) {
  if (bytes > mailbox_bytes_ || ir::collective_device_groups(i, target_.replicas, target_.partitions) != mailbox_groups_)
    return -1;
  mailbox_asked_.insert(&i);
  return mailbox_region();
}

int32_t Lowerer::mailbox_region() {
  if (mailbox_region_ < 0)
    mailbox_region_ = pb_.add_region("collective_mailbox", isa::MemorySpace::kVmem,
                                     chip_.vmem_bytes - flags_bytes_ - mailbox_bytes_, mailbox_bytes_);
  return mailbox_region_;
}

int32_t Lowerer::mailbox_for_pairs(const Instruction& i, const std::vector<std::pair<int64_t, int64_t>>& pairs,
                                   int64_t bytes) {
  if (mailbox_groups_.empty() || bytes > mailbox_bytes_ || !pairs_within_mailbox_groups(pairs)) return -1;
  mailbox_asked_.insert(&i);
  return mailbox_region();
}

bool Lowerer::mailbox_used_later(const Instruction& i) const {
  return mailbox_in_calls_ || !mailbox_asked_.contains(&i) ||
         static_cast<int64_t>(mailbox_asked_.size()) < mailbox_candidates_;
}

int64_t Lowerer::vmem_limit() const {
  return chip_.vmem_bytes - (pb_.core() == options_.core ? flags_bytes_ + mailbox_bytes_ : 0);
}

int32_t Lowerer::use(int32_t buffer) {
  Buffer& b = buffers_[static_cast<size_t>(buffer)];
  b.last_step = std::max(b.last_step, step_);
  if (overlap_ && !overlap_->interleaving) overlap_->buffers.push_back(buffer);
  return b.region;
}

void Lowerer::begin_step(const Instruction& i, const Scope& s) {
  ++step_;
  std::fill(vmem_used_.begin(), vmem_used_.end(), 0);
  vmem_used_[static_cast<size_t>(options_.core)] = vmem_floor_;
  step_name_ = i.name();
  pb_.set_source(s.fused && s.origin ? *s.origin : i);
}

int32_t Lowerer::vmem(std::string_view name, int64_t bytes) {
  int64_t& used = vmem_used_[static_cast<size_t>(pb_.core())];
  int64_t offset = round_up(used, kVmemAlignment);
  if (bytes > vmem_limit() - offset)
    fail("TPU compile: step '{}' needs more than the {} bytes of VMEM of chip '{}' (at buffer '{}' of {} bytes)",
         step_name_, chip_.vmem_bytes, chip_.name, name, bytes);
  used = offset + bytes;
  return pb_.add_region(fmt::format("{}.{}", step_name_, name), isa::MemorySpace::kVmem, offset, bytes);
}

const Value* Lowerer::find_value(const Instruction& i, const Scope& s) const {
  auto it = s.values.find(&i);
  return it == s.values.end() ? nullptr : &it->second;
}

bool Lowerer::expandable(const Instruction& i, const Scope& s) const {
  if (i.opcode() == Opcode::kParameter) return false;
  if (s.fused) return true;
  switch (i.opcode()) {
    case Opcode::kConstant:
    case Opcode::kIota:
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kCopy: return i.shape().is_array();
    default: return false;
  }
}

const Value& Lowerer::value_of(const Instruction& i, Scope& s) {
  if (const Value* v = find_value(i, s)) return *v;
  if (depth_ >= kMaxLoweringDepth)
    fail("not supported on the TPU target: operands nested deeper than {} levels (at instruction '{}')",
         kMaxLoweringDepth, i.name());
  ++depth_;
  Value v;
  try {
    v = lower(i, s);
  } catch (...) {
    --depth_;
    throw;
  }
  --depth_;
  return s.values.emplace(&i, std::move(v)).first->second;
}

const Value& Lowerer::lower_computation(Scope& s) {
  for (const Instruction* i : lowering_order(s)) {
    if (find_value(*i, s)) continue;
    if (i->opcode() == Opcode::kTuple || i->opcode() == Opcode::kGetTupleElement || expandable(*i, s)) continue;
    value_of(*i, s);
  }
  return value_of(*s.computation->root(), s);
}

Value Lowerer::lower_call(const Instruction& i, const ir::Computation& callee, Scope& s, bool fused) {
  std::vector<Value> args;
  for (int64_t k = 0; k < callee.parameter_count(); ++k) args.push_back(value_of(*i.operand(k), s));
  if (!fused) return lower_called(callee, args);
  Scope inner;
  inner.computation = &callee;
  inner.fused = true;
  inner.origin = s.fused && s.origin ? s.origin : &i;
  for (int64_t k = 0; k < callee.parameter_count(); ++k) inner.values.emplace(callee.parameter(k), args[k]);
  return value_of(*callee.root(), inner);
}

Value Lowerer::lower_called(const ir::Computation& callee, const std::vector<Value>& args) {
  Scope inner;
  inner.computation = &callee;
  for (int64_t k = 0; k < callee.parameter_count(); ++k) inner.values.emplace(callee.parameter(k), args.at(k));
  ++called_depth_;
  try {
    Value v = lower_computation(inner);
    --called_depth_;
    return v;
  } catch (...) {
    --called_depth_;
    throw;
  }
}

int Lowerer::step_cores() const { return called_depth_ == 0 ? chip_.tensor_cores - options_.core : 1; }

void Lowerer::begin_parallel(int cores) {
  parallel_cores_ = cores;
  if (cores <= 1) return;
  for (int c = 0; c < cores; ++c) {
    pb_.set_core(options_.core + c);
    pb_.emit(isa::Opcode::kBarrier, isa::DType::kF32, {});
  }
  pb_.set_core(options_.core);
}

void Lowerer::end_parallel() {
  if (parallel_cores_ > 1)
    for (int c = parallel_cores_; c-- > 0;) {
      pb_.set_core(options_.core + c);
      pb_.emit(isa::Opcode::kBarrier, isa::DType::kF32, {});
    }
  parallel_cores_ = 1;
  pb_.set_core(options_.core);
}

void Lowerer::keep_live_through_loop(int64_t first, int64_t last) {
  for (Buffer& b : buffers_)
    if (b.kind == BufferKind::kTemp && b.first_step < first && b.last_step >= first)
      b.last_step = std::max(b.last_step, last);
}

Value Lowerer::lower(const Instruction& i, Scope& s) {
  switch (i.opcode()) {
    case Opcode::kParameter: fail("internal: parameter '{}' has no value", i.name());
    case Opcode::kConstant: {
      if (!i.shape().is_array()) unsupported(i, "a tuple constant");
      return Value{constant_buffer(i.name(), literal_bytes(*i.attrs().literal)), i.shape(), {}};
    }
    case Opcode::kIota: {
      ir::Literal lit(i.shape());
      int64_t d = i.attrs().iota_dimension;
      int64_t n = 0;
      ir::for_each_index(i.shape().dims(), [&](const std::vector<int64_t>& index) {
        lit.set_from_int64(n++, index[static_cast<size_t>(d)]);
      });
      return Value{constant_buffer(i.name(), literal_bytes(lit)), i.shape(), {}};
    }
    case Opcode::kTuple: {
      Value v;
      v.shape = i.shape();
      for (const Instruction* op : i.operands()) v.elements.push_back(value_of(*op, s));
      return v;
    }
    case Opcode::kGetTupleElement: {
      const Value& t = value_of(*i.operand(0), s);
      return t.elements.at(static_cast<size_t>(i.attrs().tuple_index));
    }
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kCopy: {
      // Row-major arrays: the result is the operand's bytes (values are immutable).
      Value v = value_of(*i.operand(0), s);
      if (!v.shape.is_array() || v.shape.byte_size() != i.shape().byte_size()) unsupported(i, "a tuple copy");
      v.shape = i.shape();
      return v;
    }
    case Opcode::kBitcastConvert:
      // Between widths (a minor dimension added or removed): the same bytes, row-major
      // and little-endian as the evaluator reads them, under the new shape. One width:
      // a vector op (expr.cc).
      if (ir::type_byte_size(i.shape().type()) != ir::type_byte_size(i.operand(0)->shape().type())) {
        Value v = value_of(*i.operand(0), s);
        v.shape = i.shape();
        return v;
      }
      return lower_elementwise(*this, i, s);
    case Opcode::kOptimizationBarrier: return value_of(*i.operand(0), s);
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kSlice: return lower_view_copy(*this, i, s);
    case Opcode::kReverse: return lower_reverse(*this, i, s);
    case Opcode::kConcatenate: return lower_concatenate(*this, i, s);
    case Opcode::kDynamicSlice: return lower_dynamic_slice(*this, i, s);
    case Opcode::kDynamicUpdateSlice: return lower_dynamic_update_slice(*this, i, s);
    case Opcode::kGather: return lower_gather(*this, i, s);
    case Opcode::kScatter: return lower_scatter(*this, i, s);
    case Opcode::kSort:
      return lower_sort(*this, i, s);
    case Opcode::kPad: return lower_pad(*this, i, s);
    case Opcode::kReduce: return lower_reduce(*this, i, s);
    case Opcode::kDot: return lower_dot(*this, i, s);
    case Opcode::kFusion: return lower_call(i, *i.called(0), s, true);
    case Opcode::kCall: return lower_call(i, *i.called(0), s, false);
    case Opcode::kWhile: return lower_while(*this, i, s);
    case Opcode::kConditional: return lower_conditional(*this, i, s);
    case Opcode::kReplicaId:
    case Opcode::kPartitionId: return lower_device_id(*this, i, s);
    case Opcode::kAllReduce:
      if (overlaps(i, s)) return lower_overlapped(i, s);
      return lower_all_reduce(*this, i, s);
    case Opcode::kReduceScatter:
    case Opcode::kAllGather:
      if (overlaps(i, s)) return lower_overlapped(i, s);
      return i.opcode() == Opcode::kAllGather ? lower_all_gather(*this, i, s) : lower_reduce_scatter(*this, i, s);
    case Opcode::kCollectivePermute: return lower_collective_permute(*this, i, s);
    case Opcode::kCollectiveBroadcast: return lower_collective_broadcast(*this, i, s);
    case Opcode::kAllToAll: return lower_all_to_all(*this, i, s);
    case Opcode::kCustomCall:
      unsupported_what(
          i, fmt::format("custom-call '{}'", i.attrs().custom_call_target),
          "the target has no definition; give its meaning as an HLO computation named after it "
          "(podsim run --custom-calls defs.hlo, or passes::define_custom_calls)");
    default:
      if (ir::is_elementwise(i.opcode())) return lower_elementwise(*this, i, s);
      unsupported(i);
  }
}

void Lowerer::collect_outputs(const Value& v, std::vector<const Value*>& out) const {
  if (v.shape.is_tuple()) {
    for (const Value& e : v.elements) collect_outputs(e, out);
    return;
  }
  out.push_back(&v);
}

void Lowerer::bind_outputs(const Value& root) {
  std::vector<const Value*> outputs;
  collect_outputs(root, outputs);
  const Instruction& origin = *module_.entry()->root();
  Scope entry;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Value& v = *outputs[k];
    int32_t b = v.buffer;
    if (buffers_[static_cast<size_t>(b)].kind != BufferKind::kTemp) {
      // A parameter, a constant or an output already: the output gets its own copy.
      begin_step(origin, entry);
      int32_t copy = new_buffer(fmt::format("out{}", k), v.shape);
      copy_buffer(*this, b, copy, v.shape.byte_size());
      b = copy;
    }
    buffers_[static_cast<size_t>(b)].kind = BufferKind::kOutput;
    isa::Binding binding;
    binding.name = fmt::format("out{}", k);
    binding.region = buffers_[static_cast<size_t>(b)].region;
    binding.dtype = memory_dtype(v.shape.type());
    binding.dims = v.shape.dims();
    pb_.executable().outputs.push_back(std::move(binding));
  }
}

isa::Executable Lowerer::run() {
  const ir::Computation& entry_computation = *module_.entry();
  Scope entry;
  entry.computation = &entry_computation;
  for (const Instruction* p : entry_computation.parameters()) {
    if (!p->shape().is_array()) unsupported(*p, "a tuple-shaped entry parameter");
    Buffer b;
    b.name = p->name();
    b.kind = BufferKind::kParameter;
    b.bytes = p->shape().byte_size();
    b.region = pb_.add_region(p->name(), isa::MemorySpace::kHbm, 0, b.bytes);
    buffers_.push_back(b);
    auto id = static_cast<int32_t>(buffers_.size() - 1);
    entry.values.emplace(p, Value{id, p->shape(), {}});
    isa::Binding binding;
    binding.name = p->name();
    binding.region = b.region;
    binding.dtype = memory_dtype(p->shape().type());
    binding.dims = p->shape().dims();
    pb_.executable().parameters.push_back(std::move(binding));
  }
  Value root = lower_computation(entry);
  bind_outputs(root);

  // Parameters, constants and outputs live for the whole run; temporaries from the
  // step that defines them to the last step that uses them.
  const int64_t end = step_ + 1;
  std::vector<BufferRequest> requests;
  for (const Buffer& b : buffers_) {
    BufferRequest r;
    r.bytes = b.bytes;
    bool whole_run = b.kind == BufferKind::kParameter || b.kind == BufferKind::kConstant;
    r.first_step = whole_run ? 0 : b.first_step;
    r.last_step = b.kind == BufferKind::kTemp ? b.last_step : end;
    requests.push_back(r);
  }
  Placement placement = place_buffers(requests, options_.hbm_alignment);
  if (placement.total_bytes > chip_.hbm_bytes)
    fail("TPU compile: out of device memory: module '{}' needs {} bytes of HBM at its peak, chip '{}' has {}",
         module_.name(), placement.total_bytes, chip_.name, chip_.hbm_bytes);
  for (size_t k = 0; k < buffers_.size(); ++k) pb_.region(buffers_[k].region).offset = placement.offsets[k];
  isa::Executable e = pb_.finish();
  e.compiler_version = std::string(kCompilerVersion);
  return e;
}

std::vector<uint8_t> parameter_bytes(const ir::Literal& argument) {
  const ir::Literal narrowed = passes::narrow_literal(argument);
  const auto* data = reinterpret_cast<const uint8_t*>(narrowed.bytes().data());
  return {data, data + narrowed.bytes().size()};
}

ir::Literal output_literal(std::span<const uint8_t> bytes, const ir::Shape& shape, size_t k,
                           std::string_view run) {
  ir::Literal literal(passes::narrow_64bit_shape(shape));
  if (bytes.size() != literal.bytes().size())
    fail("output {} of {} has {} bytes, expected {}", k, run, bytes.size(), literal.bytes().size());
  if (!bytes.empty()) std::memcpy(literal.bytes().data(), bytes.data(), bytes.size());
  return literal.type() == shape.type() ? std::move(literal)
                                        : passes::convert_literal(literal, shape.type());
}

Target::Target(topology::PodConfig pod_config, int64_t replica_count)
    : chip(pod_config.chip), pod(std::move(pod_config)) {
  const int64_t chips = pod->chips();
  replicas = replica_count == 0 ? chips : replica_count;
  if (replicas < 1 || chips % replicas != 0)
    fail("TPU compile: {} replicas do not divide the {} chips of pod '{}'", replicas, chips,
         pod->name);
  partitions = chips / replicas;
}

Target::Target(topology::PodConfig pod_config, int64_t replica_count, int64_t partition_count)
    : chip(pod_config.chip), pod(std::move(pod_config)), replicas(replica_count), partitions(partition_count) {
  if (replicas < 1 || partitions < 1)
    fail("TPU compile: {} replicas x {} partitions: both must be at least 1", replicas, partitions);
  if (replicas * partitions > pod->chips())
    fail("TPU compile: {} replicas x {} partitions need {} devices; pod '{}' has {} chips", replicas,
         partitions, replicas * partitions, pod->name, pod->chips());
}

namespace {

// Opcodes the expanders in compile() may rewrite (each pass decides which instances).
bool rewritten_by_expanders(Opcode op) {
  return op == Opcode::kConvolution || op == Opcode::kReduceWindow ||
         op == Opcode::kSelectAndScatter || op == Opcode::kReduce || op == Opcode::kMap ||
         op == Opcode::kGather || op == Opcode::kDot || op == Opcode::kBatchNormTraining ||
         op == Opcode::kBatchNormInference || op == Opcode::kBatchNormGrad || op == Opcode::kTopK ||
         op == Opcode::kCopyStart || op == Opcode::kReducePrecision || op == Opcode::kDomain ||
         op == Opcode::kCustomCall;
}

}  // namespace

isa::Executable compile(const ir::Module& module, const Target& target, const Options& options) {
  ir::verify_module(module, module.name());
  target.chip.validate();
  if (target.pod) {
    target.pod->validate();
    if (!(target.pod->chip == target.chip))
      fail("TPU compile: the target's chip '{}' is not its pod's chip '{}'", target.chip.name,
           target.pod->chip.name);
    if (target.replicas < 1 || target.partitions < 1 || target.devices() > target.pod->chips())
      fail("TPU compile: {} replicas x {} partitions on pod '{}' of {} chips", target.replicas,
           target.partitions, target.pod->name, target.pod->chips());
  } else if (target.devices() != 1) {
    fail("TPU compile: {} replicas x {} partitions need a pod", target.replicas, target.partitions);
  }
  // Defined custom calls inlined, batch norm as reductions, topk as a sort, reduce-precision
  // as integer ops (passes::expand_composite_ops); async copies as copies and async
  // collectives as their collectives, in one piece; tuple all-to-alls as the array form;
  // maps inlined; batched gathers as plain ones; window ops as slices, pads and dots, and
  // dots the MXU does not take as they are as vector ops or several passes
  // (passes::make_map_inliner, make_batched_gather_normalizer, make_window_expander,
  // make_dot_expander).
  bool rewrite = false;
  for (const auto& c : module.computations())
    for (const auto& i : c->instructions())
      rewrite |= ir::collective_kind(i->opcode()) != i->opcode() ||
                 i->opcode() == ir::Opcode::kAsyncStart ||
                 (i->opcode() == ir::Opcode::kAllToAll && i->attrs().dimensions.empty()) ||
                 rewritten_by_expanders(i->opcode());
  std::unique_ptr<ir::Module> prepared;
  if (options.passes || rewrite) {
    prepared = ir::parse_module(ir::print_module(module), module.name());
    // Errors name the lines of the module as given, not of its printed copy.
    for (const auto& c : module.computations())
      if (const ir::Computation* copy = prepared->find_computation(c->name())) {
        std::unordered_map<std::string_view, ir::SourcePos> pos;
        for (const auto& i : c->instructions()) pos.emplace(i->name(), i->pos());
        for (const auto& i : copy->instructions())
          if (auto it = pos.find(i->name()); it != pos.end()) i->set_pos(it->second);
      }
    passes::expand_composite_ops(*prepared);
    passes::make_async_collectives_to_sync()->run(*prepared);
    passes::make_map_inliner()->run(*prepared);
    passes::make_batched_gather_normalizer()->run(*prepared);
    passes::make_window_expander()->run(*prepared);
    passes::make_dot_expander()->run(*prepared);
    split_tuple_all_to_alls(*prepared);
    if (options.passes) {
      passes::make_narrow_64bit_types()->run(*prepared);
      passes::default_pipeline().run(*prepared);
      if (options.overlap_collectives && target.pod) split_tuple_all_reduces(*prepared);
    }
  }
  Lowerer lowerer(prepared ? *prepared : module, target, options);
  isa::Executable e = lowerer.run();
  if (target.pod) {
    e.pod = target.pod;
    e.replicas = static_cast<int32_t>(target.replicas);
    e.partitions = static_cast<int32_t>(target.partitions);
  }
  isa::validate(e);
  return e;
}

}  // namespace podsim::tpu
