// podsim::nn: torch.nn for lazy tensors. Include this to get every module, the losses
// and podsim::nn::functional.
#pragma once

#include "runtime/nn/attention.h"
#include "runtime/nn/conv.h"
#include "runtime/nn/functional.h"
#include "runtime/nn/layers.h"
#include "runtime/nn/loss.h"
#include "runtime/nn/module.h"
