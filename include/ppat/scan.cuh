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

// A tile: 8 warps; each warp owns `rows` x 32 x `vec` consecutive items, row r of lane l
// being the `vec` items at r * 32 * vec + l * vec. With 16-byte vectors every row is one
// fully coalesced 512-byte access per warp.
template <class T, bool Vectorized>
struct scan_tile_shape {
  static constexpr int threads = 256;
  static constexpr int warps = threads / 32;
  static constexpr int vec = Vectorized ? items_per_vector<T> : 1;
  static constexpr int rows =
      Vectorized ? 4 : std::clamp(int(64 / sizeof(T)), 1, 16);  // about 64 bytes a thread
  static constexpr int warp_items = 32 * vec * rows;
  static constexpr int tile_items = warps * warp_items;
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
  constexpr bool vectorizable = items_per_vector<T> != 1;
  if (vectorizable && aligned_to(in, 16) && aligned_to(out, 16)) {
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
__global__ void __launch_bounds__(Shape::threads)
    single_pass_scan_kernel(const T* in, T* out, std::size_t n, lookback_state<T> state, T init,
                            Op op) {
  constexpr int vec = Shape::vec;
  constexpr int rows = Shape::rows;
  __shared__ unsigned tile_slot;
  __shared__ uninitialized_array<partial<T>, Shape::warps> warp_prefixes;
  if (threadIdx.x == 0) tile_slot = atomicAdd(state.tile_counter, 1u);
  __syncthreads();
  const unsigned tile = tile_slot;
  const int warp = int(threadIdx.x / 32);
  const int lane = lane_id();
  const std::size_t tile_first = std::size_t(tile) * Shape::tile_items;
  const std::size_t warp_first = tile_first + std::size_t(warp) * Shape::warp_items;
  const bool full_tile = tile_first + Shape::tile_items <= n;
  const auto row_first = [&](int r) { return warp_first + std::size_t(r) * 32 * vec + lane * vec; };

  // Load. The partial last tile pads with copies of its last item, whose results are
  // never stored (and no later tile needs its aggregate).
  T items[rows][vec];
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
  T lane_inclusive[rows];
  T row_total[rows];
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
  if (lane == 0) warp_prefixes[warp] = partial<T>{warp_total, true};
  __syncthreads();

  // Warp 0: the warps' prefixes within the tile, then the tile's prefix from the look-back.
  if (warp == 0) {
    const T warp_value = lane < Shape::warps ? warp_prefixes[lane].value : warp_total;
    const T through_warp = warp_inclusive_scan(warp_value, op);
    const T tile_total = shuffle_from(through_warp, Shape::warps - 1);
    const partial<T> before_warp{shuffle_up(through_warp, 1), lane > 0};
    const partial<T> start{init, Exclusive};
    const partial<T> tile_prefix = lookback_prefix(state, tile, tile_total, start, op);
    if (lane < Shape::warps) warp_prefixes[lane] = then(tile_prefix, before_warp, op);
  }
  __syncthreads();

  // Combine every item with everything before it, and store.
  partial<T> before_row = warp_prefixes[warp];
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
