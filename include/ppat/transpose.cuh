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
// A plane whose short side k is under a tile and contiguous (33 x 2^20, say) wastes most
// of each tile; the skinny kernel instead moves a span of the long side, all k of it: one
// side is then a single contiguous run, the other k row pieces, both 16-byte vectors.
//
// permute first drops axes of extent one and merges axes that stay adjacent; what remains
// is a copy, a set of planes, or (when the contiguous axis stays last) a gather of whole
// rows. transpose_inplace swaps tile pairs across the diagonal.
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

// One rows x cols matrix, row r of `in` at r * ld_in, row c of `out` at c * ld_out.
inline plane_layout matrix_layout(std::size_t rows, std::size_t cols, std::size_t ld_in,
                                  std::size_t ld_out) {
  plane_layout layout{};
  layout.rows = rows;
  layout.cols = cols;
  layout.in_row_stride = ld_in;
  layout.out_row_stride = ld_out;
  return layout;
}

template <class T>
void transpose_planes(const T* in, T* out, const plane_layout& layout, const call_context& call);
template <class T>
void permute_in_device(const T* in, T* out, const std::vector<std::size_t>& shape,
                       const std::vector<int>& axes, const call_context& call);
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

// The tile: S x S elements, V to a 16-byte chunk, C chunks to a tile row. The threads are
// as few as keep enough 16-byte loads in flight per thread (8 of 4-byte elements, 4 of
// most others: measured on the H200), so that many blocks fit an SM.
template <class T>
struct transpose_tile {
  static constexpr int vec = int(16 / sizeof(T));
  static constexpr int side = sizeof(T) == 1 ? 128 : sizeof(T) <= 4 ? 64 : 32;
  static constexpr int chunks = side / vec;
  static constexpr int threads = sizeof(T) == 1 || sizeof(T) == 16 ? 256 : 128;
  static constexpr int chunks_per_thread = side * chunks / threads;
  // Blocks an SM must hold, asked of the compiler (0: none). Left free, it gives one-byte
  // tiles 80 registers, three blocks an SM; four (64 registers) move 96% of copy instead
  // of 83-90%. A bound on four-byte tiles measured slower (six blocks: spills, 81-84%
  // against 94%).
  static constexpr int min_blocks = sizeof(T) == 1 ? 4 : 0;
  // Four-byte tiles write faster with every gather of a thread issued before its stores.
  static constexpr int write_unroll = sizeof(T) == 4 ? chunks_per_thread : 1;
};

// The skinny kernel: a block moves a span of the long side, about `span_bytes` of data,
// loading 16-byte vectors `unroll` at a time per thread. It takes short sides of under 128
// elements and at most 512 bytes, so that a span of 128-byte row pieces fits 24 KB.
struct skinny_shape {
  static constexpr int threads = 256;
  static constexpr int unroll = 4;
  static constexpr std::size_t span_bytes = 24 * 1024;
  static constexpr std::size_t max_short = 127, max_short_bytes = 512;
};

constexpr int permute_rows_blocks_per_sm = 8;

template <class T, bool AlignedIn, bool AlignedOut>
__global__ void transpose_planes_kernel(const T* in, T* out, plane_layout layout, unsigned tiles_a,
                                        unsigned plane_tiles, std::size_t tiles, const T* in_end);
template <class T, bool FlatIn>
__global__ void transpose_skinny_kernel(const T* in, T* out, plane_layout layout, unsigned span,
                                        unsigned plane_spans, std::size_t spans);
template <class T, bool Aligned>
__global__ void transpose_inplace_kernel(T* data, std::size_t n, std::size_t tiles_side,
                                         std::size_t pairs);
template <class U>
__global__ void permute_rows_kernel(const U* in, U* out, std::size_t row_units, std::size_t total,
                                    plane_layout rows);

// True when every plane of `data` starts on a 16-byte boundary.
template <class T>
bool planes_aligned(const T* data, const std::size_t* batch_strides, int batch_rank) {
  bool aligned = aligned_to(data, 16);
  for (int d = 0; d < batch_rank; ++d)
    aligned = aligned && batch_strides[d] * sizeof(T) % 16 == 0;
  return aligned;
}

// True when every row of every plane of `data` starts on a 16-byte boundary.
template <class T>
bool rows_aligned(const T* data, std::size_t row_stride, const std::size_t* batch_strides,
                  int batch_rank) {
  return row_stride * sizeof(T) % 16 == 0 && planes_aligned(data, batch_strides, batch_rank);
}

// Blocks for `work` items of a grid-stride kernel: one each, up to the launch limit.
inline unsigned blocks_for(std::size_t work) {
  return unsigned(std::min<std::size_t>(work, 0x7FFFFFFF));
}

template <class T>
bool transpose_skinny(const T* in, T* out, const plane_layout& layout, const call_context& call);

template <class T>
void transpose_planes(const T* in, T* out, const plane_layout& layout, const call_context& call) {
  if (transpose_skinny(in, out, layout, call)) return;
  using tile = transpose_tile<T>;
  const std::size_t tiles_a = ceil_div(layout.cols, tile::side);
  const std::size_t plane_tiles = tiles_a * ceil_div(layout.rows, tile::side);
  // Within a plane, tiles are counted in 32 bits: 2^32 tiles is more than 2^44 bytes.
  require(plane_tiles <= 0xFFFFFFFF, call.function(), "rows, cols", "make more than 2^32 tiles");
  std::size_t tiles = plane_tiles;
  for (int d = 0; d < layout.batch_rank; ++d)
    tiles *= layout.batch_extent[d];
  const bool aligned_in =
      rows_aligned(in, layout.in_row_stride, layout.batch_in_stride, layout.batch_rank);
  const bool aligned_out =
      rows_aligned(out, layout.out_row_stride, layout.batch_out_stride, layout.batch_rank);
  // The end of the input: reads of 16-byte windows reach past a tile, never past it.
  std::size_t in_span = (layout.rows - 1) * layout.in_row_stride + layout.cols;
  for (int d = 0; d < layout.batch_rank; ++d)
    in_span += (layout.batch_extent[d] - 1) * layout.batch_in_stride[d];
  const auto launch = [&](auto kernel) {
    kernel<<<blocks_for(tiles), tile::threads, 0, call.stream()>>>(
        in, out, layout, unsigned(tiles_a), unsigned(plane_tiles), tiles, in + in_span);
  };
  if (aligned_in && aligned_out) {
    launch(transpose_planes_kernel<T, true, true>);
  } else if (aligned_in) {
    launch(transpose_planes_kernel<T, true, false>);
  } else if (aligned_out) {
    launch(transpose_planes_kernel<T, false, true>);
  } else {
    launch(transpose_planes_kernel<T, false, false>);
  }
  check_launch(call.function(), "transpose_planes_kernel");
}

// Planes with a short side k (skinny_shape's limits), contiguous where it is flat, and
// 16-byte aligned rows on the long side go to the skinny kernel (returns true). Tiles
// would leave most of their rows empty, or cut into a second tile for a few. Short sides
// of whole 16-byte chunks stay with the tiles: they would put the skinny kernel's
// gathers from shared memory all on one bank.
template <class T>
bool transpose_skinny(const T* in, T* out, const plane_layout& layout, const call_context& call) {
  using tile = transpose_tile<T>;
  const auto skinny = [](std::size_t k, std::size_t n, std::size_t flat_stride) {
    return k <= skinny_shape::max_short && k * sizeof(T) <= skinny_shape::max_short_bytes &&
           k * sizeof(T) % 16 != 0 && n >= std::size_t(tile::side) && flat_stride == k;
  };
  const bool flat_in = skinny(layout.cols, layout.rows, layout.in_row_stride);
  const bool flat_out = !flat_in && skinny(layout.rows, layout.cols, layout.out_row_stride);
  if (!(flat_in || flat_out) || !planes_aligned(in, layout.batch_in_stride, layout.batch_rank) ||
      !planes_aligned(out, layout.batch_out_stride, layout.batch_rank) ||
      (flat_in ? layout.out_row_stride : layout.in_row_stride) * sizeof(T) % 16 != 0) {
    return false;
  }
  const std::size_t k = flat_in ? layout.cols : layout.rows;
  const std::size_t n = flat_in ? layout.rows : layout.cols;
  // A span is whole groups of 8 vectors of the long side: 128-byte pieces of its rows, and
  // a flat run that starts on a 16-byte boundary.
  constexpr std::size_t group = 8 * transpose_tile<T>::vec;
  const std::size_t span =
      std::max(group, skinny_shape::span_bytes / (k * sizeof(T)) / group * group);
  const std::size_t plane_spans = ceil_div(n, span);
  require(plane_spans <= 0xFFFFFFFF, call.function(), "rows, cols", "make more than 2^32 spans");
  std::size_t spans = plane_spans;
  for (int d = 0; d < layout.batch_rank; ++d)
    spans *= layout.batch_extent[d];
  const std::size_t shared_bytes = span * k * sizeof(T);
  const auto launch = [&](auto kernel) {
    kernel<<<blocks_for(spans), skinny_shape::threads, shared_bytes, call.stream()>>>(
        in, out, layout, unsigned(span), unsigned(plane_spans), spans);
  };
  if (flat_in) {
    launch(transpose_skinny_kernel<T, true>);
  } else {
    launch(transpose_skinny_kernel<T, false>);
  }
  check_launch(call.function(), "transpose_skinny_kernel");
  return true;
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
                       const std::vector<int>& axes, const call_context& call) {
  const merged_permutation merged = merge_axes(shape, axes);
  const int rank = int(merged.shape.size());
  bool identity = true;
  for (int i = 0; i < rank; ++i)
    identity = identity && merged.axes[i] == i;
  std::size_t count = 1;
  for (std::size_t extent : merged.shape)
    count *= extent;
  if (identity) {
    call.check(cudaMemcpyAsync(out, in, count * sizeof(T), cudaMemcpyDeviceToDevice, call.stream()),
               "cudaMemcpyAsync");
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
    transpose_planes(in, out, layout, call);
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
  const unsigned blocks = unsigned(std::min<std::size_t>(
      ceil_div(total, 256), std::size_t(call.limits().sm_count) * permute_rows_blocks_per_sm));
  if (vectors) {
    permute_rows_kernel<<<blocks, 256, 0, call.stream()>>>(reinterpret_cast<const uint4*>(in),
                                                           reinterpret_cast<uint4*>(out), row_units,
                                                           total, layout);
  } else {
    permute_rows_kernel<<<blocks, 256, 0, call.stream()>>>(in, out, row_units, total, layout);
  }
  check_launch(call.function(), "permute_rows_kernel");
}

// Block helpers, defined below the kernels.

// The elements of `in` that may be read: windows reach past a tile's edges into its
// neighbours, but never past the whole input.
template <class T>
struct readable_span {
  const T* begin;
  const T* end;
};

template <class T>
struct row_shifts;
template <class T>
__device__ row_shifts<T> row_shifts_of(const T* row, std::size_t stride);
template <class T, bool Windows>
struct row_staged_tile;
template <class T>
struct column_staged_tile;
// Output rows on 16-byte boundaries take the tile staged by rows; others by columns.
template <class T, bool AlignedIn, bool AlignedOut>
using staging_of =
    std::conditional_t<AlignedOut, row_staged_tile<T, !AlignedIn>, column_staged_tile<T>>;
template <class T, bool AlignedIn, bool AlignedOut>
__device__ staging_of<T, AlignedIn, AlignedOut> staging_for(uint4* staged, const T* in,
                                                            std::size_t in_row_stride, const T* out,
                                                            std::size_t out_row_stride);
template <bool AlignedIn, class T, class Staged>
__device__ void stage_tile(const T* in, std::size_t in_row_stride, int b_count, int a_count,
                           readable_span<T> readable, const Staged& staged);
template <bool AlignedOut, class T, class Staged>
__device__ void write_tile_transposed(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                      const Staged& staged);
template <class T, class Staged>
__device__ void stage_chunks(const T* in, std::size_t in_row_stride, int b_count, int a_count,
                             const Staged& staged);
template <class T, class Staged>
__device__ void stage_windows(const T* in, std::size_t in_row_stride, int b_count, int a_count,
                              readable_span<T> readable, const Staged& staged);
template <class T, class Staged>
__device__ void stage_elements(const T* in, std::size_t in_row_stride, int b_count, int first,
                               int end, const Staged& staged);
template <class T, class Staged>
__device__ void write_aligned_rows(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                   const Staged& staged);
template <class T, class Staged>
__device__ void write_cut_chunks(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                 const Staged& staged);
template <class T>
__device__ void write_packed_rows(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                  const row_staged_tile<T, false>& staged);
template <class T>
__device__ uint4 pick_from_words(const unsigned (&words)[16 / sizeof(T)], int r);
template <class T>
__device__ void write_column_windows(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                     const column_staged_tile<T>& staged);
template <class T, class Staged>
__device__ uint4 gather_column(const Staged& staged, int first, int a);
template <class T, class Staged>
__device__ void write_elements(T* out, std::size_t out_row_stride, int first, int end, int a_count,
                               const Staged& staged);
template <class T>
__device__ void unpack_chunk(const uint4& raw, T (&items)[16 / sizeof(T)]);
template <class T>
__device__ void load_run(const T* run, unsigned count, uint4* flat);
template <class T>
__device__ void store_run(const uint4* flat, T* run, unsigned count);
template <class T>
__device__ void load_pieces(const T* pieces, std::size_t stride, unsigned k, unsigned count,
                            unsigned span, T* flat);
template <class T>
__device__ void store_pieces(const T* flat, T* pieces, std::size_t stride, unsigned k,
                             unsigned count, unsigned span);

// Where a tile of the planes lies, and how much of it the matrix covers.
struct tile_place {
  std::size_t in_offset, out_offset;
  int a_count, b_count;
};

// Adds the offsets of plane number `plane` (over the batch axes, the last one fastest).
__device__ inline void add_plane_offsets(std::size_t plane, const plane_layout& layout,
                                         std::size_t& in_offset, std::size_t& out_offset) {
  for (int d = layout.batch_rank - 1; d >= 0; --d) {
    const std::size_t index = plane % layout.batch_extent[d];
    plane /= layout.batch_extent[d];
    in_offset += index * layout.batch_in_stride[d];
    out_offset += index * layout.batch_out_stride[d];
  }
}

// Work item w of `per_plane` in each plane: its plane, and its number within the plane.
__device__ inline void split_plane(std::size_t w, unsigned per_plane, int batch_rank,
                                   std::size_t& plane, unsigned& in_plane) {
  plane = batch_rank > 0 ? w / per_plane : 0;
  in_plane = unsigned(w - plane * per_plane);
}

// Tile t: plane after plane, and within a plane the tiles along a next to each other.
template <int Side>
__device__ tile_place place_of_tile(std::size_t t, const plane_layout& layout, unsigned tiles_a,
                                    unsigned plane_tiles) {
  std::size_t plane;
  unsigned in_plane;
  split_plane(t, plane_tiles, layout.batch_rank, plane, in_plane);
  const std::size_t a0 = std::size_t(in_plane % tiles_a) * Side;
  const std::size_t b0 = std::size_t(in_plane / tiles_a) * Side;
  tile_place place{b0 * layout.in_row_stride + a0, a0 * layout.out_row_stride + b0,
                   int(min(std::size_t(Side), layout.cols - a0)),
                   int(min(std::size_t(Side), layout.rows - b0))};
  add_plane_offsets(plane, layout, place.in_offset, place.out_offset);
  return place;
}

// A block a tile: its loads all in flight at once, and the blocks many (few registers and
// threads each), so that while some wait on loads others write.
template <class T, bool AlignedIn, bool AlignedOut>
__global__ void __launch_bounds__(transpose_tile<T>::threads, transpose_tile<T>::min_blocks)
    transpose_planes_kernel(const T* in, T* out, plane_layout layout, unsigned tiles_a,
                            unsigned plane_tiles, std::size_t tiles, const T* in_end) {
  using tile = transpose_tile<T>;
  __shared__ uint4 staged_chunks[staging_of<T, AlignedIn, AlignedOut>::size];
  for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const tile_place place = place_of_tile<tile::side>(t, layout, tiles_a, plane_tiles);
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
// A span of the long side with all k of the short side. With FlatIn, rows [x0, x0 + count)
// of an n x k `in` (one contiguous run) become pieces of the k rows of `out`; without, the
// pieces of the k rows of `in` become one contiguous run of `out`. Shared memory holds the
// span as the flat side does: long index x (from x0), short index p at x * k + p.
template <class T, bool FlatIn>
__global__ void __launch_bounds__(skinny_shape::threads)
    transpose_skinny_kernel(const T* in, T* out, plane_layout layout, unsigned span,
                            unsigned plane_spans, std::size_t spans) {
  extern __shared__ uint4 flat[];
  const unsigned k = unsigned(FlatIn ? layout.cols : layout.rows);
  const std::size_t n = FlatIn ? layout.rows : layout.cols;
  const std::size_t piece_stride = FlatIn ? layout.out_row_stride : layout.in_row_stride;
  for (std::size_t s = blockIdx.x; s < spans; s += gridDim.x) {
    std::size_t plane, in_offset = 0, out_offset = 0;
    unsigned in_plane;
    split_plane(s, plane_spans, layout.batch_rank, plane, in_plane);
    add_plane_offsets(plane, layout, in_offset, out_offset);
    const std::size_t x0 = std::size_t(in_plane) * span;
    const unsigned count = unsigned(min(std::size_t(span), n - x0));
    if constexpr (FlatIn) {
      load_run(in + in_offset + x0 * k, count * k, flat);
      __syncthreads();
      store_pieces(reinterpret_cast<const T*>(flat), out + out_offset + x0, piece_stride, k, count,
                   span);
    } else {
      load_pieces(in + in_offset + x0, piece_stride, k, count, span, reinterpret_cast<T*>(flat));
      __syncthreads();
      store_run(flat, out + out_offset + x0 * k, count * k);
    }
    if (s + gridDim.x < spans) __syncthreads();  // the next span reuses `flat`
  }
}

// Tile pairs (r, c) with r <= c, numbered row by row: row r starts at r * (2T - r + 1) / 2.
__device__ inline std::size_t first_pair_of_row(std::size_t r, std::size_t tiles_side) {
  return r * (2 * tiles_side - r + 1) / 2;
}

// Each block swaps tile (r, c) with tile (c, r), both transposed; a diagonal tile is
// transposed where it is.
template <class T, bool Aligned>
__global__ void __launch_bounds__(transpose_tile<T>::threads)
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

// ---- Tiles: staging rows of `in`, writing columns to rows of `out` ----

// How far rows start past 16-byte boundaries: row i of rows `stride` elements apart, the
// first at `row`, starts shift(i) = (first + i * step) % V elements into its 16-byte window.
// Rows whose address is not a multiple of sizeof(T) have no windows (vectors false).
template <class T>
struct row_shifts {
  int first, step;
  bool vectors;
  __device__ int operator()(int i) const {
    return (first + i * step) & (transpose_tile<T>::vec - 1);
  }
};

template <class T>
__device__ row_shifts<T> row_shifts_of(const T* row, std::size_t stride) {
  const auto address = reinterpret_cast<std::uintptr_t>(row);
  if (address % sizeof(T) != 0) return {0, 0, false};
  return {int(address % 16 / sizeof(T)), int(stride % transpose_tile<T>::vec), true};
}

// Output rows on 16-byte boundaries: the tile staged by rows, read back a column at a
// time. From input rows on 16-byte boundaries (Windows false), chunk a / V of row b sits at
// chunk (a / V) ^ ((b / V) % 8) of the row, rows C chunks apart. Input rows off them
// (Windows true) are staged as the C + 1 windows they overlap, whole: element a of row b
// is element a + shift(b) of its staged row; window C, past the XOR's reach, sits last.
template <class T, bool Windows>
struct row_staged_tile {
  static constexpr int vec = transpose_tile<T>::vec, chunks = transpose_tile<T>::chunks;
  static constexpr int pitch = chunks + (Windows ? 1 : 0);      // 16-byte chunks a row
  static constexpr int size = transpose_tile<T>::side * pitch;  // 16-byte chunks in all
  uint4* staged;
  row_shifts<T> in_shifts;

  __device__ int shift(int b) const { return Windows ? in_shifts(b) : 0; }
  __device__ uint4& chunk(int b, int j) const {
    return staged[b * pitch + (Windows && j == chunks ? j : j ^ ((b / vec) & 7))];
  }
  __device__ T& operator()(int b, int a) const {
    const int position = a + shift(b);
    return reinterpret_cast<T*>(&chunk(b, position / vec))[position % vec];
  }
  // The 16 bytes of input row b that start at element `first` (a chunk or a window).
  __device__ void put(int b, int first, const uint4& raw, int) const {
    chunk(b, (first + shift(b)) / vec) = raw;
  }
};

// Output rows off 16-byte boundaries: the tile staged by columns, column a (row a of the
// output tile) from element a P + s, s the first output row's shift. P is at least
// S + V - 1 and P = step (mod V), so that every output row's 16-byte windows fall on
// 16-byte boundaries of shared memory too: a window is one 16-byte read.
template <class T>
struct column_staged_tile {
  static constexpr int vec = transpose_tile<T>::vec, side = transpose_tile<T>::side;
  static constexpr int size = int((side * (side + 2 * vec - 2) * sizeof(T) + 15) / 16);
  T* staged;
  int pitch, first;

  __device__ T& operator()(int b, int a) const { return staged[a * pitch + first + b]; }
  // The 16 bytes of input row b that start at element `first_a`; those of the tile's
  // columns [0, a_count) go to their columns.
  __device__ void put(int b, int first_a, const uint4& raw, int a_count) const {
    T items[vec];
    unpack_chunk(raw, items);
#pragma unroll
    for (int e = 0; e < vec; ++e) {
      if (first_a + e >= 0 && first_a + e < a_count) (*this)(b, first_a + e) = items[e];
    }
  }
};

// The staging of the tile whose element (0, 0) is at `in`, going to `out`.
template <class T, bool AlignedIn, bool AlignedOut>
__device__ staging_of<T, AlignedIn, AlignedOut> staging_for(uint4* staged, const T* in,
                                                            std::size_t in_row_stride, const T* out,
                                                            std::size_t out_row_stride) {
  if constexpr (AlignedOut) {
    return {staged, row_shifts_of(in, in_row_stride)};
  } else {
    constexpr int vec = transpose_tile<T>::vec, least = transpose_tile<T>::side + vec - 1;
    const row_shifts<T> shifts = row_shifts_of(out, out_row_stride);
    return {reinterpret_cast<T*>(staged), least + ((shifts.step - least) & (vec - 1)),
            shifts.first};
  }
}

// Copies tile rows [0, b_count) x columns [0, a_count) from `in` (element (0, 0) of the
// tile, rows `in_row_stride` apart) into `staged`.
template <bool AlignedIn, class T, class Staged>
__device__ void stage_tile(const T* in, std::size_t in_row_stride, int b_count, int a_count,
                           readable_span<T> readable, const Staged& staged) {
  if constexpr (AlignedIn) {
    stage_chunks(in, in_row_stride, b_count, a_count, staged);
  } else {
    stage_windows(in, in_row_stride, b_count, a_count, readable, staged);
  }
}

// Writes the staged tile transposed: row a of the output tile is column a of the tile,
// going to `out` (element (0, 0) of the output tile, rows `out_row_stride` apart).
template <bool AlignedOut, class T, class Staged>
__device__ void write_tile_transposed(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                      const Staged& staged) {
  if constexpr (!AlignedOut) {
    write_column_windows(out, out_row_stride, b_count, a_count, staged);
  } else if constexpr (sizeof(T) < 4 && std::is_same_v<Staged, row_staged_tile<T, false>>) {
    write_packed_rows(out, out_row_stride, b_count, a_count, staged);
  } else {
    write_aligned_rows(out, out_row_stride, b_count, a_count, staged);
  }
}

// Rows on 16-byte boundaries: chunk by chunk, lanes along the row, every load of the
// thread in flight before the first store to shared memory. The chunks that the tile's
// edge cuts (one column of them at most) follow element by element, a row to a thread, in
// a loop of their own so that the loads' addresses need not live on.
template <class T, class Staged>
__device__ void stage_chunks(const T* in, std::size_t in_row_stride, int b_count, int a_count,
                             const Staged& staged) {
  using tile = transpose_tile<T>;
  constexpr int vec = tile::vec, chunks = tile::chunks;
  uint4 raw[tile::chunks_per_thread];
#pragma unroll
  for (int s = 0; s < tile::chunks_per_thread; ++s) {
    const int i = threadIdx.x + s * tile::threads, b = i / chunks, first = i % chunks * vec;
    if (b < b_count && first + vec <= a_count)
      raw[s] = *reinterpret_cast<const uint4*>(in + std::size_t(b) * in_row_stride + first);
  }
#pragma unroll
  for (int s = 0; s < tile::chunks_per_thread; ++s) {
    const int i = threadIdx.x + s * tile::threads, b = i / chunks, first = i % chunks * vec;
    if (b < b_count && first + vec <= a_count) staged.put(b, first, raw[s], a_count);
  }
  const int cut = a_count / vec * vec;
  if (cut == a_count) return;
  for (int b = threadIdx.x; b < b_count; b += tile::threads) {
#pragma unroll 1
    for (int a = cut; a < a_count; ++a)
      staged(b, a) = in[std::size_t(b) * in_row_stride + a];
  }
}

// Rows off 16-byte boundaries: the windows each row overlaps (one more than its chunks),
// whole, as on aligned rows. A window that sticks out of the readable input (only at its
// two ends) is replaced by its tile elements, one by one.
template <class T, class Staged>
__device__ void stage_windows(const T* in, std::size_t in_row_stride, int b_count, int a_count,
                              readable_span<T> readable, const Staged& staged) {
  using tile = transpose_tile<T>;
  constexpr int vec = tile::vec, windows = tile::chunks + 1;
  constexpr int per_thread = (tile::side * windows + tile::threads - 1) / tile::threads;
  const row_shifts<T> shifts = row_shifts_of(in, in_row_stride);
  if (!shifts.vectors) {
    stage_elements(in, in_row_stride, b_count, 0, a_count, staged);
    return;
  }
  // Window w of row b, whose first element is w V - shift(b): true when it holds tile
  // elements and can be read whole.
  const auto window = [&](int b, int w, const T*& from) {
    const int first = w * vec - shifts(b);
    from = in + std::size_t(b) * in_row_stride + first;
    return b < b_count && first < a_count && from >= readable.begin && from + vec <= readable.end;
  };
  uint4 raw[per_thread];
#pragma unroll
  for (int s = 0; s < per_thread; ++s) {
    const int i = threadIdx.x + s * tile::threads;
    const T* from;
    if (window(i / windows, i % windows, from)) raw[s] = *reinterpret_cast<const uint4*>(from);
  }
#pragma unroll
  for (int s = 0; s < per_thread; ++s) {
    const int i = threadIdx.x + s * tile::threads, b = i / windows, w = i % windows;
    const T* from;
    if (window(b, w, from)) staged.put(b, w * vec - shifts(b), raw[s], a_count);
  }
  for (int b = threadIdx.x; b < b_count; b += tile::threads) {
    const int last = (a_count - 1 + shifts(b)) / vec;
    for (int w : {0, last}) {
      const T* from;
      const int first = w * vec - shifts(b);
      if (!window(b, w, from)) {
        for (int a = max(first, 0); a < min(first + vec, a_count); ++a)
          staged(b, a) = from[a - first];
      }
    }
  }
}

// Tile rows [0, b_count) x columns [first, end) from `in` into `staged`, element by
// element, lanes along the rows (rows whose elements are off their size's alignment).
template <class T, class Staged>
__device__ void stage_elements(const T* in, std::size_t in_row_stride, int b_count, int first,
                               int end, const Staged& staged) {
  const int width = end - first;
#pragma unroll 1
  for (int i = threadIdx.x; i < b_count * width; i += transpose_tile<T>::threads) {
    const int b = i / width, a = first + i % width;
    staged(b, a) = in[std::size_t(b) * in_row_stride + a];
  }
}

// Output rows on 16-byte boundaries: lanes take V rows a and 32 / V chunks of each; a
// chunk is V elements of a column (distinct banks in `staged` when it holds chunks), and
// the lanes' stores fill whole sectors of `out`.
template <class T, class Staged>
__device__ void write_aligned_rows(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                   const Staged& staged) {
  using tile = transpose_tile<T>;
  constexpr int vec = tile::vec, chunks = tile::chunks;
#pragma unroll(tile::write_unroll)
  for (int i = threadIdx.x; i < tile::side * chunks; i += tile::threads) {
    const int a = i % vec + vec * (i / (vec * chunks)), first = i / vec % chunks * vec;
    if (a < a_count && first + vec <= b_count) {
      *reinterpret_cast<uint4*>(out + std::size_t(a) * out_row_stride + first) =
          gather_column<T>(staged, first, a);
    }
  }
  write_cut_chunks(out, out_row_stride, b_count, a_count, staged);
}

// The chunks of the output rows that the tile's edge cuts (one column of them at most),
// element by element, a row to a thread: few registers beside the whole chunks' gathers.
template <class T, class Staged>
__device__ void write_cut_chunks(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                 const Staged& staged) {
  using tile = transpose_tile<T>;
  const int cut = b_count / tile::vec * tile::vec;
  if (cut == b_count) return;
  for (int a = threadIdx.x; a < a_count; a += tile::threads) {
#pragma unroll 1
    for (int b = cut; b < b_count; ++b)
      out[std::size_t(a) * out_row_stride + b] = staged(b, a);
  }
}

// Output rows on 16-byte boundaries, elements of 1 or 2 bytes, input rows too: a thread
// reads one 32-bit word (E = 4 / sizeof(T) columns) from each of V rows and sorts the bytes
// into E output vectors, instead of V one-element reads a vector. Lanes take 8 chunks of 4
// words: distinct banks in `staged`, and 128 bytes of each of 4 rows of `out` a store.
template <class T>
__device__ void write_packed_rows(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                  const row_staged_tile<T, false>& staged) {
  using tile = transpose_tile<T>;
  constexpr int vec = tile::vec, chunks = tile::chunks, per_word = int(4 / sizeof(T));
  constexpr int words = tile::side / per_word;
  for (int i = threadIdx.x; i < chunks * words; i += tile::threads) {
    const int first = i % chunks * vec, a0 = i / chunks * per_word;
    if (first + vec <= b_count && a0 < a_count) {
      unsigned column_words[vec];
#pragma unroll
      for (int k = 0; k < vec; ++k)
        column_words[k] = *reinterpret_cast<const unsigned*>(&staged(first + k, a0));
#pragma unroll
      for (int r = 0; r < per_word; ++r) {
        if (a0 + r < a_count) {
          *reinterpret_cast<uint4*>(out + std::size_t(a0 + r) * out_row_stride + first) =
              pick_from_words<T>(column_words, r);
        }
      }
    }
  }
  write_cut_chunks(out, out_row_stride, b_count, a_count, staged);
}

// The output vector of column a0 + r: element r of each of the V words (1- and 2-byte T).
template <class T>
__device__ uint4 pick_from_words(const unsigned (&words)[16 / sizeof(T)], int r) {
  unsigned picked[4];
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    if constexpr (sizeof(T) == 2) {
      picked[m] = __byte_perm(words[2 * m], words[2 * m + 1], r == 0 ? 0x5410 : 0x7632);
    } else {
      const unsigned select = unsigned(r) | unsigned(r + 4) << 4;  // byte r of x, of y
      picked[m] = __byte_perm(__byte_perm(words[4 * m], words[4 * m + 1], select),
                              __byte_perm(words[4 * m + 2], words[4 * m + 3], select), 0x5410);
    }
  }
  return make_uint4(picked[0], picked[1], picked[2], picked[3]);
}

// Output rows off 16-byte boundaries, from the tile staged by columns: the C + 1 windows of
// each output row, lanes along the row, a whole window one 16-byte read and one 16-byte
// store, the two partial ones at the row's ends element by element.
template <class T>
__device__ void write_column_windows(T* out, std::size_t out_row_stride, int b_count, int a_count,
                                     const column_staged_tile<T>& staged) {
  using tile = transpose_tile<T>;
  constexpr int vec = tile::vec, windows = tile::chunks + 1;
  const row_shifts<T> shifts = row_shifts_of(out, out_row_stride);
  if (!shifts.vectors) {
    write_elements(out, out_row_stride, 0, b_count, a_count, staged);
    return;
  }
#pragma unroll 2
  for (int i = threadIdx.x; i < tile::side * windows; i += tile::threads) {
    const int a = i / windows;
    if (a >= a_count) break;
    const int first = i % windows * vec - shifts(a);
    T* row = out + std::size_t(a) * out_row_stride;
    if (first >= 0 && first + vec <= b_count) {
      *reinterpret_cast<uint4*>(row + first) = *reinterpret_cast<const uint4*>(&staged(first, a));
    } else {
#pragma unroll 1
      for (int b = max(first, 0); b < min(first + vec, b_count); ++b)
        row[b] = staged(b, a);
    }
  }
}

// The V elements of column a from rows first, first + 1, ... of the staged tile, as one
// 16-byte chunk.
template <class T, class Staged>
__device__ uint4 gather_column(const Staged& staged, int first, int a) {
  constexpr int vec = transpose_tile<T>::vec;
  T items[vec];
#pragma unroll
  for (int k = 0; k < vec; ++k)
    items[k] = staged(first + k, a);
  uint4 raw;
  std::memcpy(&raw, items, 16);
  return raw;
}

// Output rows [0, a_count) x columns [first, end) from the staged tile to `out`, element by
// element, lanes along the output rows (rows whose elements are off their size's
// alignment).
template <class T, class Staged>
__device__ void write_elements(T* out, std::size_t out_row_stride, int first, int end, int a_count,
                               const Staged& staged) {
  const int width = end - first;
#pragma unroll 1
  for (int i = threadIdx.x; i < a_count * width; i += transpose_tile<T>::threads) {
    const int a = i / width, b = first + i % width;
    out[std::size_t(a) * out_row_stride + b] = staged(b, a);
  }
}

template <class T>
__device__ void unpack_chunk(const uint4& raw, T (&items)[16 / sizeof(T)]) {
  std::memcpy(items, &raw, 16);
}

// ---- Skinny spans: one contiguous run, and k row pieces ----

// The run of `count` elements at `run` (16-byte aligned) into `flat`, `unroll` vectors of
// each thread in flight at a time.
template <class T>
__device__ void load_run(const T* run, unsigned count, uint4* flat) {
  constexpr int vec = transpose_tile<T>::vec, threads = skinny_shape::threads;
  constexpr int unroll = skinny_shape::unroll;
  const unsigned whole = count / vec;  // the rest, under a vector, element by element
  for (unsigned base = threadIdx.x; base < whole; base += threads * unroll) {
    uint4 raw[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const unsigned v = base + u * threads;
      if (v < whole) raw[u] = reinterpret_cast<const uint4*>(run)[v];
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const unsigned v = base + u * threads;
      if (v < whole) flat[v] = raw[u];
    }
  }
  T* flat_items = reinterpret_cast<T*>(flat);
#pragma unroll 1
  for (unsigned x = whole * vec + threadIdx.x; x < count; x += threads)
    flat_items[x] = run[x];
}

template <class T>
__device__ void store_run(const uint4* flat, T* run, unsigned count) {
  constexpr int vec = transpose_tile<T>::vec, threads = skinny_shape::threads;
  const unsigned whole = count / vec;
  for (unsigned v = threadIdx.x; v < whole; v += threads)
    reinterpret_cast<uint4*>(run)[v] = flat[v];
  const T* flat_items = reinterpret_cast<const T*>(flat);
#pragma unroll 1
  for (unsigned x = whole * vec + threadIdx.x; x < count; x += threads)
    run[x] = flat_items[x];
}

// Vector i of the k pieces of a span: pieces are cut into groups of 8 vectors (128 bytes),
// and consecutive i run through a group, then through the piece's next groups. A warp thus
// takes 32 consecutive vectors of one piece; their elements x * k + p in `flat` share
// banks four ways for odd k and 4-byte elements (measured 90-96% of copy regardless).
struct piece_vector {
  unsigned piece;  // p
  unsigned first;  // x of its first element
};

template <class T>
__device__ piece_vector piece_vector_of(unsigned i, unsigned span) {
  constexpr unsigned group = 8 * transpose_tile<T>::vec;
  const unsigned groups_per_piece = span / group;
  return {i / 8 / groups_per_piece, (i / 8 % groups_per_piece) * group + i % 8 * (group / 8)};
}

// Pieces [0, k) of `count` elements at pieces + p * stride into `flat`: read a 16-byte
// vector at a time, the elements past a piece's last whole vector one by one; written to
// `flat` element by element.
template <class T>
__device__ void load_pieces(const T* pieces, std::size_t stride, unsigned k, unsigned count,
                            unsigned span, T* flat) {
  constexpr int vec = transpose_tile<T>::vec, threads = skinny_shape::threads;
  constexpr int unroll = skinny_shape::unroll;
  const unsigned vectors = k * (span / vec);
  for (unsigned base = threadIdx.x; base < vectors; base += threads * unroll) {
    uint4 raw[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const unsigned i = base + u * threads;
      const piece_vector v = piece_vector_of<T>(i, span);
      if (i < vectors && v.first + vec <= count) {
        raw[u] = *reinterpret_cast<const uint4*>(pieces + v.piece * stride + v.first);
      }
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const unsigned i = base + u * threads;
      const piece_vector v = piece_vector_of<T>(i, span);
      if (i >= vectors || v.first >= count) continue;
      if (v.first + vec <= count) {
        T items[vec];
        unpack_chunk(raw[u], items);
#pragma unroll
        for (int e = 0; e < vec; ++e)
          flat[(v.first + e) * k + v.piece] = items[e];
      } else {
#pragma unroll 1
        for (unsigned x = v.first; x < count; ++x)
          flat[x * k + v.piece] = pieces[v.piece * stride + x];
      }
    }
  }
}

// `flat` out to pieces [0, k) of `count` elements at pieces + p * stride.
template <class T>
__device__ void store_pieces(const T* flat, T* pieces, std::size_t stride, unsigned k,
                             unsigned count, unsigned span) {
  constexpr int vec = transpose_tile<T>::vec;
  const unsigned vectors = k * (span / vec);
  for (unsigned i = threadIdx.x; i < vectors; i += skinny_shape::threads) {
    const piece_vector v = piece_vector_of<T>(i, span);
    T* to = pieces + v.piece * stride + v.first;
    if (v.first + vec <= count) {
      T items[vec];
#pragma unroll
      for (int e = 0; e < vec; ++e)
        items[e] = flat[(v.first + e) * k + v.piece];
      uint4 raw;
      std::memcpy(&raw, items, 16);
      *reinterpret_cast<uint4*>(to) = raw;
    } else {
#pragma unroll 1
      for (unsigned x = v.first; x < count; ++x)
        to[x - v.first] = flat[x * k + v.piece];
    }
  }
}

}  // namespace detail
}  // namespace ppat
