// Production transposes and permutes: square tiles staged through shared memory, read and
// written with 16-byte accesses on both sides.
//
//   ppat::transpose(in, out, rows, cols, stream)
//   ppat::transpose(in, ld_in, out, ld_out, rows, cols, stream)
//   ppat::transpose_batched(in, out, batch, rows, cols, stream)
//   ppat::transpose_inplace(data, n, stream)                 square
//   ppat::permute(in, out, shape, axes, stream)              NumPy axes, rank 1 to 8
//
// All but the in-place one are one operation on planes: out(i, a, b) = in(i, b, a), where
// a runs along the rows of `in` (its contiguous axis), b along the rows of `out`, and i
// over any number of batch axes with strides of their own. A block stages an S x S tile:
// it reads S rows of `in` as 16-byte vectors into shared memory, then writes S rows of
// `out` as 16-byte vectors, each gathered from a column of the tile. S makes a tile row at
// least 128 bytes: 128 one-byte elements, 64 of two or four bytes, 32 of eight or sixteen.
// In shared memory the 16-byte chunks of tile row b are permuted by XOR with (b / V) % 8
// (V elements to a chunk), so both the row-wise vector stores and the column-wise gathers
// of a warp fall on distinct banks.
//
// Matrices whose rows do not start on 16-byte boundaries (odd leading dimensions, unaligned
// pointers) take the same tiles element by element. permute first drops axes of extent
// one and merges axes that stay adjacent; what remains is a copy, a set of planes, or (when
// the contiguous axis stays last) a gather of whole rows.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "core/arguments.cuh"
#include "core/device.cuh"
#include "core/error.cuh"
#include "core/launch.cuh"
#include "core/vector_io.cuh"

namespace ppat {
namespace detail {

constexpr int max_permute_rank = 8;

// out(i, a, b) = in(i, b, a) over `batch_rank` batch axes; offsets in elements.
struct plane_layout {
  std::size_t rows;            // b: rows of `in`, the contiguous axis of `out`
  std::size_t cols;            // a: the contiguous axis of `in`, rows of `out`
  std::size_t in_row_stride;   // between consecutive b in `in`
  std::size_t out_row_stride;  // between consecutive a in `out`
  int batch_rank;
  std::size_t batch_extent[max_permute_rank];
  std::size_t batch_in_stride[max_permute_rank];
  std::size_t batch_out_stride[max_permute_rank];
};

template <class T>
void transpose_planes(const T* in, T* out, const plane_layout& layout, cudaStream_t stream,
                      const char* function);
template <class T>
void permute_in_device(const T* in, T* out, const std::vector<std::size_t>& shape,
                       const std::vector<int>& axes, cudaStream_t stream, const char* function);
template <class T>
void launch_transpose_inplace(T* data, std::size_t n, cudaStream_t stream, const char* function);

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
  if (detail::require_transpose_buffers(in, out, rows, cols, function) == 0) return;
  detail::plane_layout layout{};
  layout.rows = rows;
  layout.cols = cols;
  layout.in_row_stride = cols;
  layout.out_row_stride = rows;
  detail::transpose_planes(in, out, layout, stream, function);
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
  detail::plane_layout layout{};
  layout.rows = rows;
  layout.cols = cols;
  layout.in_row_stride = ld_in;
  layout.out_row_stride = ld_out;
  detail::transpose_planes(in, out, layout, stream, function);
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
  detail::plane_layout layout{};
  layout.rows = rows;
  layout.cols = cols;
  layout.in_row_stride = cols;
  layout.out_row_stride = rows;
  layout.batch_rank = 1;
  layout.batch_extent[0] = batch;
  layout.batch_in_stride[0] = matrix;
  layout.batch_out_stride[0] = matrix;
  detail::transpose_planes(in, out, layout, stream, function);
}

// The n x n matrix at `data` becomes its transpose.
template <class T>
void transpose_inplace(T* data, std::size_t n, cudaStream_t stream = 0) {
  detail::require_element_size<T>();
  constexpr const char* function = "ppat::transpose_inplace";
  const std::size_t count = detail::checked_element_count(n, n, sizeof(T), function);
  detail::require_buffer(data, count, function, "data");
  if (count == 0) return;
  detail::launch_transpose_inplace(data, n, stream, function);
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
  detail::permute_in_device(in, out, shape, axes, stream, function);
}

namespace detail {

// The tile: S x S elements, V to a 16-byte chunk, C chunks to a tile row.
template <class T>
struct transpose_tile {
  static constexpr int vec = int(16 / sizeof(T));
  static constexpr int side = sizeof(T) == 1 ? 128 : sizeof(T) <= 4 ? 64 : 32;
  static constexpr int chunks = side / vec;
  static constexpr int chunks_per_thread = 4;  // 64 bytes a thread in flight
  static constexpr int threads = side * chunks / chunks_per_thread;
  // Element by element (rows not 16-byte aligned, or a tile cut by the matrix's edge):
  // elements a thread loads at a time. Few where this only serves edge tiles, so that the
  // 16-byte path keeps its registers.
  template <bool Vectors>
  static constexpr int elements_per_step = std::min(Vectors ? 4 : 8, side* side / threads);
};
constexpr int transpose_blocks_per_sm = 8;

template <class T, bool VectorsIn, bool VectorsOut>
__global__ void transpose_planes_kernel(const T* in, T* out, plane_layout layout,
                                        std::size_t tiles_a, std::size_t tiles_b,
                                        std::size_t tiles);
template <class T, bool Vectors>
__global__ void transpose_inplace_kernel(T* data, std::size_t n, std::size_t tiles_side,
                                         std::size_t pairs);
template <class U>
__global__ void permute_rows_kernel(const U* in, U* out, std::size_t row_units, std::size_t total,
                                    plane_layout rows);

// True when every row and batch of `data` starts on a 16-byte boundary.
template <class T>
bool rows_aligned(const T* data, std::size_t row_stride, const std::size_t* batch_strides,
                  int batch_rank) {
  bool aligned = aligned_to(data, 16) && row_stride * sizeof(T) % 16 == 0;
  for (int d = 0; d < batch_rank; ++d)
    aligned = aligned && batch_strides[d] * sizeof(T) % 16 == 0;
  return aligned;
}

template <class T>
void transpose_planes(const T* in, T* out, const plane_layout& layout, cudaStream_t stream,
                      const char* function) {
  using tile = transpose_tile<T>;
  const std::size_t tiles_a = ceil_div(layout.cols, tile::side);
  const std::size_t tiles_b = ceil_div(layout.rows, tile::side);
  std::size_t tiles = tiles_a * tiles_b;
  for (int d = 0; d < layout.batch_rank; ++d)
    tiles *= layout.batch_extent[d];
  const auto& limits = limits_of(stream, function);
  const unsigned blocks = unsigned(
      std::min<std::size_t>(tiles, std::size_t(limits.sm_count) * transpose_blocks_per_sm));
  // Each side moves 16-byte vectors when its rows allow.
  const bool vectors_in =
      rows_aligned(in, layout.in_row_stride, layout.batch_in_stride, layout.batch_rank);
  const bool vectors_out =
      rows_aligned(out, layout.out_row_stride, layout.batch_out_stride, layout.batch_rank);
  const auto launch = [&](auto kernel) {
    kernel<<<blocks, tile::threads, 0, stream>>>(in, out, layout, tiles_a, tiles_b, tiles);
  };
  if (vectors_in && vectors_out) {
    launch(transpose_planes_kernel<T, true, true>);
  } else if (vectors_in) {
    launch(transpose_planes_kernel<T, true, false>);
  } else if (vectors_out) {
    launch(transpose_planes_kernel<T, false, true>);
  } else {
    launch(transpose_planes_kernel<T, false, false>);
  }
  check_launch(function, "transpose_planes_kernel");
}

template <class T>
void launch_transpose_inplace(T* data, std::size_t n, cudaStream_t stream, const char* function) {
  using tile = transpose_tile<T>;
  const std::size_t tiles_side = ceil_div(n, tile::side);
  const std::size_t pairs = tiles_side * (tiles_side + 1) / 2;  // tiles on or above the diagonal
  const auto& limits = limits_of(stream, function);
  const unsigned blocks = unsigned(
      std::min<std::size_t>(pairs, std::size_t(limits.sm_count) * transpose_blocks_per_sm));
  if (aligned_to(data, 16) && n * sizeof(T) % 16 == 0) {
    transpose_inplace_kernel<T, true>
        <<<blocks, tile::threads, 0, stream>>>(data, n, tiles_side, pairs);
  } else {
    transpose_inplace_kernel<T, false>
        <<<blocks, tile::threads, 0, stream>>>(data, n, tiles_side, pairs);
  }
  check_launch(function, "transpose_inplace_kernel");
}

// The permutation with axes of extent one dropped and runs of input axes that stay
// adjacent and in order merged into one: the same data movement with the fewest axes.
struct merged_permutation {
  std::vector<std::size_t> shape;  // of the input
  std::vector<int> axes;           // out.shape[i] = shape[axes[i]]
};

inline merged_permutation merge_axes(const std::vector<std::size_t>& shape,
                                     const std::vector<int>& axes) {
  // Output order, skipping extent-one axes.
  std::vector<int> order;
  for (int axis : axes) {
    if (shape[axis] != 1) order.push_back(axis);
  }
  // Groups of input axes that follow each other in the output too.
  std::vector<std::vector<int>> groups;
  for (int axis : order) {
    if (!groups.empty() && groups.back().back() + 1 == axis) {
      groups.back().push_back(axis);
    } else {
      // Axes between the previous one and this one that were dropped keep them adjacent.
      bool adjacent = !groups.empty() && groups.back().back() < axis;
      for (int skipped = groups.empty() ? 0 : groups.back().back() + 1; adjacent && skipped < axis;
           ++skipped)
        adjacent = shape[skipped] == 1;
      if (adjacent) {
        groups.back().push_back(axis);
      } else {
        groups.push_back({axis});
      }
    }
  }
  // Number the groups by their input position.
  std::vector<int> by_input(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g)
    by_input[g] = int(g);
  std::sort(by_input.begin(), by_input.end(),
            [&](int x, int y) { return groups[x].front() < groups[y].front(); });
  merged_permutation merged;
  merged.shape.resize(groups.size());
  merged.axes.resize(groups.size());
  for (std::size_t position = 0; position < by_input.size(); ++position) {
    const auto& group = groups[by_input[position]];
    std::size_t extent = 1;
    for (int axis : group)
      extent *= shape[axis];
    merged.shape[position] = extent;
    merged.axes[by_input[position]] = int(position);
  }
  return merged;
}

template <class T>
void permute_in_device(const T* in, T* out, const std::vector<std::size_t>& shape,
                       const std::vector<int>& axes, cudaStream_t stream, const char* function) {
  const merged_permutation merged = merge_axes(shape, axes);
  const int rank = int(merged.shape.size());
  bool identity = true;
  for (int i = 0; i < rank; ++i)
    identity = identity && merged.axes[i] == i;
  std::size_t count = 1;
  for (std::size_t extent : merged.shape)
    count *= extent;
  if (identity) {
    check_cuda(cudaMemcpyAsync(out, in, count * sizeof(T), cudaMemcpyDeviceToDevice, stream),
               function, "cudaMemcpyAsync");
    return;
  }
  // Row-major strides of the input, and of the output for each input axis.
  std::vector<std::size_t> in_stride(rank), out_stride(rank);
  for (int d = rank - 1; d >= 0; --d)
    in_stride[d] = d == rank - 1 ? 1 : in_stride[d + 1] * merged.shape[d + 1];
  std::size_t running = 1;
  for (int i = rank - 1; i >= 0; --i) {
    out_stride[merged.axes[i]] = running;
    running *= merged.shape[merged.axes[i]];
  }
  const int contiguous_in = rank - 1;                // the input's contiguous axis
  const int contiguous_out = merged.axes[rank - 1];  // the input axis contiguous in `out`
  plane_layout layout{};
  if (contiguous_out != contiguous_in) {
    layout.cols = merged.shape[contiguous_in];
    layout.rows = merged.shape[contiguous_out];
    layout.in_row_stride = in_stride[contiguous_out];
    layout.out_row_stride = out_stride[contiguous_in];
    for (int d = 0; d < rank; ++d) {
      if (d == contiguous_in || d == contiguous_out) continue;
      layout.batch_extent[layout.batch_rank] = merged.shape[d];
      layout.batch_in_stride[layout.batch_rank] = in_stride[d];
      layout.batch_out_stride[layout.batch_rank] = out_stride[d];
      ++layout.batch_rank;
    }
    transpose_planes(in, out, layout, stream, function);
    return;
  }
  // The contiguous axis stays last: whole rows move, as 16-byte units where they allow.
  // Rows are numbered in output order; `layout` carries the other axes in that order, with
  // their input strides in units.
  const std::size_t row_length = merged.shape[contiguous_in];
  constexpr int vec = transpose_tile<T>::vec;
  const bool vectors =
      aligned_to(in, 16) && aligned_to(out, 16) && row_length * sizeof(T) % 16 == 0;
  const std::size_t unit = vectors ? vec : 1;  // elements a unit
  for (int i = 0; i < rank - 1; ++i) {
    layout.batch_extent[layout.batch_rank] = merged.shape[merged.axes[i]];
    layout.batch_in_stride[layout.batch_rank] = in_stride[merged.axes[i]] / unit;
    ++layout.batch_rank;
  }
  const std::size_t row_units = row_length / unit;
  const std::size_t total = count / unit;
  const auto& limits = limits_of(stream, function);
  const unsigned blocks = unsigned(std::min<std::size_t>(
      ceil_div(total, 256), std::size_t(limits.sm_count) * transpose_blocks_per_sm));
  if (vectors) {
    permute_rows_kernel<<<blocks, 256, 0, stream>>>(reinterpret_cast<const uint4*>(in),
                                                    reinterpret_cast<uint4*>(out), row_units, total,
                                                    layout);
  } else {
    permute_rows_kernel<<<blocks, 256, 0, stream>>>(in, out, row_units, total, layout);
  }
  check_launch(function, "permute_rows_kernel");
}

// Element (b, a) of the staged tile: chunk a / V of row b sits at (a / V) ^ ((b / V) % 8).
template <class T>
__device__ T* staged_element(uint4* staged, int b, int a) {
  using tile = transpose_tile<T>;
  constexpr int vec = tile::vec;
  return reinterpret_cast<T*>(&staged[b * tile::chunks + ((a / vec) ^ ((b / vec) & 7))]) + a % vec;
}

// Rows [0, b_count) of a tile whose rows are whole, as 16-byte vectors into registers:
// lanes along the row, a warp reading whole rows, every load in flight at once.
template <class T>
__device__ void load_tile_vectors(const T* in, std::size_t in_row_stride, int b_count,
                                  uint4 (&raw)[transpose_tile<T>::chunks_per_thread]) {
  using tile = transpose_tile<T>;
#pragma unroll
  for (int s = 0; s < tile::chunks_per_thread; ++s) {
    const int i = threadIdx.x + s * tile::threads, b = i / tile::chunks, j = i % tile::chunks;
    if (b < b_count) {
      raw[s] = *reinterpret_cast<const uint4*>(in + std::size_t(b) * in_row_stride + j * tile::vec);
    }
  }
}

// The vectors of load_tile_vectors into `staged`, chunk j of row b at j ^ ((b / V) % 8).
template <class T>
__device__ void stage_vectors(const uint4 (&raw)[transpose_tile<T>::chunks_per_thread], int b_count,
                              uint4* staged) {
  using tile = transpose_tile<T>;
#pragma unroll
  for (int s = 0; s < tile::chunks_per_thread; ++s) {
    const int i = threadIdx.x + s * tile::threads, b = i / tile::chunks, j = i % tile::chunks;
    if (b < b_count) staged[b * tile::chunks + (j ^ ((b / tile::vec) & 7))] = raw[s];
  }
}

// Copies tile rows [0, b_count) x columns [0, a_count) from `in` (element (0, 0) of the
// tile, rows `in_row_stride` apart) into `staged`.
template <class T, bool Vectors>
__device__ void stage_tile(const T* in, std::size_t in_row_stride, int b_count, int a_count,
                           uint4* staged) {
  using tile = transpose_tile<T>;
  constexpr int side = tile::side;
  if (Vectors && a_count == side) {
    uint4 raw[tile::chunks_per_thread];
    load_tile_vectors(in, in_row_stride, b_count, raw);
    stage_vectors<T>(raw, b_count, staged);
    return;
  }
  // Element by element, lanes along the row; each step's loads all in flight.
  constexpr int per_step = tile::template elements_per_step<Vectors>;
  static_assert(side * side % (tile::threads * per_step) == 0, "whole steps");
#pragma unroll 1
  for (int first = 0; first < side * side; first += tile::threads * per_step) {
    T items[per_step];
#pragma unroll
    for (int s = 0; s < per_step; ++s) {
      const int e = first + threadIdx.x + s * tile::threads, b = e / side, a = e % side;
      if (b < b_count && a < a_count) items[s] = in[std::size_t(b) * in_row_stride + a];
    }
#pragma unroll
    for (int s = 0; s < per_step; ++s) {
      const int e = first + threadIdx.x + s * tile::threads, b = e / side, a = e % side;
      if (b < b_count && a < a_count) *staged_element<T>(staged, b, a) = items[s];
    }
  }
}

// Writes the staged tile transposed: row a of the output tile is column a of `staged`,
// going to `out` (element (0, 0) of the output tile, rows `out_row_stride` apart). With
// vectors, lanes take V rows a and 32 / V chunks b of each: distinct banks in `staged`,
// whole sectors in `out`.
template <class T, bool Vectors>
__device__ void write_tile_transposed(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                      uint4* staged) {
  using tile = transpose_tile<T>;
  constexpr int side = tile::side, vec = tile::vec, chunks = tile::chunks;
  if (Vectors && b_count == side) {
    // Stores need not wait for each other: one chunk at a time keeps registers few.
#pragma unroll 1
    for (int i = threadIdx.x; i < side * chunks; i += tile::threads) {
      const int in_chunk = i % vec, rest = i / vec;
      const int vb = rest % chunks, a = in_chunk + vec * (rest / chunks);
      if (a >= a_count) continue;
      unsigned char bytes[16];
#pragma unroll
      for (int k = 0; k < vec; ++k)
        std::memcpy(bytes + k * sizeof(T), staged_element<T>(staged, vb * vec + k, a), sizeof(T));
      uint4 raw;
      std::memcpy(&raw, bytes, 16);
      *reinterpret_cast<uint4*>(out + std::size_t(a) * out_row_stride + vb * vec) = raw;
    }
    return;
  }
  // Element by element, lanes along the output row.
#pragma unroll(Vectors ? 1 : 4)
  for (int e = threadIdx.x; e < side * side; e += tile::threads) {
    const int a = e / side, b = e % side;
    if (a < a_count && b < b_count) {
      std::memcpy(out + std::size_t(a) * out_row_stride + b, staged_element<T>(staged, b, a),
                  sizeof(T));
    }
  }
}

// Where a tile of the planes lies, and how much of it the matrix covers.
struct tile_place {
  std::size_t in_offset, out_offset;
  int a_count, b_count;
};

template <int Side>
__device__ tile_place place_of_tile(std::size_t t, const plane_layout& layout, std::size_t tiles_a,
                                    std::size_t tiles_b) {
  const std::size_t a0 = t % tiles_a * Side;
  t /= tiles_a;
  const std::size_t b0 = t % tiles_b * Side;
  t /= tiles_b;
  tile_place place{b0 * layout.in_row_stride + a0, a0 * layout.out_row_stride + b0,
                   int(min(std::size_t(Side), layout.cols - a0)),
                   int(min(std::size_t(Side), layout.rows - b0))};
  for (int d = layout.batch_rank - 1; d >= 0; --d) {
    const std::size_t index = t % layout.batch_extent[d];
    t /= layout.batch_extent[d];
    place.in_offset += index * layout.batch_in_stride[d];
    place.out_offset += index * layout.batch_out_stride[d];
  }
  return place;
}

// Block-strided over tiles, the column tiles of a row of tiles next to each other. While a
// block writes one tile out, the loads of its next tile are already in flight.
template <class T, bool VectorsIn, bool VectorsOut>
__global__ void __launch_bounds__(transpose_tile<T>::threads)
    transpose_planes_kernel(const T* in, T* out, plane_layout layout, std::size_t tiles_a,
                            std::size_t tiles_b, std::size_t tiles) {
  using tile = transpose_tile<T>;
  constexpr int side = tile::side;
  __shared__ uint4 staged[side * tile::chunks];
  uint4 ahead[tile::chunks_per_thread];
  // Only whole tiles are loaded ahead: their loads need no bounds, and edge tiles take
  // stage_tile.
  const auto prefetch = [&](const tile_place& place) {
    const bool whole = VectorsIn && place.a_count == side && place.b_count == side;
    if (whole) load_tile_vectors(in + place.in_offset, layout.in_row_stride, side, ahead);
    return whole;
  };
  std::size_t t = blockIdx.x;
  if (t >= tiles) return;
  tile_place place = place_of_tile<side>(t, layout, tiles_a, tiles_b);
  bool loaded = prefetch(place);
  for (;;) {
    if (loaded) {
      stage_vectors<T>(ahead, side, staged);
    } else {
      stage_tile<T, VectorsIn>(in + place.in_offset, layout.in_row_stride, place.b_count,
                               place.a_count, staged);
    }
    __syncthreads();
    const std::size_t next = t + gridDim.x;
    tile_place next_place{};
    loaded = false;
    if (next < tiles) {
      next_place = place_of_tile<side>(next, layout, tiles_a, tiles_b);
      loaded = prefetch(next_place);
    }
    write_tile_transposed<T, VectorsOut>(out + place.out_offset, layout.out_row_stride,
                                         place.b_count, place.a_count, staged);
    __syncthreads();  // the next tile reuses `staged`
    if (next >= tiles) break;
    t = next;
    place = next_place;
  }
}

// Tile pairs (r, c) with r <= c, numbered row by row: row r starts at r * (2T - r + 1) / 2.
__device__ inline std::size_t first_pair_of_row(std::size_t r, std::size_t tiles_side) {
  return r * (2 * tiles_side - r + 1) / 2;
}

// Each block swaps tile (r, c) with tile (c, r), both transposed; a diagonal tile is
// transposed where it is.
template <class T, bool Vectors>
__global__ void __launch_bounds__(transpose_tile<T>::threads)
    transpose_inplace_kernel(T* data, std::size_t n, std::size_t tiles_side, std::size_t pairs) {
  using tile = transpose_tile<T>;
  constexpr int side = tile::side;
  __shared__ uint4 above[side * tile::chunks];
  __shared__ uint4 below[side * tile::chunks];
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
    stage_tile<T, Vectors>(tile_rc, n, rows_r, rows_c, above);
    if (r != c) stage_tile<T, Vectors>(tile_cr, n, rows_c, rows_r, below);
    __syncthreads();
    write_tile_transposed<T, Vectors>(tile_cr, n, rows_r, rows_c, above);
    if (r != c) write_tile_transposed<T, Vectors>(tile_rc, n, rows_c, rows_r, below);
    __syncthreads();
  }
}

// Unit i of `out` (units in output order) comes from the same unit of row i / row_units,
// found through the row axes' input strides.
template <class U>
__global__ void permute_rows_kernel(const U* in, U* out, std::size_t row_units, std::size_t total,
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
