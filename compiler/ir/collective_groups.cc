#include "compiler/ir/collective_groups.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"

namespace podsim::ir {
namespace {

// "name (line N)", as the evaluator names instructions in its errors.
std::string describe(const Instruction& instruction) {
  if (instruction.pos().line > 0)
    return fmt::format("{} (line {})", instruction.name(), instruction.pos().line);
  return instruction.name();
}

}  // namespace

GroupMode collective_group_mode(const Instruction& instruction) {
  const Attributes& attrs = instruction.attrs();
  const bool channel = attrs.channel_id.has_value();
  switch (collective_kind(instruction.opcode())) {
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
      if (!channel) {
        if (attrs.use_global_device_ids) fail("use_global_device_ids requires a channel_id");
        return GroupMode::kCrossReplica;
      }
      return attrs.use_global_device_ids ? GroupMode::kFlattenedId
                                         : GroupMode::kCrossReplicaAndPartition;
    default:  // all-to-all, collective-permute and -broadcast: with a channel id, across partitions
      return channel ? GroupMode::kCrossPartition : GroupMode::kCrossReplica;
  }
}

std::vector<int64_t> collective_participants(const Instruction& instruction, int64_t replicas,
                                             int64_t partitions, int64_t device) {
  const int64_t replica = device / partitions;
  const int64_t partition = device % partitions;
  const GroupMode mode = collective_group_mode(instruction);
  const int64_t id_count = mode == GroupMode::kCrossPartition ? partitions
                           : mode == GroupMode::kFlattenedId  ? replicas * partitions
                                                              : replicas;
  const int64_t my_id = mode == GroupMode::kCrossPartition ? partition
                        : mode == GroupMode::kFlattenedId  ? device
                                                           : replica;
  std::vector<int64_t> ids;
  const auto& groups = instruction.attrs().replica_groups;
  if (!groups || groups->groups.empty()) {
    for (int64_t i = 0; i < id_count; ++i) ids.push_back(i);
  } else {
    int found = 0;
    for (const auto& g : groups->groups) {
      if (std::find(g.begin(), g.end(), my_id) == g.end()) continue;
      ids = g;
      ++found;
    }
    if (found != 1)
      fail("{}: id {} of device {} appears in {} replica groups; it must appear in exactly one",
           describe(instruction), my_id, device, found);
  }
  std::vector<int64_t> devices;
  for (int64_t id : ids) {
    if (id < 0 || id >= id_count)
      fail("{}: replica group id {} is out of range for {} replicas x {} partitions",
           describe(instruction), id, replicas, partitions);
    switch (mode) {
      case GroupMode::kCrossReplica: devices.push_back(id * partitions + partition); break;
      case GroupMode::kCrossPartition: devices.push_back(replica * partitions + id); break;
      case GroupMode::kCrossReplicaAndPartition:
        for (int64_t p = 0; p < partitions; ++p) devices.push_back(id * partitions + p);
        break;
      case GroupMode::kFlattenedId: devices.push_back(id); break;
    }
  }
  std::vector<int64_t> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    fail("{}: a replica group names the same device twice", describe(instruction));
  return devices;
}

std::vector<std::vector<int64_t>> collective_device_groups(const Instruction& instruction,
                                                           int64_t replicas, int64_t partitions) {
  std::vector<std::vector<int64_t>> groups;
  std::vector<char> placed(static_cast<size_t>(replicas * partitions), 0);
  for (int64_t d = 0; d < replicas * partitions; ++d) {
    if (placed[static_cast<size_t>(d)]) continue;
    std::vector<int64_t> group = collective_participants(instruction, replicas, partitions, d);
    for (int64_t member : group) {
      if (placed[static_cast<size_t>(member)])
        fail("{}: device {} is in two different groups", describe(instruction), member);
      placed[static_cast<size_t>(member)] = 1;
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace podsim::ir
