// The launcher and the collectives of runtime/distributed/collectives.h. Collective nodes carry
// their replica count and groups as attributes (so graphs of different worlds or groups
// hash apart); runtime/lazy/lowering.cc turns them into HLO collectives and sets the module's
// replica_count.
#include "runtime/distributed/collectives.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "runtime/optim/optimizer.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim::distributed {
namespace {

using lazy::Dims;
using lazy::NodePtr;
using lazy::OpSite;

thread_local int replica = 0;
thread_local int replicas = 1;

// Groups as attributes: [group size, ids of every group...]; every replica in exactly
// one group, all groups of one size (the result shapes of all-gather and reduce-scatter
// depend on it). Empty groups: one group of every replica.
std::vector<int64_t> group_attributes(const OpSite& site, const ReplicaGroups& groups) {
  const int64_t world = replicas;
  std::vector<int64_t> attrs;
  if (groups.empty()) {
    attrs.push_back(world);
    for (int64_t r = 0; r < world; ++r) attrs.push_back(r);
    return attrs;
  }
  const auto size = static_cast<int64_t>(groups[0].size());
  attrs.push_back(size);
  std::vector<int> seen(static_cast<size_t>(world), 0);
  for (const auto& group : groups) {
    if (static_cast<int64_t>(group.size()) != size || size == 0)
      lazy::op_fail(site, "replica groups must all have the same size, and not 0");
    for (int64_t r : group) {
      if (r < 0 || r >= world)
        lazy::op_fail(site, "replica {} is out of range: the launch has {} replica(s)", r, world);
      if (seen[static_cast<size_t>(r)]++ != 0)
        lazy::op_fail(site, "replica {} is in more than one group", r);
      attrs.push_back(r);
    }
  }
  for (int64_t r = 0; r < world; ++r)
    if (seen[static_cast<size_t>(r)] == 0) lazy::op_fail(site, "replica {} is in no group", r);
  return attrs;
}

lazy::ReduceKind reduce_kind(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax:
      return lazy::ReduceKind::kMax;
    case ReduceOp::kMin:
      return lazy::ReduceKind::kMin;
    default:
      return lazy::ReduceKind::kSum;
  }
}

// The operand's value; collectives need a device tensor.
NodePtr operand(const Tensor& x, const OpSite& site) {
  const lazy::TensorImpl& impl = lazy::checked(x, site);
  if (impl.device == nullptr)
    lazy::op_fail(site, "{} is a host tensor; collectives run between devices",
                  lazy::impl_shape_string(impl));
  return lazy::value_of(impl, site);
}

// result times scale (and divided by the group size for a mean).
Tensor scaled(NodePtr result, ReduceOp op, double scale, int64_t group_size,
              pjrt::Device* device, const OpSite& site) {
  if (op == ReduceOp::kMean) scale /= static_cast<double>(group_size);
  if (scale != 1.0) {
    if (!ir::is_float(result->type))
      lazy::op_fail(site, "a mean or a scale needs a floating-point tensor, got {}",
                    lazy::shape_string(result->type, result->dims));
    result = lazy::elementwise(ir::Opcode::kMultiply, result,
                               lazy::scalar_operand(Scalar(scale), result->type, site), site);
  }
  return lazy::make_result(std::move(result), device, site);
}

// dim of value made non-negative, checked to split into `parts` equal blocks.
int64_t split_dim(const OpSite& site, const lazy::Node& value, int64_t dim, int64_t parts) {
  const int64_t d = lazy::wrap_dim(dim, static_cast<int64_t>(value.dims.size()), site);
  if (value.dims[static_cast<size_t>(d)] % parts != 0)
    lazy::op_fail(site, "dimension {} of {} does not split into {} blocks", d,
                  lazy::shape_string(value.type, value.dims), parts);
  return d;
}

// The collective node (attributes: prefix, then the groups) with result dims; with one
// replica, value itself (every collective of one is the identity).
NodePtr collective_node(const OpSite& site, ir::Opcode op, const NodePtr& value, const Dims& dims,
                        std::initializer_list<int64_t> prefix, std::vector<int64_t> groups) {
  if (replicas == 1) return value;
  groups.insert(groups.begin(), prefix);
  return lazy::unary_node(site, op, value->type, dims, value, groups);
}

std::mutex& launch_mutex() {
  static std::mutex* mutex = new std::mutex;
  return *mutex;
}

}  // namespace

int world_size() { return replicas; }
int ordinal() { return replica; }

Tensor all_reduce(const Tensor& x, ReduceOp op, double scale, const ReplicaGroups& groups,
                  Loc loc) {
  const OpSite site{"all_reduce", loc};
  NodePtr value = operand(x, site);
  std::vector<int64_t> attrs = group_attributes(site, groups);
  const int64_t group_size = attrs[0];
  value = collective_node(site, ir::Opcode::kAllReduce, value, value->dims,
                          {static_cast<int64_t>(reduce_kind(op)), replicas}, attrs);
  return scaled(std::move(value), op, scale, group_size, x.impl()->device, site);
}

std::vector<Tensor> all_reduce(const std::vector<Tensor>& xs, ReduceOp op, double scale,
                               const ReplicaGroups& groups, Loc loc) {
  const OpSite site{"all_reduce", loc};
  if (xs.empty()) return {};
  std::vector<NodePtr> values;
  std::vector<lazy::Node*> raw;
  for (const Tensor& x : xs) {
    values.push_back(operand(x, site));
    raw.push_back(values.back().get());
    if (values.back()->type != values[0]->type || x.impl()->device != xs[0].impl()->device)
      lazy::op_fail(site, "the tensors of one all-reduce must share a dtype and a device");
  }
  std::vector<int64_t> attrs = group_attributes(site, groups);
  const int64_t group_size = attrs[0];
  pjrt::Device* device = xs[0].impl()->device;
  std::vector<Tensor> results;
  if (replicas == 1 || xs.size() == 1) {
    for (const Tensor& x : xs) results.push_back(all_reduce(x, op, scale, groups, loc));
    return results;
  }
  attrs.insert(attrs.begin(), {static_cast<int64_t>(reduce_kind(op)), replicas});
  NodePtr first = lazy::make_node(site, ir::Opcode::kAllReduce, values[0]->type, values[0]->dims,
                                  raw, attrs);
  for (size_t k = 0; k < values.size(); ++k) {
    const int64_t index = static_cast<int64_t>(k);
    NodePtr value = k == 0 ? first
                           : lazy::unary_node(site, ir::Opcode::kGetTupleElement, values[k]->type,
                                              values[k]->dims, first, std::span(&index, 1));
    results.push_back(scaled(std::move(value), op, scale, group_size, device, site));
  }
  return results;
}

Tensor all_gather(const Tensor& x, int64_t dim, const ReplicaGroups& groups, Loc loc) {
  const OpSite site{"all_gather", loc};
  NodePtr value = operand(x, site);
  const int64_t d = lazy::wrap_dim(dim, static_cast<int64_t>(value->dims.size()), site);
  std::vector<int64_t> attrs = group_attributes(site, groups);
  Dims dims = value->dims;
  dims[static_cast<size_t>(d)] *= attrs[0];
  value = collective_node(site, ir::Opcode::kAllGather, value, dims, {d, replicas}, attrs);
  return lazy::make_result(std::move(value), x.impl()->device, site);
}

Tensor reduce_scatter(const Tensor& x, ReduceOp op, int64_t dim, double scale,
                      const ReplicaGroups& groups, Loc loc) {
  const OpSite site{"reduce_scatter", loc};
  NodePtr value = operand(x, site);
  std::vector<int64_t> attrs = group_attributes(site, groups);
  const int64_t group_size = attrs[0];
  const int64_t d = split_dim(site, *value, dim, group_size);
  Dims dims = value->dims;
  dims[static_cast<size_t>(d)] /= group_size;
  value = collective_node(site, ir::Opcode::kReduceScatter, value, dims,
                          {static_cast<int64_t>(reduce_kind(op)), d, replicas}, attrs);
  return scaled(std::move(value), op, scale, group_size, x.impl()->device, site);
}

Tensor all_to_all(const Tensor& x, int64_t dim, const ReplicaGroups& groups, Loc loc) {
  const OpSite site{"all_to_all", loc};
  NodePtr value = operand(x, site);
  std::vector<int64_t> attrs = group_attributes(site, groups);
  const int64_t d = split_dim(site, *value, dim, attrs[0]);
  value = collective_node(site, ir::Opcode::kAllToAll, value, value->dims, {d, replicas}, attrs);
  return lazy::make_result(std::move(value), x.impl()->device, site);
}

Tensor collective_permute(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pairs,
                          Loc loc) {
  const OpSite site{"collective_permute", loc};
  NodePtr value = operand(x, site);
  std::vector<int> sends(static_cast<size_t>(replicas), 0), receives(sends);
  std::vector<int64_t> attrs = {replicas};
  for (auto [from, to] : pairs) {
    if (from < 0 || to < 0 || from >= replicas || to >= replicas)
      lazy::op_fail(site, "pair ({}, {}) names a replica out of range: the launch has {}", from, to,
                    replicas);
    if (sends[static_cast<size_t>(from)]++ != 0 || receives[static_cast<size_t>(to)]++ != 0)
      lazy::op_fail(site, "replica {} sends or {} receives more than once", from, to);
    attrs.push_back(from);
    attrs.push_back(to);
  }
  if (replicas == 1) {  // the one replica keeps x if it sends to itself, else gets zeros
    if (pairs.empty())
      value = lazy::broadcast_to(lazy::make_constant(site, value->type, 0), value->dims, site);
  } else {
    value = lazy::unary_node(site, ir::Opcode::kCollectivePermute, value->type, value->dims, value,
                             attrs);
  }
  return lazy::make_result(std::move(value), x.impl()->device, site);
}

void optimizer_step(optim::Optimizer& optimizer, Loc loc) {
  if (replicas > 1) {
    // The grads of one type in buckets of up to kGradientBucketBytes, one all-reduce per
    // bucket (each all-reduce pays the collective's latency once).
    // Last parameters first: backward computes their grads first, so the first buckets'
    // all-reduces can run while the rest of backward computes (the TPU target overlaps
    // them, tpu::Options::overlap_collectives).
    std::vector<Tensor*> params;
    for (optim::ParamGroup& group : optimizer.param_groups())
      for (Tensor& param : group.params)
        if (param.grad().defined()) params.push_back(&param);
    std::reverse(params.begin(), params.end());
    std::vector<bool> done(params.size(), false);
    for (size_t first = 0; first < params.size(); ++first) {
      if (done[first]) continue;
      const DType type = params[first]->grad().dtype();
      std::vector<Tensor*> bucket;
      int64_t bytes = 0;
      for (size_t i = first; i < params.size(); ++i) {
        Tensor grad = params[i]->grad();
        if (done[i] || grad.dtype() != type) continue;
        const int64_t size = grad.numel() * static_cast<int64_t>(ir::type_byte_size(type));
        if (!bucket.empty() && bytes + size > kGradientBucketBytes) continue;
        bucket.push_back(params[i]);
        bytes += size;
        done[i] = true;
      }
      // Flattened and concatenated in the graph, where fusion makes one kernel of it (the
      // TPU target's tuple all-reduce copies each operand with DMAs of its own: slower for
      // the many small grads of a transformer).
      std::vector<Tensor> flat;
      for (Tensor* param : bucket) flat.push_back(param->grad().reshape({-1}, loc));
      Tensor reduced = all_reduce(flat.size() == 1 ? flat[0] : cat(flat, 0, loc), ReduceOp::kMean,
                                  1.0, {}, loc);
      int64_t at = 0;
      for (Tensor* param : bucket) {
        Tensor grad = param->grad();
        param->set_grad(reduced.narrow(0, at, grad.numel(), loc).reshape(grad.shape(), loc));
        at += grad.numel();
      }
    }
  }
  optimizer.step(loc);
}

void launch(const std::function<void(int)>& fn, std::vector<pjrt::Device*> devices) {
  if (pjrt::thread_device() != nullptr) fail("launch: called from inside a launch (replica {})", replica);
  std::unique_lock lock(launch_mutex(), std::try_to_lock);
  if (!lock.owns_lock()) fail("launch: another launch is running; one launch at a time");
  if (devices.empty()) devices = podsim::devices();
  for (size_t i = 0; i < devices.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (devices[i] == devices[j]) fail("launch: {} is given twice", devices[i]->name());
  const int world = static_cast<int>(devices.size());
  for (pjrt::Device* device : devices) device->client().replicas_starting();
  std::vector<std::exception_ptr> errors(devices.size());
  std::vector<int> order(devices.size(), 0);  // when each failed (1, 2, ...)
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.reserve(devices.size());
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      pjrt::set_thread_device(devices[static_cast<size_t>(r)]);
      replica = r;
      replicas = world;
      std::string why = "its replica returned";
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        order[static_cast<size_t>(r)] = ++failures;
        why = "its replica failed";
        try {
          throw;
        } catch (const std::exception& e) {
          why = fmt::format("its replica failed: {}", e.what());
        } catch (...) {
        }
      }
      pjrt::Device* launched = pjrt::thread_device();
      launched->client().replica_stopped(*launched, why);
      pjrt::set_thread_device(nullptr);
      replica = 0;
      replicas = 1;
    });
  for (std::thread& thread : threads) thread.join();
  if (failures == 0) return;
  auto first = std::min_element(order.begin(), order.end(), [](int a, int b) {
    return a != 0 && (b == 0 || a < b);
  });
  std::rethrow_exception(errors[static_cast<size_t>(first - order.begin())]);
}

}  // namespace podsim::distributed
