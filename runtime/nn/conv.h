// torch.nn.Conv2d, MaxPool2d and AvgPool2d (NCHW inputs, OIHW weights), for small CNNs.
// See functional::conv2d / max_pool2d / avg_pool2d for what is supported.
#pragma once

#include <optional>

#include "runtime/nn/functional.h"
#include "runtime/nn/module.h"

namespace podsim::nn {

// weight (out, in, kH, kW) and bias (out) from U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
// fan_in = in * kH * kW (torch's default initialization). groups = 1.
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Int2 kernel_size, Int2 stride = 1,
         Int2 padding = 0, Int2 dilation = 1, bool bias = true, TensorOptions options = {});
  Tensor forward(const Tensor& input) override;
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  Int2 stride_, padding_, dilation_;
  Tensor weight_, bias_;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Int2 kernel_size, std::optional<Int2> stride = {}, Int2 padding = 0)
      : Module("MaxPool2d"), kernel_size_(kernel_size), stride_(stride), padding_(padding) {}
  Tensor forward(const Tensor& input) override {
    return functional::max_pool2d(input, kernel_size_, stride_, padding_);
  }

 private:
  Int2 kernel_size_;
  std::optional<Int2> stride_;
  Int2 padding_;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Int2 kernel_size, std::optional<Int2> stride = {}, Int2 padding = 0)
      : Module("AvgPool2d"), kernel_size_(kernel_size), stride_(stride), padding_(padding) {}
  Tensor forward(const Tensor& input) override {
    return functional::avg_pool2d(input, kernel_size_, stride_, padding_);
  }

 private:
  Int2 kernel_size_;
  std::optional<Int2> stride_;
  Int2 padding_;
};

}  // namespace podsim::nn
