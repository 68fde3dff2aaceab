#include "runtime/optim/checkpoint.h"

#include <string_view>

#include "common/error.h"
#include "runtime/nn/serialize.h"

namespace podsim::optim {
namespace {

constexpr std::string_view kModel = "model.";
constexpr std::string_view kOptimizer = "optimizer.";
constexpr std::string_view kStep = "step";

}  // namespace

void save_checkpoint(const nn::Module& module, const Optimizer* optimizer, int64_t step,
                     const std::string& path) {
  NamedTensors all;
  for (auto& [name, tensor] : module.state_dict())
    all.emplace_back(std::string(kModel) + name, tensor);
  if (optimizer != nullptr)
    for (auto& [name, tensor] : optimizer->state_dict())
      all.emplace_back(std::string(kOptimizer) + name, tensor);
  all.emplace_back(std::string(kStep), Tensor::from_vector(std::vector<int64_t>{step}, {}));
  nn::save(all, path);
}

int64_t load_checkpoint(nn::Module& module, Optimizer* optimizer, const std::string& path) {
  NamedTensors model, optimizer_state;
  std::optional<int64_t> step;
  for (auto& [name, tensor] : nn::load(path)) {
    std::string_view key = name;
    if (key.starts_with(kModel))
      model.emplace_back(std::string(key.substr(kModel.size())), tensor);
    else if (key.starts_with(kOptimizer))
      optimizer_state.emplace_back(std::string(key.substr(kOptimizer.size())), tensor);
    else if (key == kStep && tensor.numel() == 1)
      step = tensor.item().to_int();
    else
      fail(
          "load_checkpoint('{}'): unexpected tensor '{}'; is it a checkpoint written by "
          "save_checkpoint?",
          path, name);
  }
  if (!step) fail("load_checkpoint('{}'): the step count ('step') is missing", path);
  if (optimizer != nullptr && optimizer_state.empty())
    fail("load_checkpoint('{}'): the file has no optimizer state (it was saved without one)", path);
  module.load_state_dict(model);
  if (optimizer != nullptr) optimizer->load_state_dict(optimizer_state);
  return *step;
}

}  // namespace podsim::optim
