// The block radix rank: where each of a block's items falls when its items are put in the
// order of their digits, stably. The radix sort's tiles compose it (sort/tile.cuh), as will
// every pattern that orders a tile by digit (segmented sorts, top-k). Its steps, in the order
// they run, with a barrier between each and the next:
//
//   rank_in_warps          each item's rank among its rank group's items of its digit
//   tile_digit_count       thread d < Radix: the block's count of digit d
//   add_tile_starts        each group's first position of each digit in the block's order
//   tile_position          an item's place in that order, from its rank
//
// A rank group is a half-warp. Items are striped across each group's 16 lanes: thread t
// holds items ranked_item(i) = (t / 16) x 16 x Items + i x 16 + t % 16, so that the order
// (group, i, lane) is input order and ranking in it keeps the order stable. Between the first
// step and the last a kernel may call back to the counts, publish them, or look back across
// tiles (the sort's onesweep does both).
#pragma once

#include "block.cuh"
#include "warp.cuh"

namespace ppat::detail {

// Lanes that rank together: their mask and their count share a 32-bit word.
constexpr int rank_group_lanes = 16;

// Item i of the calling thread's Items: its place in the block's input order.
template <int Items>
__device__ __forceinline__ unsigned ranked_item(int i) {
  return threadIdx.x / rank_group_lanes * (rank_group_lanes * Items) +
         unsigned(i * rank_group_lanes) + threadIdx.x % rank_group_lanes;
}

// Whether the calling warp's items i lie wholly at or past `valid` (its first group's are
// the lower ones); such rows are neither ranked nor staged.
template <int Items>
__device__ __forceinline__ bool rank_row_past(int i, unsigned valid) {
  return threadIdx.x / 32 * (32 * Items) + unsigned(i * rank_group_lanes) >= valid;
}

// What the steps share from tile_digit_count on.
template <int Warps, int Radix>
struct radix_rank_storage {
  static_assert(Radix % 32 == 0, "digit sums by whole warps");
  static constexpr int groups = 2 * Warps;
  // Each group's first position of each digit among the block's items of that digit, as
  // tile_digit_count leaves it; after add_tile_starts, among all the block's items.
  unsigned group_digit_counts[groups][Radix];
  block_sum_storage<Radix / 32, unsigned> digit_sums;
};

// What the groups rank with: a 32-bit word a digit a group, holding the group's count of the
// digit so far (high half) and the mask of its lanes that have it in the item being ranked
// (low half), so that one load reads both and one store moves the count on and clears the
// mask. A warp's two groups' words lie 16 banks apart, so that its lanes of one digit meet in
// no bank. Needed only until tile_digit_count, so a kernel may give their bytes to a later
// step (a union).
template <int Warps, int Radix>
struct radix_rank_lanes {
  static constexpr int words_per_group = Radix + 16;
  unsigned count_and_lanes[2 * Warps][words_per_group];
};

// Zeroes the groups' words; a barrier must follow before rank_in_warps.
template <int Threads, int Warps, int Radix>
__device__ void clear_radix_rank(radix_rank_lanes<Warps, Radix>& lanes) {
  constexpr int words = 2 * Warps * radix_rank_lanes<Warps, Radix>::words_per_group;
  for (int i = int(threadIdx.x); i < words; i += Threads)
    (&lanes.count_and_lanes[0][0])[i] = 0;
}

// Each item's rank among its group's items of its digit, and the digit above it (ranks stay
// below 2^16): one register an item holds both. `digit_of(i)` is item i's digit. Items at or
// past `valid` rank as `padding_digit`, the last one, after every real item; a warp's rows
// wholly past `valid` are left out (rank_row_past), so that a part-filled block ranks few
// more items than it holds.
template <int Items, bool Full, int Warps, int Radix, class DigitOf>
__device__ __forceinline__ void rank_in_warps(DigitOf digit_of, unsigned valid,
                                              unsigned padding_digit,
                                              radix_rank_lanes<Warps, Radix>& lanes,
                                              unsigned (&ranks)[Items]) {
  static_assert(32 * Warps * Items <= 65536, "a rank and its digit share a register");
  const unsigned lane = threadIdx.x % rank_group_lanes;
  unsigned* const words = lanes.count_and_lanes[threadIdx.x / rank_group_lanes];
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    if (!Full && rank_row_past<Items>(i, valid)) break;
    const unsigned d = Full || ranked_item<Items>(i) < valid ? digit_of(i) : padding_digit;
    // The group's lanes with this digit: each sets its bit in the digit's word (the low half)
    // and reads the word when all have; the lowest of them adds their number to the count and
    // clears the mask in one store, which the next item's atomics wait for. Shared memory is
    // what the sort's tiles are bound by: three 32-bit accesses an item, where a warp's
    // 64-bit words (count and 32-bit mask) met in half the banks and a mask and a count
    // apart took five accesses (docs/patterns.md, "Radix sort"); eight ballots instead keep
    // the integer pipe busy.
    atomicOr(&words[d], 1u << lane);
    __syncwarp();
    const unsigned word = words[d];
    __syncwarp();
    const unsigned peers = word & 0xFFFFu;
    const unsigned before = word >> 16;
    const unsigned below = unsigned(__popc(int(peers & ((1u << lane) - 1u))));
    if (below == 0) words[d] = (before + unsigned(__popc(int(peers)))) << 16;
    __syncwarp();
    ranks[i] = (before + below) | d << 16;
  }
}

// Thread d < Radix: the block's count of digit d, the padding that rank_in_warps ranked left
// out; from the groups' counts, their first positions among the block's items of digit d.
template <int Items, int Warps, int Radix>
__device__ __forceinline__ unsigned tile_digit_count(const radix_rank_lanes<Warps, Radix>& lanes,
                                                     radix_rank_storage<Warps, Radix>& counters,
                                                     unsigned valid, unsigned padding_digit) {
  const unsigned d = threadIdx.x;
  unsigned tile_count = 0;
  if (d < Radix) {
    for (int g = 0; g < 2 * Warps; ++g) {
      const unsigned c = lanes.count_and_lanes[g][d] >> 16;
      counters.group_digit_counts[g][d] = tile_count;
      tile_count += c;
    }
    if (d == padding_digit) {
      // The warp that `valid` cuts ranked its rows up to the one holding the last valid item.
      constexpr unsigned warp_items = 32 * Items;
      const unsigned cut_warp_first = valid / warp_items * warp_items;
      const unsigned into_cut = valid - cut_warp_first;
      const unsigned rows = (into_cut + rank_group_lanes - 1) / rank_group_lanes;
      if (into_cut != 0) tile_count -= cut_warp_first + min(rows, unsigned(Items)) * 32 - valid;
    }
  }
  return tile_count;
}

// The block's digit starts (thread d's returned) added to the groups' first positions: each
// group's first position of each digit in the block's digit order.
template <int Warps, int Radix>
__device__ __forceinline__ unsigned add_tile_starts(radix_rank_storage<Warps, Radix>& counters,
                                                    unsigned tile_count) {
  const unsigned d = threadIdx.x;
  const unsigned tile_start = block_exclusive_sum(d < Radix ? tile_count : 0u, counters.digit_sums);
  if (d < Radix) {
    for (int g = 0; g < 2 * Warps; ++g)
      counters.group_digit_counts[g][d] += tile_start;
  }
  return tile_start;
}

// After add_tile_starts: the place in the block's digit order of the calling thread's item
// that rank_in_warps ranked `rank`.
template <int Warps, int Radix>
__device__ __forceinline__ unsigned tile_position(const radix_rank_storage<Warps, Radix>& counters,
                                                  unsigned rank) {
  return (rank & 0xFFFFu) + counters.group_digit_counts[threadIdx.x / rank_group_lanes][rank >> 16];
}

}  // namespace ppat::detail
