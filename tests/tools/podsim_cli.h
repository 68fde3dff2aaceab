// Runs the podsim CLI built with the tests (PODSIM_BINARY_DIR/bin/podsim) for the CLI
// integration tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace podsim::cli_testing {

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// args are passed through the shell as written.
inline Result podsim(const std::string& args) {
  std::string cmd = std::string(PODSIM_BINARY_DIR) + "/bin/podsim " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed: " + cmd};
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace podsim::cli_testing
