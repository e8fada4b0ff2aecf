// The block radix rank: where each of a block's items falls when its items are put in the
// order of their digits, stably. The radix sort's tiles compose it (sort/tile.cuh), as will
// every pattern that orders a tile by digit (segmented sorts, top-k). Its steps, in the order
// they run, with a barrier between each and the next:
//
//   rank_in_warps          each item's rank among its warp's items of its digit
//   tile_digit_count       thread d < Radix: the block's count of digit d
//   add_tile_starts        each warp's first position of each digit in the block's order
//   tile_position          an item's place in that order, from its rank
//
// Items are warp-striped: warp w holds items w x 32 x Items + i x 32 + lane, so that the
// order (warp, i, lane) is input order and ranking in it keeps the order stable. Between
// the first step and the last a kernel may call back to the counts, publish them, or look
// back across tiles (the sort's onesweep does both).
#pragma once

#include "block.cuh"
#include "warp.cuh"

namespace ppat::detail {

// What the steps share from tile_digit_count on.
template <int Warps, int Radix>
struct radix_rank_storage {
  static_assert(Radix % 32 == 0, "digit sums by whole warps");
  // Each warp's first position of each digit among the block's items of that digit, as
  // tile_digit_count leaves it; after add_tile_starts, among all the block's items.
  unsigned warp_digit_counts[Warps][Radix];
  block_sum_storage<Radix / 32, unsigned> digit_sums;
};

// What the warps rank with: a word a digit a warp, holding the warp's count of the digit so
// far (high half) and the mask of lanes that have it in the item being ranked (low half), so
// that one load reads both and one store moves the count on and clears the mask. Needed only
// until tile_digit_count, so a kernel may give their bytes to a later step (a union).
template <int Warps, int Radix>
struct radix_rank_lanes {
  unsigned long long count_and_lanes[Warps][Radix];
};

// Zeroes the warps' words; a barrier must follow before rank_in_warps.
template <int Threads, int Warps, int Radix>
__device__ void clear_radix_rank(radix_rank_lanes<Warps, Radix>& lanes) {
  for (int i = int(threadIdx.x); i < Warps * Radix; i += Threads)
    (&lanes.count_and_lanes[0][0])[i] = 0;
}

// Each item's rank among the warp's items of its digit, and the digit above it (ranks stay
// below 2^16): one register an item holds both. `digit_of(i)` is item i's digit. Items at
// or past `valid` rank as `padding_digit`, the last one, after every real item; a warp's
// rows of 32 items wholly past `valid` are left out (only the row that `valid` cuts is
// ranked with padding), so that a part-filled block ranks few more items than it holds.
template <int Items, bool Full, int Warps, int Radix, class DigitOf>
__device__ __forceinline__ void rank_in_warps(DigitOf digit_of, unsigned valid,
                                              unsigned padding_digit,
                                              radix_rank_lanes<Warps, Radix>& lanes,
                                              unsigned (&ranks)[Items]) {
  static_assert(32 * Warps * Items <= 65536, "a rank and its digit share a register");
  const int warp = int(threadIdx.x / 32);
  const int lane = lane_id();
  const unsigned warp_first = unsigned(warp * 32 * Items);
  unsigned long long* const words = lanes.count_and_lanes[warp];
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const unsigned row_first = warp_first + unsigned(i * 32);
    if (!Full && row_first >= valid) break;
    const unsigned d = Full || row_first + unsigned(lane) < valid ? digit_of(i) : padding_digit;
    // The lanes with this digit: each sets its bit in the digit's word (the low half) and
    // reads the word when all have; the lowest of them adds their number to the count and
    // clears the mask in one store, which the next item's atomics wait for. Shared memory is
    // what the sort's tiles are bound by: three accesses an item, where a mask and a count
    // apart took five (docs/patterns.md, "Radix sort"); eight ballots instead keep the
    // integer pipe busy.
    atomicOr(reinterpret_cast<unsigned*>(&words[d]), 1u << lane);
    __syncwarp();
    const unsigned long long word = words[d];
    __syncwarp();
    const unsigned peers = unsigned(word);
    const unsigned before = unsigned(word >> 32);
    const unsigned below = unsigned(__popc(int(peers & ((1u << lane) - 1u))));
    if (below == 0) words[d] = (unsigned long long)(before + unsigned(__popc(int(peers)))) << 32;
    __syncwarp();
    ranks[i] = (before + below) | d << 16;
  }
}

// Thread d < Radix: the block's count of digit d, the padding ranked in the row that
// `valid` cuts left out; from the warps' counts, their first positions among the block's
// items of digit d.
template <int Warps, int Radix>
__device__ __forceinline__ unsigned tile_digit_count(const radix_rank_lanes<Warps, Radix>& lanes,
                                                     radix_rank_storage<Warps, Radix>& counters,
                                                     unsigned valid, unsigned padding_digit) {
  const unsigned d = threadIdx.x;
  unsigned tile_count = 0;
  if (d < Radix) {
    for (int w = 0; w < Warps; ++w) {
      const unsigned c = unsigned(lanes.count_and_lanes[w][d] >> 32);
      counters.warp_digit_counts[w][d] = tile_count;
      tile_count += c;
    }
    if (d == padding_digit) tile_count -= (32u - valid % 32u) % 32u;
  }
  return tile_count;
}

// The block's digit starts (thread d's returned) added to the warps' first positions: each
// warp's first position of each digit in the block's digit order.
template <int Warps, int Radix>
__device__ __forceinline__ unsigned add_tile_starts(radix_rank_storage<Warps, Radix>& counters,
                                                    unsigned tile_count) {
  const unsigned d = threadIdx.x;
  const unsigned tile_start = block_exclusive_sum(d < Radix ? tile_count : 0u, counters.digit_sums);
  if (d < Radix) {
    for (int w = 0; w < Warps; ++w)
      counters.warp_digit_counts[w][d] += tile_start;
  }
  return tile_start;
}

// After add_tile_starts: the place in the block's digit order of the item that `warp` (the
// calling thread's) ranked `rank` (as rank_in_warps returned it).
template <int Warps, int Radix>
__device__ __forceinline__ unsigned tile_position(const radix_rank_storage<Warps, Radix>& counters,
                                                  int warp, unsigned rank) {
  return (rank & 0xFFFFu) + counters.warp_digit_counts[warp][rank >> 16];
}

}  // namespace ppat::detail
