// The loop the training workloads share: batches from a device loader (each one marks
// the previous step), forward, backward and update recorded as one graph per step, a
// progress line every few steps, and the figures of the run. Data parallel over several
// devices: one replica of the model per device, each on its own thread (podsim::launch)
// with its shard of every global batch, gradients averaged by all-reduce in the step.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "examples/train/train.h"
#include "runtime/data/dataset.h"
#include "runtime/nn/module.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/optimizer.h"
#include "runtime/tensor/tensor.h"

namespace podsim::examples {

// Forward and loss on a batch (the loss a device scalar).
using LossFn = std::function<Tensor(const data::Example& batch)>;

// One replica: its device, its model (on that device), optimizer, schedule and loss.
struct Replica {
  pjrt::Device* device = nullptr;
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LRScheduler> schedule;
  LossFn loss;
};

// The replicas of a run, one per training device (training_devices), each made by
// make(device) after manual_seed(options.seed): every replica starts from the same
// weights.
std::vector<Replica> make_replicas(const TrainOptions& options,
                                   const std::function<Replica(pjrt::Device&)>& make);

// Where the replicas run, for the workloads' first line: "SIM:0", or "4 replicas on
// SIM:0 .. SIM:3 (data parallel)".
std::string placement(const std::vector<Replica>& replicas);

// Trains for `steps` steps on shuffled batches of `batch` examples of the dataset (as
// many epochs as needed; with R replicas each takes batch / R of every batch), each step
// forward + loss, backward, optimizer (gradients averaged over the replicas) and
// schedule step, one graph; prints a progress line (the loss averaged over the replicas)
// every few steps. With options.profile (a simulated chip or pod) the last step's
// profile is written and summarized; with options.checkpoint, replica 0's model and
// optimizer are saved at the end. Returns the figures of the run.
TrainResult train(std::vector<Replica>& replicas, std::shared_ptr<const data::Dataset> dataset,
                  int64_t steps, int64_t batch, const TrainOptions& options, std::ostream& out);

}  // namespace podsim::examples
