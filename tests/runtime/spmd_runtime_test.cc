// SPMD mode on four CPU devices (in process) and on the four chips of a simulated 2x2
// pod: meshes and their shardings, sharded data that comes back whole, and a training
// step of a Megatron-style MLP on a 2x2 (data, model) mesh whose results and gradients
// equal the same step on the host's reference evaluator. Small integer values keep every
// sum exact whatever its order (and through the MXU's bf16 passes), so results compare
// exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <filesystem>

#include "runtime/data/device_loader.h"
#include "runtime/lazy/tensor_impl.h"
#include "runtime/nn/layers.h"
#include "runtime/distributed/checkpoint.h"
#include "runtime/optim/sgd.h"
#include "runtime/debug/metrics.h"
#include "compiler/ir/evaluator.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "runtime/distributed/spmd.h"
#include "runtime/tensor/tensor.h"

namespace podsim {
namespace {

using ::testing::HasSubstr;

const bool kEnvironment = [] {
  return setenv("PODSIM_CPU_DEVICES", "4", 1) == 0 && setenv("PODSIM_TOPOLOGY", "tiny:2x2", 1) == 0;
}();

class SpmdTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kEnvironment);
    setenv("PODSIM_DEVICE", GetParam().c_str(), 1);
    lazy::reset_for_testing();
    distributed::use_spmd();
  }
  void TearDown() override {
    lazy::reset_for_testing();
    unsetenv("PODSIM_DEVICE");
  }
};

// Small integers, different per tensor.
std::vector<float> values(int64_t n, int seed) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>((i * 7 + seed * 3) % 5) - 2);
  return v;
}

TEST_P(SpmdTest, OneVirtualDeviceOverEveryDevice) {
  EXPECT_TRUE(distributed::is_spmd());
  EXPECT_EQ(device().name(), "SPMD:0");
  EXPECT_EQ(device_count(), 1);
  EXPECT_EQ(distributed::global_device_count(), 4);
}

TEST_P(SpmdTest, MeshShardingsFollowTheMeshAxes) {
  const distributed::Mesh mesh = distributed::Mesh::create({2, 2}, {"data", "model"});
  EXPECT_EQ(mesh.sharding({0, std::nullopt}).to_string(), "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}");
  EXPECT_EQ(mesh.sharding({std::nullopt, 1}).to_string(), "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}");
  EXPECT_EQ(mesh.sharding({1, 0}).to_string(), "{devices=[2,2]0,2,1,3}");
  EXPECT_EQ(mesh.sharding({std::nullopt, std::nullopt}).to_string(), "{replicated}");
  EXPECT_THROW(mesh.axis("pipeline"), Error);
  EXPECT_THROW(distributed::Mesh({0, 1, 1, 3}, {2, 2}), Error);
}

TEST_P(SpmdTest, SeveralMeshAxesSplitOneDimension) {
  const distributed::Mesh mesh = distributed::Mesh::create({2, 2}, {"data", "model"});
  // Over both axes, data major: device (data, model) takes piece data * 2 + model.
  EXPECT_EQ(mesh.sharding(std::vector<std::vector<int64_t>>{{0, 1}, {}}).to_string(), "{devices=[4,1]0,1,2,3}");
  EXPECT_EQ(mesh.sharding(std::vector<std::vector<int64_t>>{{1, 0}, {}}).to_string(), "{devices=[4,1]0,2,1,3}");
  // One axis per dimension gives what the single-axis form gives.
  EXPECT_EQ(mesh.sharding(std::vector<std::vector<int64_t>>{{}, {1}}),
            mesh.sharding(std::vector<std::optional<int64_t>>{std::nullopt, 1}));
  EXPECT_THROW(mesh.sharding(std::vector<std::vector<int64_t>>{{0, 1}, {1}}), Error);
  const std::vector<float> v = values(32, 4);
  Tensor x = Tensor::from_vector(v, {8, 4}, &device());
  distributed::mark_sharding(x, mesh, {{"model", "data"}, std::nullopt});
  EXPECT_EQ(distributed::sharding_spec(x), "{devices=[4,1]0,2,1,3}");
  // Device 2 (data 1, model 0) holds piece 1: rows 2 and 3.
  const std::vector<ir::Literal> pieces = distributed::local_shards(x);
  const auto piece = pieces[2].data<float>();
  EXPECT_EQ(std::vector<float>(piece.begin(), piece.end()), std::vector<float>(v.begin() + 8, v.begin() + 16));
  EXPECT_EQ(x.to_vector<float>(), v);
  Tensor y = (x * 2).sum({1});
  mark_step();
  const std::vector<float> got = y.to_vector<float>();
  for (int64_t r = 0; r < 8; ++r)
    EXPECT_EQ(got[static_cast<size_t>(r)], 2 * (v[4 * r] + v[4 * r + 1] + v[4 * r + 2] + v[4 * r + 3])) << r;
}

TEST_P(SpmdTest, HybridMeshKeepsIciAxesInsideSlices) {
  // Two "slices" of two devices ({0, 1} and {2, 3}): the DCN axis crosses them.
  const distributed::Mesh across = distributed::Mesh::hybrid({1, 2}, {2, 1}, {"data", "model"});
  EXPECT_EQ(across.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(across.device_ids(), (std::vector<int64_t>{0, 1, 2, 3}));
  const distributed::Mesh inside = distributed::Mesh::hybrid({2, 1}, {1, 2}, {"data", "model"});
  EXPECT_EQ(inside.device_ids(), (std::vector<int64_t>{0, 2, 1, 3}));
  // The model axis of `inside` runs across slices: its groups pair devices of both.
  EXPECT_EQ(inside.sharding({std::nullopt, 1}).to_string(), "{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}");
  EXPECT_THROW(distributed::Mesh::hybrid({2, 2}, {2, 1}), Error);
}

TEST_P(SpmdTest, ShardedDataComesBackWhole) {
  const distributed::Mesh mesh = distributed::Mesh::create({2, 2}, {"data", "model"});
  const std::vector<float> v = values(32, 1);
  Tensor x = Tensor::from_vector(v, {8, 4}, &device());
  distributed::mark_sharding(x, mesh, {"model", "data"});
  EXPECT_EQ(distributed::sharding_spec(x), "{devices=[2,2]0,2,1,3}");
  EXPECT_EQ(x.to_vector<float>(), v);
  distributed::clear_sharding(x);
  EXPECT_EQ(distributed::sharding_spec(x), "{replicated}");
  EXPECT_EQ(x.to_vector<float>(), v);
  Tensor host = Tensor::from_vector(v, {8, 4});
  try {
    mark_sharding(host, mesh, {0, std::nullopt});
    FAIL() << "marked a host tensor";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("not the SPMD device"));
  }
  // 3 rows over 2 devices: the second piece is padded, and the value comes back as it was.
  Tensor odd = Tensor::from_vector(values(6, 2), {3, 2}, &device());
  mark_sharding(odd, mesh, {"data", std::nullopt});
  EXPECT_EQ(distributed::local_shards(odd)[3].shape().to_string(false), "f32[2,2]");
  EXPECT_EQ(odd.to_vector<float>(), values(6, 2));
  EXPECT_EQ((odd * 2).to_vector<float>()[5], 2 * values(6, 2)[5]);
  EXPECT_THROW(mark_sharding(x, mesh, {"pipeline", std::nullopt}), Error);
}

TEST_P(SpmdTest, MegatronMlpStepEqualsTheHostStep) {
  const distributed::Mesh mesh = distributed::Mesh::create({2, 2}, {"data", "model"});
  struct Run {
    std::vector<float> out, g1, g2;
    std::string out_sharding, g1_sharding;
  };
  auto step = [&](pjrt::Device* on) {
    Tensor x = Tensor::from_vector(values(8 * 16, 1), {8, 16}, on);
    Tensor w1 = Tensor::from_vector(values(16 * 32, 2), {16, 32}, on);
    Tensor w2 = Tensor::from_vector(values(32 * 8, 3), {32, 8}, on);
    if (on != nullptr) {
      distributed::mark_sharding(x, mesh, distributed::PartitionSpec{"data", std::nullopt});
      mark_sharding(w1, mesh, distributed::PartitionSpec{std::nullopt, "model"});
      mark_sharding(w2, mesh, distributed::PartitionSpec{"model", std::nullopt});
    }
    w1.requires_grad_();
    w2.requires_grad_();
    Tensor out = matmul(relu(matmul(x, w1)), w2);
    out.sum().backward();
    mark_step();
    return Run{out.to_vector<float>(), w1.grad().to_vector<float>(), w2.grad().to_vector<float>(), distributed::sharding_spec(out),
               distributed::sharding_spec(w1.grad())};
  };
  const int64_t compiles = debug::counter("UncachedCompile").value();
  const Run host = step(nullptr);
  const Run spmd = step(&device());
  EXPECT_EQ(spmd.out, host.out);
  EXPECT_EQ(spmd.g1, host.g1);
  EXPECT_EQ(spmd.g2, host.g2);
  // Rows of the result over the data axis; w1's gradient split like w1.
  EXPECT_EQ(spmd.out_sharding, "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}");
  EXPECT_EQ(spmd.g1_sharding, "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}");
  // The same step again reuses the partitioned program.
  const int64_t after_first = debug::counter("UncachedCompile").value();
  EXPECT_GT(after_first, compiles);
  step(&device());
  EXPECT_EQ(debug::counter("UncachedCompile").value(), after_first);
}

TEST_P(SpmdTest, ExecutablesRoundTripThroughTheirDiskCacheForm) {
  const auto module = ir::parse_module(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,4] parameter(0), sharding={devices=[4,1]0,1,2,3}
  w = f32[4,6] parameter(1), sharding={replicated}
  d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  s = f32[] reduce(d, z), dimensions={0,1}, to_apply=add
  ROOT t = (f32[8,6], f32[]) tuple(d, s)
})");
  pjrt::Client& spmd = pjrt::default_client();
  pjrt::Device& on = *spmd.devices()[0];
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : module->entry()->parameters()) {
    ir::Literal l(p->shape());
    for (int64_t i = 0; i < l.num_elements(); ++i) l.set_from_double(i, static_cast<double>(i % 5) - 2);
    args.push_back(std::move(l));
  }
  const ir::Literal want = ir::evaluate(*module, args);
  auto run = [&](pjrt::Executable& executable) {
    std::vector<std::shared_ptr<pjrt::Buffer>> buffers;
    for (const ir::Literal& a : args) buffers.push_back(spmd.transfer_to_device(a, on));
    std::vector<ir::Literal> out;
    for (const auto& b : executable.execute(buffers, on)) out.push_back(b->to_literal());
    return ir::Literal::tuple(std::move(out));
  };
  const std::shared_ptr<pjrt::Executable> compiled = spmd.compile(*module);
  const std::string payload = compiled->serialize();
  const std::shared_ptr<pjrt::Executable> restored = spmd.deserialize(payload);
  EXPECT_EQ(run(*compiled), want);
  EXPECT_EQ(run(*restored), want);
  EXPECT_EQ(ir::print_module(restored->module()), ir::print_module(compiled->module()));
  // A payload cut short, or of another format, is an error (the cache then recompiles).
  EXPECT_THROW(spmd.deserialize(payload.substr(0, payload.size() / 2)), Error);
  EXPECT_THROW(spmd.deserialize("podsim-cpu\n" + payload), Error);
}

TEST_P(SpmdTest, DistributeAndTheLoaderSendEachDeviceItsPiece) {
  const distributed::Mesh mesh = distributed::Mesh::create({4}, {"data"});
  Tensor host = Tensor::from_vector(values(8 * 3, 5), {8, 3});
  Tensor x = distributed::distribute(host, mesh, {"data", std::nullopt});
  EXPECT_EQ(distributed::sharding_spec(x), "{devices=[4,1]0,1,2,3}");
  const std::vector<ir::Literal> pieces = distributed::local_shards(x);
  ASSERT_EQ(pieces.size(), 4u);
  EXPECT_EQ(pieces[2].shape().to_string(false), "f32[2,3]");
  EXPECT_EQ(pieces[2].data<float>()[0], host.to_vector<float>()[12]);  // row 4 (of 3 columns) starts it
  EXPECT_EQ(x.to_vector<float>(), host.to_vector<float>());
  // The device loader places every batch so (a batch of 8 rows, 2 per device).
  auto dataset = std::make_shared<data::TensorDataset>(
      std::vector<Tensor>{Tensor::from_vector(values(16 * 3, 6), {16, 3})});
  data::DeviceLoader loader(data::DataLoader(dataset, {.batch_size = 8}), device(), {.mesh = &mesh});
  int batches = 0;
  for (const data::Example& batch : loader) {
    EXPECT_EQ(distributed::sharding_spec(batch[0]), "{devices=[4,1]0,1,2,3}");
    ++batches;
  }
  EXPECT_EQ(batches, 2);
}

TEST_P(SpmdTest, ShardedCheckpointsLoadOntoAnotherMesh) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("podsim_sharded_checkpoint_" + GetParam());
  std::filesystem::remove_all(dir);
  manual_seed(3);
  nn::Linear saved(8, 16, true, &device());
  const distributed::Mesh mesh = distributed::Mesh::create({2, 2}, {"data", "model"});
  distributed::mark_sharding(saved.weight(), mesh, {"model", "data"});  // [out, in]: both split
  mark_sharding(saved.bias(), mesh, {"model"});
  optim::SGD sgd(saved.parameters(), {.lr = 0.5, .momentum = 0.9});
  Tensor x = Tensor::from_vector(values(4 * 8, 1), {4, 8}, &device());
  saved.forward(x).sum().backward();
  sgd.step();  // momentum buffers: optimizer state to save too
  sgd.zero_grad();
  distributed::save_sharded_checkpoint(saved, &sgd, 7, dir.string());
  for (int d = 0; d < 4; ++d) EXPECT_TRUE(std::filesystem::exists(dir / ("device-" + std::to_string(d) + ".safetensors")));
  const std::vector<float> weight = saved.weight().to_vector<float>(), bias = saved.bias().to_vector<float>();

  // Another mesh: four devices on one data axis, the weight split by rows only.
  const distributed::Mesh rows = distributed::Mesh::create({4}, {"data"});
  manual_seed(4);
  nn::Linear loaded(8, 16, true, &device());
  mark_sharding(loaded.weight(), rows, {"data", std::nullopt});
  optim::SGD other(loaded.parameters(), {.lr = 0.5, .momentum = 0.9});
  EXPECT_NE(loaded.weight().to_vector<float>(), weight);
  EXPECT_EQ(distributed::load_sharded_checkpoint(loaded, &other, dir.string()), 7);
  EXPECT_EQ(loaded.weight().to_vector<float>(), weight);
  EXPECT_EQ(loaded.bias().to_vector<float>(), bias);
  EXPECT_EQ(distributed::sharding_spec(loaded.weight()), "{devices=[4,1]0,1,2,3}");  // split as before the load
  // The optimizer's momentum came back too: the next steps agree.
  for (auto* m : {&saved, &loaded}) m->forward(x).sum().backward();
  sgd.step();
  other.step();
  EXPECT_EQ(loaded.weight().to_vector<float>(), saved.weight().to_vector<float>());
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Backends, SpmdTest, ::testing::Values("CPU", "SIM"));

}  // namespace
}  // namespace podsim
