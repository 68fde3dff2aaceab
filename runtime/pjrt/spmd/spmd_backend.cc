#include "runtime/pjrt/spmd/spmd_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/sharding.h"
#include "compiler/passes/pass.h"

namespace podsim::pjrt {
namespace {

constexpr std::string_view kSpmdFormat = "podsim-spmd-1";

class SpmdClient;

class SpmdDevice final : public Device {
 public:
  explicit SpmdDevice(SpmdClient& client) : client_(client) {}
  DeviceKind kind() const override { return DeviceKind::kSpmd; }
  int ordinal() const override { return 0; }
  Client& client() const override;
  MemoryStats memory_stats() const override;

 private:
  SpmdClient& client_;
};

// A value split over the devices: pieces[d] is device d's piece under `sharding`.
class ShardedBuffer final : public Buffer {
 public:
  ShardedBuffer(Device& device, ir::Shape shape, ir::Sharding sharding, std::vector<std::shared_ptr<Buffer>> pieces)
      : device_(device), shape_(std::move(shape)), sharding_(std::move(sharding)), pieces_(std::move(pieces)) {}

  const ir::Shape& shape() const override { return shape_; }
  Device& device() const override { return device_; }
  // The last piece's: the pieces of one launch complete together, and those of a
  // transfer in order.
  const std::shared_ptr<Event>& ready_event() const override { return pieces_.back()->ready_event(); }
  const ir::Sharding* sharding() const override { return &sharding_; }
  ir::Literal to_literal() const override {
    std::vector<ir::Literal> pieces;
    for (const auto& p : pieces_) pieces.push_back(p->to_literal());
    return ir::unshard_literal(pieces, sharding_, shape_);
  }
  const std::vector<std::shared_ptr<Buffer>>& pieces() const { return pieces_; }

 private:
  Device& device_;
  ir::Shape shape_;
  ir::Sharding sharding_;
  std::vector<std::shared_ptr<Buffer>> pieces_;
};

const ShardedBuffer& sharded(const Buffer& buffer) {
  const auto* s = dynamic_cast<const ShardedBuffer*>(&buffer);
  if (s == nullptr) fail("{} holds data of {}, not of the SPMD device", buffer.shape().to_string(false), buffer.device().name());
  return *s;
}

class SpmdExecutable final : public Executable {
 public:
  SpmdExecutable(SpmdClient& client, std::unique_ptr<ir::Module> partitioned, std::shared_ptr<Executable> program,
                 std::vector<ir::Shape> whole_outputs)
      : client_(client),
        partitioned_(std::move(partitioned)),
        program_(std::move(program)),
        whole_outputs_(std::move(whole_outputs)) {
    const ir::Computation& entry = *partitioned_->entry();
    for (const ir::Instruction* p : entry.parameters()) parameters_.push_back(p->sharding().value_or(ir::Sharding{}));
    const ir::Sharding root = entry.root()->sharding().value_or(ir::Sharding{});
    for (size_t k = 0; k < whole_outputs_.size(); ++k)
      outputs_.push_back(root.kind == ir::Sharding::Kind::kTuple ? root.tuple_elements.at(k) : root);
  }

  const ir::Module& module() const override { return *partitioned_; }
  const ExecutableInfo& info() const override { return program_->info(); }
  // The partitioned module, the whole outputs' shapes and the device program's own
  // serialized form, as length-prefixed sections after a format line.
  std::string serialize() const override {
    std::string shapes;
    for (const ir::Shape& s : whole_outputs_) shapes += s.to_string(false) + "\n";
    std::string out = std::string(kSpmdFormat) + "\n";
    for (const std::string& section : {ir::print_module(*partitioned_), shapes, program_->serialize()})
      out += fmt::format("{}\n{}\n", section.size(), section);
    return out;
  }
  std::vector<std::shared_ptr<Buffer>> execute(std::span<const std::shared_ptr<Buffer>> arguments,
                                               Device& device) override;

 private:
  SpmdClient& client_;
  std::unique_ptr<ir::Module> partitioned_;
  std::shared_ptr<Executable> program_;
  std::vector<ir::Shape> whole_outputs_;
  std::vector<ir::Sharding> parameters_, outputs_;
};

class SpmdClient final : public Client {
 public:
  explicit SpmdClient(Client& base) : base_(base), device_(*this) {
    for (Device* d : base.devices()) base_devices_.push_back(d);
    pointers_.push_back(&device_);
  }

  DeviceKind kind() const override { return DeviceKind::kSpmd; }
  std::span<Device* const> devices() const override { return pointers_; }
  std::string target() const override { return fmt::format("spmd{}/{}", base_devices_.size(), base_.target()); }
  int64_t partitions() const { return static_cast<int64_t>(base_devices_.size()); }
  Client& base() const { return base_; }
  Device& base_device(int64_t d) const { return *base_devices_.at(static_cast<size_t>(d)); }
  Device& device() { return device_; }

  std::shared_ptr<Executable> compile(const ir::Module& module) override {
    if (module.replica_count > 1)
      fail("{}: collectives over replicas inside SPMD mode; SPMD graphs take their collectives from shardings",
           module.name());
    auto partitioned = ir::parse_module(ir::print_module(module));
    std::vector<ir::Shape> outputs;
    const ir::Shape& root = partitioned->entry()->root()->shape();
    if (root.is_tuple())
      outputs = root.elements();
    else
      outputs.push_back(root);
    passes::spmd_partition(*partitioned, partitions(), base_.pod());
    std::shared_ptr<Executable> program = base_.compile(*partitioned);
    return std::make_shared<SpmdExecutable>(*this, std::move(partitioned), std::move(program), std::move(outputs));
  }

  std::shared_ptr<Executable> deserialize(std::string_view payload) override {
    const std::string_view what = "<serialized SPMD executable>";
    auto malformed = [&] { fail("{}: not a {} payload (corrupt or from another podsim)", what, kSpmdFormat); };
    if (!payload.starts_with(std::string(kSpmdFormat) + "\n")) malformed();
    payload.remove_prefix(kSpmdFormat.size() + 1);
    std::vector<std::string_view> sections;
    for (int k = 0; k < 3; ++k) {
      const size_t eol = payload.find('\n');
      size_t size = 0;
      const auto [end, ec] = std::from_chars(payload.data(), payload.data() + std::min(eol, payload.size()), size);
      if (eol == std::string_view::npos || ec != std::errc() || end != payload.data() + eol ||
          payload.size() < eol + 2 + size || payload[eol + 1 + size] != '\n')
        malformed();
      sections.push_back(payload.substr(eol + 1, size));
      payload.remove_prefix(eol + 2 + size);
    }
    std::unique_ptr<ir::Module> partitioned = ir::parse_module(sections[0], std::string(what));
    std::vector<ir::Shape> outputs;
    for (size_t at = 0; at < sections[1].size();) {
      const size_t eol = sections[1].find('\n', at);
      if (eol == std::string_view::npos) malformed();
      outputs.push_back(ir::parse_shape(sections[1].substr(at, eol - at)));
      at = eol + 1;
    }
    return std::make_shared<SpmdExecutable>(*this, std::move(partitioned), base_.deserialize(sections[2]),
                                            std::move(outputs));
  }

  // Replicated: a copy on every device.
  std::shared_ptr<Buffer> transfer_to_device(ir::Literal literal, Device&) override {
    return place(literal, ir::Sharding{});
  }

  std::shared_ptr<Buffer> place(const ir::Literal& whole, const ir::Sharding& sharding) {
    std::vector<std::shared_ptr<Buffer>> pieces;
    for (int64_t d = 0; d < partitions(); ++d)
      pieces.push_back(base_.transfer_to_device(ir::shard_literal(whole, sharding, d), base_device(d)));
    return std::make_shared<ShardedBuffer>(device_, whole.shape(), sharding, std::move(pieces));
  }

  std::shared_ptr<Buffer> wrap(ir::Shape shape, ir::Sharding sharding, std::vector<std::shared_ptr<Buffer>> pieces) {
    return std::make_shared<ShardedBuffer>(device_, std::move(shape), std::move(sharding), std::move(pieces));
  }

 private:
  Client& base_;
  SpmdDevice device_;
  std::vector<Device*> base_devices_;
  std::vector<Device*> pointers_;
};

Client& SpmdDevice::client() const { return client_; }

MemoryStats SpmdDevice::memory_stats() const {
  MemoryStats total;
  for (int64_t d = 0; d < client_.partitions(); ++d) {
    const MemoryStats s = client_.base_device(d).memory_stats();
    total.bytes_in_use += s.bytes_in_use;
    total.peak_bytes_in_use += s.peak_bytes_in_use;
    total.bytes_limit += s.bytes_limit;
  }
  return total;
}

std::vector<std::shared_ptr<Buffer>> SpmdExecutable::execute(std::span<const std::shared_ptr<Buffer>> arguments,
                                                             Device& device) {
  if (&device != &client_.device()) fail("an SPMD executable runs on {}, not {}", client_.device().name(), device.name());
  if (arguments.size() != parameters_.size())
    fail("{}: {} arguments for {} parameters", partitioned_->name(), arguments.size(), parameters_.size());
  std::vector<std::shared_ptr<Buffer>> args;
  for (size_t k = 0; k < arguments.size(); ++k) {
    const ShardedBuffer& a = sharded(*arguments[k]);
    // A buffer split otherwise than the compiled program takes it is resharded first.
    args.push_back(*a.sharding() == parameters_[k] ? arguments[k] : reshard_buffer(a, parameters_[k]));
  }
  // Every device's launch joins the same replicated round of the other backend.
  std::vector<std::vector<std::shared_ptr<Buffer>>> pieces;
  for (int64_t d = 0; d < client_.partitions(); ++d) {
    std::vector<std::shared_ptr<Buffer>> mine;
    for (const auto& a : args) mine.push_back(sharded(*a).pieces().at(static_cast<size_t>(d)));
    pieces.push_back(program_->execute(mine, client_.base_device(d)));
  }
  std::vector<std::shared_ptr<Buffer>> outputs;
  for (size_t k = 0; k < whole_outputs_.size(); ++k) {
    std::vector<std::shared_ptr<Buffer>> output;
    for (const auto& device_outputs : pieces) output.push_back(device_outputs.at(k));
    outputs.push_back(client_.wrap(whole_outputs_[k], outputs_[k], std::move(output)));
  }
  return outputs;
}

}  // namespace

std::unique_ptr<Client> make_spmd_client(Client& devices) { return std::make_unique<SpmdClient>(devices); }

std::vector<ir::Literal> buffer_pieces(const Buffer& buffer) {
  std::vector<ir::Literal> pieces;
  for (const auto& piece : sharded(buffer).pieces()) pieces.push_back(piece->to_literal());
  return pieces;
}

int64_t spmd_device_count(const Client& client) {
  const auto* spmd = dynamic_cast<const SpmdClient*>(&client);
  return spmd != nullptr ? spmd->partitions() : 0;
}

std::shared_ptr<Buffer> place_buffer(const ir::Literal& whole, const ir::Sharding& sharding, Device& device) {
  auto* client = dynamic_cast<SpmdClient*>(&device.client());
  if (client == nullptr) fail("{} is not the SPMD device", device.name());
  return client->place(whole, sharding);
}

std::shared_ptr<Buffer> reshard_buffer(const Buffer& buffer, const ir::Sharding& sharding) {
  return place_buffer(buffer.to_literal(), sharding, buffer.device());
}

}  // namespace podsim::pjrt
