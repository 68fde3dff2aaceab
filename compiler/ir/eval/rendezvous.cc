// The rendezvous of evaluate_spmd's device threads (see evaluator_collectives.h).
#include <fmt/format.h>

#include "compiler/ir/eval/collectives.h"
#include "compiler/ir/eval/elementwise.h"

namespace podsim::ir::eval {

Rendezvous::Rendezvous(int64_t devices) : slots_(static_cast<size_t>(devices)) {}

// Whether member waits at the same collective as slot, with the same group: then it is
// not what slot waits for.
bool Rendezvous::waits_with(const Slot& slot, const Slot& member) const {
  return member.state == State::kWaiting && !member.error && member.instruction == slot.instruction &&
         member.group == slot.group;
}

bool Rendezvous::group_complete(const Slot& slot) const {
  for (int64_t g : slot.group)
    if (!waits_with(slot, slots_[static_cast<size_t>(g)])) return false;
  return true;
}

// Whether a member of slot's group finished, failed or waits elsewhere: only then can
// slot's arrival have made a collective impossible, so only then is it worth checking.
bool Rendezvous::has_stuck_member(const Slot& slot) const {
  for (int64_t g : slot.group) {
    const Slot& member = slots_[static_cast<size_t>(g)];
    if (member.state != State::kRunning && !waits_with(slot, member)) return true;
  }
  return false;
}

std::string Rendezvous::mismatch_message(int64_t device, const std::vector<char>& live) const {
  const Slot& me = slots_[static_cast<size_t>(device)];
  std::vector<std::string> blockers;
  for (int64_t g : me.group) {
    const Slot& member = slots_[static_cast<size_t>(g)];
    if (g == device || waits_with(me, member) || live[static_cast<size_t>(g)]) continue;
    if (member.state == State::kFinished) blockers.push_back(fmt::format("device {} finished", g));
    else if (member.state == State::kFailed) blockers.push_back(fmt::format("device {} failed", g));
    else if (member.instruction == me.instruction && member.group != me.group)
      blockers.push_back(
          fmt::format("device {} is at the same instruction with devices {{{}}}", g, fmt::join(member.group, ",")));
    else blockers.push_back(fmt::format("device {} at {}", g, describe(*member.instruction)));
  }
  return fmt::format("mismatched collectives: device {} at {} waits for devices {{{}}}, but {}", device,
                     describe(*me.instruction), fmt::join(me.group, ","), fmt::join(blockers, ", "));
}

// Gives an error to every waiting device whose collective can never complete. A device
// can make progress if it runs, or if everything it waits for can; what is not reached
// from the running devices that way is stuck for good (least fixpoint).
void Rendezvous::fail_doomed_devices() {
  size_t n = slots_.size();
  std::vector<char> live(n, 0);
  for (size_t d = 0; d < n; ++d) live[d] = slots_[d].state == State::kRunning;
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t d = 0; d < n; ++d) {
      const Slot& slot = slots_[d];
      if (live[d] || slot.state != State::kWaiting || slot.error) continue;
      bool can_complete = true;
      for (int64_t g : slot.group) {
        const Slot& member = slots_[static_cast<size_t>(g)];
        if (!waits_with(slot, member) && !live[static_cast<size_t>(g)]) {
          can_complete = false;
          break;
        }
      }
      if (can_complete) live[d] = changed = true;
    }
  }
  std::vector<std::pair<size_t, std::string>> doomed;
  for (size_t d = 0; d < n; ++d)
    if (!live[d] && slots_[d].state == State::kWaiting && !slots_[d].error)
      doomed.emplace_back(d, mismatch_message(static_cast<int64_t>(d), live));
  for (auto& [d, message] : doomed) {
    slots_[d].error = std::move(message);
    slots_[d].error_is_consequence = false;
  }
  if (!doomed.empty()) changed_.notify_all();
}

Contributions Rendezvous::exchange(int64_t device, const Instruction& instruction, const std::vector<int64_t>& group,
                                   Literal contribution) {
  std::unique_lock lock(mutex_);
  if (failed_device_)
    throw CollectiveAborted(fmt::format("{} abandoned on device {}: device {} failed", describe(instruction), device,
                                        *failed_device_));
  Slot& me = slots_[static_cast<size_t>(device)];
  me.state = State::kWaiting;
  me.instruction = &instruction;
  me.group = group;
  me.contribution = std::move(contribution);
  me.result.reset();
  me.error.reset();
  if (group_complete(me)) {
    auto all = std::make_shared<std::vector<Literal>>();
    all->reserve(group.size());
    for (int64_t g : group) all->push_back(std::move(slots_[static_cast<size_t>(g)].contribution));
    for (int64_t g : group) {
      Slot& member = slots_[static_cast<size_t>(g)];
      member.state = State::kRunning;
      member.result = all;
    }
    changed_.notify_all();
  } else {
    if (has_stuck_member(me)) fail_doomed_devices();
    changed_.wait(lock, [&] { return me.result || me.error; });
  }
  if (me.error) {
    std::string message = std::move(*me.error);
    bool consequence = me.error_is_consequence;
    me.state = State::kFailed;
    me.error.reset();
    me.contribution = Literal();
    cancel(device);
    if (consequence) throw CollectiveAborted(message);
    throw CollectiveMismatch(message);
  }
  Contributions result = std::move(me.result);
  me.result.reset();
  return result;
}

void Rendezvous::cancel(int64_t failed_device) {
  if (failed_device_) return;
  failed_device_ = failed_device;
  for (size_t d = 0; d < slots_.size(); ++d) {
    Slot& slot = slots_[d];
    if (slot.state != State::kWaiting || slot.error) continue;
    slot.error = fmt::format("{} abandoned on device {}: device {} failed", describe(*slot.instruction), d,
                             failed_device);
    slot.error_is_consequence = true;
  }
  changed_.notify_all();
}

void Rendezvous::leave(int64_t device, State state) {
  std::lock_guard lock(mutex_);
  Slot& me = slots_[static_cast<size_t>(device)];
  if (me.state == State::kFailed) return;
  me.state = state;
  if (state == State::kFailed) cancel(device);
  else fail_doomed_devices();
}

void Rendezvous::finish(int64_t device) { leave(device, State::kFinished); }
void Rendezvous::abort(int64_t device) { leave(device, State::kFailed); }

}  // namespace podsim::ir::eval
