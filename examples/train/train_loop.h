// The loop the training workloads share: batches from a device loader (each one marks
// the previous step), forward, backward and update recorded as one graph per step, a
// progress line every few steps, and the figures of the run.
#pragma once

#include <functional>
#include <memory>
#include <ostream>

#include "examples/train/train.h"
#include "runtime/data/dataset.h"
#include "runtime/nn/module.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/optimizer.h"
#include "runtime/tensor.h"

namespace podsim::examples {

// Forward and loss on a batch (the loss a device scalar).
using LossFn = std::function<Tensor(const data::Example& batch)>;

// What the workloads train with: the model (on its device), its optimizer and schedule.
struct Training {
  nn::Module& model;
  optim::Optimizer& optimizer;
  optim::LRScheduler& schedule;
};

// Trains for `steps` steps on shuffled batches of the dataset (as many epochs as needed),
// each step forward + loss, backward, optimizer and schedule step, one graph; prints a
// progress line every few steps. With options.profile (a simulated chip) the last
// step's profile is written and summarized; with options.checkpoint, model and
// optimizer are saved at the end. Returns the figures of the run.
TrainResult train(const Training& training, std::shared_ptr<const data::Dataset> dataset,
                  int64_t steps, int64_t batch, const LossFn& loss, const TrainOptions& options,
                  std::ostream& out);

}  // namespace podsim::examples
