// Block-level building blocks for kernels that move each item of a tile to a place the tile
// computes: ranking the items a tile selects, and writing a run of items staged in shared
// memory as whole 16-byte vectors, wherever the run starts.
//
// Tiles are laid out as in the scans: warp w owns `rows` x 32 x `vec` consecutive items, row
// r of lane l being the `vec` items at r * 32 * vec + l * vec, so that every load is one
// coalesced access per warp. A lane says which of its vector's items it selects as `vec`
// bits a row; an item's rank is the number of selected items before it in the tile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "vector_io.cuh"
#include "warp.cuh"

namespace ppat::detail {

// What a kernel that moves values with its items takes for V where there are none, and the
// type it holds in their place.
struct no_values {};
template <class V>
using value_or_char = std::conditional_t<std::is_same_v<V, no_values>, char, V>;

// Bits that hold every count from 0 to `most`.
__host__ __device__ constexpr int bits_for(unsigned most) {
  int bits = 0;
  while (most >> bits != 0)
    ++bits;
  return bits;
}

// Where a lane's selected items fall among its warp's: before[r] items of the warp precede
// the lane's vector of row r (all of rows 0..r-1, then lanes 0..l-1 of row r).
template <int Rows>
struct warp_ranks {
  unsigned before[Rows];
  unsigned total;  // selected in all of the warp's rows
};

// Counts of several rows travel packed in one 32-bit word, a field of `field_bits` each, so
// that one warp scan ranks several rows: a field's warp total, at most 32 x vec, never
// carries into the next field. Four-byte items take two scans for their eight rows, not
// eight.
template <int Rows, int Vec>
__device__ warp_ranks<Rows> rank_in_warp(const unsigned (&selected)[Rows]) {
  constexpr int field_bits = bits_for(32 * Vec);
  constexpr int fields = 32 / field_bits;
  constexpr int words = (Rows + fields - 1) / fields;
  constexpr unsigned field_mask = (1u << field_bits) - 1;
  unsigned own[words] = {};
#pragma unroll
  for (int r = 0; r < Rows; ++r)
    own[r / fields] |= unsigned(__popc(selected[r])) << (field_bits * (r % fields));
  unsigned before_lane[words], row_totals[words];
#pragma unroll
  for (int w = 0; w < words; ++w) {
    const unsigned through_lane =
        warp_inclusive_scan(own[w], [](unsigned a, unsigned b) { return a + b; });
    before_lane[w] = through_lane - own[w];
    row_totals[w] = __shfl_sync(full_warp, through_lane, 31);
  }
  warp_ranks<Rows> ranks;
  unsigned running = 0;
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    const int shift = field_bits * (r % fields);
    ranks.before[r] = running + ((before_lane[r / fields] >> shift) & field_mask);
    running += (row_totals[r / fields] >> shift) & field_mask;
  }
  ranks.total = running;
  return ranks;
}

// Selected items among the first `j` of a vector's selection bits.
__device__ inline unsigned selected_below(unsigned bits, int j) {
  return unsigned(__popc(bits & ((1u << j) - 1u)));
}

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
