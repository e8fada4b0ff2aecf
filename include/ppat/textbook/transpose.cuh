// Textbook transposes: in is rows x cols, row-major; out is cols x rows, row-major.
//
//   1. transpose_naive  each thread moves one element: reads along a row are coalesced,
//                       writes go down a column, one 32-byte sector per element written.
//   2. transpose_tiled  the seed's kernel: a 32 x 32 block stages a tile in shared memory,
//                       reading rows of `in` and writing rows of `out`, so both sides are
//                       coalesced. The tile has one pad column: a tile column's 32 items
//                       then sit in 32 different banks instead of one.
//
// Both take any shape and index in 64 bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/shared_storage.cuh"
#include "../transpose/arguments.cuh"

namespace ppat::textbook {
namespace detail {

// The kernels, defined below.
template <class T>
__global__ void transpose_naive_kernel(const T* in, T* out, std::size_t rows, std::size_t cols);
template <class T>
__global__ void transpose_tiled_kernel(const T* in, T* out, std::size_t rows, std::size_t cols);

constexpr int transpose_tile = 32;

}  // namespace detail

template <class T>
void transpose_naive(const T* in, T* out, std::size_t rows, std::size_t cols,
                     cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::textbook::transpose_naive";
  const std::size_t count = ppat::detail::require_transpose_buffers(in, out, rows, cols, function);
  if (count == 0) return;
  const ppat::detail::call_context call(stream, function);
  ppat::detail::require_transpose_readable(in, out, count, call);
  const dim3 block(32, 8);  // (x: along a row of `in`, y: down its rows)
  detail::
      transpose_naive_kernel<<<ppat::detail::grid_2d(rows, cols, block), block, 0, call.stream()>>>(
          in, out, rows, cols);
  ppat::detail::check_launch(function, "transpose_naive_kernel");
}

template <class T>
void transpose_tiled(const T* in, T* out, std::size_t rows, std::size_t cols,
                     cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::textbook::transpose_tiled";
  const std::size_t count = ppat::detail::require_transpose_buffers(in, out, rows, cols, function);
  if (count == 0) return;
  const ppat::detail::call_context call(stream, function);
  ppat::detail::require_transpose_readable(in, out, count, call);
  constexpr int tile = detail::transpose_tile;
  const dim3 block(tile, tile);  // one thread per element of a tile
  detail::
      transpose_tiled_kernel<<<ppat::detail::grid_2d(rows, cols, block), block, 0, call.stream()>>>(
          in, out, rows, cols);
  ppat::detail::check_launch(function, "transpose_tiled_kernel");
}

namespace detail {

template <class T>
__global__ void transpose_naive_kernel(const T* in, T* out, std::size_t rows, std::size_t cols) {
  for (std::size_t r = std::size_t(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += std::size_t(gridDim.y) * blockDim.y) {
    for (std::size_t c = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
         c += std::size_t(gridDim.x) * blockDim.x) {
      out[c * rows + r] = in[r * cols + c];
    }
  }
}

// One block per tile; grid-stride loops cover matrices with more tiles than a grid holds.
template <class T>
__global__ void __launch_bounds__(transpose_tile* transpose_tile)
    transpose_tiled_kernel(const T* in, T* out, std::size_t rows, std::size_t cols) {
  constexpr int tile = transpose_tile;
  constexpr int pitch = tile + 1;
  __shared__ ppat::detail::uninitialized_array<T, tile * pitch> staged;  // (TILE, TILE + 1)
  const int x = threadIdx.x;
  const int y = threadIdx.y;

  for (std::size_t first_row = std::size_t(blockIdx.y) * tile; first_row < rows;
       first_row += std::size_t(gridDim.y) * tile) {
    for (std::size_t first_col = std::size_t(blockIdx.x) * tile; first_col < cols;
         first_col += std::size_t(gridDim.x) * tile) {
      if (first_row + y < rows && first_col + x < cols) {
        staged[y * pitch + x] = in[(first_row + y) * cols + first_col + x];
      }
      __syncthreads();
      // Row y of this tile in `out` is column y of the staged tile.
      if (first_col + y < cols && first_row + x < rows) {
        out[(first_col + y) * rows + first_row + x] = staged[x * pitch + y];
      }
      __syncthreads();  // the next tile reuses `staged`
    }
  }
}

}  // namespace detail
}  // namespace ppat::textbook
