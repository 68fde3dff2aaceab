// Execution of pending tensors: graph capture, compile-cache lookup (compiling on a
// miss), asynchronous launch on the device, and the host path (the reference
// evaluator, at once). mark_step / sync / wait_device_ops.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "compiler/ir/evaluator.h"
#include "compiler/ir/verifier.h"
#include "runtime/pjrt/compile_cache.h"
#include "runtime/pjrt/internal.h"
#include "runtime/lazy/debug_report.h"
#include "runtime/debug/metrics.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim {
namespace lazy {
namespace {

// One graph is captured and launched at a time: capture writes the nodes' scratch
// fields, and launches on one device keep their order.
std::mutex& sync_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}

// Device scalars of the values ops took, so that a scalar that stays the same (a
// constant learning rate, an epsilon) is transferred once. Bounded: cleared when full.
class ScalarBuffers {
 public:
  std::shared_ptr<pjrt::Buffer> get(pjrt::Device& device, const Node& leaf) {
    ir::Literal literal = scalar_literal(leaf.type, leaf.data->scalar);
    Key key{&device, leaf.type, 0};
    std::memcpy(&key.bits, literal.bytes().data(), literal.bytes().size());
    std::lock_guard guard(mutex_);
    auto it = buffers_.find(key);
    if (it != buffers_.end()) return it->second;
    if (buffers_.size() >= kCapacity) buffers_.clear();
    auto buffer = device.client().transfer_to_device(std::move(literal), device);
    buffers_.emplace(key, buffer);
    return buffer;
  }

  void clear() {
    std::lock_guard guard(mutex_);
    buffers_.clear();
  }

 private:
  static constexpr size_t kCapacity = 4096;
  struct Key {
    pjrt::Device* device;
    DType type;
    uint64_t bits;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.device) ^ (k.bits * 0x9e3779b97f4a7c15ull) ^
             static_cast<size_t>(k.type);
    }
  };
  std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<pjrt::Buffer>, KeyHash> buffers_;
};

ScalarBuffers& scalar_buffers() {
  static ScalarBuffers* instance = new ScalarBuffers;  // buffers may outlive other statics
  return *instance;
}

// The last launch per device: devices run launches in order, so waiting for it waits
// for everything before it.
struct LastLaunches {
  std::mutex mutex;
  std::map<pjrt::Device*, std::shared_ptr<pjrt::Event>> events;
};
LastLaunches& last_launches() {
  static LastLaunches* instance = new LastLaunches;
  return *instance;
}

struct Target {
  ImplPtr impl;
  size_t root;
};

std::string where(std::source_location loc) {
  return fmt::format("{}:{}", loc.file_name(), loc.line());
}

void run_on_host(const Graph& graph, const std::vector<Target>& targets, std::source_location loc) {
  std::unique_ptr<ir::Module> module = lower_graph(graph, "host_graph");
  std::vector<ir::Literal> arguments;
  arguments.reserve(graph.parameters.size());
  for (const Node* leaf : graph.parameters)
    arguments.push_back(leaf->leaf == LeafKind::kScalar
                            ? scalar_literal(leaf->type, leaf->data->scalar)
                            : *leaf->data->literal);
  ir::Literal result;
  try {
    ir::verify_module(*module, "<lazy graph>");
    result = ir::evaluate(*module, arguments);
  } catch (const Error& e) {
    fail("{}: internal error running a host graph: {}", where(loc), e.what());
  }
  std::vector<std::shared_ptr<const ir::Literal>> outputs(result.elements().size());
  for (const Target& t : targets) {
    auto& out = outputs[t.root];
    if (!out) out = std::make_shared<const ir::Literal>(std::move(result.elements()[t.root]));
    t.impl->set_literal(out);
  }
}

void run_on_device(pjrt::Device& device, const Graph& graph, const std::vector<Target>& targets,
                   SyncCause cause, std::source_location loc) {
  static debug::Counter& cached = debug::counter("CachedCompile");
  static debug::Counter& uncached = debug::counter("UncachedCompile");
  pjrt::Client& client = device.client();
  lazy::GraphRun run;
  run.hash = graph.hash;
  run.cause = std::string(sync_cause_text(cause));
  run.device = device.name();
  run.inputs = static_cast<int64_t>(graph.parameters.size());
  run.outputs = static_cast<int64_t>(graph.roots.size());
  run.nodes = static_cast<int64_t>(graph.post_order.size());
  run.loc = loc;

  std::unique_ptr<ir::Module> module;
  std::shared_ptr<pjrt::Executable> executable =
      pjrt::CompileCache::global().lookup(graph.hash, client);
  if (executable) {
    cached.add();
  } else {
    run.compiled = true;
    module = lower_graph(graph, fmt::format("graph_{}", graph.hash.hex().substr(0, 16)));
    try {
      ir::verify_module(*module, "<lazy graph>");
    } catch (const Error& e) {
      fail("{}: internal error: the lazy graph {} lowers to an invalid module: {}", where(loc),
           graph.hash.hex(), e.what());
    }
    lazy::on_compile(run);
    try {
      executable = client.compile(*module);
    } catch (const Error& e) {
      fail("{}: {}: compiling graph {} for {} failed: {}", where(loc), sync_cause_text(cause),
           graph.hash.hex(), device.name(), e.what());
    }
    pjrt::CompileCache::global().insert(graph.hash, client, executable);
    uncached.add();
    lazy::on_post_compile(executable->info());
  }

  std::vector<std::shared_ptr<pjrt::Buffer>> arguments;
  arguments.reserve(graph.parameters.size());
  for (const Node* leaf : graph.parameters)
    arguments.push_back(leaf->leaf == LeafKind::kScalar ? scalar_buffers().get(device, *leaf)
                                                        : leaf->data->buffer);
  lazy::on_execute(run);
  lazy::save_graph(run, graph, module.get());
  std::vector<std::shared_ptr<pjrt::Buffer>> outputs;
  try {
    outputs = executable->execute(arguments, device);
  } catch (const Error& e) {
    fail("{}: {}: launching graph {} on {} failed: {}", where(loc), sync_cause_text(cause),
         graph.hash.hex(), device.name(), e.what());
  }
  if (outputs.size() != graph.roots.size())
    fail("{}: internal error: graph {} gave {} outputs for {} roots", where(loc), graph.hash.hex(),
         outputs.size(), graph.roots.size());
  for (const Target& t : targets) {
    // A tensor changed in place meanwhile keeps its new value.
    if (t.impl->pending_node() == graph.roots[t.root]) t.impl->set_buffer(outputs[t.root]);
  }
  if (!outputs.empty()) {
    LastLaunches& last = last_launches();
    std::lock_guard guard(last.mutex);
    last.events[&device] = outputs.back()->ready_event();
  }
}

}  // namespace

void drop_device_state() {
  scalar_buffers().clear();
  {
    LastLaunches& last = last_launches();
    std::lock_guard guard(last.mutex);
    last.events.clear();
  }
  drop_generator_states();
}

void reset_for_testing() {
  drop_device_state();
  pjrt::internal::reset_backends_for_testing();
}

std::string_view sync_cause_text(SyncCause cause) {
  switch (cause) {
    case SyncCause::kMarkStep:
      return "user mark_step";
    case SyncCause::kSync:
      return "user sync of selected tensors";
    case SyncCause::kItem:
      return "item(): user code reading a value before mark_step";
    case SyncCause::kCpu:
      return "cpu(): user code reading a value before mark_step";
    case SyncCause::kToLiteral:
      return "to_literal(): user code reading a value before mark_step";
    case SyncCause::kToDevice:
      return "to(device): moving a pending tensor to another device";
    case SyncCause::kEager:
      return "eager mode: the op runs at once";
    case SyncCause::kDataLoader:
      return "mark_step in the data loader";
  }
  return "unknown";
}

void sync_tensors(std::span<const ImplPtr> tensors, SyncCause cause, std::source_location loc) {
  if (tensors.empty()) return;
  pjrt::Device* device = tensors[0]->device;
  for (const ImplPtr& t : tensors)
    if (t->device != device)
      fail("{}: internal error: one sync of tensors on {} and {}", where(loc), device_name(device),
           device_name(t->device));
  std::lock_guard guard(sync_mutex());
  std::vector<NodePtr> roots;
  std::vector<Target> targets;
  std::unordered_map<const Node*, size_t> root_index;
  for (const ImplPtr& impl : tensors) {
    NodePtr node = impl->pending_node();
    if (!node) continue;
    auto [it, inserted] = root_index.try_emplace(node.get(), roots.size());
    if (inserted) roots.push_back(std::move(node));
    targets.push_back({impl, it->second});
  }
  if (roots.empty()) return;
  Graph graph = capture_graph(std::move(roots));
  if (device == nullptr)
    run_on_host(graph, targets, loc);
  else
    run_on_device(*device, graph, targets, cause, loc);
}

namespace {

// Pending tensors grouped by device, devices in order of their first tensor.
std::vector<std::vector<ImplPtr>> by_device(std::vector<ImplPtr> tensors) {
  std::vector<std::vector<ImplPtr>> groups;
  for (ImplPtr& t : tensors) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g[0]->device == t->device; });
    if (it == groups.end())
      groups.push_back({std::move(t)});
    else
      it->push_back(std::move(t));
  }
  return groups;
}

}  // namespace
}  // namespace lazy

void lazy::mark_step(SyncCause cause, std::source_location loc) {
  static debug::Counter& steps = debug::counter("MarkStep");
  steps.add();
  // Inside a launch, a replica launches its own device's graph only.
  for (const auto& group : by_device(pending_tensors(pjrt::thread_device())))
    sync_tensors(group, cause, loc);
  lazy::on_step_end();
}

void mark_step(Loc loc) { lazy::mark_step(lazy::SyncCause::kMarkStep, loc); }

void sync(Loc loc) { mark_step(loc); }

void sync(const std::vector<Tensor>& tensors, Loc loc) {
  std::vector<lazy::ImplPtr> impls;
  for (const Tensor& t : tensors) {
    if (!t.defined()) fail("{}:{}: sync: got an undefined tensor", loc.file_name(), loc.line());
    impls.push_back(t.impl());
  }
  for (const auto& group : lazy::by_device(std::move(impls)))
    lazy::sync_tensors(group, lazy::SyncCause::kSync, loc);
}

void wait_device_ops() {
  // Inside a launch, the replica's own device only: another replica's device may wait
  // for this replica's next launch.
  pjrt::Device* own = pjrt::thread_device();
  std::vector<std::shared_ptr<pjrt::Event>> events;
  {
    lazy::LastLaunches& last = lazy::last_launches();
    std::lock_guard guard(last.mutex);
    for (auto it = last.events.begin(); it != last.events.end();) {
      if (own != nullptr && it->first != own) {
        ++it;
        continue;
      }
      events.push_back(it->second);
      it = last.events.erase(it);
    }
  }
  for (const auto& event : events) event->wait();
}

}  // namespace podsim
