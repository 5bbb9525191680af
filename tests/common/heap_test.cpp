#include "weft/heap.hpp"

#include <gtest/gtest.h>
#include <malloc.h>

#include <climits>
#include <vector>

namespace weft {
namespace {

// weft sm grows its free heap to what it holds in use after the first bring-up, for the
// next sweep's snapshot (SmOptions::reserve_heap): with freed memory kept in the heap,
// as app/main.cpp keeps it, the block it faulted in stays there, free.
TEST(Heap, ReserveGrowsTheFreeHeapToWhatIsInUseAndItStaysThere) {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's allocator serves malloc and takes no mallopt; glibc's heap (what
  // mallinfo2 reports) holds nearly nothing, so there is little or nothing to grow.
  const std::vector<char> held(size_t(64) << 20, 1);
  EXPECT_LE(reserve_free_heap(), size_t(1) << 20);
#else
  ASSERT_EQ(mallopt(M_MMAP_MAX, 0), 1);
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, INT_MAX), 1);
  const std::vector<char> held(size_t(64) << 20, 1);  // 64 MB in use
  const struct mallinfo2 before = mallinfo2();
  const size_t grown = reserve_free_heap();
  const struct mallinfo2 after = mallinfo2();
  EXPECT_GE(grown, size_t(63) << 20);
  EXPECT_EQ(grown, before.uordblks - before.fordblks);
  EXPECT_GE(after.fordblks + 4096, after.uordblks);  // as much free as in use
  EXPECT_LE(reserve_free_heap(), size_t(64) << 10);  // so nothing more to grow
#endif
  EXPECT_EQ(held[12345], 1);
}

}  // namespace
}  // namespace weft
