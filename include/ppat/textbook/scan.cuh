// Textbook scans: the block scans a course teaches, each extended to any n by the
// three-phase method (scan every tile, scan the tile totals, add each tile's offset).
//
//   1. hillis_steele_*_scan  one item per thread, log2(1024) = 10 steps in which every
//                            thread combines the value `offset` to its left: O(n log n)
//                            operations per tile, two barriers per step.
//   2. blelloch_*_scan       work-efficient: an up-sweep builds a tree of partial sums, a
//                            down-sweep hands each node its prefix; O(n) operations, half
//                            the threads per tile, a padded layout against bank conflicts.
//
// Both pass over memory about twice (phase 1 reads n and writes n, phase 3 reads and writes
// n again) and need three launches per level of tile totals. The production scan
// (ppat::inclusive_scan) does it in one pass and one launch.
//
// No identity element is needed: the operator may be any associative one, commutative or
// not. Exclusive results combine `init` first: out[i] = init op in[0] op ... op in[i-1].
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <limits>

#include "../core/arguments.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/memory.cuh"
#include "../core/operators.cuh"
#include "../core/shared_storage.cuh"

namespace ppat::textbook {
namespace detail {

// The pieces, defined below in the order a call reaches them.
template <class BlockScan, bool Exclusive, class T, class Op>
void three_phase_scan(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
                      const char* function);
struct hillis_steele_block_scan;
struct blelloch_block_scan;

}  // namespace detail

template <class T, class Op = plus>
void hillis_steele_inclusive_scan(const T* in, T* out, std::size_t n, Op op = {},
                                  cudaStream_t stream = 0) {
  detail::three_phase_scan<detail::hillis_steele_block_scan, false>(
      in, out, n, T{}, op, stream, "ppat::textbook::hillis_steele_inclusive_scan");
}

template <class T, class Op = plus>
void hillis_steele_exclusive_scan(const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                                  cudaStream_t stream = 0) {
  detail::three_phase_scan<detail::hillis_steele_block_scan, true>(
      in, out, n, init, op, stream, "ppat::textbook::hillis_steele_exclusive_scan");
}

template <class T, class Op = plus>
void blelloch_inclusive_scan(const T* in, T* out, std::size_t n, Op op = {},
                             cudaStream_t stream = 0) {
  detail::three_phase_scan<detail::blelloch_block_scan, false>(
      in, out, n, T{}, op, stream, "ppat::textbook::blelloch_inclusive_scan");
}

template <class T, class Op = plus>
void blelloch_exclusive_scan(const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                             cudaStream_t stream = 0) {
  detail::three_phase_scan<detail::blelloch_block_scan, true>(
      in, out, n, init, op, stream, "ppat::textbook::blelloch_exclusive_scan");
}

namespace detail {

using ppat::detail::ceil_div;
using ppat::detail::check_launch;
using ppat::detail::uninitialized_array;

template <class BlockScan, bool Exclusive, class T, class Op>
void scan_level(const T* in, T* out, std::size_t n, T init, Op op, T* totals,
                const ppat::detail::call_context& call);
template <class BlockScan, bool Exclusive, class T, class Op>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, T* tile_totals, bool seeded,
                                  T init, Op op);
template <int TileItems, bool Exclusive, class T, class Op>
__global__ void add_tile_offsets_kernel(T* out, const T* scanned_totals, std::size_t n, Op op);

template <class BlockScan, bool Exclusive, class T, class Op>
void three_phase_scan(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
                      const char* function) {
  ppat::detail::require_buffer(in, n, function, "in");
  ppat::detail::require_buffer(out, n, function, "out");
  ppat::detail::require_same_or_disjoint(in, out, n, function);
  constexpr std::size_t tile = BlockScan::tile_items;
  ppat::detail::require(n / tile < std::size_t(std::numeric_limits<int>::max()), function, "n",
                        "needs more tiles than one grid can launch");
  if (n == 0) return;
  const ppat::detail::call_context call(stream, function);
  ppat::detail::require_device_readable(in, n, call, "in");
  ppat::detail::require_device_readable(out, n, call, "out");
  // One total per tile at every level whose items do not fit a single tile.
  std::size_t scratch = 0;
  for (std::size_t level = n; level > tile; level = ceil_div(level, tile)) {
    scratch += ceil_div(level, tile);
  }
  ppat::detail::temporary_buffer<T> totals(scratch, call);
  scan_level<BlockScan, Exclusive>(in, out, n, init, op, totals.data(), call);
  totals.release();
}

// Phase 1 scans each tile; when there is more than one, phase 2 scans their totals (the same
// algorithm, one level up, in place) and phase 3 combines each tile with what precedes it.
template <class BlockScan, bool Exclusive, class T, class Op>
void scan_level(const T* in, T* out, std::size_t n, T init, Op op, T* totals,
                const ppat::detail::call_context& call) {
  const std::size_t tiles = ceil_div(n, BlockScan::tile_items);
  const bool single_tile = tiles == 1;
  scan_tiles_kernel<BlockScan, Exclusive>
      <<<unsigned(tiles), BlockScan::threads, 0, call.stream()>>>(
          in, out, n, single_tile ? nullptr : totals, single_tile, init, op);
  check_launch(call.function(), "scan_tiles_kernel");
  if (single_tile) return;

  scan_level<BlockScan, Exclusive>(totals, totals, tiles, init, op, totals + tiles, call);

  // Inclusive: tile 0 has nothing before it and is final already.
  const std::size_t offset_blocks = Exclusive ? tiles : tiles - 1;
  add_tile_offsets_kernel<BlockScan::tile_items, Exclusive>
      <<<unsigned(offset_blocks), 256, 0, call.stream()>>>(out, totals, n, op);
  check_launch(call.function(), "add_tile_offsets_kernel");
}

// One block per tile. The tile is scanned inclusively in shared memory; the exclusive form
// shifts it by one on the way out. Only a `seeded` (single-tile) exclusive scan knows its
// tile's prefix (`init`) here; otherwise each tile's first item is left to phase 3.
template <class BlockScan, bool Exclusive, class T, class Op>
__global__ void __launch_bounds__(BlockScan::threads)
    scan_tiles_kernel(const T* in, T* out, std::size_t n, T* tile_totals, bool seeded, T init,
                      Op op) {
  constexpr int tile_items = BlockScan::tile_items;
  __shared__ uninitialized_array<T, BlockScan::storage_items> tile;
  const std::size_t base = std::size_t(blockIdx.x) * tile_items;
  const int valid = int(min(std::size_t(tile_items), n - base));

  // A partial tile is padded with copies of its last item: every slot holds a real value
  // (so the operator never sees uninitialized bits) and no padded result is ever stored.
  for (int i = threadIdx.x; i < tile_items; i += BlockScan::threads) {
    tile[BlockScan::slot(i)] = in[base + min(i, valid - 1)];
  }
  __syncthreads();
  BlockScan::inclusive_scan(tile, op);

  for (int i = threadIdx.x; i < valid; i += BlockScan::threads) {
    if constexpr (Exclusive) {
      if (i > 0) {
        const T before = tile[BlockScan::slot(i - 1)];
        out[base + i] = seeded ? op(init, before) : before;
      } else if (seeded) {
        out[base] = init;
      }
    } else {
      out[base + i] = tile[BlockScan::slot(i)];
    }
  }
  if (tile_totals != nullptr && threadIdx.x == 0) {
    tile_totals[blockIdx.x] = tile[BlockScan::slot(valid - 1)];
  }
}

// Phase 3: combine every item of a tile with the scanned total of the tiles before it.
template <int TileItems, bool Exclusive, class T, class Op>
__global__ void add_tile_offsets_kernel(T* out, const T* scanned_totals, std::size_t n, Op op) {
  const std::size_t tile = blockIdx.x + (Exclusive ? 0 : 1);
  const T prefix = scanned_totals[Exclusive ? tile : tile - 1];
  const std::size_t base = tile * TileItems;
  const int valid = int(min(std::size_t(TileItems), n - base));
  for (int i = threadIdx.x; i < valid; i += blockDim.x) {
    out[base + i] = (Exclusive && i == 0) ? prefix : op(prefix, out[base + i]);
  }
}

// Hillis & Steele (1986): in step k every item combines the one 2^k to its left. Each step
// reads, waits for every thread to have read, then writes: both barriers are needed.
struct hillis_steele_block_scan {
  static constexpr int threads = 1024;
  static constexpr int tile_items = threads;
  static constexpr int storage_items = tile_items;

  __device__ static int slot(int i) { return i; }

  template <class T, class Op>
  __device__ static void inclusive_scan(uninitialized_array<T, storage_items>& tile, Op op) {
    const int i = threadIdx.x;
    for (int offset = 1; offset < tile_items; offset <<= 1) {
      const bool has_left = i >= offset;
      const T left = tile[has_left ? i - offset : i];
      __syncthreads();
      if (has_left) tile[i] = op(left, tile[i]);
      __syncthreads();
    }
  }
};

// Blelloch (1990), in the shared-memory form of GPU Gems 3, ch. 39: 512 threads scan 1024
// items. The tree's strides are powers of two, which would pile a warp's accesses onto a few
// banks; one pad slot after every 32 items spreads them.
//
// The down-sweep needs no identity: the nodes whose prefix is empty are exactly the root
// and the left spine below it, and thread 0 is the one that handles them.
struct blelloch_block_scan {
  static constexpr int threads = 512;
  static constexpr int tile_items = 2 * threads;
  static constexpr int storage_items = tile_items + tile_items / 32;

  __device__ static int slot(int i) { return i + (i >> 5); }

  template <class T, class Op>
  __device__ static void inclusive_scan(uninitialized_array<T, storage_items>& tile, Op op) {
    const int t = threadIdx.x;
    const T own_low = tile[slot(t)];
    const T own_high = tile[slot(t + threads)];

    // Up-sweep: afterwards each right child holds the total of its subtree.
    int stride = 1;
    for (int active = threads; active > 0; active >>= 1, stride <<= 1) {
      __syncthreads();
      if (t < active) {
        const int left = stride * (2 * t + 1) - 1;
        const int right = stride * (2 * t + 2) - 1;
        tile[slot(right)] = op(tile[slot(left)], tile[slot(right)]);
      }
    }
    // Down-sweep: a node's prefix goes to its left child, prefix op left-total to its right.
    for (int active = 1; active <= threads; active <<= 1) {
      stride >>= 1;
      __syncthreads();
      if (t < active) {
        const int left = stride * (2 * t + 1) - 1;
        const int right = stride * (2 * t + 2) - 1;
        const T left_total = tile[slot(left)];
        tile[slot(left)] = tile[slot(right)];
        tile[slot(right)] = t == 0 ? left_total : op(tile[slot(right)], left_total);
      }
    }
    // Slot i now holds the exclusive prefix of item i (slot 0: none); fold in the items.
    __syncthreads();
    tile[slot(t)] = t == 0 ? own_low : op(tile[slot(t)], own_low);
    tile[slot(t + threads)] = op(tile[slot(t + threads)], own_high);
    __syncthreads();
  }
};

}  // namespace detail
}  // namespace ppat::textbook
