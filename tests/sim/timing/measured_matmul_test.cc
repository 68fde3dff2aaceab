// The timing model against published v6e matmul timings (bench/measured_matmul.h): the
// median error over the file must not exceed 5% and no shape may be off by more than
// 20% (the thresholds of the single-chip fidelity issue). The figures themselves are
// printed by bench/timing_measured_matmul_bench.
#include "bench/measured_matmul.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace podsim::sim::timing::testing {
namespace {

TEST(MeasuredMatmul, V6eTimingsWithinTheIssuesBounds) {
  const auto rows = bench::simulate_matmul_measurements(
      topology::preset("v6e"), bench::default_matmul_measurements(), "bf16");
  ASSERT_EQ(rows.size(), 36u);
  const bench::MatmulFidelitySummary s = bench::summarize(rows);
  EXPECT_LE(s.median_error, 0.05);
  for (const auto& r : rows)
    EXPECT_LE(r.error(), 0.20) << fmt::format(
        "M={} N={} K={}: simulated {:.2f} us, measured {:.2f} us", r.measured.m, r.measured.n,
        r.measured.k, r.simulated_us, r.measured.measured_us);
  std::cout << fmt::format("median error {:.1f}%, worst {:.1f}%, {} of {} within 10%\n",
                           100 * s.median_error, 100 * s.worst_error, s.within_10_percent, s.rows);
}

}  // namespace
}  // namespace podsim::sim::timing::testing
