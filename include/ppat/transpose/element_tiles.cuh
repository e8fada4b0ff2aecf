// Tiles of 4- and 8-byte elements, moved element by element: a block stages a tile of
// side_b input rows, side_a elements each, in shared memory, then writes side_a output rows
// of side_b elements each. On both sides a warp's lanes take consecutive elements of one
// row, so every access of a warp is one run of 128 or 256 bytes, whatever the row's
// alignment; a pad column puts a column of the tile on distinct banks (the article's
// kernel, grown). With 16-byte vectors instead (tile_staging.cuh), a row off 16-byte
// boundaries costs partial windows on both sides; element accesses pay nothing for it, and
// on aligned rows they measured level with or ahead of the vectors (docs/patterns.md,
// "Transpose").
//
// Tiles are longer along the output rows than along the input rows: an output row that
// starts mid-sector shares its first and last sectors with the neighbouring tiles, and
// tiles 512 bytes long along it halve those shared sectors against square ones. Tiles are
// numbered along the output rows where a plane has many (plan.cuh, order_tiles), so that
// the blocks writing the two halves of a shared sector run side by side.
//
// transpose.cuh sends 4- and 8-byte elements here when rows on either side are off
// 16-byte boundaries; aligned ones keep the vectors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "plan.cuh"

namespace ppat::detail {

// A tile of side_b input rows by side_a elements; the threads take 32 consecutive elements
// of a row each warp, rows_per_step rows a step. An SM must hold 2048 threads of it: left
// free, the large 4-byte tile took 40 registers, one block an SM, and moved 8192^2 at 74%
// of copy instead of 98%.
template <class T, int SideA, int SideB, int Threads>
struct element_tile_shape
    : tuning<Threads, int(SideA* SideB * sizeof(T) / Threads), 2048 / Threads> {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "element tiles hold 4- or 8-byte elements");
  static_assert(SideA % 32 == 0 && SideB % 32 == 0, "whole warps along each row");
  static constexpr int side_a = SideA, side_b = SideB;
  static constexpr int rows_per_step = Threads / 32;
  static_assert(SideA % rows_per_step == 0 && SideB % rows_per_step == 0, "whole steps");
};

// Large tiles: 256 bytes of each input row, 512 bytes of each output row, 32 bytes a thread
// (1024 threads for 4-byte elements, 512 for 8-byte ones).
template <class T>
using large_element_tile =
    element_tile_shape<T, int(256 / sizeof(T)), int(512 / sizeof(T)),
                       int(256 / sizeof(T) * 512 / sizeof(T) * sizeof(T) / 32)>;
// Small tiles for matrices that make too few large ones to fill the GPU (and planes
// shorter than a large tile): 32 x 32 elements, 256 threads.
template <class T>
using small_element_tile = element_tile_shape<T, 32, 32, 256>;

// Large tiles take a plane at least a large tile on both sides, and a grid of at least
// this many blocks an SM: a 1023 x 1025 f32 matrix makes 136 large tiles for 132 SMs.
constexpr std::size_t large_element_tiles_per_sm = 4;

template <class T, class Tile>
__device__ void stage_element_rows(const T* in, std::size_t in_row_stride, const tile_place& place,
                                   T (&staged)[Tile::side_b][Tile::side_a + 1]);
template <class T, class Tile>
__device__ void write_element_columns(const T (&staged)[Tile::side_b][Tile::side_a + 1], T* out,
                                      std::size_t out_row_stride, const tile_place& place);

// A block a tile.
template <class T, class Tile, bool AlongB>
__global__ void __launch_bounds__(Tile::threads, Tile::min_blocks_per_sm)
    transpose_element_tiles_kernel(const T* in, T* out, plane_layout layout, tile_order order,
                                   std::size_t tiles) {
  __shared__ T staged[Tile::side_b][Tile::side_a + 1];
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const tile_place place = place_of_tile<Tile::side_a, Tile::side_b, AlongB>(t, layout, order);
    stage_element_rows<T, Tile>(in + place.in_offset, layout.in_row_stride, place, staged);
    __syncthreads();
    write_element_columns<T, Tile>(staged, out + place.out_offset, layout.out_row_stride, place);
    if (t + gridDim.x < tiles) __syncthreads();  // the next tile reuses `staged`
  }
}

// The planes of 4- and 8-byte elements in large tiles where they fill the GPU, else in
// small ones.
template <class T>
void launch_element_tiles(const T* in, T* out, const plane_layout& layout,
                          const call_context& call) {
  std::size_t planes = 1;
  for (int d = 0; d < layout.batch_rank; ++d)
    planes *= layout.batch_extent[d];
  const auto launch = [&](auto shape) {
    using tile = decltype(shape);
    const std::size_t plane_tiles =
        ceil_div(layout.rows, tile::side_b) * ceil_div(layout.cols, tile::side_a);
    // Within a plane, tiles are counted in 32 bits: 2^32 tiles is more than 2^44 bytes.
    require(plane_tiles <= 0xFFFFFFFF, call.function(), "rows, cols", "make more than 2^32 tiles");
    const tile_order order = order_tiles<tile::side_a, tile::side_b>(layout);
    const std::size_t tiles = plane_tiles * planes;
    with_tile_direction(order, [&](auto along_b) {
      transpose_element_tiles_kernel<T, tile, decltype(along_b)::value>
          <<<blocks_for(tiles), tile::threads, 0, call.stream()>>>(in, out, layout, order, tiles);
    });
    check_launch(call.function(), "transpose_element_tiles_kernel");
  };
  using large = large_element_tile<T>;
  const std::size_t large_tiles =
      planes * ceil_div(layout.rows, large::side_b) * ceil_div(layout.cols, large::side_a);
  const bool fills_large = layout.rows >= std::size_t(large::side_b) &&
                           layout.cols >= std::size_t(large::side_a) &&
                           large_tiles >= large_element_tiles_per_sm * call.limits().sm_count;
  if (fills_large) {
    launch(large{});
  } else {
    launch(small_element_tile<T>{});
  }
}

// Rows [0, b_count) x elements [0, a_count) of the tile into `staged`: lane l of a warp
// takes elements l, l + 32, ... of its rows. A whole tile issues all its loads before the
// first store to shared memory.
template <class T, class Tile>
__device__ void stage_element_rows(const T* in, std::size_t in_row_stride, const tile_place& place,
                                   T (&staged)[Tile::side_b][Tile::side_a + 1]) {
  constexpr int steps = Tile::side_b / Tile::rows_per_step, lanes_steps = Tile::side_a / 32;
  const int lane = threadIdx.x % 32, row = threadIdx.x / 32;
  if (place.a_count == Tile::side_a && place.b_count == Tile::side_b) {
    T items[steps][lanes_steps];
    const T* first = in + std::size_t(row) * in_row_stride + lane;
#pragma unroll
    for (int i = 0; i < steps; ++i) {
#pragma unroll
      for (int j = 0; j < lanes_steps; ++j)
        items[i][j] = first[std::size_t(i * Tile::rows_per_step) * in_row_stride + 32 * j];
    }
#pragma unroll
    for (int i = 0; i < steps; ++i) {
#pragma unroll
      for (int j = 0; j < lanes_steps; ++j)
        staged[row + i * Tile::rows_per_step][lane + 32 * j] = items[i][j];
    }
    return;
  }
  for (int b = row; b < place.b_count; b += Tile::rows_per_step) {
    for (int a = lane; a < place.a_count; a += 32)
      staged[b][a] = in[std::size_t(b) * in_row_stride + a];
  }
}

// Output rows [0, a_count) x elements [0, b_count) of the tile from `staged`, lanes along
// each output row: column a of the tile, read down the pad column's distinct banks.
template <class T, class Tile>
__device__ void write_element_columns(const T (&staged)[Tile::side_b][Tile::side_a + 1], T* out,
                                      std::size_t out_row_stride, const tile_place& place) {
  constexpr int steps = Tile::side_a / Tile::rows_per_step, lanes_steps = Tile::side_b / 32;
  const int lane = threadIdx.x % 32, row = threadIdx.x / 32;
  if (place.a_count == Tile::side_a && place.b_count == Tile::side_b) {
    T* first = out + std::size_t(row) * out_row_stride + lane;
#pragma unroll
    for (int i = 0; i < steps; ++i) {
#pragma unroll
      for (int j = 0; j < lanes_steps; ++j) {
        first[std::size_t(i * Tile::rows_per_step) * out_row_stride + 32 * j] =
            staged[lane + 32 * j][row + i * Tile::rows_per_step];
      }
    }
    return;
  }
  for (int a = row; a < place.a_count; a += Tile::rows_per_step) {
    for (int b = lane; b < place.b_count; b += 32)
      out[std::size_t(a) * out_row_stride + b] = staged[b][a];
  }
}

}  // namespace ppat::detail
