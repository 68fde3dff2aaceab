// Published TPU matmul timings against the timing model: every row of a measurement file
// (M, N, K, measured microseconds) compiled for a chip preset and run timing-only, with
// the simulated time, the ratio simulated / measured and a summary (median and worst
// error, how many rows within 10%). bench/timing_measured_matmul_bench prints the table;
// tests/sim/timing/measured_matmul_test holds the model to the thresholds.
//
// The file (bench/measurements/tpu_v6e_matmul.csv) is a calibration set: the model's
// parameters are physical and the same for every shape, never fitted to rows.
// Header-only, like bench/roofline.h, so that a test can use it without another library.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/ir/parser.h"
#include "compiler/passes/pass.h"
#include "compiler/tpu/tpu_compiler.h"
#include "sim/timing/timed_chip.h"
#include "topology/chip_config.h"

namespace podsim::bench {

// One published timing: C[M,N] = A[M,K] x B[K,N].
struct MatmulMeasurement {
  int64_t m = 0, n = 0, k = 0;
  double measured_us = 0;
};

// The rows of a measurement file: '#' comments, a header line, then M,N,K,time_us.
inline std::vector<MatmulMeasurement> read_matmul_measurements(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot open the measurement file '{}'", path);
  std::vector<MatmulMeasurement> rows;
  std::string line;
  bool header = true;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    MatmulMeasurement r;
    if (std::sscanf(line.c_str(), "%ld,%ld,%ld,%lf", &r.m, &r.n, &r.k, &r.measured_us) != 4)
      fail("{}:{}: expected M,N,K,time_us", path, line_no);
    rows.push_back(r);
  }
  return rows;
}

// The measurement file kept with the benchmarks.
inline std::string default_matmul_measurements() {
  return std::string(PODSIM_SOURCE_DIR) + "/bench/measurements/tpu_v6e_matmul.csv";
}

// jnp.matmul as XLA sees it: one dot, operands and result of `dtype` (bf16 or f16).
inline std::string matmul_hlo(const MatmulMeasurement& r, std::string_view dtype) {
  return fmt::format(
      "HloModule matmul_{1}x{2}x{3}\nENTRY e {{\n  a = {0}[{1},{3}] parameter(0)\n"
      "  b = {0}[{3},{2}] parameter(1)\n  ROOT d = {0}[{1},{2}] dot(a, b), "
      "lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}\n",
      dtype, r.m, r.n, r.k);
}

// The simulated time of one row in microseconds (compiled for `chip`, timing-only, with
// the HBM model `hbm`: sim/timing/README.md).
inline double simulate_matmul_us(const topology::ChipConfig& chip, const MatmulMeasurement& r,
                                 std::string_view dtype, const std::string& hbm = "request-time") {
  auto module = ir::parse_module(matmul_hlo(r, dtype));
  passes::default_pipeline().run(*module);
  isa::Executable exe = tpu::compile(*module, chip);
  sim::timing::TimingOptions options;
  options.timing_only = true;
  options.profile = false;
  options.hbm_model = hbm;
  return sim::timing::run_timed(exe, {}, options).seconds * 1e6;
}

struct MatmulFidelityRow {
  MatmulMeasurement measured;
  double simulated_us = 0;
  double ratio() const { return simulated_us / measured.measured_us; }
  double error() const { return std::abs(ratio() - 1.0); }
};

struct MatmulFidelitySummary {
  double median_error = 0;  // of |simulated / measured - 1|
  double worst_error = 0;
  size_t worst = 0;  // the row with the worst error
  int within_10_percent = 0;
  int rows = 0;
};

inline MatmulFidelitySummary summarize(const std::vector<MatmulFidelityRow>& rows) {
  MatmulFidelitySummary s;
  s.rows = static_cast<int>(rows.size());
  if (rows.empty()) return s;
  std::vector<double> errors;
  for (size_t k = 0; k < rows.size(); ++k) {
    errors.push_back(rows[k].error());
    if (rows[k].error() <= 0.10) ++s.within_10_percent;
    if (rows[k].error() > s.worst_error) {
      s.worst_error = rows[k].error();
      s.worst = k;
    }
  }
  std::sort(errors.begin(), errors.end());
  const size_t h = errors.size() / 2;
  s.median_error = errors.size() % 2 ? errors[h] : (errors[h - 1] + errors[h]) / 2;
  return s;
}

// Every row of `path` simulated on `chip` with operands of `dtype` (HBM model `hbm`).
inline std::vector<MatmulFidelityRow> simulate_matmul_measurements(const topology::ChipConfig& chip,
                                                                   const std::string& path,
                                                                   std::string_view dtype,
                                                                   const std::string& hbm = "request-time") {
  std::vector<MatmulFidelityRow> out;
  for (const MatmulMeasurement& r : read_matmul_measurements(path))
    out.push_back(MatmulFidelityRow{r, simulate_matmul_us(chip, r, dtype, hbm)});
  return out;
}

}  // namespace podsim::bench
