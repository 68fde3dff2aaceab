// Sparse simulated memory: host memory grows with the bytes touched, not the size.
#include "sim/functional/sparse_memory.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "tests/sim/functional/functional_test_util.h"

namespace podsim::sim {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kPage = SparseMemory::kPageBytes;

TEST(SparseMemory, UntouchedBytesReadAsZeroWithoutAllocating) {
  SparseMemory memory(4 * kGiB);
  std::vector<uint8_t> out(100, 0xee);
  memory.read(3 * kGiB + 5, out.data(), 100);
  EXPECT_EQ(out, std::vector<uint8_t>(100, 0));
  EXPECT_EQ(memory.allocated_pages(), 0);
  EXPECT_LT(memory.host_bytes(), 4096);  // the top-level directory only
}

TEST(SparseMemory, WritesAcrossAPageBoundary) {
  SparseMemory memory(16 * kPage);
  std::vector<uint8_t> in(10);
  for (int k = 0; k < 10; ++k) in[k] = static_cast<uint8_t>(k + 1);
  memory.write(3 * kPage - 4, in.data(), 10);
  EXPECT_EQ(memory.allocated_pages(), 2);
  std::vector<uint8_t> out(14);
  memory.read(3 * kPage - 6, out.data(), 14);
  std::vector<uint8_t> expected = {0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0};
  EXPECT_EQ(out, expected);
}

TEST(SparseMemory, WritingZerosToUntouchedPagesAllocatesNothing) {
  SparseMemory memory(16 * kPage);
  std::vector<uint8_t> zeros(3 * kPage, 0);
  memory.write(kPage / 2, zeros.data(), static_cast<int64_t>(zeros.size()));
  EXPECT_EQ(memory.allocated_pages(), 0);
  uint8_t one = 1;
  memory.write(5, &one, 1);
  memory.write(0, zeros.data(), 16);  // a touched page takes zeros like any bytes
  uint8_t back = 9;
  memory.read(5, &back, 1);
  EXPECT_EQ(back, 0);
}

TEST(SparseMemory, OutOfRangeAccessesAreErrors) {
  SparseMemory memory(1000);
  uint8_t b[8] = {};
  EXPECT_THROW(memory.read(996, b, 8), Error);
  EXPECT_THROW(memory.write(-1, b, 1), Error);
  EXPECT_THROW(memory.read(0, b, -1), Error);
  EXPECT_NO_THROW(memory.read(992, b, 8));
}

TEST(SparseMemory, TouchingTheEndOfA32GiBHbmAllocatesOnePage) {
  // v4: 32 GiB of HBM. A DMA writes the last 2 bytes.
  const int64_t hbm = 32 * kGiB;
  FunctionalModel model(testing::assemble(".chip v4\n.region c vmem[0] 0 2\n.region end hbm " +
                                          std::to_string(hbm - 2) + " 2\n" + R"(
.constant c
.bytes abcd
.descriptor d0 src=c dst=end elem=2 sizes=[1] src_strides=[0] dst_strides=[0]
.output end end u8[2]
.program core 0
  dma d0, s0, s0, q0
  sem.wait q0, 1
  halt
)"));
  EXPECT_EQ(model.state().hbm().size(), hbm);
  EXPECT_EQ(model.state().hbm().allocated_pages(), 0);
  model.run_to_completion(10);
  EXPECT_EQ(model.read_output(0), (std::vector<uint8_t>{0xab, 0xcd}));
  EXPECT_EQ(model.state().hbm().allocated_pages(), 1);
  // One 64 KiB page each in HBM and in core 0's VMEM, and small directories.
  EXPECT_LT(model.state().memory_host_bytes(), 4 * kPage);
}

}  // namespace
}  // namespace podsim::sim
