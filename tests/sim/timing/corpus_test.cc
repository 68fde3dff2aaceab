// Every HLO module of the TPU lowering's test corpus (the raw-string modules in
// tests/compiler/tpu/*_test.cc and examples/hlo) that compiles for the tiny chip runs on
// the timed model with exactly the functional model's outputs, without hazards, and
// with a well-formed profile. The modules are read from the test sources so that new
// lowering tests join this corpus by themselves.
#include <filesystem>
#include <random>

#include "compiler/ir/parser.h"
#include "compiler/tpu/tpu_compiler.h"
#include "tests/compiler/tpu/tpu_test_util.h"
#include "tests/sim/timing/timing_test_util.h"

namespace podsim::sim::timing::testing {
namespace {

// The raw string literals R"delim(...)delim" of a C++ source that hold an HLO module.
std::vector<std::string> hlo_literals(const std::string& source) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = source.find("R\"", at)) != std::string::npos) {
    size_t open = source.find('(', at + 2);
    if (open == std::string::npos) break;
    std::string delim = source.substr(at + 2, open - at - 2);
    if (delim.size() > 16 || delim.find_first_of(" \n\"") != std::string::npos) {
      at += 2;
      continue;
    }
    std::string close = ")" + delim + "\"";
    size_t end = source.find(close, open + 1);
    if (end == std::string::npos) break;
    std::string body = source.substr(open + 1, end - open - 1);
    if (body.find("HloModule") != std::string::npos && body.find('{') != std::string::npos)
      out.push_back(body);
    at = end + close.size();
  }
  return out;
}

struct Module {
  std::string origin;
  std::string hlo;
};

std::vector<Module> corpus() {
  std::vector<Module> out;
  std::string root = PODSIM_SOURCE_DIR;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(root + "/tests/compiler/tpu"))
    if (entry.path().extension() == ".cc") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::vector<std::string> found = hlo_literals(read_text(f.string()));
    for (size_t i = 0; i < found.size(); ++i)
      out.push_back({f.filename().string() + " #" + std::to_string(i), found[i]});
  }
  out.push_back(
      {"examples/hlo/mlp_forward.hlo", read_text(root + "/examples/hlo/mlp_forward.hlo")});
  return out;
}

std::vector<std::vector<uint8_t>> as_bytes(const std::vector<ir::Literal>& args) {
  std::vector<std::vector<uint8_t>> out;
  for (const ir::Literal& a : args) {
    auto b = a.bytes();
    const auto* p = reinterpret_cast<const uint8_t*>(b.data());
    out.emplace_back(p, p + b.size());
  }
  return out;
}

TEST(TimingCorpus, EveryCompiledModuleMatchesTheFunctionalModelWithoutHazards) {
  int compiled = 0;
  for (const Module& m : corpus()) {
    for (bool fuse : {false, true}) {
      SCOPED_TRACE(m.origin + (fuse ? " (fused)" : ""));
      isa::Executable exe;
      std::vector<ir::Literal> args;
      try {
        auto module = ir::parse_module(m.hlo);
        std::mt19937_64 rng(7);
        for (const ir::Instruction* p : module->entry()->parameters())
          args.push_back(tpu::testing::random_literal(p->shape(), rng, -1, 1));
        tpu::Options options;
        options.passes = fuse;
        exe = tpu::compile(*module, topology::preset("tiny"), options);
      } catch (const std::exception&) {
        continue;  // not in what the lowering supports (or a template with placeholders)
      }
      std::vector<std::vector<uint8_t>> params = as_bytes(args);
      std::vector<std::vector<uint8_t>> expected;
      try {
        expected = functional_outputs(exe, params);
      } catch (const std::exception&) {
        continue;  // a run-time fault on these inputs (e.g. a data-dependent loop bound)
      }
      ++compiled;
      TimingOptions o;
      o.check_hazards = true;
      TimedRunResult r = run_timed(exe, params, o);
      EXPECT_EQ(r.outputs, expected);
      EXPECT_TRUE(r.hazards.empty()) << r.hazards.front().message;
      EXPECT_GT(r.cycles, 0u);
      EXPECT_TRUE(well_formed(r.profile));
    }
  }
  // The corpus has more than 50 modules; most compile for the tiny chip.
  EXPECT_GE(compiled, 40);
  std::cout << compiled << " corpus module variants ran on the timed model\n";
}

}  // namespace
}  // namespace podsim::sim::timing::testing
