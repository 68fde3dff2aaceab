// The file form with constants beyond one Cap'n Proto blob (slow: hundreds of MiB).
#include <gtest/gtest.h>

#include "isa/isa.h"
#include "tests/isa/test_executables.h"

namespace podsim::isa {
namespace {

using testing::small_executable;

TEST(Serialize, LargeConstantsAreChunked) {
  // One Cap'n Proto Data blob holds less than 512 MiB, so constants are stored in 256 MiB
  // chunks; 300 MiB takes two.
  Executable e = small_executable();
  e.chip = topology::preset("v4");
  e.regions.push_back({"big", MemorySpace::kHbm, 0, 1 << 20, int64_t{300} << 20});
  std::vector<uint8_t> data(size_t{300} << 20);
  for (size_t i = 0; i < data.size(); i += 4096) data[i] = static_cast<uint8_t>(i >> 12);
  e.constants.push_back({5, std::move(data)});
  std::vector<uint8_t> bytes = serialize(e);
  EXPECT_EQ(deserialize(bytes.data(), bytes.size()), e);
}

}  // namespace
}  // namespace podsim::isa
