#include "runtime/nn/conv.h"

#include <fmt/format.h>

#include <cmath>

#include "common/error.h"
#include "runtime/nn/layers.h"

namespace podsim::nn {

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Int2 kernel_size, Int2 stride,
               Int2 padding, Int2 dilation, bool bias, TensorOptions options)
    : Module("Conv2d"), stride_(stride), padding_(padding), dilation_(dilation) {
  for (int64_t s : {in_channels, out_channels, kernel_size.h, kernel_size.w})
    if (s <= 0) throw Error(fmt::format("Conv2d: sizes must be positive, got {}", s));
  TensorOptions f(options.dtype().value_or(kFloat32), options.device());
  double bound = 1.0 / std::sqrt(static_cast<double>(in_channels * kernel_size.h * kernel_size.w));
  weight_ = detail::uniform({out_channels, in_channels, kernel_size.h, kernel_size.w}, bound, f);
  if (bias) bias_ = detail::uniform({out_channels}, bound, f);
  register_parameter("weight", &weight_);
  register_parameter("bias", &bias_);
}

Tensor Conv2d::forward(const Tensor& input) {
  if (input.defined() && input.dim() == 3)  // unbatched (C, H, W)
    return functional::conv2d(input.unsqueeze(0), weight_, bias_, stride_, padding_, dilation_)
        .squeeze(0);
  return functional::conv2d(input, weight_, bias_, stride_, padding_, dilation_);
}

}  // namespace podsim::nn
