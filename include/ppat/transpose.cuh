// Production transposes and permutes: tiles staged through shared memory, read and written
// with 16-byte accesses on both sides.
//
//   ppat::transpose(in, out, rows, cols, stream)
//   ppat::transpose(in, ld_in, out, ld_out, rows, cols, stream)
//   ppat::transpose_batched(in, out, batch, rows, cols, stream)
//   ppat::transpose_inplace(data, n, stream)                 square
//   ppat::permute(in, out, shape, axes, stream)              NumPy axes, rank 1 to 8
//
// All but the in-place one are one operation on planes: out(i, a, b) = in(i, b, a), where
// a runs along the rows of `in` (its contiguous axis), b along the rows of `out`, and i
// over any number of batch axes with strides of their own.
//
// A block moves one S x S tile: it reads S rows of `in` as 16-byte vectors, all in flight
// at once, into shared memory, then writes S rows of `out` as 16-byte vectors, each
// gathered from a column of the tile. S makes a tile row at least 128 bytes. In shared
// memory the 16-byte chunks of tile row b are permuted by XOR with (b / V) % 8 (V elements
// to a chunk), so both the row-wise stores and the column-wise gathers of a warp fall on
// distinct banks. One- and two-byte elements are gathered as 32-bit words, V rows at a
// time, and sorted into E = 4 / sizeof(T) output vectors with byte permutes.
//
// Rows that do not start on 16-byte boundaries (odd leading dimensions, offset pointers)
// are read through the 16-byte windows they overlap, whole, except windows that would reach
// past either end of `in`, which go element by element. An unaligned output is staged by
// columns, at a pitch equal to its row stride modulo the elements of a vector, so that
// each of its windows is one aligned 16-byte shared-memory read and one 16-byte store.
//
// 4- and 8-byte elements whose rows are off 16-byte boundaries on either side go to element
// tiles instead, lanes along the rows on both sides, longer along the output rows. Tiles
// are numbered along the output rows where a plane has at least 16 on both sides.
//
// A plane whose short side k is under a tile and contiguous (33 x 2^20, say) wastes most
// of each tile; the skinny kernel instead moves a span of the long side, all k of it: one
// side is then a single contiguous run, the other k row pieces, both 16-byte vectors. Short
// sides of 2 to 8 one- and two-byte elements (and of 4 or 8 four-byte ones) whose rows are
// on 4-byte boundaries move a word column a thread, transposed in registers; short sides of
// 8- and 16-byte elements that are whole 16-byte vectors move one element a thread along
// the flat side; batches of planes of at most 2 KB that follow each other on both sides
// move in groups of whole planes.
//
// permute first drops axes of extent one and merges axes that stay adjacent; what remains
// is a copy, a set of planes, or (when the contiguous axis stays last) a gather of whole
// rows. transpose_inplace swaps tile pairs across the diagonal.
//
// This file: the public calls, their dispatch and the plane, in-place and row kernels.
// transpose/plan.cuh: the host-side plan (plane layouts, the permute reduced to a copy,
// planes or rows), tested without a GPU. transpose/tile_staging.cuh: staging a tile and
// writing it transposed. transpose/element_tiles.cuh: the element tiles.
// transpose/skinny.cuh: the skinny and short-row kernels. transpose/word_columns.cuh: word
// columns. transpose/small_planes.cuh: small planes in groups.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/arguments.cuh"
#include "core/device.cuh"
#include "core/error.cuh"
#include "core/launch.cuh"
#include "core/memory.cuh"
#include "core/vector_io.cuh"
#include "transpose/arguments.cuh"
#include "transpose/element_tiles.cuh"
#include "transpose/plan.cuh"
#include "transpose/skinny.cuh"
#include "transpose/small_planes.cuh"
#include "transpose/tile_staging.cuh"
#include "transpose/word_columns.cuh"

namespace ppat {
namespace detail {

template <class T>
void transpose_planes(const T* in, T* out, const plane_layout& layout, const call_context& call);
template <class T>
void permute_in_device(const T* in, T* out, const std::vector<std::size_t>& shape,
                       const std::vector<int>& axes, const call_context& call);
template <class T>
void launch_vector_tiles(const T* in, T* out, const plane_layout& layout, const call_context& call);
template <class T>
void launch_transpose_inplace(T* data, std::size_t n, const call_context& call);

template <class T>
constexpr void require_element_size() {
  static_assert(
      sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16,
      "ppat transposes elements of 1, 2, 4, 8 or 16 bytes");
}

}  // namespace detail

// in: rows x cols, row-major; out: cols x rows, row-major.
template <class T>
void transpose(const T* in, T* out, std::size_t rows, std::size_t cols, cudaStream_t stream = 0) {
  detail::require_element_size<T>();
  constexpr const char* function = "ppat::transpose";
  const std::size_t count = detail::require_transpose_buffers(in, out, rows, cols, function);
  if (count == 0) return;
  const detail::call_context call(stream, function);
  detail::require_transpose_readable(in, out, count, call);
  if (rows == 1 || cols == 1) {  // the result has the input's layout
    detail::copy_items(in, out, count, call);
    return;
  }
  detail::transpose_planes(in, out, detail::matrix_layout(rows, cols, cols, rows), call);
}

// With leading dimensions: row r of `in` starts at in + r * ld_in (ld_in >= cols), row c
// of `out` at out + c * ld_out (ld_out >= rows). The padding of `out` is left untouched.
template <class T>
void transpose(const T* in, std::size_t ld_in, T* out, std::size_t ld_out, std::size_t rows,
               std::size_t cols, cudaStream_t stream = 0) {
  detail::require_element_size<T>();
  constexpr const char* function = "ppat::transpose";
  if (rows == 0 || cols == 0) return;
  detail::require(ld_in >= cols, function, "ld_in", "must be at least 'cols'");
  detail::require(ld_out >= rows, function, "ld_out", "must be at least 'rows'");
  // The elements each matrix spans, from its first to its last.
  const std::size_t in_span =
      detail::checked_element_count(rows - 1, ld_in, sizeof(T), function) + cols;
  const std::size_t out_span =
      detail::checked_element_count(cols - 1, ld_out, sizeof(T), function) + rows;
  detail::require_buffer(in, in_span, function, "in");
  detail::require_buffer(out, out_span, function, "out");
  detail::require_disjoint(in, in_span, out, out_span, function, "in", "out");
  const detail::call_context call(stream, function);
  detail::require_device_readable(in, in_span, call, "in");
  detail::require_device_readable(out, out_span, call, "out");
  // One row into a column of unit stride, or a column of unit stride into one row: the
  // result has the input's layout. Tiles would leave all but one of their rows empty (16-byte
  // elements moved at 8% of copy so).
  if ((rows == 1 && ld_out == 1) || (cols == 1 && ld_in == 1)) {
    detail::copy_items(in, out, rows * cols, call);
    return;
  }
  detail::transpose_planes(in, out, detail::matrix_layout(rows, cols, ld_in, ld_out), call);
}

// `batch` contiguous rows x cols matrices, each transposed.
template <class T>
void transpose_batched(const T* in, T* out, std::size_t batch, std::size_t rows, std::size_t cols,
                       cudaStream_t stream = 0) {
  detail::require_element_size<T>();
  constexpr const char* function = "ppat::transpose_batched";
  const std::size_t matrix = detail::checked_element_count(rows, cols, sizeof(T), function);
  const std::size_t count = detail::checked_element_count(batch, matrix, sizeof(T), function);
  detail::require_buffer(in, count, function, "in");
  detail::require_buffer(out, count, function, "out");
  detail::require_disjoint(in, count, out, count, function, "in", "out");
  if (count == 0) return;
  const detail::call_context call(stream, function);
  detail::require_transpose_readable(in, out, count, call);
  if (rows == 1 || cols == 1) {  // every matrix has the layout of its result
    detail::copy_items(in, out, count, call);
    return;
  }
  detail::plane_layout layout = detail::matrix_layout(rows, cols, cols, rows);
  layout.batch_rank = 1;
  layout.batch_extent[0] = batch;
  layout.batch_in_stride[0] = matrix;
  layout.batch_out_stride[0] = matrix;
  detail::transpose_planes(in, out, layout, call);
}

// The n x n matrix at `data` becomes its transpose.
template <class T>
void transpose_inplace(T* data, std::size_t n, cudaStream_t stream = 0) {
  detail::require_element_size<T>();
  constexpr const char* function = "ppat::transpose_inplace";
  const std::size_t count = detail::checked_element_count(n, n, sizeof(T), function);
  detail::require_buffer(data, count, function, "data");
  if (count == 0) return;
  const detail::call_context call(stream, function);
  detail::require_device_readable(data, count, call, "data");
  detail::launch_transpose_inplace(data, n, call);
}

// NumPy semantics: out.shape[i] = in.shape[axes[i]], both row-major.
template <class T>
void permute(const T* in, T* out, const std::vector<std::size_t>& shape,
             const std::vector<int>& axes, cudaStream_t stream = 0) {
  detail::require_element_size<T>();
  constexpr const char* function = "ppat::permute";
  const std::size_t rank = shape.size();
  detail::require(rank >= 1 && rank <= detail::max_permute_rank, function, "shape",
                  "must have 1 to 8 axes");
  detail::require(axes.size() == rank, function, "axes", "must name as many axes as 'shape' has");
  std::vector<bool> named(rank, false);
  for (int axis : axes) {
    detail::require(axis >= 0 && std::size_t(axis) < rank && !named[axis], function, "axes",
                    "must be a permutation of 0 .. rank - 1");
    named[axis] = true;
  }
  std::size_t count = 1;
  for (std::size_t extent : shape)
    count = detail::checked_element_count(count, extent, sizeof(T), function);
  detail::require_buffer(in, count, function, "in");
  detail::require_buffer(out, count, function, "out");
  detail::require_disjoint(in, count, out, count, function, "in", "out");
  if (count == 0) return;
  const detail::call_context call(stream, function);
  detail::require_transpose_readable(in, out, count, call);
  detail::permute_in_device(in, out, shape, axes, call);
}

namespace detail {

// Whole rows moved unit by unit: 256 threads, one 16-byte unit each a step, 8 blocks an SM
// in the grid (not measured against other shapes).
using permute_rows_tuning = tuning<256, 16, 8, 8>;

template <class T, bool AlignedIn, bool AlignedOut, bool AlongB>
__global__ void transpose_planes_kernel(const T* in, T* out, plane_layout layout, tile_order order,
                                        std::size_t tiles, const T* in_end);
template <class T, bool Aligned>
__global__ void transpose_inplace_kernel(T* data, std::size_t n, std::size_t tiles_side,
                                         std::size_t pairs);
template <class U>
__global__ void permute_rows_kernel(const U* in, U* out, std::size_t row_units, std::size_t total,
                                    plane_layout rows);

template <class T>
void transpose_planes(const T* in, T* out, const plane_layout& layout, const call_context& call) {
  if (transpose_small_planes(in, out, layout, call) ||
      transpose_word_columns(in, out, layout, call) || transpose_skinny(in, out, layout, call) ||
      transpose_short_rows(in, out, layout, call))
    return;
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    // Rows off 16-byte boundaries cost the vectors partial windows on both sides; element
    // accesses do not pay for them.
    const bool rows_on_vectors =
        rows_aligned(in, layout.in_row_stride, layout.batch_in_stride, layout.batch_rank) &&
        rows_aligned(out, layout.out_row_stride, layout.batch_out_stride, layout.batch_rank);
    if (!rows_on_vectors) {
      launch_element_tiles(in, out, layout, call);
      return;
    }
  }
  launch_vector_tiles(in, out, layout, call);
}

template <class T>
void launch_vector_tiles(const T* in, T* out, const plane_layout& layout,
                         const call_context& call) {
  using tile = transpose_tile<T>;
  const std::size_t plane_tiles =
      ceil_div(layout.rows, tile::side) * ceil_div(layout.cols, tile::side);
  // Within a plane, tiles are counted in 32 bits: 2^32 tiles is more than 2^44 bytes.
  require(plane_tiles <= 0xFFFFFFFF, call.function(), "rows, cols", "make more than 2^32 tiles");
  const tile_order order = order_tiles<tile::side, tile::side>(layout);
  std::size_t tiles = plane_tiles;
  for (int d = 0; d < layout.batch_rank; ++d)
    tiles *= layout.batch_extent[d];
  const bool aligned_in =
      rows_aligned(in, layout.in_row_stride, layout.batch_in_stride, layout.batch_rank);
  const bool aligned_out =
      rows_aligned(out, layout.out_row_stride, layout.batch_out_stride, layout.batch_rank);
  // Reads of 16-byte windows reach past a tile, never past the input's end.
  const auto launch = [&](auto kernel) {
    kernel<<<blocks_for(tiles), tile::threads, 0, call.stream()>>>(in, out, layout, order, tiles,
                                                                   in + input_span(layout));
  };
  with_tile_direction(order, [&](auto along_b) {
    constexpr bool b_first = decltype(along_b)::value;
    if (aligned_in && aligned_out) {
      launch(transpose_planes_kernel<T, true, true, b_first>);
    } else if (aligned_in) {
      launch(transpose_planes_kernel<T, true, false, b_first>);
    } else if (aligned_out) {
      launch(transpose_planes_kernel<T, false, true, b_first>);
    } else {
      launch(transpose_planes_kernel<T, false, false, b_first>);
    }
  });
  check_launch(call.function(), "transpose_planes_kernel");
}

template <class T>
void launch_transpose_inplace(T* data, std::size_t n, const call_context& call) {
  using tile = transpose_tile<T>;
  const std::size_t tiles_side = ceil_div(n, tile::side);
  const std::size_t pairs = tiles_side * (tiles_side + 1) / 2;  // tiles on or above the diagonal
  if (aligned_to(data, 16) && n * sizeof(T) % 16 == 0) {
    transpose_inplace_kernel<T, true>
        <<<blocks_for(pairs), tile::threads, 0, call.stream()>>>(data, n, tiles_side, pairs);
  } else {
    transpose_inplace_kernel<T, false>
        <<<blocks_for(pairs), tile::threads, 0, call.stream()>>>(data, n, tiles_side, pairs);
  }
  check_launch(call.function(), "transpose_inplace_kernel");
}

template <class T>
void permute_in_device(const T* in, T* out, const std::vector<std::size_t>& shape,
                       const std::vector<int>& axes, const call_context& call) {
  const permute_plan plan = plan_permute(shape, axes);
  if (plan.how == permute_plan::kind::copy) {  // axes longer than one keep their order
    copy_items(in, out, plan.count, call);
    return;
  }
  if (plan.how == permute_plan::kind::planes) {
    transpose_planes(in, out, plan.layout, call);
    return;
  }
  // Whole rows move, as 16-byte units where they allow; rows are numbered in output order.
  constexpr int vec = transpose_tile<T>::vec;
  const bool vectors =
      aligned_to(in, 16) && aligned_to(out, 16) && plan.row_length * sizeof(T) % 16 == 0;
  const std::size_t unit = vectors ? vec : 1;  // elements a unit
  plane_layout rows = plan.layout;
  for (int d = 0; d < rows.batch_rank; ++d)
    rows.batch_in_stride[d] /= unit;
  const std::size_t row_units = plan.row_length / unit;
  const std::size_t total = plan.count / unit;
  const unsigned blocks =
      grid_stride_blocks<permute_rows_tuning>(total, permute_rows_tuning::threads, call.limits());
  if (vectors) {
    permute_rows_kernel<<<blocks, permute_rows_tuning::threads, 0, call.stream()>>>(
        reinterpret_cast<const uint4*>(in), reinterpret_cast<uint4*>(out), row_units, total, rows);
  } else {
    permute_rows_kernel<<<blocks, permute_rows_tuning::threads, 0, call.stream()>>>(
        in, out, row_units, total, rows);
  }
  check_launch(call.function(), "permute_rows_kernel");
}

// A block a tile: its loads all in flight at once, and the blocks many (few registers and
// threads each), so that while some wait on loads others write.
template <class T, bool AlignedIn, bool AlignedOut, bool AlongB>
__global__ void __launch_bounds__(transpose_tile<T>::threads, transpose_tile<T>::min_blocks_per_sm)
    transpose_planes_kernel(const T* in, T* out, plane_layout layout, tile_order order,
                            std::size_t tiles, const T* in_end) {
  using tile = transpose_tile<T>;
  __shared__ uint4 staged_chunks[staging_of<T, AlignedIn, AlignedOut>::size];
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const tile_place place = place_of_tile<tile::side, tile::side, AlongB>(t, layout, order);
    const T* tile_in = in + place.in_offset;
    T* tile_out = out + place.out_offset;
    const auto staged = staging_for<T, AlignedIn, AlignedOut>(
        staged_chunks, tile_in, layout.in_row_stride, tile_out, layout.out_row_stride);
    stage_tile<AlignedIn>(tile_in, layout.in_row_stride, place.b_count, place.a_count, {in, in_end},
                          staged);
    __syncthreads();
    write_tile_transposed<AlignedOut>(tile_out, layout.out_row_stride, place.b_count, place.a_count,
                                      staged);
    if (t + gridDim.x < tiles) __syncthreads();  // the next tile reuses `staged_chunks`
  }
}

// Tile pairs (r, c) with r <= c, numbered row by row: row r starts at r * (2T - r + 1) / 2.
__device__ inline std::size_t first_pair_of_row(std::size_t r, std::size_t tiles_side) {
  return r * (2 * tiles_side - r + 1) / 2;
}

// Each block swaps tile (r, c) with tile (c, r), both transposed; a diagonal tile is
// transposed where it is.
template <class T, bool Aligned>
__global__ void __launch_bounds__(transpose_tile<T>::threads, transpose_tile<T>::min_blocks_per_sm)
    transpose_inplace_kernel(T* data, std::size_t n, std::size_t tiles_side, std::size_t pairs) {
  using tile = transpose_tile<T>;
  constexpr int side = tile::side;
  __shared__ uint4 above_chunks[staging_of<T, Aligned, Aligned>::size];
  __shared__ uint4 below_chunks[staging_of<T, Aligned, Aligned>::size];
  for (std::size_t p = blockIdx.x; p < pairs; p += gridDim.x) {
    // The row whose pairs include p: estimated in double, then settled exactly.
    const double span = 2.0 * double(tiles_side) + 1.0;
    auto r = std::size_t((span - sqrt(span * span - 8.0 * double(p))) / 2.0);
    while (r > 0 && first_pair_of_row(r, tiles_side) > p)
      --r;
    while (first_pair_of_row(r + 1, tiles_side) <= p)
      ++r;
    const std::size_t c = r + (p - first_pair_of_row(r, tiles_side));
    const int rows_r = int(min(std::size_t(side), n - r * side));
    const int rows_c = int(min(std::size_t(side), n - c * side));
    T* tile_rc = data + r * side * n + c * side;
    T* tile_cr = data + c * side * n + r * side;
    const readable_span<T> readable{data, data + n * n};
    const auto above = staging_for<T, Aligned, Aligned>(above_chunks, tile_rc, n, tile_cr, n);
    const auto below = staging_for<T, Aligned, Aligned>(below_chunks, tile_cr, n, tile_rc, n);
    stage_tile<Aligned>(tile_rc, n, rows_r, rows_c, readable, above);
    if (r != c) stage_tile<Aligned>(tile_cr, n, rows_c, rows_r, readable, below);
    __syncthreads();
    write_tile_transposed<Aligned>(tile_cr, n, rows_r, rows_c, above);
    if (r != c) write_tile_transposed<Aligned>(tile_rc, n, rows_c, rows_r, below);
    if (p + gridDim.x < pairs) __syncthreads();  // the next pair reuses both tiles
  }
}

// Unit i of `out` (units in output order) comes from the same unit of row i / row_units,
// found through the row axes' input strides.
template <class U>
__global__ void __launch_bounds__(permute_rows_tuning::threads,
                                  permute_rows_tuning::min_blocks_per_sm)
    permute_rows_kernel(const U* in, U* out, std::size_t row_units, std::size_t total,
                        plane_layout rows) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    std::size_t row = i / row_units;
    std::size_t from = i - row * row_units;
    for (int d = rows.batch_rank - 1; d >= 0; --d) {
      from += row % rows.batch_extent[d] * rows.batch_in_stride[d];
      row /= rows.batch_extent[d];
    }
    out[i] = in[from];
  }
}

}  // namespace detail
}  // namespace ppat
