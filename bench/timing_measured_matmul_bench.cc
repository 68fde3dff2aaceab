// Published TPU v6e matmul timings (bench/measurements/tpu_v6e_matmul.csv: JAX on a real
// v6e, XLA profiler fusion time) against the timing model: every row compiled for the
// v6e preset and run timing-only; prints simulated vs measured time, the ratio, and the
// median and worst error and how many rows are within 10%.
//   build/bin/bench/timing_measured_matmul_bench [--dtype bf16|f32] [--chip v6e|chip.toml]
//                                               [--file measurements.csv]
//                                               [--hbm channels|request-time]
// The file does not record the operands' dtype; bf16 is the default (v6e's MXU type; an
// f16 matmul runs on a v6e as bf16 MXU passes after XLA's conversions, which the TPU
// target does not lower yet: sim/timing/README.md, "f16").
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <string>

#include "bench/measured_matmul.h"

int main(int argc, char** argv) {
  std::string dtype = "bf16", chip_name = "v6e", hbm = "request-time";
  std::string file = podsim::bench::default_matmul_measurements();
  for (int k = 1; k + 1 < argc; k += 2) {
    if (std::strcmp(argv[k], "--dtype") == 0)
      dtype = argv[k + 1];
    else if (std::strcmp(argv[k], "--chip") == 0)
      chip_name = argv[k + 1];
    else if (std::strcmp(argv[k], "--file") == 0)
      file = argv[k + 1];
    else if (std::strcmp(argv[k], "--hbm") == 0)
      hbm = argv[k + 1];
    else {
      fmt::print(stderr, "unknown option {}\n", argv[k]);
      return 2;
    }
  }
  try {
    const podsim::topology::ChipConfig chip = podsim::topology::chip_config(chip_name);
    const auto start = std::chrono::steady_clock::now();
    const auto rows = podsim::bench::simulate_matmul_measurements(chip, file, dtype, hbm);
    const double host_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("{} on {} ({} operands, timing-only, HBM model {})\n", file, chip.name, dtype, hbm);
    fmt::print("{:>6} {:>6} {:>6} {:>12} {:>13} {:>7}\n", "M", "N", "K", "measured_us",
               "simulated_us", "ratio");
    for (const auto& r : rows)
      fmt::print("{:>6} {:>6} {:>6} {:>12.2f} {:>13.2f} {:>7.3f}\n", r.measured.m, r.measured.n,
                 r.measured.k, r.measured.measured_us, r.simulated_us, r.ratio());
    const auto s = podsim::bench::summarize(rows);
    const auto& w = rows.at(s.worst);
    fmt::print(
        "median error {:.1f}%, worst {:.1f}% (M={} N={} K={}: ratio {:.3f}), {} of {} within "
        "10%; {:.1f} s on the host\n",
        100 * s.median_error, 100 * s.worst_error, w.measured.m, w.measured.n, w.measured.k,
        w.ratio(), s.within_10_percent, s.rows, host_s);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
