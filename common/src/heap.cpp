#include "weft/heap.hpp"

#include <malloc.h>

#include <cstdlib>

namespace weft {

size_t reserve_free_heap() {
  const struct mallinfo2 mi = mallinfo2();
  if (mi.uordblks <= mi.fordblks) return 0;
  const size_t want = mi.uordblks - mi.fordblks;
  auto* p = static_cast<volatile char*>(std::malloc(want));
  if (!p) return 0;
  // A byte a page faults it in (a huge page takes 512 of these writes at once).
  constexpr size_t kPage = 4096;
  for (size_t i = 0; i < want; i += kPage) p[i] = 0;
  std::free(const_cast<char*>(p));
  return want;
}

}  // namespace weft
