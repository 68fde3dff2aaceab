#include "runtime/nn/serialize.h"

#include <algorithm>
#include <set>

#include "common/error.h"
#include "compiler/ir/safetensors.h"

namespace podsim::nn {

void save(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& path) {
  std::set<std::string> names;
  std::vector<std::vector<Tensor>> pending_by_device;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty()) fail("nn::save('{}'): a tensor has an empty name", path);
    if (!names.insert(name).second) fail("nn::save('{}'): the name '{}' appears twice", path, name);
    if (!tensor.defined()) fail("nn::save('{}'): tensor '{}' is undefined", path, name);
    if (!tensor.is_pending() || tensor.is_host()) continue;
    auto it = std::find_if(pending_by_device.begin(), pending_by_device.end(),
                           [&](const auto& g) { return g[0].device() == tensor.device(); });
    if (it == pending_by_device.end())
      pending_by_device.push_back({tensor});
    else
      it->push_back(tensor);
  }
  // One graph per device for everything still pending, rather than one per tensor.
  for (const auto& group : pending_by_device) sync(group);
  ir::NamedLiterals literals;
  literals.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) literals.emplace_back(name, tensor.to_literal());
  try {
    ir::write_safetensors(path, literals);
  } catch (const Error& e) {
    fail("nn::save('{}'): {} (any previous file at that path is unchanged)", path, e.what());
  }
}

std::vector<std::pair<std::string, Tensor>> load(const std::string& path, pjrt::Device* device) {
  ir::NamedLiterals literals;
  try {
    literals = ir::read_safetensors(path);
  } catch (const Error& e) {
    fail("nn::load('{}'): {}", path, e.what());
  }
  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(literals.size());
  for (auto& [name, literal] : literals)
    out.emplace_back(name, Tensor::from_literal(std::move(literal), device));
  return out;
}

}  // namespace podsim::nn
