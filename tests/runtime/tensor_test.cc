// Lazy tensors without the device path: tracing records nodes (checked at once), the
// captured graph lowers to a valid module whose reference evaluation matches
// hand-derived values, the structural hash ignores values but not structure, host
// tensors run at once, errors name the op, the shapes and the caller's line.
#include "runtime/tensor/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/ir/evaluator.h"
#include "compiler/ir/verifier.h"
#include "runtime/debug/metrics.h"
#include "runtime/lazy/tensor_impl.h"

namespace podsim {
namespace {

pjrt::Device& dev() { return podsim::device(); }

Tensor device_tensor(std::vector<float> values, std::vector<int64_t> shape) {
  return Tensor::from_vector(values, std::move(shape), &dev());
}

lazy::Graph capture(const std::vector<Tensor>& tensors) {
  std::vector<lazy::NodePtr> roots;
  for (const Tensor& t : tensors) {
    lazy::NodePtr node = t.impl()->pending_node();
    EXPECT_TRUE(node) << "tensor is not pending";
    if (std::find(roots.begin(), roots.end(), node) == roots.end()) roots.push_back(node);
  }
  return lazy::capture_graph(std::move(roots));
}

// The captured graph run by the reference evaluator, independently of any backend.
std::vector<ir::Literal> evaluate_pending(const std::vector<Tensor>& tensors) {
  lazy::Graph graph = capture(tensors);
  auto module = lazy::lower_graph(graph, "test");
  ir::verify_module(*module);
  std::vector<ir::Literal> args;
  for (const lazy::Node* leaf : graph.parameters) {
    if (leaf->leaf == lazy::LeafKind::kScalar)
      args.push_back(lazy::scalar_literal(leaf->type, leaf->data->scalar));
    else if (leaf->data->buffer)
      args.push_back(leaf->data->buffer->to_literal());
    else
      args.push_back(*leaf->data->literal);
  }
  ir::Literal result = ir::evaluate(*module, args);
  return result.elements();
}

std::vector<double> values(const ir::Literal& literal) {
  std::vector<double> out;
  for (int64_t i = 0; i < literal.num_elements(); ++i) out.push_back(literal.get_as_double(i));
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(LazyTensor, DeviceOpsArePendingAndShapeCheckedAtOnce) {
  Tensor a = device_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = (a * 2 + 1).sum({1});
  EXPECT_FALSE(a.is_pending());
  EXPECT_TRUE(b.is_pending());
  EXPECT_EQ(b.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(b.dtype(), kFloat32);
  EXPECT_EQ(b.device(), &dev());
  // (1+2+3)*2 + 3 = 15, (4+5+6)*2 + 3 = 33
  std::vector<ir::Literal> out = evaluate_pending({b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{15, 33}));
}

TEST(LazyTensor, SharedRootsAreOneGraphOutput) {
  Tensor a = device_tensor({1, 2}, {2});
  Tensor b = a + a;
  Tensor alias = b;  // the same tensor
  Tensor c = b * b;
  lazy::Graph graph = capture({b, alias, c});
  EXPECT_EQ(graph.roots.size(), 2u);
  EXPECT_EQ(graph.parameters.size(), 1u);  // a, used twice
  std::vector<ir::Literal> out = evaluate_pending({b, c});
  EXPECT_EQ(values(out[0]), (std::vector<double>{2, 4}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{4, 16}));
}

TEST(GraphHash, IgnoresDataAndScalarValues) {
  auto trace = [](std::vector<float> data, double scale) {
    Tensor a = device_tensor(std::move(data), {2, 2});
    return capture({(a * scale).exp()}).hash;
  };
  pjrt::Hash128 h1 = trace({1, 2, 3, 4}, 0.5);
  EXPECT_EQ(h1, trace({5, 6, 7, 8}, 0.5));
  EXPECT_EQ(h1, trace({1, 2, 3, 4}, 0.25));
}

TEST(GraphHash, DependsOnShapesTypesAndOps) {
  Tensor a = device_tensor({1, 2, 3, 4}, {2, 2});
  Tensor b = device_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor c = device_tensor({1, 2, 3, 4}, {4});
  pjrt::Hash128 base = capture({a + 1.0}).hash;
  EXPECT_NE(base, capture({b + 1.0}).hash);
  EXPECT_NE(base, capture({c + 1.0}).hash);
  EXPECT_NE(base, capture({a * 1.0}).hash);
  EXPECT_NE(base, capture({a.to(kFloat64) + 1.0}).hash);
  EXPECT_NE(base, capture({a.sum({0})}).hash);
  EXPECT_NE(capture({a.sum({0})}).hash, capture({a.sum({1})}).hash);
}

TEST(GraphHash, DistinguishesSharedLeaves) {
  Tensor a = device_tensor({1, 2}, {2});
  Tensor b = device_tensor({3, 4}, {2});
  lazy::Graph same = capture({a + a});
  lazy::Graph different = capture({a + b});
  EXPECT_EQ(same.parameters.size(), 1u);
  EXPECT_EQ(different.parameters.size(), 2u);
  EXPECT_NE(same.hash, different.hash);
}

TEST(GraphHash, DistinguishesWhichSubgraphIsShared) {
  // Both compute (P + P) + P with P = u * v per position, so every node hash agrees;
  // only which P is shared differs: 2ab + cd against ab + 2cd.
  Tensor a = device_tensor({1}, {1}), b = device_tensor({2}, {1});
  Tensor c = device_tensor({3}, {1}), d = device_tensor({5}, {1});
  Tensor shared_first = a * b;
  Tensor g5 = (shared_first + shared_first) + c * d;
  Tensor shared_last = c * d;
  Tensor g6 = (a * b + shared_last) + shared_last;
  EXPECT_NE(capture({g5}).hash, capture({g6}).hash);
  EXPECT_EQ(values(evaluate_pending({g5})[0]), (std::vector<double>{2 * 2 + 15}));
  EXPECT_EQ(values(evaluate_pending({g6})[0]), (std::vector<double>{2 + 2 * 15}));
}

TEST(GraphHash, NumbersParametersByFirstAppearance) {
  Tensor a = device_tensor({1, 2}, {2});
  Tensor b = device_tensor({10, 20, 30}, {3});
  Tensor r = b.sum() * 3.0 + a;  // post-order: b, 3.0, a
  lazy::Graph graph = capture({r});
  ASSERT_EQ(graph.parameters.size(), 3u);
  EXPECT_EQ(graph.parameters[0]->data->buffer, b.impl()->buffer);
  EXPECT_EQ(graph.parameters[1]->leaf, lazy::LeafKind::kScalar);
  EXPECT_EQ(graph.parameters[2]->data->buffer, a.impl()->buffer);
  auto module = lazy::lower_graph(graph, "order");
  EXPECT_EQ(module->entry()->parameter(0)->shape().to_string(false), "f32[3]");
  EXPECT_EQ(module->entry()->parameter(1)->shape().to_string(false), "f32[]");
  EXPECT_EQ(values(evaluate_pending({r})[0]), (std::vector<double>{181, 182}));
}

TEST(HostTensors, OpsRunAtOnceOnTheEvaluator) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = Tensor::from_vector<float>({10, 20}, {2});
  Tensor c = a * b - 1;  // broadcast over rows
  EXPECT_TRUE(c.is_host());
  EXPECT_FALSE(c.is_pending());
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{9, 39, 29, 79}));
  EXPECT_EQ(c.sum().item().to_double(), 156);
  EXPECT_EQ(c.argmax().item().to_int(), 3);
}

TEST(HostTensors, ComeBackFromTheDevice) {
  Tensor a = device_tensor({1, 2, 3}, {3});
  Tensor host = (a * 2).cpu();
  EXPECT_TRUE(host.is_host());
  EXPECT_EQ(host.to_vector<double>(), (std::vector<double>{2, 4, 6}));
  Tensor back = host.to(dev());
  EXPECT_EQ(back.device(), &dev());
  EXPECT_EQ((back + 1).to_vector<float>(), (std::vector<float>{3, 5, 7}));
}

TEST(HostTensors, EmptyTensorsFollowTorch) {
  EXPECT_EQ(zeros({0, 3}).sum({0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  std::vector<float> means = zeros({2, 0}).mean({1}).to_vector<float>();  // 0 / 0
  ASSERT_EQ(means.size(), 2u);
  EXPECT_TRUE(std::isnan(means[0]) && std::isnan(means[1]));
  EXPECT_EQ(cat({zeros({0, 3}), ones({2, 3})}, 0).shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(arange(0).shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(rand({0, 2}).shape(), (std::vector<int64_t>{0, 2}));
  Tensor product = matmul(ones({2, 0}), ones({0, 3}));  // an empty contraction sums to 0
  EXPECT_EQ(product.to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(zeros({3, 0}).softmax(1).shape(), (std::vector<int64_t>{3, 0}));
  EXPECT_TRUE(has(error_of([] { zeros({0}).max(); }), "has size 0"));
  EXPECT_TRUE(has(error_of([] { zeros({2, 0}).argmax(1); }), "size 0"));
  EXPECT_TRUE(has(error_of([] { zeros({0}).reshape({-1, 0}); }), "invalid for input"));
}

TEST(Errors, ShapeMismatchNamesOpShapesAndCaller) {
  Tensor a = device_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = device_tensor({1, 2, 3, 4}, {4});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { add(a, b); });
  EXPECT_TRUE(has(message, fmt::format("tensor_test.cc:{}: add:", line))) << message;
  EXPECT_TRUE(has(message, "f32[2,3]")) << message;
  EXPECT_TRUE(has(message, "f32[4]")) << message;
}

TEST(Errors, OperatorsReportTheirCaller) {
  Tensor a = device_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = device_tensor({1, 2}, {2});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { Tensor c = a * b; });
  EXPECT_TRUE(has(message, fmt::format("tensor_test.cc:{}: mul:", line))) << message;
  line = __LINE__ + 1;
  message = error_of([&] { Tensor c = a.matmul(b.reshape({1, 2})); });
  EXPECT_TRUE(has(message, fmt::format("tensor_test.cc:{}: matmul:", line))) << message;
  EXPECT_TRUE(has(message, "f32[2,3] and f32[1,2] cannot be multiplied")) << message;
}

TEST(Errors, MixingDevicesNamesBoth) {
  Tensor on_device = device_tensor({1, 2}, {2});
  Tensor on_host = Tensor::from_vector<float>({1, 2}, {2});
  std::string message = error_of([&] { add(on_device, on_host); });
  EXPECT_TRUE(has(message, dev().name())) << message;
  EXPECT_TRUE(has(message, "host")) << message;
}

TEST(Errors, BadArgumentsAreRejectedAtTheCall) {
  Tensor a = device_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(has(error_of([&] {
                    a.reshape({4, -1});
                  }),
                  "shape [4, -1] is invalid for input f32[2,3]"));
  EXPECT_TRUE(has(error_of([&] { a.sum({2}); }), "dimension 2 is out of range"));
  EXPECT_TRUE(has(error_of([&] { a.permute({0, 0}); }), "appears more than once"));
  EXPECT_TRUE(has(error_of([&] { a.expand({4, 3}); }), "must match the existing size 2"));
  EXPECT_TRUE(has(error_of([&] { a.item(); }), "6 elements"));
  EXPECT_TRUE(has(error_of([&] { a.slice(1, 0, 3, 0); }), "the step must be positive"));
  EXPECT_TRUE(has(error_of([&] { Tensor().exp(); }), "undefined tensor"));
  EXPECT_TRUE(has(error_of([&] {
                    Tensor::from_vector<float>({1, 2, 3}, {2, 2});
                  }),
                  "3 values do not fill"));
  EXPECT_TRUE(has(error_of([&] { where(a, a, a); }), "condition must be a bool tensor"));
  EXPECT_TRUE(has(error_of([&] { cat({}, 0); }), "non-empty list"));
}

TEST(TypePromotion, FollowsTorchRules) {
  auto host = [](DType t) { return Tensor::from_literal(ir::Literal(ir::Shape(t, {2})), nullptr); };
  auto host0 = [](DType t) { return Tensor::from_literal(ir::Literal(ir::Shape(t, {})), nullptr); };
  // Same category: the wider type; f16 with bf16: f32; u8 with s8: s16.
  EXPECT_EQ(add(host(kInt32), host(kInt64)).dtype(), kInt64);
  EXPECT_EQ(add(host(kFloat16), host(kBFloat16)).dtype(), kFloat32);
  EXPECT_EQ(add(host(kUInt8), host(kInt8)).dtype(), kInt16);
  // A higher category wins whatever the rank.
  EXPECT_EQ(add(host(kInt32), host0(kFloat64)).dtype(), kFloat64);
  EXPECT_EQ(add(host(kFloat16), host0(kFloat64)).dtype(), kFloat16);
  // C++ scalars: a float scalar makes an integral tensor f32; an int scalar keeps it.
  EXPECT_EQ(add(host(kInt32), 2.5).dtype(), kFloat32);
  EXPECT_EQ(add(host(kInt32), 2).dtype(), kInt32);
  EXPECT_EQ(add(host(kBool), 2).dtype(), kInt64);
  EXPECT_EQ(add(host(kFloat16), 2.5).dtype(), kFloat16);
  EXPECT_EQ(add(host(kUInt8), -1).dtype(), kUInt8);
  // True division of integers gives the default float type; comparisons give bool.
  EXPECT_EQ(div(host(kInt64), host(kInt64)).dtype(), kFloat32);
  EXPECT_EQ(lt(host(kInt32), 2.5).dtype(), kBool);
  EXPECT_EQ(host(kInt32).exp().dtype(), kFloat32);
  EXPECT_EQ(host(kInt32).sum().dtype(), kInt64);
}

TEST(Counters, CountCreatedAndDestroyedTensors) {
  int64_t created = debug::counter_value("CreateTensor");
  int64_t destroyed = debug::counter_value("DestroyTensor");
  {
    Tensor a = device_tensor({1, 2}, {2});
    Tensor b = a + 1;
    Tensor c = b;  // a handle, not a tensor
  }
  EXPECT_EQ(debug::counter_value("CreateTensor") - created, 2);
  EXPECT_EQ(debug::counter_value("DestroyTensor") - destroyed, 2);
}

TEST(Registry, HoldsOnlyLivePendingTensors) {
  Tensor a = device_tensor({1, 2}, {2});
  Tensor kept = a * 3;
  { Tensor dropped = a * 4; }
  std::vector<lazy::ImplPtr> pending = lazy::pending_tensors(&dev());
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0], kept.impl());
}

TEST(LazyGraph, LongChainsAreDestroyedWithoutRecursion) {
  Tensor a = device_tensor({1}, {1});
  Tensor x = a;
  for (int i = 0; i < 200000; ++i) x = x + a;
  EXPECT_TRUE(x.is_pending());
  x = Tensor();  // frees a chain of 200k nodes
}

TEST(InPlace, UpdatesEveryHandleAndChecksTheResult) {
  Tensor a = device_tensor({1, 2}, {2});
  Tensor alias = a;
  a += device_tensor({10, 20}, {2});
  a *= 2;
  EXPECT_TRUE(alias.is_pending());
  EXPECT_EQ(values(evaluate_pending({alias})[0]), (std::vector<double>{22, 44}));
  Tensor ints = Tensor::from_vector<int32_t>({1, 2}, {2});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { ints += 0.5; });
  EXPECT_TRUE(has(message, "cannot be cast")) << message;
  EXPECT_TRUE(has(message, fmt::format("tensor_test.cc:{}: add_:", line))) << message;
  Tensor small = device_tensor({1, 2}, {2});
  EXPECT_TRUE(has(error_of([&] {
                    small += device_tensor({1, 2, 3, 4}, {2, 2});
                  }),
                  "does not have the shape"));
}

}  // namespace
}  // namespace podsim
