// Thin planes of small elements moved a word column at a time: a short side k of 2 to 8
// elements of 1 or 2 bytes (and of 4 bytes where k is a whole number of 16-byte vectors,
// which the skinny kernel refuses), contiguous on one side, the k rows of the long side on
// the other. Written, those rows start on 4-byte boundaries; read, anywhere: a row off
// them is read as the two aligned words each of its words overlaps, funnel-shifted.
//
// A thread holds a word column: one 32-bit word (4 / size elements) of each of the k rows
// of the long side, and on the flat side the k words those elements make there, one run.
// It transposes the elements between the two in registers. A warp's accesses on the rows'
// side are k runs of 128 bytes, one a row; on the flat side a run of 128 k bytes, read or
// written as the widest vectors the thread's k words make. The skinny kernel moved these
// through shared memory a byte at a time (docs/patterns.md, "Transpose").
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "plan.cuh"

namespace ppat::detail {

// 256 threads, about 16 words of each thread in flight, grid-stride over 8 blocks an SM.
using word_columns_tuning = tuning<256, 64, 0, 8>;
constexpr int word_columns_most_short = 8;
// Word columns a thread moves a step: 16 words or a few more.
template <int K>
constexpr int word_columns_per_thread = K <= 2   ? 8
                                        : K <= 4 ? 4
                                                 : 2;

template <int Size, int K, bool FlatIn>
__global__ void transpose_word_columns_kernel(const void* in, void* out, plane_layout layout,
                                              std::size_t plane_columns, std::size_t columns,
                                              const void* in_end);

// The short sides each element size takes: 2 to 8 elements of 1 or 2 bytes, 4 or 8 of 4.
template <int Size>
constexpr int first_short_side = Size == 4 ? 4 : 2;
template <int Size>
constexpr int next_short_side(int k) {
  return Size == 4 ? k + 4 : k + 1;
}

template <int Size, bool FlatIn, int K = first_short_side<Size>>
bool launch_word_columns(const void* in, void* out, const plane_layout& layout, std::size_t k,
                         const call_context& call);

// Planes that word columns move (returns true): elements of 1 or 2 bytes with a short side
// of 2 to 8, or of 4 bytes with a short side of 4 or 8; contiguous on the flat side, whose
// planes start on the boundaries of its vectors; the rows of `out` on the other side on
// 4-byte boundaries.
template <class T>
bool transpose_word_columns(const T* in, T* out, const plane_layout& layout,
                            const call_context& call) {
  if constexpr (sizeof(T) > 4) {
    return false;
  } else {
    constexpr std::size_t word_items = 4 / sizeof(T);
    const auto thin = [](std::size_t k, std::size_t n, std::size_t flat_stride) {
      const bool short_side =
          sizeof(T) < 4 ? k >= 2 && k <= word_columns_most_short : k == 4 || k == 8;
      return short_side && flat_stride == k && n >= 32 * word_items;
    };
    const bool flat_in = thin(layout.cols, layout.rows, layout.in_row_stride);
    const bool flat_out = !flat_in && thin(layout.rows, layout.cols, layout.out_row_stride);
    if (!(flat_in || flat_out)) return false;
    // The flat side in the widest vectors a column's k words make; the rows in words.
    const std::size_t k = flat_in ? layout.cols : layout.rows;
    const std::size_t flat_bytes = k % 4 == 0 ? 16 : k % 2 == 0 ? 8 : 4;
    const bool flat_aligned =
        flat_in ? planes_aligned(in, layout.batch_in_stride, layout.batch_rank, flat_bytes)
                : planes_aligned(out, layout.batch_out_stride, layout.batch_rank, flat_bytes);
    const bool rows_on_words =
        !flat_in ||
        rows_aligned(out, layout.out_row_stride, layout.batch_out_stride, layout.batch_rank, 4);
    if (!(flat_aligned && rows_on_words)) return false;
    if (flat_in) return launch_word_columns<int(sizeof(T)), true>(in, out, layout, k, call);
    return launch_word_columns<int(sizeof(T)), false>(in, out, layout, k, call);
  }
}

// The kernel for short side k, tried from K up (returns false past the last).
template <int Size, bool FlatIn, int K>
bool launch_word_columns(const void* in, void* out, const plane_layout& layout, std::size_t k,
                         const call_context& call) {
  if constexpr (K > word_columns_most_short) {
    return false;
  } else {
    if (std::size_t(K) != k)
      return launch_word_columns<Size, FlatIn, next_short_side<Size>(K)>(in, out, layout, k, call);
    const std::size_t n = FlatIn ? layout.rows : layout.cols;
    // Columns of whole words, and the elements of each plane after them, one by one.
    const std::size_t plane_columns = n / (4 / Size);
    std::size_t planes = 1;
    for (int d = 0; d < layout.batch_rank; ++d)
      planes *= layout.batch_extent[d];
    const std::size_t columns = planes * plane_columns;
    using shape = word_columns_tuning;
    const unsigned blocks = grid_stride_blocks<shape>(
        std::max(columns, planes * K * (n - plane_columns * (4 / Size))),
        shape::threads * std::size_t(word_columns_per_thread<K>), call.limits());
    transpose_word_columns_kernel<Size, K, FlatIn><<<blocks, shape::threads, 0, call.stream()>>>(
        in, out, layout, plane_columns, columns,
        static_cast<const unsigned char*>(in) + input_span(layout) * Size);
    check_launch(call.function(), "transpose_word_columns_kernel");
    return true;
  }
}

// An unsigned integer of `Size` bytes.
template <int Size>
using sized_bits = std::conditional_t<Size == 1, std::uint8_t,
                                      std::conditional_t<Size == 2, std::uint16_t, std::uint32_t>>;

// The K words of one side of a word column from the K words of the other. Flat side: the
// column's elements in order, element e = q * K + p (q along the long side, p along the
// short side) in word e / E; rows' side: word p holds elements q = 0 .. E - 1 of row p.
template <int Size, int K, bool FromRows>
__device__ __forceinline__ void transpose_word_column(const unsigned (&from)[K],
                                                      unsigned (&to)[K]) {
  constexpr int E = 4 / Size;
  constexpr unsigned mask = Size == 4 ? ~0u : (1u << (8 * (Size % 4))) - 1;
#pragma unroll
  for (int w = 0; w < K; ++w) {
    unsigned word = 0;
#pragma unroll
    for (int t = 0; t < E; ++t) {
      // Element t of word w on the side written, and where it sits on the side read.
      const int e = FromRows ? w * E + t : t * K + w;  // its number on the flat side
      const int q = e / K, p = e % K;
      const int source_word = FromRows ? p : e / E;
      const int source_item = FromRows ? q : e % E;
      word |= ((from[source_word] >> (8 * Size * source_item)) & mask) << (8 * Size * t);
    }
    to[w] = word;
  }
}

// The K words of a word column on the flat side, as the widest vectors K words make.
template <int K>
constexpr int flat_vector_words = K % 4 == 0   ? 4
                                  : K % 2 == 0 ? 2
                                               : 1;

template <int K>
__device__ __forceinline__ void load_flat(const unsigned char* at, unsigned (&words)[K]) {
  constexpr int vec = flat_vector_words<K>;
#pragma unroll
  for (int v = 0; v < K / vec; ++v) {
    if constexpr (vec == 4) {
      const uint4 raw = reinterpret_cast<const uint4*>(at)[v];
      words[4 * v] = raw.x, words[4 * v + 1] = raw.y, words[4 * v + 2] = raw.z,
                words[4 * v + 3] = raw.w;
    } else if constexpr (vec == 2) {
      const uint2 raw = reinterpret_cast<const uint2*>(at)[v];
      words[2 * v] = raw.x, words[2 * v + 1] = raw.y;
    } else {
      words[v] = reinterpret_cast<const unsigned*>(at)[v];
    }
  }
}

template <int K>
__device__ __forceinline__ void store_flat(const unsigned (&words)[K], unsigned char* at) {
  constexpr int vec = flat_vector_words<K>;
#pragma unroll
  for (int v = 0; v < K / vec; ++v) {
    if constexpr (vec == 4) {
      reinterpret_cast<uint4*>(at)[v] =
          make_uint4(words[4 * v], words[4 * v + 1], words[4 * v + 2], words[4 * v + 3]);
    } else if constexpr (vec == 2) {
      reinterpret_cast<uint2*>(at)[v] = make_uint2(words[2 * v], words[2 * v + 1]);
    } else {
      reinterpret_cast<unsigned*>(at)[v] = words[v];
    }
  }
}

// The word at `at`, a row's bytes from any address: the two aligned words it overlaps,
// funnel-shifted, or byte by byte where one of them would reach outside [begin, end).
__device__ __forceinline__ unsigned load_row_word(const unsigned char* at,
                                                  const unsigned char* begin,
                                                  const unsigned char* end) {
  const unsigned offset = unsigned(reinterpret_cast<std::uintptr_t>(at) & 3);
  if (offset == 0) return *reinterpret_cast<const unsigned*>(at);
  const unsigned char* aligned = at - offset;
  if (aligned >= begin && aligned + 8 <= end) {
    const unsigned low = reinterpret_cast<const unsigned*>(aligned)[0];
    const unsigned high = reinterpret_cast<const unsigned*>(aligned)[1];
    return __funnelshift_r(low, high, 8 * offset);
  }
  unsigned word = 0;
#pragma unroll
  for (int b = 0; b < 4; ++b)
    word |= unsigned(at[b]) << (8 * b);
  return word;
}

// Word column c of each plane (FlatIn: `in` is n x K, `out` K rows; else `in` K rows, `out`
// n x K): elements [c E, c E + E) of the long side. Each thread moves `per_thread` columns a
// step, all loads before any store; then the elements of each plane past its last whole
// word column, one by one.
template <int Size, int K, bool FlatIn>
__global__ void __launch_bounds__(word_columns_tuning::threads)
    transpose_word_columns_kernel(const void* in, void* out, plane_layout layout,
                                  std::size_t plane_columns, std::size_t columns,
                                  const void* in_end) {
  constexpr int E = 4 / Size, per_thread = word_columns_per_thread<K>;
  const auto* from = static_cast<const unsigned char*>(in);
  auto* to = static_cast<unsigned char*>(out);
  const std::size_t row_stride = FlatIn ? layout.out_row_stride : layout.in_row_stride;
  // Element offsets of word column c's first element on both sides.
  const auto offsets_of = [&](std::size_t c, std::size_t& flat, std::size_t& rows) {
    const std::size_t plane = layout.batch_rank > 0 ? c / plane_columns : 0;
    const std::size_t column = c - plane * plane_columns;
    std::size_t in_offset = 0, out_offset = 0;
    add_plane_offsets(plane, layout, in_offset, out_offset);
    flat = (FlatIn ? in_offset : out_offset) + column * E * K;
    rows = (FlatIn ? out_offset : in_offset) + column * E;
  };

  const std::size_t step = std::size_t(gridDim.x) * blockDim.x * per_thread;
  for (std::size_t first = std::size_t(blockIdx.x) * blockDim.x * per_thread + threadIdx.x;
       first < columns; first += step) {
    unsigned read[per_thread][K];
    std::size_t flat[per_thread], rows[per_thread];
#pragma unroll
    for (int u = 0; u < per_thread; ++u) {
      const std::size_t c = first + std::size_t(u) * blockDim.x;
      if (c >= columns) break;
      offsets_of(c, flat[u], rows[u]);
      if constexpr (FlatIn) {
        load_flat(from + flat[u] * Size, read[u]);
      } else {
#pragma unroll
        for (int p = 0; p < K; ++p) {
          read[u][p] = load_row_word(from + (rows[u] + p * row_stride) * Size, from,
                                     static_cast<const unsigned char*>(in_end));
        }
      }
    }
#pragma unroll
    for (int u = 0; u < per_thread; ++u) {
      if (first + std::size_t(u) * blockDim.x >= columns) break;
      unsigned written[K];
      transpose_word_column<Size, K, !FlatIn>(read[u], written);
      if constexpr (FlatIn) {
#pragma unroll
        for (int p = 0; p < K; ++p)
          *reinterpret_cast<unsigned*>(to + (rows[u] + p * row_stride) * Size) = written[p];
      } else {
        store_flat(written, to + flat[u] * Size);
      }
    }
  }

  // The elements past the last whole word column of each plane: K of each long index x.
  using item = sized_bits<Size>;
  const std::size_t n = FlatIn ? layout.rows : layout.cols;
  const std::size_t tail = n - plane_columns * E;
  const std::size_t planes = layout.batch_rank > 0 ? columns / plane_columns : 1;
  const std::size_t tail_items = planes * tail * K;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < tail_items;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t plane = i / (tail * K), in_plane = i - plane * tail * K;
    const std::size_t x = plane_columns * E + in_plane / K, p = in_plane % K;
    std::size_t in_offset = 0, out_offset = 0;
    add_plane_offsets(plane, layout, in_offset, out_offset);
    const std::size_t flat_index = x * K + p, row_index = x + p * row_stride;
    in_offset += FlatIn ? flat_index : row_index;
    out_offset += FlatIn ? row_index : flat_index;
    reinterpret_cast<item*>(to)[out_offset] = reinterpret_cast<const item*>(from)[in_offset];
  }
}

}  // namespace ppat::detail
