// Checkpoints: named tensors round-trip through safetensors (dtypes, device and host,
// pending values); a save that fails midway (the file size limit reached while
// writing) leaves the previous checkpoint intact and no temporary file; an optimizer's
// state_dict restores its state exactly (training resumed from it equals training
// without interruption, bit for bit); model + optimizer checkpoints.
#include "runtime/distributed/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <random>

#include "runtime/autograd/autograd.h"
#include "runtime/nn/layers.h"
#include "runtime/nn/serialize.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/sgd.h"

namespace podsim::optim {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(PODSIM_BINARY_DIR) / "tests" /
           fmt::format("checkpoint_test.{}.{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    mark_step();
    wait_device_ops();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  pjrt::Device& dev() { return podsim::device(); }
  fs::path dir_;
};

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST_F(CheckpointTest, NamedTensorsRoundTrip) {
  Tensor f = Tensor::from_vector(random_values(6, 1), {2, 3}, &dev());
  Tensor pending = mul(f, 2.0);  // computed by save
  Tensor ints = Tensor::from_vector(std::vector<int64_t>{-3, 4, 1LL << 40}, {3});
  Tensor bf = Tensor::from_vector(std::vector<float>{1.5f, -2.25f}, {2}, &dev()).to(kBFloat16);
  Tensor flags = Tensor::from_vector(std::vector<bool>{true, false, true}, {3});
  Tensor scalar = Tensor::from_vector(std::vector<double>{0.125}, {});
  nn::save({{"f", f},
            {"pending", pending},
            {"ints", ints},
            {"bf", bf},
            {"flags", flags},
            {"scalar", scalar}},
           path("a.safetensors"));
  for (pjrt::Device* target : {static_cast<pjrt::Device*>(nullptr), &dev()}) {
    auto loaded = nn::load(path("a.safetensors"), target);
    ASSERT_EQ(loaded.size(), 6u);
    std::vector<std::string> names;
    for (const auto& [name, t] : loaded) {
      names.push_back(name);
      EXPECT_EQ(t.device(), target) << name;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"f", "pending", "ints", "bf", "flags", "scalar"}));
    EXPECT_EQ(loaded[0].second.to_vector<float>(), f.to_vector<float>());
    EXPECT_EQ(loaded[1].second.to_vector<float>(), pending.to_vector<float>());
    EXPECT_EQ(loaded[1].second.shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(loaded[2].second.to_vector<int64_t>(), ints.to_vector<int64_t>());
    EXPECT_EQ(loaded[3].second.dtype(), kBFloat16);
    EXPECT_EQ(loaded[3].second.to_vector<float>(), (std::vector<float>{1.5f, -2.25f}));
    EXPECT_EQ(loaded[4].second.to_vector<bool>(), (std::vector<bool>{true, false, true}));
    EXPECT_EQ(loaded[5].second.shape(), std::vector<int64_t>{});
    EXPECT_EQ(loaded[5].second.item().to_double(), 0.125);
  }
}

TEST_F(CheckpointTest, BadSavesAndLoadsAreErrors) {
  Tensor t = zeros({2});
  EXPECT_THROW(nn::save({{"a", t}, {"a", t}}, path("x.safetensors")), Error);
  EXPECT_THROW(nn::save({{"", t}}, path("x.safetensors")), Error);
  EXPECT_THROW(nn::save({{"a", Tensor()}}, path("x.safetensors")), Error);
  EXPECT_FALSE(fs::exists(path("x.safetensors")));
  try {
    nn::load(path("missing.safetensors"));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.safetensors"), std::string::npos) << e.what();
  }
}

// Lowers the file size limit for its lifetime, so that a write beyond it fails with
// EFBIG (SIGXFSZ ignored) in the middle of the file: a disk filling up mid-save.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
};

TEST_F(CheckpointTest, InterruptedSaveLeavesThePreviousCheckpointIntact) {
  std::string file = path("model.safetensors");
  Tensor small = Tensor::from_vector(random_values(100, 2), {100}, &dev());
  nn::save({{"w", small}}, file);
  auto before = fs::file_size(file);

  Tensor big = Tensor::from_vector(random_values(256 * 1024, 3), {256, 1024}, &dev());
  std::string message;
  {
    FileSizeLimit limit(64 * 1024);  // the new file is 1 MiB: the write fails at 64 KiB
    try {
      nn::save({{"w", big}}, file);
    } catch (const Error& e) {
      message = e.what();
    }
  }
  EXPECT_NE(message.find("previous file"), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_EQ(fs::file_size(file), before);
  auto loaded = nn::load(file);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].second.to_vector<float>(), small.to_vector<float>());
  // No temporary file is left behind.
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  // Without the limit the same save succeeds and replaces the file.
  nn::save({{"w", big}}, file);
  EXPECT_EQ(nn::load(file)[0].second.shape(), (std::vector<int64_t>{256, 1024}));
}

std::vector<Tensor> make_params(pjrt::Device& dev) {
  std::vector<Tensor> params = {Tensor::from_vector(random_values(12, 4), {3, 4}, &dev),
                                Tensor::from_vector(random_values(5, 5), {5}, &dev)};
  for (Tensor& p : params) p.requires_grad_();
  return params;
}

void set_grads(std::vector<Tensor>& params, int step, pjrt::Device& dev) {
  for (size_t j = 0; j < params.size(); ++j)
    params[j].set_grad(Tensor::from_vector(
        random_values(static_cast<size_t>(params[j].numel()), 100 + 10 * step + j),
        params[j].shape(), &dev));
}

template <typename Opt, typename Options>
void expect_resume_equals_uninterrupted(const Options& options, pjrt::Device& dev,
                                        const std::string& file) {
  auto straight = make_params(dev);
  Opt a(straight, options);
  for (int s = 0; s < 4; ++s) {
    set_grads(straight, s, dev);
    a.step();
    mark_step();
  }
  auto first = make_params(dev);
  {
    Opt b(first, options);
    for (int s = 0; s < 2; ++s) {
      set_grads(first, s, dev);
      b.step();
      mark_step();
    }
    NamedTensors state = b.state_dict();
    state.emplace_back("p0", first[0]);
    state.emplace_back("p1", first[1]);
    nn::save(state, file);
  }
  auto resumed = make_params(dev);
  Opt c(resumed, options);
  NamedTensors optimizer_state;
  for (auto& [name, t] : nn::load(file)) {
    if (name == "p0" || name == "p1") {
      NoGradGuard no_grad;
      resumed[name == "p0" ? 0 : 1].copy_(t.to(dev));
    } else {
      optimizer_state.emplace_back(name, t);
    }
  }
  c.load_state_dict(optimizer_state);
  for (int s = 2; s < 4; ++s) {
    set_grads(resumed, s, dev);
    c.step();
    mark_step();
  }
  for (size_t j = 0; j < 2; ++j)
    EXPECT_EQ(resumed[j].to_vector<float>(), straight[j].to_vector<float>()) << c.name() << j;
}

TEST_F(CheckpointTest, OptimizerStateRestoresTrainingExactly) {
  expect_resume_equals_uninterrupted<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9}, dev(),
                                          path("sgd.safetensors"));
  expect_resume_equals_uninterrupted<Adam>(AdamOptions{.lr = 0.01, .amsgrad = true}, dev(),
                                           path("adam.safetensors"));
  expect_resume_equals_uninterrupted<AdamW>(AdamWOptions{.lr = 0.01}, dev(),
                                            path("adamw.safetensors"));
}

TEST_F(CheckpointTest, MismatchedOptimizerStateIsAnError) {
  auto params = make_params(dev());
  Adam adam(params, {});
  set_grads(params, 0, dev());
  adam.step();
  NamedTensors state = adam.state_dict();
  auto other = make_params(dev());
  SGD sgd(other, {.lr = 0.1});
  EXPECT_THROW(sgd.load_state_dict(state), Error);  // Adam's options are not SGD's
  Adam one({other[0]}, {});
  EXPECT_THROW(one.load_state_dict(state), Error);  // parameter count
  Tensor wrong = Tensor::from_vector(random_values(12, 1), {4, 3}, &dev());
  wrong.requires_grad_();
  Adam reshaped({wrong, other[1]}, {});
  EXPECT_THROW(reshaped.load_state_dict(state), Error);  // exp_avg of shape [3, 4]
  NamedTensors missing;
  for (auto& [name, t] : state)
    if (name != "param_groups.0.lr") missing.emplace_back(name, t);
  Adam fresh(other, {});
  EXPECT_THROW(fresh.load_state_dict(missing), Error);
  fresh.load_state_dict(state);
  EXPECT_EQ(fresh.state_dict().size(), state.size());
}

TEST_F(CheckpointTest, ModelAndOptimizerCheckpoint) {
  manual_seed(1);
  auto make_model = [&] {
    auto model =
        std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
            std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::Linear>(8, 2)});
    model->to(dev());
    return model;
  };
  Tensor x = Tensor::from_vector(random_values(12, 7), {3, 4}, &dev());
  auto train_step = [&](nn::Module& model, Optimizer& opt) {
    opt.zero_grad();
    Tensor out = model(x);
    mean(mul(out, out)).backward();
    opt.step();
    mark_step();
  };
  auto model = make_model();
  Adam opt(model->parameters(), {.lr = 0.01});
  train_step(*model, opt);
  train_step(*model, opt);
  distributed::save_checkpoint(*model, &opt, 2, path("ckpt.safetensors"));
  train_step(*model, opt);

  auto restored = make_model();  // different initial weights
  Adam restored_opt(restored->parameters(), {.lr = 0.01});
  EXPECT_EQ(distributed::load_checkpoint(*restored, &restored_opt, path("ckpt.safetensors")), 2);
  train_step(*restored, restored_opt);
  auto want = model->state_dict();
  auto got = restored->state_dict();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i].second.to_vector<float>(), want[i].second.to_vector<float>()) << got[i].first;

  distributed::save_checkpoint(*model, nullptr, 7, path("model_only.safetensors"));
  EXPECT_EQ(distributed::load_checkpoint(*restored, nullptr, path("model_only.safetensors")), 7);
  EXPECT_THROW(distributed::load_checkpoint(*restored, &restored_opt, path("model_only.safetensors")), Error);
}

}  // namespace
}  // namespace podsim::optim
