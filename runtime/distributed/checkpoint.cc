#include "runtime/distributed/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/error.h"
#include "compiler/ir/safetensors.h"
#include "compiler/ir/sharding.h"
#include "runtime/nn/serialize.h"
#include "runtime/distributed/spmd.h"

namespace podsim::distributed {
namespace {

using nn::NamedTensors;

constexpr std::string_view kModel = "model.";
constexpr std::string_view kOptimizer = "optimizer.";
constexpr std::string_view kStep = "step";

constexpr std::string_view kShardedFormat = "podsim-sharded-checkpoint-1";

// The state of a checkpoint: "model.<name>", "optimizer.<name>".
NamedTensors checkpoint_state(const nn::Module& module, const optim::Optimizer* optimizer) {
  NamedTensors all;
  for (auto& [name, tensor] : module.state_dict()) all.emplace_back(std::string(kModel) + name, tensor);
  if (optimizer != nullptr)
    for (auto& [name, tensor] : optimizer->state_dict()) all.emplace_back(std::string(kOptimizer) + name, tensor);
  return all;
}

// Gives the loaded state to module and optimizer as load_checkpoint does.
void restore(nn::Module& module, optim::Optimizer* optimizer, const NamedTensors& loaded, const std::string& where) {
  NamedTensors model, optimizer_state;
  for (const auto& [name, tensor] : loaded) {
    std::string_view key = name;
    if (key.starts_with(kModel))
      model.emplace_back(std::string(key.substr(kModel.size())), tensor);
    else if (key.starts_with(kOptimizer))
      optimizer_state.emplace_back(std::string(key.substr(kOptimizer.size())), tensor);
    else
      fail("{}: unexpected tensor '{}'", where, name);
  }
  if (optimizer != nullptr && optimizer_state.empty())
    fail("{}: the file has no optimizer state (it was saved without one)", where);
  module.load_state_dict(model);
  if (optimizer != nullptr) optimizer->load_state_dict(optimizer_state);
}

nlohmann::json sharding_json(const ir::Sharding& s) {
  if (s.kind != ir::Sharding::Kind::kTiled) return nlohmann::json::object({{"kind", "replicated"}});
  return {{"kind", "tiled"},
          {"tile_dims", s.tile_dims},
          {"devices", s.devices},
          {"last_tile_dim_replicate", s.last_tile_dim_replicate}};
}

ir::Sharding sharding_from_json(const nlohmann::json& j) {
  ir::Sharding s;
  if (j.at("kind") != "tiled") return s;
  s.kind = ir::Sharding::Kind::kTiled;
  s.tile_dims = j.at("tile_dims").get<std::vector<int64_t>>();
  s.devices = j.at("devices").get<std::vector<int64_t>>();
  s.last_tile_dim_replicate = j.at("last_tile_dim_replicate").get<bool>();
  return s;
}

std::string device_file(int64_t device) { return fmt::format("device-{}.safetensors", device); }

}  // namespace

void save_checkpoint(const nn::Module& module, const optim::Optimizer* optimizer, int64_t step,
                     const std::string& path) {
  NamedTensors all = checkpoint_state(module, optimizer);
  all.emplace_back(std::string(kStep), Tensor::from_vector(std::vector<int64_t>{step}, {}));
  nn::save(all, path);
}

int64_t load_checkpoint(nn::Module& module, optim::Optimizer* optimizer, const std::string& path) {
  NamedTensors state;
  std::optional<int64_t> step;
  for (auto& [name, tensor] : nn::load(path)) {
    if (name == kStep && tensor.numel() == 1)
      step = tensor.item().to_int();
    else if (name.starts_with(kModel) || name.starts_with(kOptimizer))
      state.emplace_back(name, tensor);
    else
      fail(
          "load_checkpoint('{}'): unexpected tensor '{}'; is it a checkpoint written by "
          "save_checkpoint?",
          path, name);
  }
  if (!step) fail("load_checkpoint('{}'): the step count ('step') is missing", path);
  restore(module, optimizer, state, fmt::format("load_checkpoint('{}')", path));
  return *step;
}

void save_sharded_checkpoint(const nn::Module& module, const optim::Optimizer* optimizer, int64_t step,
                             const std::string& dir) {
  mark_step();
  wait_device_ops();
  const NamedTensors state = checkpoint_state(module, optimizer);
  const int64_t devices = distributed::is_spmd() ? distributed::global_device_count() : 1;
  std::vector<ir::NamedLiterals> files(static_cast<size_t>(devices));
  nlohmann::json tensors = nlohmann::json::object();
  for (const auto& [name, tensor] : state) {
    const std::optional<ir::Sharding> sharding = distributed::sharding_of(tensor);
    const ir::Shape shape = tensor.ir_shape();
    nlohmann::json entry{{"dtype", ir::type_name(shape.type())},
                         {"shape", shape.dims()},
                         {"sharding", sharding_json(sharding.value_or(ir::Sharding{}))}};
    std::vector<int64_t> writers;
    if (sharding && sharding->kind == ir::Sharding::Kind::kTiled) {
      std::vector<ir::Literal> pieces = distributed::local_shards(tensor);
      std::vector<std::vector<int64_t>> written;  // offsets of the pieces written
      for (int64_t d = 0; d < devices; ++d) {
        const std::vector<int64_t> at = ir::shard_offsets(shape, *sharding, d);
        if (std::find(written.begin(), written.end(), at) != written.end()) continue;
        written.push_back(at);
        writers.push_back(d);
        files[static_cast<size_t>(d)].emplace_back(name, std::move(pieces[static_cast<size_t>(d)]));
      }
    } else {
      writers.push_back(0);
      files[0].emplace_back(name, tensor.to_literal());
    }
    entry["devices"] = writers;
    tensors[name] = std::move(entry);
  }
  std::filesystem::create_directories(dir);
  for (int64_t d = 0; d < devices; ++d)
    ir::write_safetensors((std::filesystem::path(dir) / device_file(d)).string(), files[static_cast<size_t>(d)]);
  const nlohmann::json index{{"format", kShardedFormat}, {"devices", devices}, {"step", step}, {"tensors", tensors}};
  const std::filesystem::path path = std::filesystem::path(dir) / "index.json";
  const std::filesystem::path temporary = path.string() + ".tmp";
  std::ofstream(temporary) << index.dump(1) << "\n";
  std::filesystem::rename(temporary, path);  // the index last: a checkpoint is whole once it exists
}

int64_t load_sharded_checkpoint(nn::Module& module, optim::Optimizer* optimizer, const std::string& dir) {
  const std::string where = fmt::format("load_sharded_checkpoint('{}')", dir);
  nlohmann::json index;
  try {
    std::ifstream in(std::filesystem::path(dir) / "index.json");
    if (!in) fail("no index.json (is it a directory written by save_sharded_checkpoint?)");
    index = nlohmann::json::parse(in);
    if (index.at("format") != kShardedFormat) fail("format {}, expected {}", index.at("format").dump(), kShardedFormat);
  } catch (const std::exception& e) {
    fail("{}: {}", where, e.what());
  }
  const int64_t devices = index.at("devices").get<int64_t>();
  std::vector<std::map<std::string, ir::Literal>> files(static_cast<size_t>(devices));
  for (int64_t d = 0; d < devices; ++d)
    for (auto& [name, literal] : ir::read_safetensors((std::filesystem::path(dir) / device_file(d)).string()))
      files[static_cast<size_t>(d)].emplace(name, std::move(literal));
  // Where each tensor of the module and optimizer is split now: it is split so again.
  std::map<std::string, ir::Sharding> now;
  for (const auto& [name, tensor] : checkpoint_state(module, optimizer))
    if (auto s = distributed::sharding_of(tensor)) now.emplace(name, *s);
  NamedTensors loaded;
  for (const auto& [name, entry] : index.at("tensors").items()) {
    const ir::Sharding sharding = sharding_from_json(entry.at("sharding"));
    const auto dtype = ir::type_from_name(entry.at("dtype").get<std::string>());
    if (!dtype) fail("{}: tensor '{}' has an unknown dtype {}", where, name, entry.at("dtype").dump());
    const ir::Shape shape(*dtype, entry.at("shape").get<std::vector<int64_t>>());
    // Every device's piece: the one written for the same place of the value.
    std::vector<ir::Literal> pieces(static_cast<size_t>(devices));
    for (int64_t writer : entry.at("devices").get<std::vector<int64_t>>()) {
      auto it = files.at(static_cast<size_t>(writer)).find(name);
      if (it == files[static_cast<size_t>(writer)].end())
        fail("{}: {} has no '{}'", where, device_file(writer), name);
      if (sharding.kind != ir::Sharding::Kind::kTiled) {
        pieces.assign(pieces.size(), it->second);
        break;
      }
      const std::vector<int64_t> at = ir::shard_offsets(shape, sharding, writer);
      for (int64_t d = 0; d < devices; ++d)
        if (ir::shard_offsets(shape, sharding, d) == at) pieces[static_cast<size_t>(d)] = it->second;
    }
    loaded.emplace_back(name, Tensor::from_literal(ir::unshard_literal(pieces, sharding, shape)));
  }
  restore(module, optimizer, loaded, where);
  for (const auto& [name, tensor] : checkpoint_state(module, optimizer))
    if (auto it = now.find(name); it != now.end()) distributed::mark_sharding(tensor, it->second);
  return index.at("step").get<int64_t>();
}

}  // namespace podsim::distributed
