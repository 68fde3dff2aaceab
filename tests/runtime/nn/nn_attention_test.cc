// MultiheadAttention (self and cross attention, causal, bool and float masks, without
// bias, batch-first or not), scaled_dot_product_attention and tril/triu against PyTorch
// 1.13 (nn_oracle.py attention; torch 1.13 has no F.scaled_dot_product_attention, so the
// oracle writes softmax(q k^T / sqrt(E) + mask) v out). Tolerances: rtol 1e-4, atol 1e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/debug/metrics.h"
#include "runtime/nn/nn.h"
#include "tests/runtime/nn/nn_oracle.h"

namespace podsim::nn {
namespace {

using testing::Oracle;

class AttentionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { oracle_ = new Oracle(Oracle::run("attention")); }
  static void TearDownTestSuite() {
    delete oracle_;
    oracle_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(oracle_->error().empty()) << oracle_->error(); }
  static pjrt::Device& dev() { return podsim::device(); }
  static Oracle* oracle_;
};
Oracle* AttentionTest::oracle_ = nullptr;

// A module with no parameters around a function of the case's inputs.
class Fn : public Module {
 public:
  Fn() : Module("Fn") {}
};

// The oracle's GptBlock and Gpt: the same registration order gives the same names.
class GptBlock : public Module {
 public:
  GptBlock(int64_t e, int64_t heads, pjrt::Device& device) : Module("GptBlock") {
    ln1_ = register_module(
        "ln1", std::make_shared<LayerNorm>(std::vector<int64_t>{e}, 1e-5, true, device));
    attn_ = register_module(
        "attn", std::make_shared<MultiheadAttention>(e, heads, true, true, true, device));
    ln2_ = register_module(
        "ln2", std::make_shared<LayerNorm>(std::vector<int64_t>{e}, 1e-5, true, device));
    fc1_ = register_module("fc1", std::make_shared<Linear>(e, 4 * e, true, device));
    fc2_ = register_module("fc2", std::make_shared<Linear>(4 * e, e, true, device));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = attn_->forward(ln1_->forward(x)) + x;
    return h + fc2_->forward(gelu(fc1_->forward(ln2_->forward(h)), GeluApproximate::kTanh));
  }

 private:
  std::shared_ptr<LayerNorm> ln1_, ln2_;
  std::shared_ptr<MultiheadAttention> attn_;
  std::shared_ptr<Linear> fc1_, fc2_;
};

class Gpt : public Module {
 public:
  Gpt(int64_t vocab, int64_t length, int64_t e, int64_t heads, pjrt::Device& device)
      : Module("Gpt") {
    tok_ = register_module("tok", std::make_shared<Embedding>(vocab, e, device));
    pos_ = zeros({length, e}, device);
    register_parameter("pos", &pos_);
    block_ = register_module("block", std::make_shared<GptBlock>(e, heads, device));
    ln_f_ = register_module(
        "ln_f", std::make_shared<LayerNorm>(std::vector<int64_t>{e}, 1e-5, true, device));
    head_ = register_module("head", std::make_shared<Linear>(e, vocab, false, device));
  }
  Tensor loss(const Tensor& tokens, const Tensor& targets) {
    Tensor x = tok_->forward(tokens) + pos_;
    Tensor logits = head_->forward(ln_f_->forward(block_->forward(x)));
    return functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}),
                                     Reduction::kMean, 0.1);
  }

 private:
  Tensor pos_;
  std::shared_ptr<Embedding> tok_;
  std::shared_ptr<GptBlock> block_;
  std::shared_ptr<LayerNorm> ln_f_;
  std::shared_ptr<Linear> head_;
};

// A whole causal transformer block, and a one-block GPT with its loss, against torch.
TEST_F(AttentionTest, TransformerBlock) {
  GptBlock block(8, 2, dev());
  testing::check_case(*oracle_, "gpt_block", block);
  Gpt gpt(11, 6, 8, 2, dev());
  testing::check_case(*oracle_, "gpt", gpt,
                      [&](const std::vector<Tensor>& x) { return gpt.loss(x.at(0), x.at(1)); });
}

// Forward, backward and an SGD update of the GPT are one graph per mark_step, compiled
// once: new token batches and new gradients reuse it.
TEST_F(AttentionTest, GptTrainingStepCompilesOnce) {
  manual_seed(11);
  Gpt gpt(11, 6, 8, 2, dev());
  mark_step();  // the initial parameters
  int64_t uncached = 0;
  std::vector<float> losses;
  for (int step = 0; step < 4; ++step) {
    Tensor tokens = mul(rand({2, 6}, dev()), 11).to(kInt64);
    Tensor loss = gpt.loss(tokens, tokens);  // learn the identity
    loss.backward();
    {
      NoGradGuard no_grad;
      for (Tensor p : gpt.parameters()) p -= mul(p.grad(), 0.1);
    }
    gpt.zero_grad();
    mark_step();
    losses.push_back(loss.item().to<float>());
    if (step == 1) uncached = debug::counter_value("UncachedCompile");
  }
  EXPECT_EQ(debug::counter_value("UncachedCompile"), uncached);
  for (float l : losses) EXPECT_TRUE(std::isfinite(l));
}

TEST_F(AttentionTest, SelfAttention) {
  MultiheadAttention m(8, 2, true, false, false, dev());
  testing::check_case(*oracle_, "mha", m);
}

TEST_F(AttentionTest, CausalBatchFirst) {
  MultiheadAttention m(8, 4, true, true, /*causal=*/true, dev());
  testing::check_case(*oracle_, "mha_causal_batch_first", m);
}

TEST_F(AttentionTest, CrossAttentionWithBoolMask) {
  MultiheadAttention m(8, 2, true, false, false, dev());
  // torch's convention, which podsim's MultiheadAttention follows: true = masked out.
  Tensor mask = oracle_->tensor("mha_cross_bool_mask.mask", &dev());
  testing::check_case(*oracle_, "mha_cross_bool_mask", m, [&](const std::vector<Tensor>& x) {
    return m.forward(x.at(0), x.at(1), x.at(2), mask);
  });
}

TEST_F(AttentionTest, NoBias) {
  MultiheadAttention m(6, 3, false, true, false, dev());
  EXPECT_EQ(m.named_parameters().size(), 2u);
  testing::check_case(*oracle_, "mha_nobias", m);
}

TEST_F(AttentionTest, StateDictNamesMatchTorch) {
  MultiheadAttention m(8, 2);
  std::vector<std::string> names;
  for (const auto& [name, t] : m.state_dict()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                             "out_proj.bias"}));
  EXPECT_EQ(m.in_proj_weight().shape(), (std::vector<int64_t>{24, 8}));
}

TEST_F(AttentionTest, ScaledDotProductAttention) {
  Fn none;
  testing::check_case(*oracle_, "sdpa_causal", none, [](const std::vector<Tensor>& x) {
    return functional::scaled_dot_product_attention(x.at(0), x.at(1), x.at(2), Tensor(), true);
  });
  Tensor bool_mask = oracle_->tensor("sdpa_bool_mask.mask", &dev());
  testing::check_case(*oracle_, "sdpa_bool_mask", none, [&](const std::vector<Tensor>& x) {
    return functional::scaled_dot_product_attention(x.at(0), x.at(1), x.at(2), bool_mask);
  });
  Tensor float_mask = oracle_->tensor("sdpa_float_mask.mask", &dev());
  testing::check_case(*oracle_, "sdpa_float_mask", none, [&](const std::vector<Tensor>& x) {
    return functional::scaled_dot_product_attention(x.at(0), x.at(1), x.at(2), float_mask);
  });
  Tensor q = zeros({2, 3, 4}, dev());
  EXPECT_THROW(functional::scaled_dot_product_attention(q, zeros({2, 3, 5}, dev()), q), Error);
  EXPECT_THROW(functional::scaled_dot_product_attention(q, q, q, ones({3, 3}, dev()), true), Error);
}

TEST_F(AttentionTest, TrilTriu) {
  Fn none;
  testing::check_case(*oracle_, "tril", none,
                      [](const std::vector<Tensor>& x) { return functional::tril(x.at(0), 1); });
  testing::check_case(*oracle_, "triu", none,
                      [](const std::vector<Tensor>& x) { return functional::triu(x.at(0), -1); });
}

// The causal mask derived by hand: entry (i, j) is true exactly when j <= i + diagonal.
TEST_F(AttentionTest, TrilMask) {
  for (int64_t diagonal : {-1, 0, 2}) {
    std::vector<bool> got = functional::tril_mask(3, 4, diagonal, &dev()).to_vector<bool>();
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        EXPECT_EQ(got[static_cast<size_t>(i * 4 + j)], j <= i + diagonal) << i << "," << j;
  }
}

}  // namespace
}  // namespace podsim::nn
