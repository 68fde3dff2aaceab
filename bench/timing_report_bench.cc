// `podsim profile report` on one step of a 64-chip pod: a data-parallel MLP training
// step (forward and backward of two 1024x4096 layers on a batch of 256 per chip, the
// weight gradients all-reduced over every chip), compiled for the pod and run
// timing-only with its profile. Prints the profile's spans, the time html_report() takes
// and the file's size, and, where headless Chromium is installed (/usr/bin/chromium),
// how long the page takes to load and draw every chart (body[data-render-ms], from
// navigation to the last chart; goal: under 2 s) and the browser process's wall time.
//
//   build/bin/bench/timing_report_bench [POD ...]   (default v5e:8x8 v4:4x4x4)
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/tpu/tpu_compiler.h"
#include "sim/timing/timed_chip.h"
#include "topology/pod_config.h"
#include "traces/html_report.h"

namespace {

constexpr const char* kStep = R"(HloModule mlp_step
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY step {
  x = f32[256,1024] parameter(0)
  w1 = f32[1024,4096] parameter(1)
  w2 = f32[4096,1024] parameter(2)
  dy = f32[256,1024] parameter(3)
  h = f32[256,4096] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  zeros = f32[256,4096] broadcast(zero), dimensions={}
  a = f32[256,4096] maximum(h, zeros)
  y = f32[256,1024] dot(a, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  g2 = f32[4096,1024] dot(a, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  da = f32[256,4096] dot(dy, w2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  g1 = f32[1024,4096] dot(x, da), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  s1 = f32[1024,4096] all-reduce(g1), to_apply=add
  s2 = f32[4096,1024] all-reduce(g2), to_apply=add
  ROOT t = (f32[256,1024], f32[1024,4096], f32[4096,1024]) tuple(y, s1, s2)
}
)";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void measure(const std::string& pod_name) {
  using namespace podsim;
  const topology::PodConfig pod = topology::pod_config(pod_name);
  const isa::Executable exe = tpu::compile(*ir::parse_module(kStep), tpu::Target(pod));
  sim::timing::TimingOptions options;
  options.timing_only = true;
  auto start = std::chrono::steady_clock::now();
  const sim::timing::PodRunResult run = sim::timing::run_timed_pod(exe, {}, options);
  const double simulate = seconds_since(start);
  size_t spans = 0;
  for (const traces::ChipProfile& c : run.profile.chips)
    for (const traces::Track& t : c.tracks) spans += t.spans.size();

  start = std::chrono::steady_clock::now();
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("podsim_report_bench_{}.html", ::getpid())).string();
  traces::write_html_report({{pod_name, run.profile}}, path);
  const double generate = seconds_since(start);
  const auto bytes = std::filesystem::file_size(path);
  fmt::print("{:<10} {:>5} chips  step {:>9.2f} us  {:>8} spans (simulated in {:.1f} s)  report {:.3f} s, {:.2f} MB",
             pod_name, run.profile.chips.size(), run.seconds * 1e6, spans, simulate, generate, bytes / 1e6);
  if (std::filesystem::exists("/usr/bin/chromium")) {
    const std::string dom = path + ".dom";
    start = std::chrono::steady_clock::now();
    const std::string command = "/usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run "
                                "--virtual-time-budget=20000 --dump-dom file://" + path + " > " + dom + " 2>/dev/null";
    const int status = std::system(command.c_str());
    const double browser = seconds_since(start);
    std::ifstream in(dom);
    std::stringstream text;
    text << in.rdbuf();
    std::smatch m;
    const std::string page = text.str();
    if (status == 0 && std::regex_search(page, m, std::regex(R"re(data-render="done" data-render-ms="(\d+)")re")))
      fmt::print("  drawn in {} ms (browser process {:.2f} s)", m[1].str(), browser);
    else
      fmt::print("  the page did not finish drawing");
    std::filesystem::remove(dom);
  }
  fmt::print("\n");
  std::filesystem::remove(path);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pods;
  for (int k = 1; k < argc; ++k) pods.emplace_back(argv[k]);
  if (pods.empty()) pods = {"v5e:8x8", "v4:4x4x4"};
  for (const std::string& pod : pods) measure(pod);
  return 0;
}
