// Loss modules (torch.nn.CrossEntropyLoss, NLLLoss, MSELoss): the functional losses of
// runtime/nn/functional.h with their options kept. Called as loss(input, target).
#pragma once

#include "runtime/nn/functional.h"
#include "runtime/nn/module.h"

namespace podsim::nn {

class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(Reduction reduction = Reduction::kMean, double label_smoothing = 0.0,
                            int64_t ignore_index = -100)
      : Module("CrossEntropyLoss"),
        reduction_(reduction),
        label_smoothing_(label_smoothing),
        ignore_index_(ignore_index) {}
  using Module::forward;
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }

 private:
  Reduction reduction_;
  double label_smoothing_;
  int64_t ignore_index_;
};

class NLLLoss : public Module {
 public:
  explicit NLLLoss(Reduction reduction = Reduction::kMean, int64_t ignore_index = -100)
      : Module("NLLLoss"), reduction_(reduction), ignore_index_(ignore_index) {}
  using Module::forward;
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }

 private:
  Reduction reduction_;
  int64_t ignore_index_;
};

class MSELoss : public Module {
 public:
  explicit MSELoss(Reduction reduction = Reduction::kMean)
      : Module("MSELoss"), reduction_(reduction) {}
  using Module::forward;
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }

 private:
  Reduction reduction_;
};

}  // namespace podsim::nn
