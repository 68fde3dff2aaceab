// A channel's bookings (sim/timing/memory/bookings.h): in call order a request waits for all that
// was booked before it; by request time it takes the first gap at or after its time that
// holds it (and its turnaround next to a booking of the other kind).
#include "sim/timing/memory/bookings.h"

#include <gtest/gtest.h>

namespace podsim::sim::timing {
namespace {

constexpr uint8_t kRead = 0, kWrite = 1;

TEST(Bookings, InCallOrderARequestWaitsForEverythingBookedBefore) {
  Bookings b(/*switch_cycles=*/0, /*by_request_time=*/false);
  EXPECT_EQ(b.book(0, 100, 10, kRead), Cycle{100});
  EXPECT_EQ(b.book(0, 20, 10, kRead), Cycle{110});  // asked for at 20, served after 100..110
  EXPECT_EQ(b.book(0, 500, 10, kRead), Cycle{500});
}

TEST(Bookings, ByRequestTimeALateCallerTakesAnEarlierGap) {
  Bookings b(0, true);
  EXPECT_EQ(b.book(0, 100, 10, kRead), Cycle{100});
  EXPECT_EQ(b.book(0, 20, 10, kRead), Cycle{20});  // the gap [0, 100) holds it
  EXPECT_EQ(b.book(0, 95, 10, kRead), Cycle{110});  // [95, 105) overlaps 100..110: after it
  EXPECT_EQ(b.book(0, 30, 60, kRead), Cycle{30});   // [30, 90) fits between 20..30 and 100
  EXPECT_EQ(b.book(0, 30, 20, kRead), Cycle{120});  // no gap of 20 left before 120
}

TEST(Bookings, BackToBackRequestsQueueAndKeepTheirOrder) {
  Bookings b(0, true);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(b.book(0, 0, 10, kRead), 10 * k);
  EXPECT_EQ(b.book(0, 5, 10, kRead), Cycle{50});
  // Nothing before SystemC time is kept: at 200 a request at 200 starts at once.
  EXPECT_EQ(b.book(200, 200, 10, kRead), Cycle{200});
}

TEST(Bookings, ARequestOfTheOtherKindPaysTheTurnaround) {
  Bookings b(/*switch_cycles=*/8, true);
  EXPECT_EQ(b.book(0, 0, 10, kRead), Cycle{0});
  EXPECT_EQ(b.book(0, 0, 10, kWrite), Cycle{18});    // after the read, plus the turnaround
  EXPECT_EQ(b.book(0, 100, 10, kRead), Cycle{100});
  EXPECT_EQ(b.book(0, 80, 10, kWrite), Cycle{80});   // 80..90 + 8 still ends by 100
  EXPECT_EQ(b.book(0, 85, 10, kWrite), Cycle{118});  // 90..100 leaves no turnaround; after the read, 8 more
}

TEST(Bookings, NothingOverlapsARefresh) {
  for (const bool by_request_time : {false, true}) {
    SCOPED_TRACE(by_request_time);
    Bookings b(0, by_request_time);
    b.set_blackout(/*period=*/100, /*duration=*/20, /*first=*/50);
    EXPECT_EQ(b.book(0, 0, 10, kRead), Cycle{0});      // before the first refresh
    EXPECT_EQ(b.book(0, 45, 10, kRead), Cycle{70});    // [45, 55) would cross [50, 70)
    EXPECT_EQ(b.book(0, 145, 5, kRead), Cycle{145});   // ends as the next one begins
    EXPECT_EQ(b.book(0, 150, 10, kRead), Cycle{170});  // inside [150, 170)
    EXPECT_EQ(b.book(0, 240, 30, kRead), Cycle{270});  // [240, 270) would cross [250, 270)
  }
}

}  // namespace
}  // namespace podsim::sim::timing
