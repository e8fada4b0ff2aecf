// The skinny transposes: a plane whose short side k is under a tile and contiguous
// (33 x 2^20, say) would waste most of each tile, so a block moves a span of the long side,
// all k of it: one side is a single contiguous run, read or written as 16-byte vectors, the
// other k row pieces, as 16-byte vectors too where the rows start on 16-byte boundaries and
// element by element, lanes along a piece, where they do not (3 x 22369621, say).
//
// Short sides of whole 16-byte vectors (8- and 16-byte elements) would put the skinny
// kernel's gathers from shared memory on one bank. Where such a short side is at most 128
// bytes, threads instead run along the flat side one element each, without shared memory:
// a warp's 32 elements there are one run, and on the other side 32 / k runs of at least
// 16 bytes, one for each piece, so both sides fill whole sectors.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "plan.cuh"
#include "tile_staging.cuh"

namespace ppat::detail {

// The skinny kernel: a block moves a span of the long side, about `span_bytes` of data,
// each thread loading 64 bytes (four 16-byte vectors) at a time (not measured against other
// shapes). It takes short sides of under 128 elements and at most 512 bytes, so that a span
// of 128-byte row pieces fits 24 KB.
struct skinny_shape : tuning<256, 64, 0> {
  static constexpr int unroll = bytes_per_thread / 16;
  static constexpr std::size_t span_bytes = 24 * 1024;
  static constexpr std::size_t max_short = 127, max_short_bytes = 512;
};

// The short rows kernel: 256 threads, four elements each a step in flight, four blocks an
// SM in the grid (measured against 8 and 16 blocks, docs/patterns.md "Transpose").
template <class T>
using short_rows_tuning = tuning<256, 4 * int(sizeof(T)), 0, 4>;
constexpr std::size_t short_rows_max_bytes = 128;

template <class T, bool FlatIn>
__global__ void transpose_short_rows_kernel(const T* in, T* out, plane_layout layout,
                                            std::size_t plane_items, std::size_t total);
template <class T, bool FlatIn, bool AlignedPieces>
__global__ void transpose_skinny_kernel(const T* in, T* out, plane_layout layout, unsigned span,
                                        unsigned plane_spans, std::size_t spans);
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
template <class T>
__device__ void load_piece_items(const T* pieces, std::size_t stride, unsigned k, unsigned count,
                                 unsigned span, T* flat);
template <class T>
__device__ void store_piece_items(const T* flat, T* pieces, std::size_t stride, unsigned k,
                                  unsigned count, unsigned span);

// Planes with a short side k (skinny_shape's limits), contiguous and 16-byte aligned where
// it is flat, go to the skinny kernel (returns true). Tiles would leave most of their rows
// empty, or cut into a second tile for a few. Short sides of whole 16-byte chunks stay
// with the tiles: they would put the skinny kernel's gathers from shared memory all on one
// bank.
template <class T>
bool transpose_skinny(const T* in, T* out, const plane_layout& layout, const call_context& call) {
  using tile = transpose_tile<T>;
  const auto skinny = [](std::size_t k, std::size_t n, std::size_t flat_stride) {
    return k <= skinny_shape::max_short && k * sizeof(T) <= skinny_shape::max_short_bytes &&
           k * sizeof(T) % 16 != 0 && n >= std::size_t(tile::side) && flat_stride == k;
  };
  const bool flat_in = skinny(layout.cols, layout.rows, layout.in_row_stride);
  const bool flat_out = !flat_in && skinny(layout.rows, layout.cols, layout.out_row_stride);
  if (!(flat_in || flat_out)) return false;
  const bool flat_aligned = flat_in
                                ? planes_aligned(in, layout.batch_in_stride, layout.batch_rank)
                                : planes_aligned(out, layout.batch_out_stride, layout.batch_rank);
  if (!flat_aligned) return false;
  const bool pieces_aligned =
      flat_in ? rows_aligned(out, layout.out_row_stride, layout.batch_out_stride, layout.batch_rank)
              : rows_aligned(in, layout.in_row_stride, layout.batch_in_stride, layout.batch_rank);
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
  if (flat_in && pieces_aligned) {
    launch(transpose_skinny_kernel<T, true, true>);
  } else if (flat_in) {
    launch(transpose_skinny_kernel<T, true, false>);
  } else if (pieces_aligned) {
    launch(transpose_skinny_kernel<T, false, true>);
  } else {
    launch(transpose_skinny_kernel<T, false, false>);
  }
  check_launch(call.function(), "transpose_skinny_kernel");
  return true;
}

// Planes of 8- or 16-byte elements whose short side k is contiguous, a whole number of
// 16-byte vectors and at most short_rows_max_bytes: one element a thread, threads along the
// flat side (returns true).
template <class T>
bool transpose_short_rows(const T* in, T* out, const plane_layout& layout,
                          const call_context& call) {
  if constexpr (sizeof(T) < 8) {
    return false;
  } else {
    const auto short_rows = [](std::size_t k, std::size_t n, std::size_t flat_stride) {
      return k * sizeof(T) <= short_rows_max_bytes && k * sizeof(T) % 16 == 0 && n > k &&
             flat_stride == k;
    };
    const bool flat_in = short_rows(layout.cols, layout.rows, layout.in_row_stride);
    const bool flat_out = !flat_in && short_rows(layout.rows, layout.cols, layout.out_row_stride);
    if (!(flat_in || flat_out)) return false;
    std::size_t total = layout.rows * layout.cols;
    const std::size_t plane_items = total;
    for (int d = 0; d < layout.batch_rank; ++d)
      total *= layout.batch_extent[d];
    using shape = short_rows_tuning<T>;
    const unsigned blocks = grid_stride_blocks<shape>(
        total, shape::threads * shape::bytes_per_thread / sizeof(T), call.limits());
    const auto launch = [&](auto kernel) {
      kernel<<<blocks, shape::threads, 0, call.stream()>>>(in, out, layout, plane_items, total);
    };
    if (flat_in) {
      launch(transpose_short_rows_kernel<T, true>);
    } else {
      launch(transpose_short_rows_kernel<T, false>);
    }
    check_launch(call.function(), "transpose_short_rows_kernel");
    return true;
  }
}

// Element i of the flat side, in order (FlatIn: of `in`, n x k; else of `out`): long index
// x = i / k and short index p = i % k of its plane, the same element at x + p * stride on
// the side of pieces. Each thread issues all its loads before its stores.
template <class T, bool FlatIn>
__global__ void __launch_bounds__(short_rows_tuning<T>::threads)
    transpose_short_rows_kernel(const T* in, T* out, plane_layout layout, std::size_t plane_items,
                                std::size_t total) {
  constexpr int per_thread = short_rows_tuning<T>::bytes_per_thread / int(sizeof(T));
  const std::size_t k = FlatIn ? layout.cols : layout.rows;
  const std::size_t piece_stride = FlatIn ? layout.out_row_stride : layout.in_row_stride;
  const std::size_t step = std::size_t(gridDim.x) * blockDim.x * per_thread;
  for (std::size_t first = std::size_t(blockIdx.x) * blockDim.x * per_thread + threadIdx.x;
       first < total; first += step) {
    T items[per_thread];
    std::size_t to[per_thread];
#pragma unroll
    for (int u = 0; u < per_thread; ++u) {
      const std::size_t i = first + std::size_t(u) * blockDim.x;
      if (i >= total) break;
      const std::size_t plane = layout.batch_rank > 0 ? i / plane_items : 0;
      const std::size_t in_plane = i - plane * plane_items, x = in_plane / k;
      const std::size_t pieces_offset = x + (in_plane - x * k) * piece_stride;
      std::size_t in_offset = FlatIn ? in_plane : pieces_offset;
      std::size_t out_offset = FlatIn ? pieces_offset : in_plane;
      add_plane_offsets(plane, layout, in_offset, out_offset);
      items[u] = in[in_offset];
      to[u] = out_offset;
    }
#pragma unroll
    for (int u = 0; u < per_thread; ++u) {
      if (first + std::size_t(u) * blockDim.x < total) out[to[u]] = items[u];
    }
  }
}

// A span of the long side with all k of the short side. With FlatIn, rows [x0, x0 + count)
// of an n x k `in` (one contiguous run) become pieces of the k rows of `out`; without, the
// pieces of the k rows of `in` become one contiguous run of `out`. Shared memory holds the
// span as the flat side does: long index x (from x0), short index p at x * k + p.
template <class T, bool FlatIn, bool AlignedPieces>
__global__ void __launch_bounds__(skinny_shape::threads, skinny_shape::min_blocks_per_sm)
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
      if constexpr (AlignedPieces) {
        store_pieces(reinterpret_cast<const T*>(flat), out + out_offset + x0, piece_stride, k,
                     count, span);
      } else {
        store_piece_items(reinterpret_cast<const T*>(flat), out + out_offset + x0, piece_stride, k,
                          count, span);
      }
    } else {
      if constexpr (AlignedPieces) {
        load_pieces(in + in_offset + x0, piece_stride, k, count, span, reinterpret_cast<T*>(flat));
      } else {
        load_piece_items(in + in_offset + x0, piece_stride, k, count, span,
                         reinterpret_cast<T*>(flat));
      }
      __syncthreads();
      store_run(flat, out + out_offset + x0 * k, count * k);
    }
    if (s + gridDim.x < spans) __syncthreads();  // the next span reuses `flat`
  }
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
// banks four ways for odd k and 4-byte elements, which the measured bandwidth shows is not
// the limit (docs/patterns.md, "Transpose").
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

// Pieces whose rows are off 16-byte boundaries, element by element: element j of the span
// is element x = j % span of piece j / span, so that lanes read along a piece (coalesced),
// `piece_unroll` elements of each thread in flight.
template <class T>
constexpr int piece_unroll = sizeof(T) >= 8 ? 8 : 16;

template <class T>
__device__ void load_piece_items(const T* pieces, std::size_t stride, unsigned k, unsigned count,
                                 unsigned span, T* flat) {
  constexpr int threads = skinny_shape::threads, unroll = piece_unroll<T>;
  const unsigned total = k * span;
  for (unsigned base = threadIdx.x; base < total; base += threads * unroll) {
    T items[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const unsigned j = base + u * threads, p = j / span, x = j - p * span;
      if (j < total && x < count) items[u] = pieces[p * stride + x];
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const unsigned j = base + u * threads, p = j / span, x = j - p * span;
      if (j < total && x < count) flat[x * k + p] = items[u];
    }
  }
}

template <class T>
__device__ void store_piece_items(const T* flat, T* pieces, std::size_t stride, unsigned k,
                                  unsigned count, unsigned span) {
  const unsigned total = k * span;
  for (unsigned j = threadIdx.x; j < total; j += skinny_shape::threads) {
    const unsigned p = j / span, x = j - p * span;
    if (x < count) pieces[p * stride + x] = flat[x * k + p];
  }
}

}  // namespace ppat::detail
