// The timing model against published v6e matmul timings (bench/measured_matmul.h), with
// the single-chip fidelity issue's bounds: a median error of at most 5% over the file,
// and at most 20% on every shape. The figures themselves are printed by
// bench/timing_measured_matmul_bench.
#include "bench/measured_matmul.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace podsim::sim::timing::testing {
namespace {

std::vector<bench::MatmulFidelityRow> v6e_rows() {
  const auto rows = bench::simulate_matmul_measurements(
      topology::preset("v6e"), bench::default_matmul_measurements(), "bf16");
  EXPECT_EQ(rows.size(), 36u);
  return rows;
}

TEST(MeasuredMatmul, V6eMedianErrorWithinFivePercent) {
  const bench::MatmulFidelitySummary s = bench::summarize(v6e_rows());
  std::cout << fmt::format("median error {:.1f}%, worst {:.1f}%, {} of {} within 10%\n",
                           100 * s.median_error, 100 * s.worst_error, s.within_10_percent, s.rows);
  EXPECT_LE(s.median_error, 0.05);
}

TEST(MeasuredMatmul, V6eEveryShapeWithinTwentyPercent) {
  for (const auto& r : v6e_rows())
    EXPECT_LE(r.error(), 0.20) << fmt::format(
        "M={} N={} K={}: simulated {:.2f} us, measured {:.2f} us", r.measured.m, r.measured.n,
        r.measured.k, r.simulated_us, r.measured.measured_us);
}

}  // namespace
}  // namespace podsim::sim::timing::testing
