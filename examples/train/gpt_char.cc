// `podsim train transformer`: a small GPT (token and position embeddings, pre-norm
// blocks of causal multi-head attention and a GELU MLP, a final layer norm and a
// vocabulary head) trained as a character-level language model on the GPL-3 text that
// every Debian system has (generated text where it is missing), with AdamW and a
// cosine schedule with warmup. The loss starts near ln(vocabulary size) and falls as
// the model learns the text's character statistics.
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "examples/train/train.h"
#include "examples/train/train_loop.h"
#include "runtime/data/char_text.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/lr_scheduler.h"

namespace podsim::examples {
namespace {

struct GptConfig {
  int64_t vocab = 0;
  int64_t block = 32;  // context length
  int64_t embed = 64;
  int64_t heads = 4;
  int64_t layers = 2;
};

class Block : public nn::Module {
 public:
  explicit Block(const GptConfig& c) : Module("Block") {
    ln1_ = register_module("ln1", std::make_shared<nn::LayerNorm>(std::vector<int64_t>{c.embed}));
    attn_ = register_module(
        "attn", std::make_shared<nn::MultiheadAttention>(c.embed, c.heads, /*bias=*/true,
                                                         /*batch_first=*/true, /*causal=*/true));
    ln2_ = register_module("ln2", std::make_shared<nn::LayerNorm>(std::vector<int64_t>{c.embed}));
    fc1_ = register_module("fc1", std::make_shared<nn::Linear>(c.embed, 4 * c.embed));
    fc2_ = register_module("fc2", std::make_shared<nn::Linear>(4 * c.embed, c.embed));
  }

  Tensor forward(const Tensor& x) override {
    Tensor h = x + attn_->forward(ln1_->forward(x));
    return h + fc2_->forward(gelu(fc1_->forward(ln2_->forward(h)), GeluApproximate::kTanh));
  }

 private:
  std::shared_ptr<nn::LayerNorm> ln1_, ln2_;
  std::shared_ptr<nn::MultiheadAttention> attn_;
  std::shared_ptr<nn::Linear> fc1_, fc2_;
};

class Gpt : public nn::Module {
 public:
  explicit Gpt(const GptConfig& c) : Module("Gpt") {
    tokens_ = register_module("tokens", std::make_shared<nn::Embedding>(c.vocab, c.embed));
    positions_ = register_module("positions", std::make_shared<nn::Embedding>(c.block, c.embed));
    blocks_ = register_module("blocks", std::make_shared<nn::Sequential>());
    for (int64_t k = 0; k < c.layers; ++k) blocks_->push_back(std::make_shared<Block>(c));
    ln_ = register_module("ln", std::make_shared<nn::LayerNorm>(std::vector<int64_t>{c.embed}));
    head_ = register_module("head", std::make_shared<nn::Linear>(c.embed, c.vocab));
  }

  // ids (batch, block) -> logits (batch, block, vocab).
  Tensor forward(const Tensor& ids) override {
    Tensor positions = arange(ids.size(1), TensorOptions(kInt64, ids.device()));
    Tensor x = tokens_->forward(ids) + positions_->forward(positions);
    return head_->forward(ln_->forward(blocks_->forward(x)));
  }

 private:
  std::shared_ptr<nn::Embedding> tokens_, positions_;
  std::shared_ptr<nn::Sequential> blocks_;
  std::shared_ptr<nn::LayerNorm> ln_;
  std::shared_ptr<nn::Linear> head_;
};

}  // namespace

TrainResult train_transformer(const TrainOptions& options, std::ostream& out) {
  const int64_t steps = options.steps > 0 ? options.steps : 200;
  const int64_t batch = options.batch > 0 ? options.batch : 16;
  const double lr = options.lr > 0 ? options.lr : 3e-3;

  const data::TextCorpus corpus = data::load_text_corpus();
  GptConfig config;
  auto dataset = std::make_shared<data::CharTextDataset>(corpus.text, config.block);
  config.vocab = dataset->vocab_size();
  std::vector<Replica> replicas = make_replicas(options, [&](pjrt::Device& device) {
    auto model = std::make_shared<Gpt>(config);
    model->to(device);
    auto optimizer = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions{.lr = lr});
    auto schedule = std::make_unique<optim::CosineWarmupLR>(*optimizer, steps / 10, steps);
    const int64_t vocab = config.vocab;
    return Replica{nullptr, model, std::move(optimizer), std::move(schedule),
                   [model, vocab](const data::Example& b) {
                     Tensor logits = (*model)(b[0]);
                     return nn::functional::cross_entropy(logits.reshape({-1, vocab}),
                                                          b[1].reshape({-1}));
                   }};
  });
  out << fmt::format(
      "transformer: {} characters from {}, vocabulary {}; {} layers, {} heads, width {}, context "
      "{} "
      "on {}, {} steps of batch {} (loss at start ~ ln {} = {:.2f})\n",
      corpus.text.size(), corpus.source, config.vocab, config.layers, config.heads, config.embed,
      config.block, placement(replicas), steps, batch, config.vocab,
      std::log(double(config.vocab)));

  TrainResult result = train(replicas, dataset, steps, batch, options, out);
  out << fmt::format(
      "transformer: loss {:.3f} -> {:.3f} after {} steps ({:.1f} steps/s, {} compilation(s))\n",
      result.first_loss, result.final_loss, result.steps, result.steps_per_second,
      result.compilations);
  return result;
}

}  // namespace podsim::examples
