// weft/heap.hpp — the malloc heap as a working set (glibc).
//
//   size_t grown = weft::reserve_free_heap();  // bytes faulted in and freed again
#pragma once

#include <cstddef>

namespace weft {

// Grows the heap's free memory to as much as it holds in use (glibc's mallinfo2:
// in use minus free, when positive): one block that size, each page touched, freed
// again. Returns the bytes reserved (0: nothing needed, or malloc refused). Only of
// use where freed memory stays in the heap (one arena, nothing mapped apart, no trim:
// app/main.cpp's keep_freed_memory); otherwise the block goes straight back.
size_t reserve_free_heap();

}  // namespace weft
