// Runs a PyTorch 1.13 oracle script (through PODSIM_PYTHON) from a test and reads back
// the safetensors file it writes:
//   PODSIM_PYTHON SCRIPT ARGS... [INPUT FILES...] OUT.safetensors
// Input files are written to a scratch directory of this process first (ctest runs each
// case of a binary in a process of its own). Results are cached in the build directory
// under a hash of the script, its arguments and inputs, so that the cases of one binary
// start Python and import torch once, not once each; remove build-X/tests/torch_oracle_cache
// after changing torch.
#pragma once

#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/safetensors.h"

namespace podsim::torch_oracle {

struct OracleResult {
  std::map<std::string, ir::Literal> tensors;
  std::string error;  // non-empty if the script failed (its output)
};

struct OracleInputFile {
  std::string name;  // "in.safetensors"
  std::string content;
};

// script is relative to the source tree. cacheable: false for oracles that check
// something outside the inputs (a file as Python reads it now).
inline OracleResult run_torch_script(const std::string& script,
                                     const std::vector<std::string>& args,
                                     const std::vector<OracleInputFile>& inputs = {},
                                     bool cacheable = true) {
  namespace fs = std::filesystem;
  static int calls = 0;
  const fs::path tests = fs::path(PODSIM_BINARY_DIR) / "tests";
  const fs::path dir = tests / fmt::format("torch_oracle.{}.{}", ::getpid(), calls++);
  fs::create_directories(dir);
  const std::string script_path = (fs::path(PODSIM_SOURCE_DIR) / script).string();
  std::ifstream script_file(script_path);
  std::string key = std::string(std::istreambuf_iterator<char>(script_file), {});
  std::string command = fmt::format("{} {}", PODSIM_PYTHON, script_path);
  for (const std::string& arg : args) {
    key += '\0' + arg;
    command += " " + arg;
  }
  for (const OracleInputFile& input : inputs) {
    key += '\0' + input.name + '\0' + input.content;
    std::ofstream(dir / input.name, std::ios::binary) << input.content;
    command += " " + (dir / input.name).string();
  }
  const fs::path cache = tests / "torch_oracle_cache" /
                         fmt::format("{:016x}.safetensors", std::hash<std::string>()(key));
  OracleResult result;
  if (cacheable && fs::exists(cache)) {
    for (auto& [name, literal] : ir::read_safetensors(cache.string()))
      result.tensors.emplace(name, std::move(literal));
    fs::remove_all(dir);
    return result;
  }
  const std::string out = (dir / "out.safetensors").string();
  command += fmt::format(" {} > {} 2>&1", out, (dir / "log.txt").string());
  if (std::system(command.c_str()) != 0) {
    std::ifstream log(dir / "log.txt");
    result.error = "the torch oracle failed (" + command +
                   "): " + std::string(std::istreambuf_iterator<char>(log), {});
  } else {
    ir::NamedLiterals tensors = ir::read_safetensors(out);
    if (cacheable) {
      fs::create_directories(cache.parent_path());
      ir::write_safetensors(cache.string(), tensors);  // atomic: parallel writers are fine
    }
    for (auto& [name, literal] : tensors) result.tensors.emplace(name, std::move(literal));
  }
  fs::remove_all(dir);
  return result;
}

// The bytes of a safetensors file holding tensors (an input file for a script).
inline std::string safetensors_content(const ir::NamedLiterals& tensors) {
  std::string content;
  for (const std::byte b : ir::serialize_safetensors(tensors))
    content.push_back(static_cast<char>(b));
  return content;
}

}  // namespace podsim::torch_oracle
