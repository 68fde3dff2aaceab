// Data parallelism in the style of PyTorch/XLA's multi-device API: a launcher that runs
// one training function per device, each on its own thread (torch_xla.launch,
// xmp.spawn), and the collectives those functions call (xm.all_reduce, all_gather,
// reduce_scatter, optimizer_step).
//
//   podsim::distributed::launch([&](int replica) {
//     pjrt::Device& device = podsim::device();      // this replica's device
//     ... forward, backward ...
//     podsim::distributed::optimizer_step(optimizer);                // all-reduce (mean) grads, step
//     podsim::mark_step();                              // this device's graph
//   });
//
// A collective is a node of the replica's lazy graph, lowered to the HLO collective with
// replica_count = world_size(): every replica traces the same graph, compiled once, and
// the launches of all replicas run together (on SIM, as one pod simulation with the
// collectives as rings over the torus; on CPU, in process). Inside a launch,
// mark_step() and the data loader launch only the calling replica's device. Replicas
// that launch different graphs, or a replica that stops early, make the others' results
// fail with an error naming the devices (runtime/pjrt/replicated.h), never a hang.
//
// Outside a launch there is one replica: collectives are the identity (times scale).
// Collectives are not differentiable: their results do not require grad.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace podsim::optim {
class Optimizer;
}

namespace podsim::distributed {

enum class ReduceOp { kSum, kMean, kMax, kMin };

// Groups of replica ordinals taking part together, each in combine order; every replica
// in exactly one. Empty: all replicas, one group.
using ReplicaGroups = std::vector<std::vector<int64_t>>;

// Replicas of the current launch (1 outside one) and this thread's replica (0 outside).
int world_size();
int ordinal();

// The reduction of x over the group's replicas (mean: the sum divided by the group
// size), times scale.
Tensor all_reduce(const Tensor& x, ReduceOp op = ReduceOp::kSum, double scale = 1.0,
                  const ReplicaGroups& groups = {}, Loc loc = Loc::current());
// The all-reduce of several tensors of one dtype as one collective (xm.all_reduce of a
// list; one tuple all-reduce in the graph): result k is the reduction of xs[k].
std::vector<Tensor> all_reduce(const std::vector<Tensor>& xs, ReduceOp op = ReduceOp::kSum,
                               double scale = 1.0, const ReplicaGroups& groups = {},
                               Loc loc = Loc::current());
// The group's tensors concatenated along dim, in group order.
Tensor all_gather(const Tensor& x, int64_t dim = 0, const ReplicaGroups& groups = {},
                  Loc loc = Loc::current());
// The reduction over the group, split along dim into one block per replica: replica k of
// the group gets block k (dim must divide by the group size); times scale.
Tensor reduce_scatter(const Tensor& x, ReduceOp op, int64_t dim, double scale = 1.0,
                      const ReplicaGroups& groups = {}, Loc loc = Loc::current());

// x split along dim into one block per replica of the group; block k goes to the
// group's replica k, which gets every replica's block concatenated along dim in group
// order (the shape stays; dim must divide by the group size).
Tensor all_to_all(const Tensor& x, int64_t dim, const ReplicaGroups& groups = {},
                  Loc loc = Loc::current());

// Pairs (source replica, target replica): each target gets its source's x; a replica
// that is no pair's target gets zeros. A replica is the source of one pair at most, and
// the target of one at most.
Tensor collective_permute(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pairs,
                          Loc loc = Loc::current());

// xm.optimizer_step: averages every parameter's grad over all replicas, then
// optimizer.step(). Grads of one dtype travel together in buckets of at most
// kGradientBucketBytes (a grad larger than that alone), flattened and concatenated: one
// all-reduce per bucket, as XLA's all-reduce combiner makes of PyTorch/XLA's gradient
// all-reduce; buckets are filled from the last parameters (their grads are ready first),
// and small enough that the first ones overlap the rest of backward. Outside a launch,
// just step().
inline constexpr int64_t kGradientBucketBytes = int64_t{1} << 20;
void optimizer_step(optim::Optimizer& optimizer, Loc loc = Loc::current());

// Runs fn(replica) once per device, each on its own thread, with podsim::device() that
// thread's device and ordinal() its replica (devices: all devices of the default
// backend when empty; replica k runs on devices[k]). Returns when all have returned;
// if any threw, rethrows the error that came first. One launch at a time.
void launch(const std::function<void(int replica)>& fn,
            std::vector<pjrt::Device*> devices = {});

}  // namespace podsim::distributed
