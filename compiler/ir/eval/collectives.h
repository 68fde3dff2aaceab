// Internal to the evaluator: the device grid, the rendezvous through which the device
// threads of evaluate_spmd exchange collective contributions, and the collective ops.
// Not a public header.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/eval/internal.h"

namespace podsim::ir::eval {

// An error whose message already says where it happened: instructions that enclose
// the failing one (call, while, ...) pass it on unchanged.
class LocatedError : public Error {
 public:
  using Error::Error;
};
// Devices reached collectives that can never complete (the root cause).
class CollectiveMismatch : public LocatedError {
 public:
  using LocatedError::LocatedError;
};
// A collective gave up because a participant failed first (a consequence, not a cause).
class CollectiveAborted : public LocatedError {
 public:
  using LocatedError::LocatedError;
};

// Device d = replica * partitions + partition.
struct DeviceGrid {
  int64_t replicas = 1;
  int64_t partitions = 1;
  bool solo = false;  // evaluate(): every collective is a group of this device alone
  int64_t size() const { return replicas * partitions; }
};

// The contributions of a completed collective, in the group's order.
using Contributions = std::shared_ptr<const std::vector<Literal>>;

// Meeting point of the devices of one run. A device that reaches a collective blocks in
// exchange() until every member of its group is at the same instruction with the same
// group. A waiting device whose collective can no longer complete gets an error
// instead: mismatched collectives never hang. "Can no longer complete" is exact: a
// member it waits for has finished or failed, or waits itself, directly or through
// others, on devices none of which is running. Once any device fails, the run is
// failing: every collective waiting or yet to come is abandoned with an error, so that
// devices looping over collectives stop too.
class Rendezvous {
 public:
  explicit Rendezvous(int64_t devices);
  Contributions exchange(int64_t device, const Instruction& instruction, const std::vector<int64_t>& group,
                         Literal contribution);
  // The device returned from its computation (finish) or threw (abort).
  void finish(int64_t device);
  void abort(int64_t device);

 private:
  enum class State { kRunning, kWaiting, kFinished, kFailed };
  struct Slot {
    State state = State::kRunning;
    const Instruction* instruction = nullptr;
    std::vector<int64_t> group;
    Literal contribution;
    Contributions result;
    std::optional<std::string> error;
    bool error_is_consequence = false;
  };

  bool waits_with(const Slot& slot, const Slot& member) const;
  bool group_complete(const Slot& slot) const;
  bool has_stuck_member(const Slot& slot) const;
  std::string mismatch_message(int64_t device, const std::vector<char>& live) const;
  void fail_doomed_devices();
  void leave(int64_t device, State state);
  void cancel(int64_t failed_device);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Slot> slots_;
  std::optional<int64_t> failed_device_;  // the first device that failed
};

// What collectives need from the device evaluating them.
class DeviceContext : public Context {
 public:
  virtual const DeviceGrid& grid() const = 0;
  virtual int64_t device() const = 0;
  virtual Rendezvous& rendezvous() = 0;
};

// all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute.
// Also collective-broadcast and the async starts (the value XLA gives a start).
Literal eval_collective(const Instruction& instruction, Operands operands, DeviceContext& context);
// An async done: the collective's result held by its start's value.
Literal eval_async_done(const Instruction& instruction, const Literal& start);

}  // namespace podsim::ir::eval
