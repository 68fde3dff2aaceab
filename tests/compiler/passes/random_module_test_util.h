// Random HLO modules for the pass tests: DAGs of elementwise ops, data movement,
// reductions and dots over a few related shapes, where values have several users and
// reuse is biased towards recent values, so that fusion meets shared producers,
// non-fusible barriers and diamonds.
#pragma once

#include <cctype>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace podsim::passes::testing {

class RandomModule {
 public:
  explicit RandomModule(uint64_t seed) : rng_(seed) {}

  std::string build(int instructions) {
    body_.clear();
    pools_.clear();
    used_.clear();
    counter_ = 0;
    define("f32[4,6]", "parameter(0)");
    define("f32[4,6]", "parameter(1)");
    define("f32[4]", "parameter(2)");
    define("f32[]", "parameter(3)");
    define("s32[4,6]", "parameter(4)");
    for (int k = 0; k < instructions; ++k) step();
    // Every value of the main shapes that nothing uses yet goes into the result, so
    // that nothing is trivially dead.
    std::vector<std::string> outputs, shapes;
    for (const auto& [shape, names] : pools_)
      for (const std::string& n : names)
        if (!used_.count(n) && shape != "f32[]") {
          outputs.push_back(n);
          shapes.push_back(shape);
        }
    std::string tuple_shape = "(", operands;
    for (size_t k = 0; k < outputs.size(); ++k) {
      tuple_shape += (k ? ", " : "") + shapes[k];
      operands += (k ? ", " : "") + outputs[k];
    }
    body_ += "  ROOT out = " + tuple_shape + ") tuple(" + operands + ")\n";
    return "HloModule random\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT "
           "c = f32[] add(a, b)\n}\n\n"
           "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] maximum(a, "
           "b)\n}\n\n"
           "ENTRY main {\n" +
           body_ + "}\n";
  }

 private:
  std::string define(const std::string& shape, const std::string& expression) {
    // Values named in the expression have a user now.
    for (size_t k = 0; k + 1 < expression.size(); ++k) {
      if (expression[k] != 'v' ||
          (k > 0 && std::isalnum(static_cast<unsigned char>(expression[k - 1]))))
        continue;
      size_t end = k + 1;
      while (end < expression.size() && std::isdigit(static_cast<unsigned char>(expression[end])))
        ++end;
      if (end > k + 1) used_[expression.substr(k, end - k)] = true;
    }
    std::string name = "v" + std::to_string(counter_++);
    body_ += "  " + name + " = " + shape + " " + expression + "\n";
    pools_[shape].push_back(name);
    return name;
  }

  // A value of shape, recent ones more likely; "" when there is none.
  std::string pick(const std::string& shape) {
    auto& pool = pools_[shape];
    if (pool.empty()) return "";
    size_t n = pool.size();
    size_t back = std::min<size_t>(n - 1, std::geometric_distribution<size_t>(0.35)(rng_));
    return pool[n - 1 - back];
  }

  int roll(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  void step() {
    static const char* kUnary[] = {"negate", "exponential", "abs", "tanh", "sine", "floor"};
    static const char* kBinary[] = {"add", "multiply", "subtract", "maximum", "minimum", "divide"};
    const std::string a = "f32[4,6]";
    switch (roll(14)) {
      case 0:
      case 1: {
        std::string x = pick(a);
        define(a, std::string(kUnary[roll(6)]) + "(" + x + ")");
        break;
      }
      case 2:
      case 3:
      case 4: {
        std::string x = pick(a), y = pick(a);
        define(a, std::string(kBinary[roll(6)]) + "(" + x + ", " + y + ")");
        break;
      }
      case 5: {
        std::string x = pick(a), y = pick(a);
        std::string p = define("pred[4,6]", "compare(" + x + ", " + y + "), direction=LT");
        define(a, "select(" + p + ", " + x + ", " + y + ")");
        break;
      }
      case 6: {
        std::string v = pick("f32[4]");
        define(a, "broadcast(" + v + "), dimensions={0}");
        break;
      }
      case 7: {
        std::string c = define("f32[]", "constant(" + std::to_string(roll(5) - 2) + ".5)");
        std::string b = define(a, "broadcast(" + c + "), dimensions={}");
        define(a, "multiply(" + pick(a) + ", " + b + ")");
        break;
      }
      case 8: {
        std::string f = define("f32[24]", "reshape(" + pick(a) + ")");
        std::string r = define("f32[24]", "reverse(" + f + "), dimensions={0}");
        define(a, "reshape(" + r + ")");
        break;
      }
      case 9: {
        std::string t = define("f32[6,4]", "transpose(" + pick(a) + "), dimensions={1,0}");
        std::string e = define("f32[6,4]", "exponential(" + t + ")");
        define(a, "transpose(" + e + "), dimensions={1,0}");
        break;
      }
      case 10: {
        std::string z = define("f32[]", roll(2) ? "constant(0)" : "constant(-inf)");
        define("f32[4]", "reduce(" + pick(a) + ", " + z +
                             "), dimensions={1}, to_apply=" + (roll(2) ? "add" : "max"));
        break;
      }
      case 11: {
        std::string x = pick(a);
        std::string l = define("f32[4,2]", "slice(" + x + "), slice={[0:4], [0:2]}");
        std::string r = define("f32[4,4]", "slice(" + x + "), slice={[0:4], [2:6]}");
        std::string n = define("f32[4,4]", "negate(" + r + ")");
        define(a, "concatenate(" + n + ", " + l + "), dimensions={1}");
        break;
      }
      case 12: {
        std::string t = define("f32[6,4]", "transpose(" + pick(a) + "), dimensions={1,0}");
        std::string d =
            define("f32[4,4]", "dot(" + pick(a) + ", " + t +
                                   "), lhs_contracting_dims={1}, rhs_contracting_dims={0}");
        std::string z = define("f32[]", "constant(0)");
        define(a, "pad(" + d + ", " + z + "), padding=0_0x1_1");
        break;
      }
      default: {
        std::string i = pick("s32[4,6]");
        std::string c = define("f32[4,6]", "convert(" + i + ")");
        std::string s = define("f32[4,6]", "add(" + c + ", " + pick(a) + ")");
        define("s32[4,6]", "convert(" + s + ")");
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  std::string body_;
  std::map<std::string, std::vector<std::string>> pools_;
  std::map<std::string, bool> used_;
  int counter_ = 0;
};

// Random chains rich in what the simplifier, constant folding and CSE rewrite: neutral
// constants (+-0, 1) on both sides, double negations, repeated subexpressions,
// reshape / transpose / broadcast chains, constant predicates, x op x; over an integer
// or a floating-point type.
class RandomAlgebra {
 public:
  RandomAlgebra(uint64_t seed, std::string type) : rng_(seed), t_(std::move(type)) {}

  std::string build(int steps) {
    std::string a = t_ + "[4,6]";
    body_ = "  p0 = " + a + " parameter(0)\n  p1 = " + a + " parameter(1)\n";
    values_ = {"p0", "p1"};
    for (int k = 0; k < steps; ++k) step(a);
    std::string root = values_.back();
    return "HloModule algebra\n\nENTRY main {\n" + body_ + "  ROOT out = " + a + " add(" + root +
           ", " + values_[values_.size() / 2] + ")\n}\n";
  }

 private:
  std::string fresh() { return "w" + std::to_string(counter_++); }
  std::string pick() {
    size_t n = values_.size();
    return values_[n - 1 - std::min<size_t>(n - 1, std::geometric_distribution<size_t>(0.4)(rng_))];
  }
  std::string emit(const std::string& shape, const std::string& expression, bool value = true) {
    std::string name = fresh();
    body_ += "  " + name + " = " + shape + " " + expression + "\n";
    if (value) values_.push_back(name);
    return name;
  }
  int roll(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  void step(const std::string& a) {
    static const char* kConstants[] = {"0", "-0", "1", "2", "-1"};
    static const char* kOps[] = {"add", "subtract", "multiply", "divide", "maximum", "minimum"};
    switch (roll(9)) {
      case 0:
      case 1: {
        std::string value = kConstants[roll(5)];
        if (t_[0] == 'u' && value[0] == '-') value = value.substr(1);  // unsigned: no negatives
        std::string c = emit(t_ + "[]", "constant(" + value + ")", false);
        std::string b = emit(a, "broadcast(" + c + "), dimensions={}", false);
        std::string x = pick();
        emit(a, std::string(kOps[roll(6)]) + "(" + (roll(2) ? x + ", " + b : b + ", " + x) + ")");
        break;
      }
      case 2: {
        std::string n = emit(a, "negate(" + pick() + ")", false);
        emit(a, "negate(" + n + ")");
        break;
      }
      case 3: {
        std::string x = pick(), y = pick();
        std::string op = kOps[roll(6)];
        emit(a, op + "(" + x + ", " + y + ")");
        emit(a, op + "(" + x + ", " + y + ")");
        break;
      }
      case 4: {
        std::string r = emit(t_ + "[24]", "reshape(" + pick() + ")", false);
        std::string r2 = emit(t_ + "[6,4]", "reshape(" + r + ")", false);
        std::string tr = emit(t_ + "[4,6]", "transpose(" + r2 + "), dimensions={1,0}", false);
        std::string tt = emit(t_ + "[6,4]", "transpose(" + tr + "), dimensions={1,0}", false);
        emit(a, "reshape(" + tt + ")");
        break;
      }
      case 5: {
        std::string c = emit("pred[]", roll(2) ? "constant(true)" : "constant(false)", false);
        std::string p = emit("pred[4,6]", "broadcast(" + c + "), dimensions={}", false);
        emit(a, "select(" + p + ", " + pick() + ", " + pick() + ")");
        break;
      }
      case 6: {
        std::string x = pick();
        std::string p =
            emit("pred[4,6]", "compare(" + x + ", " + x + "), direction=" + (roll(2) ? "GE" : "NE"),
                 false);
        emit(a, "select(" + p + ", " + x + ", " + pick() + ")");
        break;
      }
      case 7: {
        std::string c1 =
            emit(t_ + "[4,6]",
                 "constant({{1,2,3,4,5,6},{1,2,3,4,5,6},{0,0,0,0,0,0},{7,7,7,7,7,7}})", false);
        std::string c2 = emit(t_ + "[4,6]", "multiply(" + c1 + ", " + c1 + ")", false);
        emit(a, std::string(kOps[roll(6)]) + "(" + pick() + ", " + c2 + ")");
        break;
      }
      default: {
        std::string x = pick();
        std::string s = emit(t_ + "[4,6]", "slice(" + x + "), slice={[0:4], [0:6]}", false);
        std::string c = emit(t_ + "[4,6]", "concatenate(" + s + "), dimensions={0}", false);
        emit(a, "copy(" + c + ")");
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  std::string t_;
  std::string body_;
  std::vector<std::string> values_;
  int counter_ = 0;
};

}  // namespace podsim::passes::testing
