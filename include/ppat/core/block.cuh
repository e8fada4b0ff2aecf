// The block level: what a block's threads compute together, one value a warp or a thread
// in, the block's answer out. Every kernel that combines across its warps composes these
// (scans, reductions, selections, sorts) instead of writing the two barriers and the warp-0
// step by hand.
//
// Each takes its shared memory as an explicit storage type, which a kernel places in its
// own storage (a struct, or a union where steps take turns), so that the kernel's shared
// memory is stated in one place. All threads of the block call each of them, since they
// hold barriers; a storage may be used again once the call has returned.
//
//   block_exclusive_sum   a sum of one value a thread, over the block's first Warps warps
//   block_warp_prefix     each warp's prefix: the block's prefix, which a callback on warp 0
//                         supplies from the block's total (a look-back, a publication),
//                         then the warps before it; any associative operator, in order
//   block_reduce_warps    the block's reduction of its warps' results, in warp order
//   block_reduce_commutative  the same under an operator that commutes, without flags
//   rank_in_warp          where each selected item of a warp's rows falls (a count of flags)
//
// The block radix rank, which the sort's tiles compose, is in core/radix_rank.cuh.
#pragma once

#include <cstdint>

#include "operators.cuh"
#include "partial.cuh"
#include "shared_storage.cuh"
#include "warp.cuh"

namespace ppat::detail {

// ---- Sums and scans ------------------------------------------------------------------------

template <int Warps, class T>
struct block_sum_storage {
  T warp_totals[Warps];
};

// The sum of `value` over the threads before this one. The block's first Warps warps take
// part; the threads of warps after them (there may be some: a sort's 512-thread tile sums
// 256 digits) call it too and get no meaningful result.
template <int Warps, class T>
__device__ T block_exclusive_sum(T value, block_sum_storage<Warps, T>& storage) {
  const int warp = int(threadIdx.x / 32);
  const T through = warp_inclusive_scan(value, plus{});
  if (warp < Warps && lane_id() == 31) storage.warp_totals[warp] = through;
  __syncthreads();
  T before = through - value;
  for (int w = 0; w < warp && w < Warps; ++w)
    before += storage.warp_totals[w];
  __syncthreads();
  return before;
}

// Aligned to 16 bytes where a warp prefix is a multiple of 16 bytes long, so that each is
// read and written in 16-byte accesses (reduce_by_key's 16-byte prefixes: docs/patterns.md,
// "Stream compaction, unique, runs").
template <int Warps, class T>
struct alignas(sizeof(partial<T>) % 16 == 0 ? 16 : alignof(partial<T>)) block_scan_storage {
  uninitialized_array<partial<T>, Warps> warp_prefixes;
};

// Every lane of warp w passes the warp's total (the same value on every lane) and gets what
// comes before the warp: block_prefix(block_total), then warps 0 .. w-1, combined left to
// right. Warp 0 calls block_prefix, all its lanes together, with the total of every warp;
// it returns what comes before the block (a tile's look-back; nothing, as partial{.., false},
// where the block stands alone), and may publish the total on the way.
template <int Warps, class T, class Op, class BlockPrefix>
__device__ partial<T> block_warp_prefix(const T& warp_total, Op op,
                                        block_scan_storage<Warps, T>& storage,
                                        BlockPrefix block_prefix) {
  const int warp = int(threadIdx.x / 32);
  const int lane = lane_id();
  if (lane == 0) storage.warp_prefixes[warp] = partial<T>{warp_total, true};
  __syncthreads();
  if (warp == 0) {
    const T warp_value = lane < Warps ? storage.warp_prefixes[lane].value : warp_total;
    const T through_warp = warp_inclusive_scan(warp_value, op);
    const T block_total = shuffle_from(through_warp, Warps - 1);
    const partial<T> before_warp{shuffle_up(through_warp, 1), lane > 0};
    const partial<T> before_block = block_prefix(block_total);
    if (lane < Warps) storage.warp_prefixes[lane] = then(before_block, before_warp, op);
  }
  __syncthreads();
  return storage.warp_prefixes[warp];
}

// ---- Reductions ----------------------------------------------------------------------------

template <int Warps, class T>
struct block_reduce_storage {
  uninitialized_array<partial<T>, Warps> warp_results;
};

// Every lane of warp w passes the warp's result (the same on every lane); warp 0's lanes get
// the block's, warp 0's result first. The other warps get nothing (partial{.., false}). A
// caller that uses the storage again must pass a barrier first: warp 0 may still read it.
template <int Warps, class T, class Op>
__device__ partial<T> block_reduce_warps(const partial<T>& warp_result, Op op,
                                         block_reduce_storage<Warps, T>& storage) {
  const int warp = int(threadIdx.x / 32);
  const int lane = lane_id();
  if (lane == 0) storage.warp_results[warp] = warp_result;
  __syncthreads();
  if (warp != 0) return {T{}, false};
  return warp_reduce(lane < Warps ? storage.warp_results[lane] : partial<T>{T{}, false}, op);
}

// The same under an operator that commutes, `identity` standing for "nothing": warp 0's
// lanes get the block's result, the other warps `identity`. The same barrier rule.
template <int Warps, class T>
struct block_reduce_commutative_storage {
  uninitialized_array<T, Warps> warp_results;
};

template <int Warps, class T, class Op>
__device__ T block_reduce_commutative(const T& warp_result, Op op, const T& identity,
                                      block_reduce_commutative_storage<Warps, T>& storage) {
  const int warp = int(threadIdx.x / 32);
  const int lane = lane_id();
  if (lane == 0) storage.warp_results[warp] = warp_result;
  __syncthreads();
  if (warp != 0) return identity;
  return warp_reduce_commutative(lane < Warps ? storage.warp_results[lane] : identity, op);
}

// ---- Counts of flags: ranking the items a warp selects ---------------------------------------

// Tiles are laid out as in the scans: warp w owns `rows` x 32 x `vec` consecutive items, row
// r of lane l being the `vec` items at r * 32 * vec + l * vec, so that every load is one
// coalesced access per warp. A lane says which of its vector's items it selects as `vec`
// bits a row; an item's rank is the number of selected items before it in the warp, and
// block_warp_prefix over the warps' totals adds the warps before it.

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
    const unsigned through_lane = warp_inclusive_scan(own[w], plus{});
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

}  // namespace ppat::detail
