#include "topology/torus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <string>

#include "common/error.h"

namespace podsim::topology {
namespace {

// Hop counts from `src` by a breadth-first search over Torus::neighbour, written here
// independently of the library's own search.
std::vector<int> bfs(const Torus& t, int src) {
  std::vector<int> d(static_cast<size_t>(t.chips()), -1);
  std::deque<int> queue{src};
  d[static_cast<size_t>(src)] = 0;
  while (!queue.empty()) {
    int at = queue.front();
    queue.pop_front();
    for (int p = 0; p < t.ports(); ++p)
      if (int n = t.neighbour(at, p); n >= 0 && d[static_cast<size_t>(n)] < 0) {
        d[static_cast<size_t>(n)] = d[static_cast<size_t>(at)] + 1;
        queue.push_back(n);
      }
  }
  return d;
}

TEST(Torus, DeviceOrderIsXFastestThenSlices) {
  const Torus t(pod_config("tiny:2x3x2:slices=2"));
  EXPECT_EQ(t.coord(0), (ChipCoord{0, {0, 0, 0}}));
  EXPECT_EQ(t.coord(1), (ChipCoord{0, {1, 0, 0}}));
  EXPECT_EQ(t.coord(2), (ChipCoord{0, {0, 1, 0}}));
  EXPECT_EQ(t.coord(6), (ChipCoord{0, {0, 0, 1}}));
  EXPECT_EQ(t.coord(12), (ChipCoord{1, {0, 0, 0}}));
  for (int d = 0; d < t.chips(); ++d) EXPECT_EQ(t.device(t.coord(d)), d);
  EXPECT_THROW(t.coord(24), Error);
}

TEST(Torus, HostsOwnBlocks) {
  const Torus t(pod_config("v4-128"));  // 4x4x4, hosts of 2x2x1
  std::vector<int> per_host(16);
  for (int d = 0; d < t.chips(); ++d) {
    const int h = t.host(d);
    ASSERT_GE(h, 0);
    ASSERT_LT(h, 16);
    ++per_host[static_cast<size_t>(h)];
    ChipCoord corner = t.coord(d);
    corner.xyz[0] -= corner.xyz[0] % 2;
    corner.xyz[1] -= corner.xyz[1] % 2;
    EXPECT_EQ(t.host(t.device(corner)), h);
  }
  for (int n : per_host) EXPECT_EQ(n, 4);
}

TEST(Torus, LinksGoBothWays) {
  for (const char* name : {"tiny:4x4", "tiny:4x4:mesh", "tiny:2x2x2", "v4:4x4x8:twisted",
                           "v4:4x8x8:twisted", "v5e-128", "tiny:1x2"}) {
    const Torus t(pod_config(name));
    for (int d = 0; d < t.chips(); ++d)
      for (int p = 0; p < t.ports(); ++p)
        if (int n = t.neighbour(d, p); n >= 0) {
          EXPECT_EQ(t.neighbour(n, p ^ 1), d) << name << " " << d << " " << p;
        }
  }
}

TEST(Torus, RoutesAreShortestAndDimensionOrdered) {
  for (const char* name : {"tiny:4x4", "tiny:4x4:mesh", "tiny:3x4x2", "v5e-128", "v4:4x4x8:twisted",
                           "v4:4x8x8:twisted", "v4:4x4x8"}) {
    const Torus t(pod_config(name));
    for (int src = 0; src < t.chips(); src += 3) {
      const std::vector<int> expected = bfs(t, src);
      for (int dst = 0; dst < t.chips(); ++dst) {
        const std::vector<Hop> route = t.route(src, dst);
        ASSERT_EQ(static_cast<int>(route.size()), expected[static_cast<size_t>(dst)])
            << name << " " << src << "->" << dst;
        int at = src;
        int last_axis = 0;
        for (const Hop& h : route) {
          ASSERT_EQ(h.device, at);
          if (!t.pod().twisted) {
            EXPECT_GE(h.port / 2, last_axis) << "dimension order";
            last_axis = h.port / 2;
          }
          at = t.neighbour(at, h.port);
        }
        EXPECT_EQ(at, dst);
      }
    }
  }
}

TEST(Torus, HopCountsAndDiameters) {
  // A 4x4 ring wraps: opposite corners are 2 + 2 hops; without wraparound 3 + 3.
  EXPECT_EQ(Torus(pod_config("tiny:4x4")).hops(0, 15), 2);
  EXPECT_EQ(Torus(pod_config("tiny:4x4:mesh")).hops(0, 15), 6);
  EXPECT_EQ(Torus(pod_config("tiny:4x4")).diameter(), 4);
  EXPECT_EQ(Torus(pod_config("tiny:4x4:mesh")).diameter(), 6);
  // The twist shortens the longest routes of a 4x4x8 (plain torus: 2 + 2 + 4).
  const Torus plain(pod_config("v4:4x4x8")), twisted(pod_config("v4:4x4x8:twisted"));
  EXPECT_EQ(plain.diameter(), 8);
  const std::vector<int> d = bfs(twisted, 0);
  EXPECT_EQ(twisted.diameter(), *std::max_element(d.begin(), d.end()));
  EXPECT_LT(twisted.diameter(), plain.diameter());
}

TEST(Torus, BisectionCountsTheLinksOfTheCheapestCut) {
  // 16x16 torus: a cut across one axis crosses 16 rows twice (middle and wraparound).
  EXPECT_EQ(Torus(pod_config("v5e-256")).bisection_links(), 32);
  // 8x16, x open: cutting x crosses 16 links; cutting y (wraps) 2 x 8: the cheaper is 16.
  EXPECT_EQ(Torus(pod_config("v5e-128")).bisection_links(), 16);
  EXPECT_EQ(Torus(pod_config("tiny:1x1")).bisection_links(), 0);
  // Links, one direction: a 4x4 torus has 4 per chip; a 4x4 mesh 2 x 2 x 4 x 3.
  EXPECT_EQ(Torus(pod_config("tiny:4x4")).links(), 64);
  EXPECT_EQ(Torus(pod_config("tiny:4x4:mesh")).links(), 48);
}

TEST(Torus, SlicesAreJoinedOnlyByDcn) {
  const Torus t(pod_config("tiny:2x2:slices=2"));
  EXPECT_EQ(t.hops(0, 3), 2);
  try {
    t.route(0, 4);
    FAIL() << "a route between slices";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("over DCN"), std::string::npos);
  }
}

TEST(Torus, DrawingShowsEveryDevice) {
  const std::string drawing = Torus(pod_config("tiny:4x4")).drawing();
  for (int d = 0; d < 16; ++d)
    EXPECT_NE(drawing.find((d < 10 ? " " : "") + std::to_string(d)), std::string::npos) << drawing;
  EXPECT_NE(drawing.find('~'), std::string::npos);
  EXPECT_EQ(Torus(pod_config("v4-8192")).drawing(), "");
}

}  // namespace
}  // namespace podsim::topology
