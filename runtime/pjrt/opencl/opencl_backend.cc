#include "runtime/pjrt/opencl/opencl_backend.h"

#include <clblast_c.h>
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "common/error.h"
#include "compiler/opencl/opencl_compiler.h"
#include "runtime/pjrt/opencl/opencl_device.h"
#include "runtime/debug/metrics.h"

namespace podsim::pjrt {
namespace {

using namespace opencl_backend;
using podsim::opencl::BufferRef;
using podsim::opencl::GemmShape;
using podsim::opencl::Program;
using podsim::opencl::Step;

// The arrays of a value of any shape, in tuple order (an array is its own leaf).
std::vector<ir::Literal*> literal_leaves(ir::Literal& l) {
  if (!l.shape().is_tuple()) return {&l};
  std::vector<ir::Literal*> out;
  for (ir::Literal& e : l.elements())
    for (ir::Literal* leaf : literal_leaves(e)) out.push_back(leaf);
  return out;
}

size_t leaf_count(const ir::Shape& shape) {
  if (!shape.is_tuple()) return 1;
  size_t n = 0;
  for (const ir::Shape& e : shape.elements()) n += leaf_count(e);
  return n;
}

// Device data of an array or a tuple: one device memory per leaf.
class OpenClBuffer final : public Buffer {
 public:
  OpenClBuffer(ir::Shape shape, OpenClDevice& device,
               std::vector<std::shared_ptr<DeviceMemory>> leaves, std::shared_ptr<Event> event)
      : shape_(std::move(shape)),
        device_(device),
        leaves_(std::move(leaves)),
        event_(std::move(event)) {}

  const ir::Shape& shape() const override { return shape_; }
  Device& device() const override { return device_; }
  const std::shared_ptr<Event>& ready_event() const override { return event_; }
  const std::vector<std::shared_ptr<DeviceMemory>>& leaves() const { return leaves_; }

  ir::Literal to_literal() const override {
    event_->wait();
    debug::ScopedTimer timer("TransferFromDeviceTime");
    ir::Literal out(shape_);
    const std::vector<ir::Literal*> leaves = literal_leaves(out);
    for (size_t k = 0; k < leaves.size(); ++k) {
      const size_t bytes = leaves[k]->bytes().size();
      debug::metric_record("OutboundData", static_cast<double>(bytes), debug::MetricUnit::kBytes);
      device_.read(*leaves_[k], leaves[k]->bytes().data(), bytes);
    }
    return out;
  }

 private:
  ir::Shape shape_;
  OpenClDevice& device_;
  std::vector<std::shared_ptr<DeviceMemory>> leaves_;
  std::shared_ptr<Event> event_;
};

enum class GemmMode { kAuto, kOwn, kClBlast };

// PODSIM_OPENCL_GEMM: auto (default), own, own:T (tiling T of kGemmTilings, where it fits
// the shape), clblast.
struct GemmChoice {
  GemmMode mode = GemmMode::kAuto;
  int tiling = -1;
};

GemmChoice gemm_mode() {
  const char* v = std::getenv("PODSIM_OPENCL_GEMM");
  const std::string_view s = v == nullptr ? "" : v;
  if (s.empty() || s == "auto") return {};
  if (s == "own") return {GemmMode::kOwn, -1};
  if (s == "clblast") return {GemmMode::kClBlast, -1};
  int tiling = -1;
  if (s.starts_with("own:") &&
      std::from_chars(s.data() + 4, s.data() + s.size(), tiling).ptr == s.data() + s.size() &&
      tiling >= 0 && tiling < static_cast<int>(podsim::opencl::kGemmTilings.size()))
    return {GemmMode::kOwn, tiling};
  fail("PODSIM_OPENCL_GEMM={}: expected auto, own, own:0 to own:{} or clblast", s,
       podsim::opencl::kGemmTilings.size() - 1);
}

bool clblast_fits(const GemmShape& g) {
  using ir::PrimitiveType;
  return g.a_type == g.b_type && g.b_type == g.c_type &&
         (g.a_type == PrimitiveType::kF32 || g.a_type == PrimitiveType::kF64);
}

void copy(OpenClDevice& device, const DeviceMemory& from, const DeviceMemory& to, size_t bytes) {
  if (bytes > 0 && from.mem() != to.mem())
    check(
        clEnqueueCopyBuffer(device.queue(), from.mem(), to.mem(), 0, 0, bytes, 0, nullptr, nullptr),
        "copying a buffer on " + device.describe());
}

// A scalar selector or predicate read back once the queue has computed it.
int64_t read_scalar(OpenClDevice& device, const DeviceMemory& memory, ir::PrimitiveType type) {
  ir::Literal l{ir::Shape::scalar(type)};
  device.read(memory, l.bytes().data(), l.bytes().size());
  return l.get_as_int64(0);
}

// What an enqueued run holds until the device completes it: its outputs to mark ready
// (or failed) and its memory. on_complete runs on a driver thread.
struct Completion {
  OpenClDevice* device;
  OpenClDevice::RunToken run;  // ends (if it has not yet) once the memory is let go
  std::vector<std::shared_ptr<OpenClBuffer>> results;
  std::vector<std::shared_ptr<DeviceMemory>> slots, arguments;
  std::chrono::steady_clock::time_point start;
  std::string what;

  static void CL_CALLBACK on_complete(cl_event event, cl_int status, void* self) {
    std::unique_ptr<Completion> done(static_cast<Completion*>(self));
    clReleaseEvent(event);
    debug::metric_record("ExecuteTime", std::chrono::duration<double, std::nano>(
                                     std::chrono::steady_clock::now() - done->start)
                                     .count());
    // The run lets go of its memory and buffers before anyone waiting on them wakes.
    std::vector<std::shared_ptr<Event>> events;
    for (const auto& r : done->results) events.push_back(r->ready_event());
    OpenClDevice& device = *done->device;
    const OpenClDevice::RunToken run = done->run;
    const std::string what = std::move(done->what);
    done.reset();
    device.end_run(run);
    for (const auto& e : events) {
      if (status == CL_COMPLETE) {
        e->set_ready();
      } else {
        try {
          check(status, what);
        } catch (...) {
          e->set_error(std::current_exception());
        }
      }
    }
  }
};

// What a program needs on one device: the built program, its kernels and constants.
struct DeviceProgram {
  cl_program program = nullptr;
  std::map<std::string, cl_kernel, std::less<>> kernels;
  std::vector<std::shared_ptr<DeviceMemory>> constants;
  ~DeviceProgram() {
    for (auto& [name, k] : kernels) clReleaseKernel(k);
    if (program != nullptr) clReleaseProgram(program);
  }
  cl_kernel kernel(const std::string& name) {
    if (auto it = kernels.find(name); it != kernels.end()) return it->second;
    cl_int err = CL_SUCCESS;
    cl_kernel k = clCreateKernel(program, name.c_str(), &err);
    check(err, "creating kernel " + name);
    kernels.emplace(name, k);
    return k;
  }
};

class OpenClClient;

class OpenClExecutable final : public Executable,
                               public std::enable_shared_from_this<OpenClExecutable> {
 public:
  OpenClExecutable(std::unique_ptr<Program> program, OpenClClient& client);

  const ir::Module& module() const override { return program_->module(); }
  const ExecutableInfo& info() const override { return info_; }
  std::string serialize() const override { return program_->serialize(); }
  std::vector<std::shared_ptr<Buffer>> execute(std::span<const std::shared_ptr<Buffer>> arguments,
                                               Device& device) override;

 private:
  using Memory = std::shared_ptr<DeviceMemory>;
  // On the device's worker thread: enqueues plan `index` on args (its argument leaves)
  // with its temporaries in slots (allocated here when empty); returns its result leaves
  // (which may be args, constants or slots).
  std::vector<Memory> run_plan(OpenClDevice& device, DeviceProgram& dp, int index,
                               const std::vector<Memory>& args, std::vector<Memory> slots);
  void run_control(OpenClDevice& device, DeviceProgram& dp, const podsim::opencl::Plan& plan,
                   const Step& step, const std::vector<Memory>& in, const std::vector<Memory>& out);
  DeviceProgram& device_program(OpenClDevice& device);
  void run_gemm(OpenClDevice& device, DeviceProgram& dp, const Step& step, cl_mem a, cl_mem b,
                cl_mem c);
  void launch_gemm(OpenClDevice& device, DeviceProgram& dp, const Step& step, int candidate,
                   cl_mem a, cl_mem b, cl_mem c);
  void run_host(OpenClDevice& device, const podsim::opencl::Plan& plan, const Step& step,
                const std::vector<Memory>& in, const std::vector<Memory>& out);
  size_t ref_bytes(const podsim::opencl::Plan& plan, const BufferRef& r) const {
    return static_cast<size_t>(plan.shape(r, program_->constants()).byte_size());
  }

  std::unique_ptr<Program> program_;
  OpenClClient& client_;
  ExecutableInfo info_;
  std::vector<ir::Shape> parameter_shapes_;
  std::mutex mutex_;
  std::map<int, std::unique_ptr<DeviceProgram>> per_device_;  // by device ordinal
};

class OpenClClient final : public Client {
 public:
  explicit OpenClClient(std::vector<DeviceInfo> infos) {
    for (size_t i = 0; i < infos.size(); ++i) {
      owned_.push_back(
          std::make_unique<OpenClDevice>(*this, static_cast<int>(i), std::move(infos[i])));
      devices_.push_back(owned_.back().get());
    }
  }
  DeviceKind kind() const override { return DeviceKind::kOpenCl; }
  std::span<Device* const> devices() const override { return devices_; }
  std::string target() const override {
    return fmt::format("opencl/{}", podsim::opencl::kCompilerVersion);
  }

  std::shared_ptr<Executable> compile(const ir::Module& module) override {
    debug::ScopedTimer timer("CompileTime");
    return std::make_shared<OpenClExecutable>(podsim::opencl::compile(module), *this);
  }
  std::shared_ptr<Executable> deserialize(std::string_view serialized) override {
    return std::make_shared<OpenClExecutable>(podsim::opencl::compile_serialized(serialized),
                                              *this);
  }

  std::shared_ptr<Buffer> transfer_to_device(ir::Literal literal, Device& device) override {
    OpenClDevice& d = as_opencl(device, "transfer_to_device");
    auto host = std::make_shared<ir::Literal>(std::move(literal));
    std::vector<std::shared_ptr<DeviceMemory>> memory;
    for (const ir::Literal* leaf : literal_leaves(*host))
      memory.push_back(d.allocate(leaf->bytes().size()));
    auto buffer = std::make_shared<OpenClBuffer>(host->shape(), d, memory, Event::make());
    // The job lets go of the memory before the buffer becomes ready (whoever waited may
    // drop the buffer at once, and its memory with it).
    d.worker().enqueue([&d, memory, event = buffer->ready_event(), host]() mutable noexcept {
      try {
        debug::ScopedTimer timer("TransferToDeviceTime");
        const std::vector<ir::Literal*> leaves = literal_leaves(*host);
        for (size_t k = 0; k < leaves.size(); ++k) {
          const size_t bytes = leaves[k]->bytes().size();
          debug::metric_record("InboundData", static_cast<double>(bytes), debug::MetricUnit::kBytes);
          d.write(*memory[k], leaves[k]->bytes().data(), bytes);
        }
        memory.clear();
        event->set_ready();
      } catch (...) {
        memory.clear();
        event->set_error(std::current_exception());
      }
    });
    return buffer;
  }

  OpenClDevice& as_opencl(Device& device, std::string_view what) const {
    for (const auto& d : owned_)
      if (d.get() == &device) return *d;
    fail("{}: {} is not a device of the OpenCL backend", what, device.name());
  }

  // The GEMM candidate chosen for a shape on a device, if one was.
  std::optional<int> gemm_choice(int device, const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = gemm_choices_.find({device, key});
    return it == gemm_choices_.end() ? std::nullopt : std::optional(it->second);
  }
  void set_gemm_choice(int device, const std::string& key, int candidate) {
    std::lock_guard lock(mutex_);
    gemm_choices_[{device, key}] = candidate;
  }

 private:
  std::vector<std::unique_ptr<OpenClDevice>> owned_;
  std::vector<Device*> devices_;
  std::mutex mutex_;
  std::map<std::pair<int, std::string>, int> gemm_choices_;
};

OpenClExecutable::OpenClExecutable(std::unique_ptr<Program> program, OpenClClient& client)
    : program_(std::move(program)), client_(client) {
  const ir::Module& m = program_->module();
  for (const ir::Instruction* p : m.entry()->parameters()) parameter_shapes_.push_back(p->shape());
  for (const ir::Shape& s : program_->entry().arguments) info_.argument_bytes += s.byte_size();
  for (const BufferRef& r : program_->results())
    info_.output_bytes += program_->entry().shape(r, program_->constants()).byte_size();
  for (int64_t bytes : program_->slot_bytes()) info_.intermediate_bytes += bytes;
  info_.program_bytes = static_cast<int64_t>(program_->source().size());
}

std::vector<std::shared_ptr<Buffer>> OpenClExecutable::execute(
    std::span<const std::shared_ptr<Buffer>> arguments, Device& device) {
  const ir::Module& m = program_->module();
  OpenClDevice& d = client_.as_opencl(device, "execute " + m.name());
  if (m.replica_count * m.num_partitions > 1)
    fail(
        "execute {}: the module has {} replicas x {} partitions; the OpenCL backend runs one "
        "device per module "
        "(use PODSIM_SPMD=1 to partition it over the OpenCL devices)",
        m.name(), m.replica_count, m.num_partitions);
  if (arguments.size() != parameter_shapes_.size())
    fail("execute {}: {} argument(s) given, the module takes {}", m.name(), arguments.size(),
         parameter_shapes_.size());
  std::vector<std::shared_ptr<OpenClBuffer>> args;
  for (size_t i = 0; i < arguments.size(); ++i) {
    auto b = std::dynamic_pointer_cast<OpenClBuffer>(arguments[i]);
    if (b == nullptr || &b->device() != &device)
      fail("execute {}: argument {} is on {}, not on {}", m.name(), i,
           arguments[i] ? arguments[i]->device().name() : "<null>", d.describe());
    if (!b->shape().compatible(parameter_shapes_[i]))
      fail("execute {}: argument {} has shape {}, the parameter is {}", m.name(), i,
           b->shape().to_string(false), parameter_shapes_[i].to_string(false));
    args.push_back(std::move(b));
  }
  const OpenClDevice::RunToken run = d.begin_run();
  struct EndRunUnlessEnqueued {  // a throw before the run is enqueued ends it here
    OpenClDevice* device;
    const OpenClDevice::RunToken& run;
    ~EndRunUnlessEnqueued() {
      if (device != nullptr) device->end_run(run);
    }
  } end_run{&d, run};
  std::vector<Memory> slots;
  for (int64_t bytes : program_->slot_bytes())
    slots.push_back(d.allocate(static_cast<size_t>(bytes)));
  // Result leaves: a temporary's slot is handed out as is (once; results have slots of
  // their own); arguments, constants and repeated temporaries are copied into fresh memory.
  const std::vector<BufferRef>& leaves = program_->results();
  std::vector<Memory> result_memory;
  std::vector<std::pair<size_t, Memory>> copies;  // result leaf, its memory
  std::vector<bool> handed(slots.size(), false);
  for (size_t k = 0; k < leaves.size(); ++k) {
    const BufferRef& r = leaves[k];
    const auto slot =
        r.kind == BufferRef::Kind::kTemp ? static_cast<size_t>(program_->temp_slot(r.index)) : 0;
    if (r.kind == BufferRef::Kind::kTemp && !handed[slot]) {
      handed[slot] = true;
      result_memory.push_back(slots[slot]);
    } else {
      result_memory.push_back(d.allocate(ref_bytes(program_->entry(), r)));
      copies.emplace_back(k, result_memory.back());
    }
  }
  // One buffer per result (a tuple root's elements), holding that result's leaves.
  std::vector<std::shared_ptr<OpenClBuffer>> results;
  size_t next = 0;
  for (const ir::Shape& shape : program_->result_shapes()) {
    const size_t n = leaf_count(shape);
    results.push_back(std::make_shared<OpenClBuffer>(
        shape, d,
        std::vector<Memory>(result_memory.begin() + static_cast<std::ptrdiff_t>(next),
                            result_memory.begin() + static_cast<std::ptrdiff_t>(next + n)),
        Event::make()));
    next += n;
  }
  d.worker().enqueue([this, self = shared_from_this(), &d, args, slots, copies, results,
                      run]() noexcept {
    try {
      std::vector<Memory> arg_memory;
      for (const auto& a : args) {
        // An argument still being computed was enqueued on this device's in-order queue
        // by an earlier job: the queue orders the two, the host need not wait. One whose
        // computation already failed fails this run.
        if (a->ready_event()->is_ready()) a->ready_event()->wait();
        for (const Memory& leaf : a->leaves()) arg_memory.push_back(leaf);
      }
      const auto start = std::chrono::steady_clock::now();
      DeviceProgram& dp = device_program(d);
      const std::vector<Memory> out = run_plan(d, dp, 0, arg_memory, slots);
      for (const auto& [k, to] : copies)
        copy(d, *out[k], *to, ref_bytes(program_->entry(), program_->results()[k]));
      // The outputs become ready when the device has run everything enqueued so far; the
      // worker goes on to the next job meanwhile. The run's memory lives until then.
      auto* done = new Completion{&d,
                                  run,
                                  results,
                                  slots,
                                  arg_memory,
                                  start,
                                  "running " + program_->module().name() + " on " + d.describe()};
      cl_event marker = nullptr;
      cl_int err = clEnqueueMarkerWithWaitList(d.queue(), 0, nullptr, &marker);
      if (err == CL_SUCCESS) {
        clRetainEvent(marker);  // one reference for the callback, one for run_enqueued
        err = clSetEventCallback(marker, CL_COMPLETE, &Completion::on_complete, done);
        if (err != CL_SUCCESS) clReleaseEvent(marker);
      }
      if (err != CL_SUCCESS) {
        delete done;
        if (marker != nullptr) clReleaseEvent(marker);
        check(err, "waiting for " + program_->module().name() + " on " + d.describe());
      }
      d.run_enqueued(marker, run);
      check(clFlush(d.queue()), "submitting " + program_->module().name() + " on " + d.describe());
    } catch (...) {
      for (const auto& r : results) r->ready_event()->set_error(std::current_exception());
      d.end_run(run);
    }
  });
  end_run.device = nullptr;
  return {results.begin(), results.end()};
}

DeviceProgram& OpenClExecutable::device_program(OpenClDevice& device) {
  std::lock_guard lock(mutex_);
  std::unique_ptr<DeviceProgram>& slot = per_device_[device.ordinal()];
  if (slot) return *slot;
  if (program_->uses_fp64() && !device.info().fp64)
    fail(
        "{} computes in f64, which {} does not support (no cl_khr_fp64); run it on the CPU backend",
        program_->module().name(), device.describe());
  auto dp = std::make_unique<DeviceProgram>();
  debug::ScopedTimer timer("OpenClBuildTime");  // the driver's compile (or the cached binary's load)
  dp->program =
      device.build(program_->source(), Program::build_options(), program_->module().name());
  for (const ir::Literal* c : program_->constants()) {
    dp->constants.push_back(device.allocate(c->bytes().size()));
    device.write(*dp->constants.back(), c->bytes().data(), c->bytes().size());
  }
  slot = std::move(dp);
  return *slot;
}

std::vector<OpenClExecutable::Memory> OpenClExecutable::run_plan(OpenClDevice& device,
                                                                 DeviceProgram& dp, int index,
                                                                 const std::vector<Memory>& args,
                                                                 std::vector<Memory> slots) {
  const podsim::opencl::Plan& plan = program_->plans()[static_cast<size_t>(index)];
  if (slots.empty())
    for (int64_t bytes : plan.slot_bytes)
      slots.push_back(device.allocate(static_cast<size_t>(bytes)));
  auto memory = [&](const BufferRef& r) -> const Memory& {
    switch (r.kind) {
      case BufferRef::Kind::kArgument:
        return args[static_cast<size_t>(r.index)];
      case BufferRef::Kind::kConstant:
        return dp.constants[static_cast<size_t>(r.index)];
      case BufferRef::Kind::kTemp:
        break;
    }
    return slots[static_cast<size_t>(plan.temp_slot(r.index))];
  };
  cl_command_queue queue = device.queue();
  for (const Step& step : plan.steps) {
    std::vector<Memory> in, out;
    for (const BufferRef& r : step.inputs) in.push_back(memory(r));
    for (const BufferRef& r : step.outputs) out.push_back(memory(r));
    switch (step.kind) {
      case Step::Kind::kKernel: {
        cl_kernel k = dp.kernel(step.launch.name);
        cl_uint a = 0;
        for (const auto* list : {&in, &out})
          for (const Memory& m : *list) {
            cl_mem mem = m->mem();
            check(clSetKernelArg(k, a++, sizeof(cl_mem), &mem), "setting a kernel argument");
          }
        const auto global = static_cast<size_t>(step.launch.global);
        const auto local = static_cast<size_t>(step.launch.local);
        check(clEnqueueNDRangeKernel(queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr),
              fmt::format("launching {} ({}) on {}", step.launch.name, step.instruction->name(),
                          device.describe()));
        break;
      }
      case Step::Kind::kGemm:
        run_gemm(device, dp, step, in[0]->mem(), in[1]->mem(), out[0]->mem());
        break;
      case Step::Kind::kHost:
        run_host(device, plan, step, in, out);
        break;
      case Step::Kind::kWhile:
      case Step::Kind::kConditional:
      case Step::Kind::kCall:
        run_control(device, dp, plan, step, in, out);
        break;
    }
  }
  std::vector<Memory> results;
  for (const BufferRef& r : plan.results) results.push_back(memory(r));
  return results;
}

void OpenClExecutable::run_control(OpenClDevice& device, DeviceProgram& dp,
                                   const podsim::opencl::Plan& plan, const Step& step,
                                   const std::vector<Memory>& in, const std::vector<Memory>& out) {
  const auto& plans = program_->plans();
  std::vector<Memory> results;
  if (step.kind == Step::Kind::kWhile) {
    results = in;  // the loop state
    while (read_scalar(device, *run_plan(device, dp, step.plans[0], results, {}).at(0),
                       ir::PrimitiveType::kPred) != 0)
      results = run_plan(device, dp, step.plans[1], results, {});
  } else if (step.kind == Step::Kind::kCall) {
    results = run_plan(device, dp, step.plans[0], in, {});
  } else {
    // XLA: a pred selects branch 0 when true; an index outside [0, N) selects branch N-1.
    const ir::Instruction& i = *step.instruction;
    const ir::PrimitiveType type = i.operand(0)->shape().type();
    const int64_t v = read_scalar(device, *in[0], type);
    const auto n = static_cast<int64_t>(step.plans.size());
    const int64_t branch =
        type == ir::PrimitiveType::kPred ? (v != 0 ? 0 : 1) : (v < 0 || v >= n ? n - 1 : v);
    size_t first = 1;
    for (int64_t b = 0; b < branch; ++b)
      first += plans[static_cast<size_t>(step.plans[static_cast<size_t>(b)])].arguments.size();
    const auto& branch_plan = plans[static_cast<size_t>(step.plans[static_cast<size_t>(branch)])];
    const std::vector<Memory> args(
        in.begin() + static_cast<std::ptrdiff_t>(first),
        in.begin() + static_cast<std::ptrdiff_t>(first + branch_plan.arguments.size()));
    results = run_plan(device, dp, step.plans[static_cast<size_t>(branch)], args, {});
  }
  for (size_t k = 0; k < out.size(); ++k)
    copy(device, *results[k], *out[k], ref_bytes(plan, step.outputs[k]));
}

void OpenClExecutable::run_host(OpenClDevice& device, const podsim::opencl::Plan& plan,
                                const Step& step, const std::vector<Memory>& in,
                                const std::vector<Memory>& out) {
  std::vector<ir::Literal> inputs, outputs;
  std::vector<const std::byte*> in_ptrs;
  std::vector<std::byte*> out_ptrs;
  for (size_t k = 0; k < in.size(); ++k) {
    inputs.emplace_back(plan.shape(step.inputs[k], program_->constants()));
    device.read(*in[k], inputs.back().bytes().data(), inputs.back().bytes().size());
    in_ptrs.push_back(inputs.back().bytes().data());
  }
  for (const BufferRef& r : step.outputs) {
    outputs.emplace_back(plan.shape(r, program_->constants()));
    out_ptrs.push_back(outputs.back().bytes().data());
  }
  // As torch_xla's aten:: counters for CPU fallbacks: which ops left the device.
  debug::counter_add(fmt::format("OpenClHostOp::{}", ir::opcode_name(step.instruction->opcode())));
  podsim::opencl::run_host_step(step, in_ptrs, out_ptrs);
  for (size_t k = 0; k < out.size(); ++k)
    device.write(*out[k], outputs[k].bytes().data(), outputs[k].bytes().size());
}

// Candidates 0..n-1: the own kernel's tilings; n: CLBlast.
void OpenClExecutable::launch_gemm(OpenClDevice& device, DeviceProgram& dp, const Step& step,
                                   int candidate, cl_mem a, cl_mem b, cl_mem c) {
  const GemmShape& g = step.gemm;
  const auto own = static_cast<int>(podsim::opencl::kGemmTilings.size());
  cl_command_queue queue = device.queue();
  if (candidate < own) {
    cl_kernel k = dp.kernel(step.gemm_kernels[static_cast<size_t>(candidate)]);
    check(clSetKernelArg(k, 0, sizeof(cl_mem), &a), "setting a GEMM argument");
    check(clSetKernelArg(k, 1, sizeof(cl_mem), &b), "setting a GEMM argument");
    check(clSetKernelArg(k, 2, sizeof(cl_mem), &c), "setting a GEMM argument");
    const auto l = podsim::opencl::gemm_launch(
        g, podsim::opencl::kGemmTilings[static_cast<size_t>(candidate)]);
    size_t global[3], local[3];
    for (size_t d = 0; d < 3; ++d) {
      global[d] = static_cast<size_t>(l.global[d]);
      local[d] = static_cast<size_t>(l.local[d]);
    }
    check(
        clEnqueueNDRangeKernel(queue, k, 3, nullptr, global, local, 0, nullptr, nullptr),
        fmt::format("launching the GEMM of {} on {}", step.instruction->name(), device.describe()));
    return;
  }
  const auto ta = g.trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
  const auto tb = g.trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
  const size_t m = static_cast<size_t>(g.m), n = static_cast<size_t>(g.n),
               k = static_cast<size_t>(g.k);
  const size_t lda = g.trans_a ? m : k, ldb = g.trans_b ? k : n;
  CLBlastStatusCode status;
  if (g.a_type == ir::PrimitiveType::kF32)
    status = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, 1.0f, a, 0, lda,
                                        m * k, b, 0, ldb, k * n, 0.0f, c, 0, n, m * n,
                                        static_cast<size_t>(g.batch), &queue, nullptr);
  else
    status = CLBlastDgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, 1.0, a, 0, lda,
                                        m * k, b, 0, ldb, k * n, 0.0, c, 0, n, m * n,
                                        static_cast<size_t>(g.batch), &queue, nullptr);
  if (status != CLBlastSuccess)
    fail(
        "CLBlast GEMM of {} on {} failed with status {}; PODSIM_OPENCL_GEMM=own uses podsim's own "
        "kernel",
        step.instruction->name(), device.describe(), static_cast<int>(status));
}

void OpenClExecutable::run_gemm(OpenClDevice& device, DeviceProgram& dp, const Step& step, cl_mem a,
                                cl_mem b, cl_mem c) {
  const GemmShape& g = step.gemm;
  const auto own = static_cast<int>(podsim::opencl::kGemmTilings.size());
  const auto [mode, tiling] = gemm_mode();
  if (mode == GemmMode::kClBlast && clblast_fits(g))
    return launch_gemm(device, dp, step, own, a, b, c);
  if (g.flops() < podsim::opencl::kTimedGemmFlops)
    return launch_gemm(device, dp, step, podsim::opencl::default_gemm_tiling(g), a, b, c);
  const std::string key = fmt::format("{} {}x{}x{}x{} {}{} {}{}{}", static_cast<int>(mode), g.batch,
                                      g.m, g.n, g.k, g.trans_a, g.trans_b, ir::type_name(g.a_type),
                                      ir::type_name(g.b_type), ir::type_name(g.c_type));
  if (tiling >= 0 && !step.gemm_kernels[static_cast<size_t>(tiling)].empty())
    return launch_gemm(device, dp, step, tiling, a, b, c);  // else the fastest that fits
  if (std::optional<int> chosen = client_.gemm_choice(device.ordinal(), key))
    return launch_gemm(device, dp, step, *chosen, a, b, c);
  // Time each candidate (after a run that builds and warms it) and keep the fastest; each
  // run writes the same product into c.
  int best = podsim::opencl::default_gemm_tiling(g);
  double best_seconds = 0;
  const int last = mode == GemmMode::kAuto && clblast_fits(g) ? own : own - 1;
  for (int candidate = 0; candidate <= last; ++candidate) {
    if (candidate < own && step.gemm_kernels[static_cast<size_t>(candidate)].empty()) continue;
    launch_gemm(device, dp, step, candidate, a, b, c);
    check(clFinish(device.queue()), "timing a GEMM");
    const auto start = std::chrono::steady_clock::now();
    launch_gemm(device, dp, step, candidate, a, b, c);
    check(clFinish(device.queue()), "timing a GEMM");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (best_seconds == 0 || seconds < best_seconds) {
      best = candidate;
      best_seconds = seconds;
    }
  }
  client_.set_gemm_choice(device.ordinal(), key, best);
}

}  // namespace

std::unique_ptr<Client> make_opencl_client() {
  std::vector<DeviceInfo> infos = find_devices();
  if (infos.empty())
    fail(
        "the OpenCL backend: no OpenCL platform or device was found. Install a driver's OpenCL ICD "
        "(a GPU "
        "vendor's, or pocl-opencl-icd to run OpenCL on the CPU), or choose PODSIM_DEVICE=CPU or "
        "SIM");
  if (const char* want = std::getenv("PODSIM_OPENCL_DEVICE"); want != nullptr && *want != '\0') {
    const std::string w(want);
    std::vector<DeviceInfo> kept;
    char* end = nullptr;
    const long index = std::strtol(want, &end, 10);
    if (end != want && *end == '\0') {
      if (index < 0 || index >= static_cast<long>(infos.size()))
        fail("PODSIM_OPENCL_DEVICE={}: there are {} OpenCL device(s), numbered from 0", w,
             infos.size());
      kept.push_back(infos[static_cast<size_t>(index)]);
    } else {
      for (const DeviceInfo& i : infos)
        if (i.name.find(w) != std::string::npos || i.platform_name.find(w) != std::string::npos) {
          kept.push_back(i);
          break;
        }
      if (kept.empty()) {
        std::string names;
        for (const DeviceInfo& i : infos) names += "\n  " + i.name + " (" + i.platform_name + ")";
        fail("PODSIM_OPENCL_DEVICE={}: no OpenCL device's or platform's name contains it; found:{}",
             w, names);
      }
    }
    infos = std::move(kept);
  }
  return std::make_unique<OpenClClient>(std::move(infos));
}

std::vector<std::string> describe_opencl_devices() {
  std::vector<std::string> lines;
  for (const DeviceInfo& i : find_devices())
    lines.push_back(fmt::format("{} ({}, {}): {:.1f} GiB, {} compute units at {} MHz, {}{}", i.name,
                                i.platform_name, i.gpu ? "GPU" : "not a GPU",
                                static_cast<double>(i.global_memory) / (1 << 30), i.compute_units,
                                i.clock_mhz, i.version, i.fp64 ? ", fp64" : ""));
  return lines;
}

}  // namespace podsim::pjrt
