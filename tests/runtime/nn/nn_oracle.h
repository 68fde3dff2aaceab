// Shared by the nn tests: runs oracle/nn_oracle.py (PyTorch 1.13) once per test binary,
// reads its safetensors file, and checks a podsim module against one case: same
// parameters (through load_state_dict) and inputs, then the output and the gradients of
// sum(output * cotangent) for every parameter and floating input.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/safetensors.h"
#include "runtime/autograd/autograd.h"
#include "runtime/nn/module.h"
#include "runtime/tensor/tensor.h"
#include "tests/runtime/torch_oracle.h"

namespace podsim::nn::testing {

struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

class Oracle {
 public:
  // Runs the oracle for group in a fresh temporary directory.
  static Oracle run(const std::string& group) {
    torch_oracle::OracleResult result =
        torch_oracle::run_torch_script("tests/runtime/nn/oracle/nn_oracle.py", {group});
    Oracle oracle;
    oracle.error_ = std::move(result.error);
    oracle.values_ = std::move(result.tensors);
    return oracle;
  }

  const std::string& error() const { return error_; }
  bool has(const std::string& name) const { return values_.contains(name); }
  const ir::Literal& literal(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) throw Error("the oracle wrote no tensor \"" + name + "\"");
    return it->second;
  }
  Tensor tensor(const std::string& name, pjrt::Device* device) const {
    return Tensor::from_literal(literal(name), device);
  }
  // The case's parameters as a state dict (on the host).
  NamedTensors state(const std::string& name) const {
    NamedTensors out;
    std::string prefix = name + ".param.";
    for (const auto& [key, literal] : values_)
      if (key.starts_with(prefix))
        out.emplace_back(key.substr(prefix.size()), Tensor::from_literal(literal));
    return out;
  }
  std::vector<Tensor> inputs(const std::string& name, pjrt::Device* device) const {
    std::vector<Tensor> out;
    for (int i = 0; has(fmt::format("{}.input{}", name, i)); ++i)
      out.push_back(tensor(fmt::format("{}.input{}", name, i), device));
    return out;
  }

 private:
  std::map<std::string, ir::Literal> values_;
  std::string error_;
};

// |actual - expected| <= atol + rtol |expected| everywhere; reports the worst element.
inline void expect_close(const Tensor& actual, const ir::Literal& expected, Tolerance tol,
                         const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what << ": undefined";
  ASSERT_EQ(actual.shape(), expected.shape().dims()) << what;
  ir::Literal got = actual.to(kFloat64).to_literal();
  double worst = 0;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    double e = expected.get_as_double(i), a = got.get_as_double(i);
    double excess = std::abs(a - e) - (tol.atol + tol.rtol * std::abs(e));
    if (std::isnan(a) != std::isnan(e)) excess = INFINITY;
    if (excess > worst) {
      worst = excess;
      worst_at = i;
    }
  }
  EXPECT_LT(worst_at, 0) << what << ": element " << worst_at << " is "
                         << got.get_as_double(worst_at) << ", torch says "
                         << expected.get_as_double(worst_at) << " (rtol " << tol.rtol << ", atol "
                         << tol.atol << ")";
}

using Forward = std::function<Tensor(const std::vector<Tensor>&)>;

// Loads the case's parameters into module, runs forward on the case's inputs (on
// device; floating inputs require grad), and compares output and gradients.
inline void check_case(const Oracle& oracle, const std::string& name, Module& module,
                       const Forward& forward, Tolerance tol = {}) {
  SCOPED_TRACE("case " + name);
  pjrt::Device& dev = podsim::device();
  module.load_state_dict(oracle.state(name));
  std::vector<Tensor> inputs = oracle.inputs(name, &dev);
  for (Tensor& x : inputs)
    if (ir::is_float(x.dtype())) x.requires_grad_();
  Tensor out = forward(inputs);
  expect_close(out, oracle.literal(name + ".out"), tol, name + " output");
  mul(out, oracle.tensor(name + ".cotangent", &dev)).sum().backward();
  for (const auto& [pname, p] : module.named_parameters())
    expect_close(p.grad(), oracle.literal(name + ".grad." + pname), tol,
                 name + " gradient of " + pname);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string key = fmt::format("{}.grad.input{}", name, i);
    if (oracle.has(key))
      expect_close(inputs[i].grad(), oracle.literal(key), tol,
                   fmt::format("{} input {} gradient", name, i));
  }
  module.zero_grad();
}

inline void check_case(const Oracle& oracle, const std::string& name, Module& module,
                       Tolerance tol = {}) {
  check_case(
      oracle, name, module, [&](const std::vector<Tensor>& x) { return module(x.at(0)); }, tol);
}

}  // namespace podsim::nn::testing
