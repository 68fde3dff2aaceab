// Who takes part in a collective, as XLA reads replica_groups (CollectiveOpGroupMode):
// replica ids, partition ids or flattened device ids depending on channel_id and
// use_global_device_ids; no groups means every replica (or partition). Devices are
// numbered d = replica * partitions + partition. Shared by shape inference, the
// reference evaluator and the TPU lowering of collectives.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/instruction.h"

namespace podsim::ir {

enum class GroupMode { kCrossReplica, kCrossPartition, kCrossReplicaAndPartition, kFlattenedId };

// podsim::Error for use_global_device_ids without a channel_id.
GroupMode collective_group_mode(const Instruction& instruction);

// The devices taking part with `device`, in the order the collective combines their
// contributions. podsim::Error naming the instruction where the groups name an id out of
// range, name a device twice, or hold the device's id in other than exactly one group.
std::vector<int64_t> collective_participants(const Instruction& instruction, int64_t replicas,
                                             int64_t partitions, int64_t device);

// Every group of devices that take part together, each in combine order; every device of
// the replicas x partitions grid is in exactly one (errors as collective_participants).
std::vector<std::vector<int64_t>> collective_device_groups(const Instruction& instruction,
                                                           int64_t replicas, int64_t partitions);

}  // namespace podsim::ir
