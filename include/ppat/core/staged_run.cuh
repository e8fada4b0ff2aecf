// Runs of items written (or read) wherever they start, as whole 16-byte vectors where the
// run covers them and item by item at its ends: a block's run staged in shared memory, or a
// warp's row of the vectors its lanes hold.
#pragma once

#include <cstdint>
#include <cstring>

#include "vector_io.cuh"
#include "warp.cuh"

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

// A warp's row of 32 x Vec items (lane l's Vec at l * Vec, 16 bytes a lane), written to `to`
// at any address aligned to T as whole 16-byte vectors where it can. Where `to` is `offset`
// bytes past a 16-byte boundary, the whole vector after lane l's first byte holds lane l's
// last `offset` bytes and lane l + 1's first 16 - offset: lanes 0-30 write those 31
// vectors, with their neighbour's bytes by shuffle, lane 0 the items before the first and
// lane 31 those after the last.
template <class T, int Vec>
__device__ void store_warp_row(T* to, const T (&items)[Vec]) {
  static_assert(one_access<T, Vec>, "a lane's items are one 16-byte vector");
  const int lane = lane_id();
  const unsigned offset = unsigned(reinterpret_cast<std::uintptr_t>(to) % 16);
  if (offset == 0) {
    store_items<true>(to + lane * Vec, items);
    return;
  }
  uint4 mine;
  std::memcpy(&mine, items, 16);
  const uint4 next = shuffle_down(mine, 1);
  // The vector is bytes from .. from + 15 of mine followed by next, picked as words (a
  // register array indexed at run time would live in local memory) and funnel-shifted.
  const unsigned both[8] = {mine.x, mine.y, mine.z, mine.w, next.x, next.y, next.z, next.w};
  const unsigned from = 16 - offset;
  const unsigned word = from / 4;
  const unsigned shift = 8 * (from % 4);
  unsigned w[5];
#pragma unroll
  for (int k = 0; k < 5; ++k) {
    w[k] = word == 0 ? both[k] : word == 1 ? both[k + 1] : word == 2 ? both[k + 2] : both[k + 3];
  }
  const int before = Vec - int(offset / sizeof(T));  // items before the first whole vector
  if (lane < 31) {
    *reinterpret_cast<uint4*>(to + lane * Vec + before) = {
        __funnelshift_r(w[0], w[1], shift), __funnelshift_r(w[1], w[2], shift),
        __funnelshift_r(w[2], w[3], shift), __funnelshift_r(w[3], w[4], shift)};
  }
#pragma unroll
  for (int j = 0; j < Vec; ++j) {
    if (lane == 0 && j < before) to[j] = items[j];
    if (lane == 31 && j >= before) to[31 * Vec + j] = items[j];
  }
}

}  // namespace ppat::detail
