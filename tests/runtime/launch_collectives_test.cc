// The launcher and the lazy collectives on four CPU devices (in process) and on the four
// chips of a simulated 2x2 pod (one pod simulation per step): every replica's result
// against values computed here from what each replica contributed; optimizer_step
// against the mean gradient; graphs that differ across replicas and replicas that stop
// early fail with errors naming the devices instead of hanging.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/distributed/collectives.h"
#include "runtime/debug/metrics.h"
#include "runtime/optim/sgd.h"
#include "runtime/tensor/tensor.h"

namespace podsim {
namespace {

using ::testing::HasSubstr;

constexpr int kReplicas = 4;

// Set before either backend is first used.
const bool kEnvironment = [] {
  return setenv("PODSIM_CPU_DEVICES", "4", 1) == 0 && setenv("PODSIM_TOPOLOGY", "tiny:2x2", 1) == 0;
}();

std::vector<pjrt::Device*> devices_of(const std::string& backend) {
  std::span<pjrt::Device* const> all = pjrt::client(backend).devices();
  return {all.begin(), all.end()};
}

// Replica r's contribution: element i is (r + 1) * (i + 1) - 3 * r.
float contribution(int r, int i) { return static_cast<float>((r + 1) * (i + 1) - 3 * r); }
std::vector<float> contributions(int r, int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(contribution(r, i));
  return v;
}

// Runs fn on every replica and collects what each returns.
std::vector<std::vector<float>> per_replica(const std::string& backend,
                                            const std::function<Tensor(int)>& fn) {
  std::vector<std::vector<float>> results(kReplicas);
  distributed::launch(
      [&](int r) {
        Tensor t = fn(r);
        mark_step();
        results[static_cast<size_t>(r)] = t.to_vector<float>();
      },
      devices_of(backend));
  return results;
}

class CollectivesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(kEnvironment); }
  std::vector<pjrt::Device*> devices() const { return devices_of(GetParam()); }
};

TEST_P(CollectivesTest, LaunchGivesEachReplicaItsDevice) {
  ASSERT_EQ(devices().size(), static_cast<size_t>(kReplicas));
  std::mutex mutex;
  std::vector<std::string> seen(kReplicas);
  distributed::launch(
      [&](int r) {
        EXPECT_EQ(distributed::world_size(), kReplicas);
        EXPECT_EQ(distributed::ordinal(), r);
        std::lock_guard lock(mutex);
        seen[static_cast<size_t>(r)] = device().name();
      },
      devices());
  for (int r = 0; r < kReplicas; ++r)
    EXPECT_EQ(seen[static_cast<size_t>(r)], devices()[static_cast<size_t>(r)]->name());
  EXPECT_EQ(distributed::world_size(), 1);
  EXPECT_EQ(distributed::ordinal(), 0);
}

TEST_P(CollectivesTest, AllReduceSumMeanMaxMin) {
  constexpr int n = 6;
  for (distributed::ReduceOp op : {distributed::ReduceOp::kSum, distributed::ReduceOp::kMean, distributed::ReduceOp::kMax, distributed::ReduceOp::kMin}) {
    auto results = per_replica(GetParam(), [&](int r) {
      return distributed::all_reduce(Tensor::from_vector<float>(contributions(r, n), {2, 3}, &device()), op, 0.5);
    });
    for (int i = 0; i < n; ++i) {
      float sum = 0, max = contribution(0, i), min = max;
      for (int r = 0; r < kReplicas; ++r) {
        sum += contribution(r, i);
        max = std::max(max, contribution(r, i));
        min = std::min(min, contribution(r, i));
      }
      float expected = op == distributed::ReduceOp::kSum    ? sum
                       : op == distributed::ReduceOp::kMean ? sum / kReplicas
                       : op == distributed::ReduceOp::kMax  ? max
                                               : min;
      for (int r = 0; r < kReplicas; ++r)
        EXPECT_FLOAT_EQ(results[static_cast<size_t>(r)][static_cast<size_t>(i)], 0.5f * expected)
            << "op " << static_cast<int>(op) << " replica " << r << " element " << i;
    }
  }
}

TEST_P(CollectivesTest, FewerReplicasThanDevicesRunOnTheFirstOnes) {
  // Two replicas on the first two devices (on SIM, two chips of the 2x2 pod; the other
  // two idle).
  const std::vector<pjrt::Device*> all = devices();
  const std::vector<pjrt::Device*> first(all.begin(), all.begin() + 2);
  constexpr int n = 6;
  std::vector<std::vector<float>> results(2);
  distributed::launch(
      [&](int r) {
        EXPECT_EQ(distributed::world_size(), 2);
        Tensor t = distributed::all_reduce(Tensor::from_vector<float>(contributions(r, n), {n}, &device()),
                              distributed::ReduceOp::kSum, 1.0);
        mark_step();
        results[static_cast<size_t>(r)] = t.to_vector<float>();
      },
      first);
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < n; ++i)
      EXPECT_FLOAT_EQ(results[static_cast<size_t>(r)][static_cast<size_t>(i)],
                      contribution(0, i) + contribution(1, i))
          << "replica " << r << " element " << i;
}

TEST_P(CollectivesTest, AllReduceOfAListReducesEachTensor) {
  auto results = per_replica(GetParam(), [&](int r) {
    std::vector<Tensor> reduced = distributed::all_reduce(
        {Tensor::from_vector<float>(contributions(r, 6), {2, 3}, &device()),
         Tensor::from_vector<float>(contributions(r + 1, 4), {4}, &device())},
        distributed::ReduceOp::kMean);
    return cat({reduced[0].reshape({-1}), reduced[1]});
  });
  for (int r = 0; r < kReplicas; ++r)
    for (int i = 0; i < 10; ++i) {
      float mean = 0;
      for (int q = 0; q < kReplicas; ++q)
        mean += (i < 6 ? contribution(q, i) : contribution(q + 1, i - 6)) / kReplicas;
      EXPECT_FLOAT_EQ(results[static_cast<size_t>(r)][static_cast<size_t>(i)], mean)
          << "replica " << r << " element " << i;
    }
}

TEST_P(CollectivesTest, AllReduceOverGroups) {
  const distributed::ReplicaGroups groups = {{0, 2}, {3, 1}};
  auto results = per_replica(GetParam(), [&](int r) {
    return distributed::all_reduce(Tensor::from_vector<float>(contributions(r, 4), {4}, &device()),
                      distributed::ReduceOp::kSum, 1.0, groups);
  });
  for (int r = 0; r < kReplicas; ++r) {
    int partner = r == 0 ? 2 : r == 2 ? 0 : r == 1 ? 3 : 1;
    for (int i = 0; i < 4; ++i)
      EXPECT_FLOAT_EQ(results[static_cast<size_t>(r)][static_cast<size_t>(i)],
                      contribution(r, i) + contribution(partner, i));
  }
}

TEST_P(CollectivesTest, AllGatherConcatenatesInReplicaOrder) {
  auto results = per_replica(GetParam(), [&](int r) {
    return distributed::all_gather(Tensor::from_vector<float>(contributions(r, 6), {2, 3}, &device()), 1);
  });
  // [2, 12]: row j holds every replica's row j in turn.
  for (int r = 0; r < kReplicas; ++r) {
    ASSERT_EQ(results[static_cast<size_t>(r)].size(), 24u);
    for (int row = 0; row < 2; ++row)
      for (int q = 0; q < kReplicas; ++q)
        for (int c = 0; c < 3; ++c)
          EXPECT_FLOAT_EQ(results[static_cast<size_t>(r)][static_cast<size_t>(row * 12 + q * 3 + c)],
                          contribution(q, row * 3 + c));
  }
}

TEST_P(CollectivesTest, ReduceScatterGivesEachReplicaItsBlock) {
  constexpr int n = 8;
  auto results = per_replica(GetParam(), [&](int r) {
    return distributed::reduce_scatter(Tensor::from_vector<float>(contributions(r, n), {n}, &device()),
                          distributed::ReduceOp::kSum, 0, 2.0);
  });
  for (int r = 0; r < kReplicas; ++r) {
    ASSERT_EQ(results[static_cast<size_t>(r)].size(), 2u);
    for (int k = 0; k < 2; ++k) {
      float sum = 0;
      for (int q = 0; q < kReplicas; ++q) sum += contribution(q, 2 * r + k);
      EXPECT_FLOAT_EQ(results[static_cast<size_t>(r)][static_cast<size_t>(k)], 2 * sum);
    }
  }
}

TEST_P(CollectivesTest, AllToAllExchangesBlocks) {
  // [2, 8] split along dim 1 into 4 blocks of 2 columns: replica r's block q goes to
  // replica q, which places it at block r.
  auto results = per_replica(GetParam(), [&](int r) {
    return distributed::all_to_all(Tensor::from_vector<float>(contributions(r, 16), {2, 8}, &device()), 1);
  });
  for (int q = 0; q < kReplicas; ++q)
    for (int row = 0; row < 2; ++row)
      for (int r = 0; r < kReplicas; ++r)
        for (int c = 0; c < 2; ++c)
          EXPECT_FLOAT_EQ(results[static_cast<size_t>(q)][static_cast<size_t>(row * 8 + r * 2 + c)],
                          contribution(r, row * 8 + q * 2 + c))
              << "replica " << q << " row " << row << " block " << r;
}

TEST_P(CollectivesTest, CollectivePermuteShiftsAndZeroFills) {
  // Replicas 0 -> 1 -> 2 -> 0; replica 3 sends nowhere and receives nothing (zeros).
  auto results = per_replica(GetParam(), [&](int r) {
    return distributed::collective_permute(Tensor::from_vector<float>(contributions(r, 5), {5}, &device()),
                              {{0, 1}, {1, 2}, {2, 0}});
  });
  const int source[kReplicas] = {2, 0, 1, -1};
  for (int r = 0; r < kReplicas; ++r)
    for (int i = 0; i < 5; ++i)
      EXPECT_FLOAT_EQ(results[static_cast<size_t>(r)][static_cast<size_t>(i)],
                      source[r] < 0 ? 0.f : contribution(source[r], i))
          << "replica " << r << " element " << i;
}

TEST_P(CollectivesTest, OptimizerStepAveragesGradients) {
  constexpr int n = 4;
  constexpr double lr = 0.25;
  auto results = per_replica(GetParam(), [&](int r) {
    Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {n}, &device());
    w.requires_grad_();
    // d/dw sum(w * c_r) = c_r: each replica has its own gradient.
    (w * Tensor::from_vector<float>(contributions(r, n), {n}, &device())).sum().backward();
    optim::SGD sgd({w}, {.lr = lr});
    distributed::optimizer_step(sgd);
    return w.detach();
  });
  for (int i = 0; i < n; ++i) {
    float mean = 0;
    for (int r = 0; r < kReplicas; ++r) mean += contribution(r, i) / kReplicas;
    for (int r = 0; r < kReplicas; ++r)
      EXPECT_FLOAT_EQ(results[static_cast<size_t>(r)][static_cast<size_t>(i)],
                      static_cast<float>(i + 1 - lr * mean));
  }
}

TEST_P(CollectivesTest, StepsCompileOnceAndRunTogether) {
  const int64_t compiled = debug::counter_value("UncachedCompile");
  const int64_t cycles = debug::counter_value("SimulatedCycles");
  distributed::launch(
      [&](int r) {
        Tensor x = Tensor::from_vector<float>(contributions(r, 4), {4}, &device());
        for (int step = 0; step < 3; ++step) {
          x = distributed::all_reduce(x * 0.5, distributed::ReduceOp::kMean);
          mark_step();
        }
        // Every replica ends with the same value: the mean of the contributions, halved
        // three times (each step's mean leaves it the same on all replicas).
        std::vector<float> got = x.to_vector<float>();
        for (int i = 0; i < 4; ++i) {
          float mean = 0;
          for (int q = 0; q < kReplicas; ++q) mean += contribution(q, i) / kReplicas;
          EXPECT_FLOAT_EQ(got[static_cast<size_t>(i)], mean / 8) << "replica " << r;
        }
      },
      devices());
  EXPECT_EQ(debug::counter_value("UncachedCompile") - compiled, 1);
  // On SIM each step is one pod simulation.
  if (GetParam() == "SIM") {
    EXPECT_GT(debug::counter_value("SimulatedCycles"), cycles);
  }
}

// A replica that runs ahead launches its next step while another still waits for the
// last one: waiting for the device ops of a replica waits for its own device only (the
// other's next step cannot run before this replica launches its part).
TEST_P(CollectivesTest, WaitingDoesNotWaitForOtherReplicasNextSteps) {
  const auto start = std::chrono::steady_clock::now();
  distributed::launch(
      [&](int r) {
        Tensor x = Tensor::from_vector<float>(contributions(r, 4), {4}, &device());
        for (int step = 0; step < 6; ++step) {
          x = distributed::all_reduce(x, distributed::ReduceOp::kMean);
          mark_step();
          if (r != 0) wait_device_ops();
        }
        x.to_vector<float>();
      },
      devices());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST_P(CollectivesTest, DifferentGraphsOnReplicasAreAnErrorNamingThem) {
  std::string error;
  try {
    distributed::launch(
        [&](int r) {
          Tensor x = Tensor::from_vector<float>(contributions(r, 4), {4}, &device());
          if (r == 2) x = x + 1;  // replica 2 traces another graph
          Tensor y = distributed::all_reduce(x);
          mark_step();
          y.to_vector<float>();
        },
        devices());
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_THAT(error, HasSubstr("every device must launch the same graphs in the same order"));
  EXPECT_THAT(error, HasSubstr(devices()[2]->name()));
}

TEST_P(CollectivesTest, AReplicaThatStopsFailsTheOthersPromptly) {
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    distributed::launch(
        [&](int r) {
          if (r == 1) fail("replica 1 gives up");
          Tensor y = distributed::all_reduce(Tensor::from_vector<float>(contributions(r, 4), {4}, &device()));
          mark_step();
          y.to_vector<float>();
        },
        devices());
  } catch (const Error& e) {
    error = e.what();
  }
  // The first failure is the cause; the others' rounds failed without waiting out the
  // collective timeout (300 s by default).
  EXPECT_THAT(error, HasSubstr("replica 1 gives up"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  // A later launch starts afresh.
  auto results = per_replica(GetParam(), [&](int r) {
    return distributed::all_reduce(Tensor::from_vector<float>(contributions(r, 2), {2}, &device()));
  });
  for (int r = 0; r < kReplicas; ++r)
    EXPECT_FLOAT_EQ(results[static_cast<size_t>(r)][0],
                    contribution(0, 0) + contribution(1, 0) + contribution(2, 0) + contribution(3, 0));
}

INSTANTIATE_TEST_SUITE_P(Backends, CollectivesTest, ::testing::Values("CPU", "SIM"));

TEST(CollectivesOutsideALaunch, AreTheIdentityTimesTheScale) {
  pjrt::Device& cpu = *devices_of("CPU")[0];
  Tensor x = Tensor::from_vector<float>({1, -2, 4}, {3}, &cpu);
  EXPECT_EQ(distributed::all_reduce(x, distributed::ReduceOp::kSum, 2.0).to_vector<float>(), (std::vector<float>{2, -4, 8}));
  EXPECT_EQ(distributed::all_gather(x).to_vector<float>(), (std::vector<float>{1, -2, 4}));
  EXPECT_EQ(distributed::reduce_scatter(x, distributed::ReduceOp::kMean, 0).to_vector<float>(),
            (std::vector<float>{1, -2, 4}));
  EXPECT_EQ(distributed::collective_permute(x, {{0, 0}}).to_vector<float>(), (std::vector<float>{1, -2, 4}));
  Tensor inf = Tensor::from_vector<float>({-1, std::numeric_limits<float>::infinity()}, {2}, &cpu);
  EXPECT_EQ(distributed::collective_permute(inf, {}).to_vector<float>(), (std::vector<float>{0, 0}));
}

TEST(CollectivesOutsideALaunch, BadGroupsAreErrors) {
  pjrt::Device& cpu = *devices_of("CPU")[0];
  Tensor x = Tensor::from_vector<float>({1, 2}, {2}, &cpu);
  EXPECT_THROW(distributed::all_reduce(x, distributed::ReduceOp::kSum, 1.0, {{0, 1}}), Error);  // replica 1 of 1
  EXPECT_THROW(distributed::launch([](int) {}, {devices_of("CPU")[0], devices_of("CPU")[0]}), Error);
}

}  // namespace
}  // namespace podsim
