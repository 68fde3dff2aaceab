// The loop the training workloads share: batches from a device loader (each one marks
// the previous step), a step function that records forward, backward and update, a
// progress line every few steps, and the figures of the run.
#pragma once

#include <functional>
#include <ostream>

#include "examples/train/train.h"
#include "runtime/data/device_loader.h"
#include "runtime/tensor.h"

namespace podsim::examples {

// Records one training step on a batch and returns its loss (a device scalar).
using StepFn = std::function<Tensor(const data::Example& batch)>;

// Runs `steps` steps over as many epochs of the loader as needed. Fills the loss,
// speed and compilation figures of result. With a profile path (a simulated chip), the
// last step's profile is written there and its summary printed.
void run_training(data::DeviceLoader& loader, int64_t steps, int64_t log_every, const StepFn& step,
                  const std::string& profile, std::ostream& out, TrainResult& result);

// About ten progress lines a run unless the options say otherwise.
int64_t log_interval(const TrainOptions& options, int64_t steps);

}  // namespace podsim::examples
