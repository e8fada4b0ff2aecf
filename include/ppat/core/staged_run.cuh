// Runs of items between shared and global memory, wherever the run starts: a block writes
// a run it staged in shared memory (or reads one into it) as whole 16-byte vectors where the
// run covers them, and item by item at its ends.
#pragma once

#include <cstdint>

#include "vector_io.cuh"

namespace ppat::detail {

// 16 bytes of shared memory at `from`, any address: as four 32-bit words funnel-shifted out
// of the five aligned words around them (the word after the 16 bytes must be readable).
__device__ inline uint4 load_16_bytes(const void* from) {
  const auto address = reinterpret_cast<std::uintptr_t>(from);
  const auto* words = reinterpret_cast<const unsigned*>(address & ~std::uintptr_t(3));
  if ((address & 15) == 0) return *reinterpret_cast<const uint4*>(words);
  const unsigned shift = 8 * unsigned(address & 3);
  unsigned w[5];
#pragma unroll
  for (int k = 0; k < 5; ++k)
    w[k] = words[k];
  return {__funnelshift_r(w[0], w[1], shift), __funnelshift_r(w[1], w[2], shift),
          __funnelshift_r(w[2], w[3], shift), __funnelshift_r(w[3], w[4], shift)};
}

// The block's threads walk a run of `count` items of T at `address`: whole(first) for each
// aligned 16 bytes the run covers (its items first .. first + vec - 1), single(k) for each
// item at its ends, or for every item where T does not divide 16 bytes or `address` is not
// aligned to T.
template <int Threads, class T, class Whole, class Single>
__device__ void walk_run(std::uintptr_t address, int count, Whole whole, Single single) {
  constexpr int vec = items_per_vector<T>;
  if (vec > 1 && address % sizeof(T) == 0) {
    // Group g covers run items [g * vec - shift, (g + 1) * vec - shift).
    const int shift = int(address % 16 / sizeof(T));
    const int groups = (shift + count + vec - 1) / vec;
    for (int g = int(threadIdx.x); g < groups; g += Threads) {
      const int first = g * vec - shift;
      if (first >= 0 && first + vec <= count) {
        whole(first);
      } else {
        for (int k = max(first, 0); k < min(first + vec, count); ++k)
          single(k);
      }
    }
  } else {
    for (int k = int(threadIdx.x); k < count; k += Threads)
      single(k);
  }
}

// The block writes the `count` items staged at staged[0..count) in shared memory (followed
// by 16 readable bytes) to to[0..count) as whole 16-byte vectors where it can. The staged
// run may start anywhere.
template <int Threads, class T>
__device__ void store_staged(T* to, const T* staged, int count) {
  walk_run<Threads, T>(
      reinterpret_cast<std::uintptr_t>(to), count,
      [&](int first) { *reinterpret_cast<uint4*>(to + first) = load_16_bytes(staged + first); },
      [&](int k) { to[k] = staged[k]; });
}

// The mirror of store_staged: the block reads from[0..count) into staged[0..count) in
// shared memory, as whole 16-byte vectors where it can.
template <int Threads, class T>
__device__ void load_run(const T* from, T* staged, int count) {
  walk_run<Threads, T>(
      reinterpret_cast<std::uintptr_t>(from), count,
      [&](int first) {
        T items[items_per_vector<T>];
        load_items<true>(from + first, items);
#pragma unroll
        for (int j = 0; j < items_per_vector<T>; ++j)
          staged[first + j] = items[j];
      },
      [&](int k) { staged[k] = from[k]; });
}

}  // namespace ppat::detail
