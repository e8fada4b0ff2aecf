// Production scans: one pass over memory, one launch, deterministic.
//
//   ppat::inclusive_scan(in, out, n, op, stream)        out[i] = in[0] op ... op in[i]
//   ppat::exclusive_scan(in, out, n, init, op, stream)  out[i] = init op in[0] op ... op in[i-1]
//
// Any associative `op`, commutative or not; any trivially copyable T; in == out allowed.
// Each block scans one tile of 256 threads x 64 bytes, read and written with 16-byte
// accesses that are coalesced across the warp, and learns the tile's prefix from the tiles
// before it through the deterministic decoupled look-back of core/lookback.cuh. Every
// combination happens in an order fixed by n alone, so floating-point results are the same
// bits on every run on the same GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <limits>

#include "core/arguments.cuh"
#include "core/block.cuh"
#include "core/error.cuh"
#include "core/launch.cuh"
#include "core/lookback.cuh"
#include "core/memory.cuh"
#include "core/operators.cuh"
#include "core/partial.cuh"
#include "core/shared_storage.cuh"
#include "core/vector_io.cuh"
#include "core/warp.cuh"

namespace ppat {
namespace detail {

template <bool Exclusive, class T, class Op>
void single_pass_scan(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
                      const char* function);

}  // namespace detail

template <class T, class Op = plus>
void inclusive_scan(const T* in, T* out, std::size_t n, Op op = {}, cudaStream_t stream = 0) {
  detail::single_pass_scan<false>(in, out, n, T{}, op, stream, "ppat::inclusive_scan");
}

template <class T, class Op = plus>
void exclusive_scan(const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                    cudaStream_t stream = 0) {
  detail::single_pass_scan<true>(in, out, n, init, op, stream, "ppat::exclusive_scan");
}

namespace detail {

// A tile: 8 data warps, each owning `rows` x 32 x `vec` consecutive items (row r of lane l
// is the `vec` items at r * 32 * vec + l * vec: with 16-byte vectors every row is one fully
// coalesced 512-byte access per warp), plus one look-back warp that learns the tile's prefix
// while the data warps load.
template <class T, bool Vectorized>
struct scan_tile_shape {
  static constexpr int data_warps = 8;
  static constexpr int threads = 32 * (data_warps + 1);
  static constexpr int vec = Vectorized ? items_per_vector<T> : 1;
  // Up to 64 bytes and 16 items a thread: a small item still takes a whole register.
  static constexpr int rows =
      Vectorized ? std::clamp(16 / vec, 1, 4) : std::clamp(int(64 / sizeof(T)), 1, 8);
  static constexpr int warp_items = 32 * vec * rows;
  static constexpr int tile_items = data_warps * warp_items;
  static constexpr int min_blocks = 3;  // resident blocks per SM the registers must allow
};

template <class Shape, bool Exclusive, class T, class Op>
void launch_single_pass_scan(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
                             const char* function);
template <class Shape, bool Exclusive, class T, class Op>
__global__ void single_pass_scan_kernel(const T* in, T* out, std::size_t n, lookback_state<T> state,
                                        T init, Op op);

template <bool Exclusive, class T, class Op>
void single_pass_scan(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
                      const char* function) {
  require_buffer(in, n, function, "in");
  require_buffer(out, n, function, "out");
  require_same_or_disjoint(in, out, n, function);
  if (n == 0) return;
  // 16-byte accesses need both buffers 16-byte aligned; anything else takes T-sized ones.
  if (items_per_vector < T >> 1 && aligned_to(in, 16) && aligned_to(out, 16)) {
    launch_single_pass_scan<scan_tile_shape<T, true>, Exclusive>(in, out, n, init, op, stream,
                                                                 function);
  } else {
    launch_single_pass_scan<scan_tile_shape<T, false>, Exclusive>(in, out, n, init, op, stream,
                                                                  function);
  }
}

template <class Shape, bool Exclusive, class T, class Op>
void launch_single_pass_scan(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
                             const char* function) {
  const std::size_t tiles = ceil_div(n, Shape::tile_items);
  require(tiles <= std::size_t(std::numeric_limits<int>::max()), function, "n",
          "needs more tiles than one grid can launch");
  const lookback_layout layout = plan_lookback<T>(tiles);
  temporary_buffer<unsigned char> memory(layout.total_bytes, stream, function);
  check_cuda(cudaMemsetAsync(memory.data(), 0, layout.control_bytes, stream), function,
             "cudaMemsetAsync");
  single_pass_scan_kernel<Shape, Exclusive><<<unsigned(tiles), Shape::threads, 0, stream>>>(
      in, out, n, lookback_view<T>(memory.data(), layout), init, op);
  check_launch(function, "single_pass_scan_kernel");
  memory.release();
}

template <class Shape, bool Exclusive, class T, class Op>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks)
    single_pass_scan_kernel(const T* in, T* out, std::size_t n, lookback_state<T> state, T init,
                            Op op) {
  constexpr int vec = Shape::vec;
  constexpr int rows = Shape::rows;
  constexpr int data_warps = Shape::data_warps;
  __shared__ unsigned tile_slot;
  __shared__ uninitialized_array<partial<T>, data_warps> warp_prefixes;  // totals, then prefixes
  __shared__ uninitialized_array<partial<T>, 1> prefix_of_tile;
  __shared__ uninitialized_array<T, 1> aggregate_of_tile;
  if (threadIdx.x == 0) tile_slot = atomicAdd(state.tile_counter, 1u);
  __syncthreads();
  const unsigned tile = tile_slot;
  const int warp = int(threadIdx.x / 32);
  const int lane = lane_id();
  const partial<T> start{init, Exclusive};

  const int data_warp = warp - 1;
  const std::size_t tile_first = std::size_t(tile) * Shape::tile_items;
  const std::size_t warp_first = tile_first + std::size_t(data_warp) * Shape::warp_items;
  const bool full_tile = tile_first + Shape::tile_items <= n;
  const auto row_first = [&](int r) { return warp_first + std::size_t(r) * 32 * vec + lane * vec; };
  T items[rows][vec];
  T lane_inclusive[rows];
  T row_total[rows];
  tile_prefix<T> prefix{};

  if (warp == 0) {
    // The look-back warp: the prefix needs nothing of this tile, so it overlaps the loads.
    prefix = lookback_prefix(state, tile, start, op);
    if (lane == 0) prefix_of_tile[0] = prefix.total;
  } else {
    // Load. The partial last tile pads with copies of its last item, whose results are
    // never stored (and no later tile needs its aggregate).
#pragma unroll
    for (int r = 0; r < rows; ++r) {
      if (full_tile) {
        load_items(in + row_first(r), items[r]);
      } else {
#pragma unroll
        for (int j = 0; j < vec; ++j)
          items[r][j] = in[min(row_first(r) + j, n - 1)];
      }
    }

    // Scan each vector in registers, then each row across the warp.
#pragma unroll
    for (int r = 0; r < rows; ++r) {
#pragma unroll
      for (int j = 1; j < vec; ++j)
        items[r][j] = op(items[r][j - 1], items[r][j]);
      lane_inclusive[r] = warp_inclusive_scan(items[r][vec - 1], op);
      row_total[r] = shuffle_from(lane_inclusive[r], 31);
    }
    T warp_total = row_total[0];
#pragma unroll
    for (int r = 1; r < rows; ++r)
      warp_total = op(warp_total, row_total[r]);
    if (lane == 0) warp_prefixes[data_warp] = partial<T>{warp_total, true};
    barrier_among<32 * data_warps>(/*id=*/1);

    // The first data warp: the warps' prefixes within the tile, and the tile's aggregate,
    // published at once for the tiles after this one.
    if (data_warp == 0) {
      const T warp_value = lane < data_warps ? warp_prefixes[lane].value : warp_total;
      const T through_warp = warp_inclusive_scan(warp_value, op);
      const T tile_total = shuffle_from(through_warp, data_warps - 1);
      const T before_warp = shuffle_up(through_warp, 1);
      if (lane < data_warps) warp_prefixes[lane] = partial<T>{before_warp, lane > 0};
      if (lane == 0) {
        publish_aggregate(state, tile, tile_total);
        aggregate_of_tile[0] = tile_total;
      }
    }
  }
  __syncthreads();  // the tile's prefix and aggregate are known

  if (warp == 0) {
    finish_group(state, tile, prefix, aggregate_of_tile[0], start, op);
    return;
  }

  // Combine every item with everything before it, and store.
  partial<T> before_row = then(prefix_of_tile[0], warp_prefixes[data_warp], op);
#pragma unroll
  for (int r = 0; r < rows; ++r) {
    const partial<T> before_lane =
        then(before_row, partial<T>{shuffle_up(lane_inclusive[r], 1), lane > 0}, op);
    T results[vec];
#pragma unroll
    for (int j = 0; j < vec; ++j) {
      if constexpr (Exclusive) {
        // An exclusive scan always has a prefix: `init` at the very least.
        results[j] = j == 0 ? before_lane.value : op(before_lane.value, items[r][j - 1]);
      } else {
        results[j] = after(before_lane, items[r][j], op);
      }
    }
    if (full_tile) {
      store_items(out + row_first(r), results);
    } else {
#pragma unroll
      for (int j = 0; j < vec; ++j) {
        if (row_first(r) + j < n) out[row_first(r) + j] = results[j];
      }
    }
    before_row = then(before_row, partial<T>{row_total[r], true}, op);
  }
}

}  // namespace detail
}  // namespace ppat
