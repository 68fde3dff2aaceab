// Every op against PyTorch 1.13: the inputs go to a safetensors file, a small torch
// script evaluates the same expressions, and each op's result on the host (reference
// evaluator, op by op) and on the device (one lazy graph, compiled and fused) must
// match torch's dtype and shape exactly and its values within the case's tolerance.
//
// Tolerances: 0 (bit-exact up to NaN) for ops whose IEEE result is unique (arithmetic,
// comparisons, data movement, max/min, conversions); sums, means and matmuls reassociate
// (rtol 1e-5, atol 1e-5); exp/log/tanh/pow/... may differ by an ulp or two between
// libm and torch's vectorized kernels (rtol 2e-6); gelu's erf is a rational fit with
// relative error below 1.2e-7 composed of ~30 f32 ops (rtol 1e-5, atol 1e-6);
// softmax-family ops rtol 1e-5, atol 1e-6; bf16 results one bf16 ulp (rtol 8e-3).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/safetensors.h"
#include "runtime/tensor/tensor.h"

namespace podsim {
namespace {

using Env = std::map<std::string, Tensor>;

struct Case {
  std::string name;
  std::string torch;  // a Python expression over the inputs (torch, F in scope)
  std::function<Tensor(const Env&)> op;
  double rtol = 0;
  double atol = 0;
};

constexpr double kSumTol = 1e-5;
constexpr double kUlpTol = 2e-6;
constexpr double kSoftTol = 1e-5;

std::vector<Case> cases() {
  auto in = [](const Env& e, const char* name) { return e.at(name); };
  std::vector<Case> c;
  auto add = [&](std::string name, std::string torch, std::function<Tensor(const Env&)> op,
                 double rtol = 0, double atol = 0) {
    c.push_back({std::move(name), std::move(torch), std::move(op), rtol, atol});
  };
  // Arithmetic, broadcasting, promotion.
  add("add", "x + y", [in](const Env& e) { return in(e, "x") + in(e, "y"); });
  add("add_row", "x + row", [in](const Env& e) { return in(e, "x") + in(e, "row"); });
  add("add_col", "x + col", [in](const Env& e) { return podsim::add(in(e, "x"), in(e, "col")); });
  add("add_0dim", "x + s", [in](const Env& e) { return in(e, "x") + in(e, "s"); });
  add("add_scalar", "x + 2.5", [in](const Env& e) { return in(e, "x") + 2.5; });
  add("int_add_int_scalar", "i + 3", [in](const Env& e) { return in(e, "i") + 3; });
  add("int_add_float_scalar", "i + 0.5", [in](const Env& e) { return in(e, "i") + 0.5; });
  add("int_add_float_tensor", "i + x", [in](const Env& e) { return in(e, "i") + in(e, "x"); });
  add("bool_add", "mask + mask2", [in](const Env& e) { return in(e, "mask") + in(e, "mask2"); });
  add("sub", "x - y", [in](const Env& e) { return in(e, "x") - in(e, "y"); });
  add("rsub", "1.5 - x", [in](const Env& e) { return 1.5 - in(e, "x"); });
  add("mul", "x * y", [in](const Env& e) { return in(e, "x") * in(e, "y"); });
  add("mul_scalar", "x * -3", [in](const Env& e) { return in(e, "x") * -3; });
  add("div", "x / y", [in](const Env& e) { return in(e, "x") / in(e, "y"); });
  add("div_scalar", "2 / x", [in](const Env& e) { return 2 / in(e, "x"); });
  add("div_int", "i / j", [in](const Env& e) { return in(e, "i") / in(e, "j"); });
  add("neg", "-x", [in](const Env& e) { return -in(e, "x"); });
  add("abs", "x.abs()", [in](const Env& e) { return in(e, "x").abs(); });
  add("abs_int", "i.abs()", [in](const Env& e) { return podsim::abs(in(e, "i")); });
  add(
      "pow_scalar", "pos ** 2.5", [in](const Env& e) { return podsim::pow(in(e, "pos"), 2.5); },
      kUlpTol);
  add(
      "pow_tensor", "pos ** y",
      [in](const Env& e) { return podsim::pow(in(e, "pos"), in(e, "y")); }, kUlpTol);
  add(
      "pow_base", "2 ** x", [in](const Env& e) { return podsim::pow(2.0, in(e, "x")); }, kUlpTol);
  add("pow_int", "j ** 3", [in](const Env& e) { return podsim::pow(in(e, "j"), 3); });
  add("maximum", "torch.maximum(x, y)",
      [in](const Env& e) { return maximum(in(e, "x"), in(e, "y")); });
  add("minimum_nan", "torch.minimum(xnan, y)",
      [in](const Env& e) { return minimum(in(e, "xnan"), in(e, "y")); });
  add("clamp", "x.clamp(-0.5, 0.5)", [in](const Env& e) { return in(e, "x").clamp(-0.5, 0.5); });
  add("clamp_min", "x.clamp(min=0.1)",
      [in](const Env& e) { return podsim::clamp(in(e, "x"), 0.1, std::nullopt); });
  add("clamp_max_nan", "xnan.clamp(max=0.1)",
      [in](const Env& e) { return in(e, "xnan").clamp(std::nullopt, 0.1); });
  add("clamp_int", "i.clamp(-2, 3)", [in](const Env& e) { return in(e, "i").clamp(-2, 3); });
  add("clamp_tensor", "torch.clamp(x, -row.abs(), row.abs())", [in](const Env& e) {
    return podsim::clamp(in(e, "x"), -in(e, "row").abs(), in(e, "row").abs());
  });
  // Unary.
  add(
      "exp", "x.exp()", [in](const Env& e) { return in(e, "x").exp(); }, kUlpTol);
  add(
      "exp_int", "i.exp()", [in](const Env& e) { return in(e, "i").exp(); }, kUlpTol);
  add(
      "log", "pos.log()", [in](const Env& e) { return in(e, "pos").log(); }, kUlpTol, 1e-7);
  add("sqrt", "pos.sqrt()", [in](const Env& e) { return in(e, "pos").sqrt(); });
  add(
      "rsqrt", "pos.rsqrt()", [in](const Env& e) { return rsqrt(in(e, "pos")); }, kUlpTol);
  add(
      "tanh", "x.tanh()", [in](const Env& e) { return in(e, "x").tanh(); }, kUlpTol, 1e-7);
  add(
      "sigmoid", "x.sigmoid()", [in](const Env& e) { return in(e, "x").sigmoid(); }, kUlpTol, 1e-7);
  add("relu", "x.relu()", [in](const Env& e) { return in(e, "x").relu(); });
  add("relu_nan", "xnan.relu()", [in](const Env& e) { return relu(in(e, "xnan")); });
  add(
      "gelu", "F.gelu(wide)", [in](const Env& e) { return gelu(in(e, "wide")); }, 1e-5, 1e-6);
  add(
      "gelu_tanh", "F.gelu(wide, approximate='tanh')",
      [in](const Env& e) { return gelu(in(e, "wide"), GeluApproximate::kTanh); }, 1e-5, 1e-6);
  // Comparisons and where.
  add("eq", "i == j", [in](const Env& e) { return eq(in(e, "i"), in(e, "j")); });
  add("ne", "i != 2", [in](const Env& e) { return ne(in(e, "i"), 2); });
  add("lt", "x < y", [in](const Env& e) { return in(e, "x") < in(e, "y"); });
  add("le", "i <= 0.5", [in](const Env& e) { return in(e, "i") <= 0.5; });
  add("gt_nan", "xnan > 0", [in](const Env& e) { return in(e, "xnan") > 0; });
  add("ge_bcast", "x >= row", [in](const Env& e) { return in(e, "x") >= in(e, "row"); });
  add("where", "torch.where(mask, x, y)",
      [in](const Env& e) { return where(in(e, "mask"), in(e, "x"), in(e, "y")); });
  add("where_scalar", "torch.where(x > 0, x, 0.0)",
      [in](const Env& e) { return where(in(e, "x") > 0, in(e, "x"), 0.0); });
  add("where_bcast_promote", "torch.where(mask, i, row)",
      [in](const Env& e) { return where(in(e, "mask"), in(e, "i"), in(e, "row")); });
  // Matmul.
  add(
      "mm", "x @ b", [in](const Env& e) { return matmul(in(e, "x"), in(e, "b")); }, kSumTol,
      kSumTol);
  add(
      "dot", "v @ v", [in](const Env& e) { return matmul(in(e, "v"), in(e, "v")); }, kSumTol,
      kSumTol);
  add(
      "mv", "x @ v", [in](const Env& e) { return matmul(in(e, "x"), in(e, "v")); }, kSumTol,
      kSumTol);
  add(
      "vm", "v @ b", [in](const Env& e) { return matmul(in(e, "v"), in(e, "b")); }, kSumTol,
      kSumTol);
  add(
      "bmm", "m1 @ m2", [in](const Env& e) { return matmul(in(e, "m1"), in(e, "m2")); }, kSumTol,
      kSumTol);
  add(
      "bmm_2d_rhs", "m1 @ b", [in](const Env& e) { return matmul(in(e, "m1"), in(e, "b")); },
      kSumTol, kSumTol);
  add(
      "bmm_1d_rhs", "m1 @ v", [in](const Env& e) { return matmul(in(e, "m1"), in(e, "v")); },
      kSumTol, kSumTol);
  add(
      "bmm_1d_lhs", "v @ m2", [in](const Env& e) { return matmul(in(e, "v"), in(e, "m2")); },
      kSumTol, kSumTol);
  add(
      "bmm_broadcast", "p4 @ q3", [in](const Env& e) { return in(e, "p4").matmul(in(e, "q3")); },
      kSumTol, kSumTol);
  add("mm_int", "j @ j.t()", [in](const Env& e) { return matmul(in(e, "j"), in(e, "j").t()); });
  // Reductions.
  add(
      "sum_all", "x.sum()", [in](const Env& e) { return in(e, "x").sum(); }, kSumTol, kSumTol);
  add(
      "sum_dim", "x.sum(1)", [in](const Env& e) { return in(e, "x").sum({1}); }, kSumTol, kSumTol);
  add(
      "sum_keepdim", "m1.sum((0, 2), keepdim=True)",
      [in](const Env& e) {
        return in(e, "m1").sum({0, -1}, true);
      },
      kSumTol, kSumTol);
  add("sum_int", "i.sum(0)", [in](const Env& e) { return in(e, "i").sum({0}); });
  add("sum_bool", "mask.sum()", [in](const Env& e) { return in(e, "mask").sum(); });
  add(
      "mean", "x.mean()", [in](const Env& e) { return in(e, "x").mean(); }, kSumTol, kSumTol);
  add(
      "mean_dims", "m1.mean((1,), keepdim=True)",
      [in](const Env& e) { return in(e, "m1").mean({1}, true); }, kSumTol, kSumTol);
  add("max_all", "x.max()", [in](const Env& e) { return in(e, "x").max(); });
  add("amax", "torch.amax(m1, (0, 2))", [in](const Env& e) {
    return podsim::max(in(e, "m1"), {0, 2});
  });
  add("amin_keepdim", "torch.amin(x, 1, keepdim=True)",
      [in](const Env& e) { return in(e, "x").min({1}, true); });
  add("max_nan", "torch.amax(xnan, 1)", [in](const Env& e) { return in(e, "xnan").max({1}); });
  add("max_int", "torch.amax(i, 0)", [in](const Env& e) { return in(e, "i").max({0}); });
  add("argmax_all", "x.argmax()", [in](const Env& e) { return in(e, "x").argmax(); });
  add("argmax_dim", "x.argmax(1)", [in](const Env& e) { return in(e, "x").argmax(1); });
  add("argmax_ties", "ties.argmax(1, keepdim=True)",
      [in](const Env& e) { return in(e, "ties").argmax(1, true); });
  add("argmax_nan", "xnan.argmax(1)", [in](const Env& e) { return in(e, "xnan").argmax(1); });
  add("argmin_dim0", "x.argmin(0)", [in](const Env& e) { return in(e, "x").argmin(0); });
  add(
      "logsumexp", "torch.logsumexp(big, 1)",
      [in](const Env& e) { return logsumexp(in(e, "big"), {1}); }, kSoftTol, 1e-6);
  add(
      "logsumexp_inf", "torch.logsumexp(inf, (0,), keepdim=True)",
      [in](const Env& e) { return in(e, "inf").logsumexp({0}, true); }, kSoftTol, 1e-6);
  add(
      "softmax", "torch.softmax(big, 1)", [in](const Env& e) { return softmax(in(e, "big"), 1); },
      kSoftTol, 1e-6);
  add(
      "softmax_dim0", "torch.softmax(x, 0)", [in](const Env& e) { return in(e, "x").softmax(0); },
      kSoftTol, 1e-6);
  add(
      "log_softmax", "torch.log_softmax(big, -1)",
      [in](const Env& e) { return log_softmax(in(e, "big"), -1); }, kSoftTol, 1e-6);
  // Shapes and indexing.
  add("reshape", "x.reshape(2, 6)", [in](const Env& e) { return in(e, "x").reshape({2, 6}); });
  add("view_infer", "m1.view(-1, 4)", [in](const Env& e) { return in(e, "m1").view({-1, 4}); });
  add("permute", "m1.permute(2, 0, 1)", [in](const Env& e) {
    return in(e, "m1").permute({2, 0, 1});
  });
  add("transpose", "m1.transpose(0, -1)",
      [in](const Env& e) { return in(e, "m1").transpose(0, -1); });
  add("expand", "col.expand(2, 3, 5)", [in](const Env& e) {
    return in(e, "col").expand({2, 3, 5});
  });
  add("expand_keep", "col.expand(-1, 4)", [in](const Env& e) {
    return in(e, "col").expand({-1, 4});
  });
  add("cat0", "torch.cat([x, y], 0)", [in](const Env& e) {
    return cat({in(e, "x"), in(e, "y")}, 0);
  });
  add("cat_promote", "torch.cat([x, i], 1)", [in](const Env& e) {
    return cat({in(e, "x"), in(e, "i")}, -1);
  });
  add("stack", "torch.stack([x, y], 1)", [in](const Env& e) {
    return stack({in(e, "x"), in(e, "y")}, 1);
  });
  add("slice_step", "x[:, 1:4:2]", [in](const Env& e) { return in(e, "x").slice(1, 1, 4, 2); });
  add("slice_negative", "x[-2:]", [in](const Env& e) { return in(e, "x").slice(0, -2); });
  add("slice_clamped", "x[:, 2:100]", [in](const Env& e) { return in(e, "x").slice(1, 2, 100); });
  add("narrow", "m1.narrow(2, 1, 2)", [in](const Env& e) { return in(e, "m1").narrow(2, 1, 2); });
  add("index_select", "x.index_select(1, idx)",
      [in](const Env& e) { return in(e, "x").index_select(1, in(e, "idx")); });
  add("index_select0", "m1.index_select(0, idx2)",
      [in](const Env& e) { return in(e, "m1").index_select(0, in(e, "idx2")); });
  add("gather", "torch.gather(x, 1, gidx)",
      [in](const Env& e) { return in(e, "x").gather(1, in(e, "gidx")); });
  add("gather0", "torch.gather(x, 0, gidx0)",
      [in](const Env& e) { return gather(in(e, "x"), 0, in(e, "gidx0")); });
  add("squeeze", "col.squeeze()", [in](const Env& e) { return in(e, "col").squeeze(); });
  add("unsqueeze", "x.unsqueeze(1)", [in](const Env& e) { return in(e, "x").unsqueeze(1); });
  add("flatten", "m1.flatten(1)", [in](const Env& e) { return in(e, "m1").flatten(1); });
  // Creation and conversion.
  add("full", "torch.full((2, 3), 1.5)", [in](const Env& e) {
    return full({2, 3}, 1.5, in(e, "x").device());
  });
  add("full_int", "torch.full((2,), 7)",
      [in](const Env& e) { return full({2}, 7, in(e, "x").device()); });
  add("zeros", "torch.zeros(3)", [in](const Env& e) { return zeros({3}, in(e, "x").device()); });
  add("ones_int", "torch.ones(2, 2, dtype=torch.int32)", [in](const Env& e) {
    return ones({2, 2}, {kInt32, in(e, "x").device()});
  });
  add("arange", "torch.arange(5)", [in](const Env& e) { return arange(5, in(e, "x").device()); });
  add("arange_float", "torch.arange(0, 1, 0.1)",
      [in](const Env& e) { return arange(0, 1, 0.1, in(e, "x").device()); });
  add("arange_down", "torch.arange(10, 1, -3)",
      [in](const Env& e) { return arange(10, 1, -3, in(e, "x").device()); });
  add("to_int", "(x * 3).to(torch.int32)",
      [in](const Env& e) { return (in(e, "x") * 3).to(kInt32); });
  add("to_bool", "x.to(torch.bool)", [in](const Env& e) { return in(e, "x").to(kBool); });
  add("to_bf16", "x.to(torch.bfloat16)", [in](const Env& e) { return in(e, "x").to(kBFloat16); });
  // bf16.
  add("bf16_add", "h + h", [in](const Env& e) { return in(e, "h") + in(e, "h"); });
  add(
      "bf16_mul_scalar", "h * 3", [in](const Env& e) { return in(e, "h") * 3; }, 8e-3);
  add(
      "bf16_sum", "h.sum(1)", [in](const Env& e) { return in(e, "h").sum({1}); }, 8e-3, 1e-2);
  add(
      "bf16_softmax", "torch.softmax(h, 1)", [in](const Env& e) { return in(e, "h").softmax(1); },
      8e-3, 1e-3);
  add("bf16_promote", "h + x", [in](const Env& e) { return in(e, "h") + in(e, "x"); });
  return c;
}

// Deterministic inputs (so that any failure reproduces).
ir::NamedLiterals make_inputs() {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> uniform(0.25f, 3.f);
  std::uniform_int_distribution<int> ints(-4, 4);
  auto literal = [](DType t, std::vector<int64_t> dims, auto&& gen) {
    ir::Literal l(ir::Shape(t, dims));
    for (int64_t k = 0; k < l.num_elements(); ++k) l.set_from_double(k, gen(k));
    return l;
  };
  ir::NamedLiterals in;
  auto f = [&](std::vector<int64_t> dims, double scale = 1) {
    return literal(kFloat32, std::move(dims), [&](int64_t) { return normal(rng) * scale; });
  };
  in.emplace_back("x", f({3, 4}));
  in.emplace_back("y", f({3, 4}));
  in.emplace_back("row", f({4}));
  in.emplace_back("col", f({3, 1}));
  in.emplace_back("s", f({}));
  in.emplace_back("pos", literal(kFloat32, {3, 4}, [&](int64_t) { return uniform(rng); }));
  in.emplace_back("wide", f({4, 8}, 4));
  in.emplace_back("big", f({3, 5}, 60));
  in.emplace_back(
      "xnan", literal(kFloat32, {3, 4}, [&](int64_t k) { return k % 5 == 2 ? NAN : normal(rng); }));
  in.emplace_back(
      "inf", literal(kFloat32, {2, 3}, [&](int64_t k) {
        return k == 0 || k == 3 ? -INFINITY : k == 1 ? -INFINITY : k == 4 ? INFINITY : 1.0;
      }));
  in.emplace_back("ties", literal(kFloat32, {3, 4},
                                  [&](int64_t k) { return k % 4 == 1 || k % 4 == 3 ? 2.0 : 1.0; }));
  in.emplace_back("i", literal(kInt32, {3, 4}, [&](int64_t) { return ints(rng); }));
  in.emplace_back(
      "j", literal(kInt32, {3, 4}, [&](int64_t k) { return k % 3 == 0 ? 2 : ints(rng) | 1; }));
  in.emplace_back("mask", literal(kBool, {3, 4}, [&](int64_t k) { return (k * 7) % 3 == 0; }));
  in.emplace_back("mask2", literal(kBool, {3, 4}, [&](int64_t k) { return k % 2 == 0; }));
  in.emplace_back("b", f({4, 5}));
  in.emplace_back("v", f({4}));
  in.emplace_back("m1", f({2, 3, 4}));
  in.emplace_back("m2", f({2, 4, 5}));
  in.emplace_back("p4", f({2, 1, 3, 4}));
  in.emplace_back("q3", f({5, 4, 2}));
  in.emplace_back("idx", literal(kInt64, {5}, [&](int64_t k) { return (k * 3) % 4; }));
  in.emplace_back("idx2", literal(kInt32, {3}, [&](int64_t k) { return 1 - k % 2; }));
  in.emplace_back("gidx", literal(kInt64, {3, 2}, [&](int64_t k) { return (k * 5 + 1) % 4; }));
  in.emplace_back("gidx0", literal(kInt64, {2, 4}, [&](int64_t k) { return (k * 2) % 3; }));
  in.emplace_back("h", literal(kBFloat16, {3, 4}, [&](int64_t) { return normal(rng); }));
  return in;
}

constexpr const char* kTorchScript = R"PY(
import json, struct, sys
import torch
import torch.nn.functional as F

TYPES = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16,
         "F16": torch.float16, "I64": torch.int64, "I32": torch.int32, "I16": torch.int16,
         "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool}

def read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        dtype = TYPES[info["dtype"]]
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(info["shape"])
    return out

inputs = read(sys.argv[1])
cases = json.load(open(sys.argv[2]))
env = dict(inputs)
env.update(torch=torch, F=F)
results, header, blobs, offset = {}, {}, [], 0
for case in cases:
    r = eval(case["expr"], env)
    info = {"dtype": str(r.dtype).replace("torch.", ""), "shape": list(r.shape)}
    if r.dtype in (torch.bfloat16, torch.float16):
        r = r.float()
    if r.dtype == torch.bool:
        r = r.to(torch.uint8)
    raw = r.contiguous().numpy().tobytes()
    info["offset"] = offset
    info["bytes"] = len(raw)
    info["storage"] = str(r.dtype).replace("torch.", "")
    header[case["name"]] = info
    blobs.append(raw)
    offset += len(raw)
open(sys.argv[3], "wb").write(b"".join(blobs))
json.dump(header, open(sys.argv[4], "w"))
)PY";

struct TorchResult {
  std::string dtype;  // torch's name: float32, int64, bool, bfloat16, ...
  std::vector<int64_t> shape;
  std::vector<double> values;
};

std::string torch_dtype_name(DType t) {
  switch (t) {
    case kBool:
      return "bool";
    case kUInt8:
      return "uint8";
    case kInt8:
      return "int8";
    case kInt16:
      return "int16";
    case kInt32:
      return "int32";
    case kInt64:
      return "int64";
    case kFloat16:
      return "float16";
    case kBFloat16:
      return "bfloat16";
    case kFloat32:
      return "float32";
    case kFloat64:
      return "float64";
    default:
      return std::string(ir::type_name(t));
  }
}

class TorchOracle {
 public:
  // Runs torch once for every case.
  static const std::map<std::string, TorchResult>* results(std::string* error) {
    static std::string failure;
    static std::map<std::string, TorchResult>* cached = compute(&failure);
    *error = failure;
    return cached;
  }

 private:
  static std::map<std::string, TorchResult>* compute(std::string* failure) {
    namespace fs = std::filesystem;
    // One directory per process: ctest may run the cases of this binary in parallel.
    fs::path dir =
        fs::path(PODSIM_BINARY_DIR) / "tests" / fmt::format("runtime_ops_oracle.{}", getpid());
    fs::create_directories(dir);
    ir::write_safetensors((dir / "inputs.safetensors").string(), make_inputs());
    nlohmann::json list = nlohmann::json::array();
    for (const Case& c : cases()) list.push_back({{"name", c.name}, {"expr", c.torch}});
    std::ofstream(dir / "cases.json") << list.dump();
    std::ofstream(dir / "oracle.py") << kTorchScript;
    std::string command = fmt::format(
        "{} {} {} {} {} {} > {} 2>&1", PODSIM_PYTHON, (dir / "oracle.py").string(),
        (dir / "inputs.safetensors").string(), (dir / "cases.json").string(),
        (dir / "out.bin").string(), (dir / "out.json").string(), (dir / "log.txt").string());
    if (std::system(command.c_str()) != 0) {
      std::ifstream log(dir / "log.txt");
      *failure = "the torch oracle failed: " + std::string(std::istreambuf_iterator<char>(log), {});
      return nullptr;
    }
    std::ifstream blob_file(dir / "out.bin", std::ios::binary);
    std::string blob((std::istreambuf_iterator<char>(blob_file)), {});
    nlohmann::json header = nlohmann::json::parse(std::ifstream(dir / "out.json"));
    fs::remove_all(dir);
    auto* out = new std::map<std::string, TorchResult>;
    for (const auto& [name, info] : header.items()) {
      TorchResult r;
      r.dtype = info["dtype"].get<std::string>();
      r.shape = info["shape"].get<std::vector<int64_t>>();
      auto storage = info["storage"].get<std::string>();
      auto offset = info["offset"].get<size_t>();
      auto bytes = info["bytes"].get<size_t>();
      const char* p = blob.data() + offset;
      auto read_all = [&]<typename T>() {
        for (size_t k = 0; k < bytes / sizeof(T); ++k) {
          T v;
          std::memcpy(&v, p + k * sizeof(T), sizeof(T));
          r.values.push_back(static_cast<double>(v));
        }
      };
      if (storage == "float32")
        read_all.operator()<float>();
      else if (storage == "float64")
        read_all.operator()<double>();
      else if (storage == "int64")
        read_all.operator()<int64_t>();
      else if (storage == "int32")
        read_all.operator()<int32_t>();
      else if (storage == "int16")
        read_all.operator()<int16_t>();
      else if (storage == "int8")
        read_all.operator()<int8_t>();
      else if (storage == "uint8")
        read_all.operator()<uint8_t>();
      (*out)[name] = std::move(r);
    }
    return out;
  }
};

void expect_matches(const Case& c, const Tensor& t, const TorchResult& want,
                    const std::string& where) {
  SCOPED_TRACE(fmt::format("{} on {}: {}", c.name, where, c.torch));
  EXPECT_EQ(torch_dtype_name(t.dtype()), want.dtype);
  ASSERT_EQ(t.shape(), want.shape);
  ir::Literal got = t.to_literal();
  ASSERT_EQ(static_cast<size_t>(got.num_elements()), want.values.size());
  for (size_t k = 0; k < want.values.size(); ++k) {
    double a = got.get_as_double(static_cast<int64_t>(k)), b = want.values[k];
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(a)) << "element " << k << ": got " << a << ", torch NaN";
    } else if (std::isinf(b)) {
      EXPECT_EQ(a, b) << "element " << k;
    } else {
      EXPECT_LE(std::fabs(a - b), c.atol + c.rtol * std::fabs(b))
          << "element " << k << ": got " << a << ", torch " << b;
    }
  }
}

class OpsAgainstTorch : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    oracle_ = TorchOracle::results(&error);
    if (oracle_ == nullptr) {
      if (error.find("No module named 'torch'") != std::string::npos) GTEST_SKIP() << error;
      FAIL() << error;
    }
  }
  const std::map<std::string, TorchResult>* oracle_ = nullptr;
};

TEST_F(OpsAgainstTorch, OnTheHostOpByOp) {
  Env env;
  for (auto& [name, literal] : make_inputs()) env[name] = Tensor::from_literal(literal);
  for (const Case& c : cases()) {
    Tensor t = c.op(env);
    EXPECT_TRUE(t.is_host()) << c.name;
    expect_matches(c, t, oracle_->at(c.name), "host");
  }
}

TEST_F(OpsAgainstTorch, OnTheDeviceAsOneLazyGraph) {
  Env env;
  for (auto& [name, literal] : make_inputs())
    env[name] = Tensor::from_literal(literal, &podsim::device());
  std::vector<Tensor> results;
  for (const Case& c : cases()) results.push_back(c.op(env));
  mark_step();
  const std::vector<Case> all = cases();
  for (size_t k = 0; k < all.size(); ++k) {
    EXPECT_FALSE(results[k].is_pending()) << all[k].name;
    expect_matches(all[k], results[k], oracle_->at(all[k].name), podsim::device().name());
  }
}

TEST_F(OpsAgainstTorch, EveryOpInEagerMode) {
  set_eager_mode(true);
  Env env;
  for (auto& [name, literal] : make_inputs())
    env[name] = Tensor::from_literal(literal, &podsim::device());
  for (const Case& c : cases()) {
    Tensor t = c.op(env);
    EXPECT_FALSE(t.is_pending()) << c.name;
    expect_matches(c, t, oracle_->at(c.name), "eager");
  }
  set_eager_mode(false);
}

}  // namespace
}  // namespace podsim
