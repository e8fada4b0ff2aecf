// The tiles of the transposes, shared by the plane and in-place kernels: a block stages an
// S x S tile of `in` in shared memory, reading rows as 16-byte vectors (or the 16-byte
// windows unaligned rows overlap), and writes it transposed as 16-byte vectors, each
// gathered from a column of the tile (or, for unaligned output rows, a tile staged by
// columns). Device code only; transpose.cuh says how the pieces fit together.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "../core/vector_io.cuh"

namespace ppat::detail {

// The H200's policies for a tile of T: threads, the 16-byte chunks a thread holds in flight,
// and the blocks an SM must hold. The threads are as few as keep enough loads in flight per
// thread (8 chunks of 4-byte elements, 4 of most others), so that many blocks fit an SM.
// Left free, one-byte tiles get 80 registers, three blocks an SM; a bound of four (64
// registers) moves more (docs/patterns.md, "Transpose"). A bound on four-byte tiles measured
// slower (six blocks: spills, 81-84% against 94%).
template <class T>
using transpose_tuning =
    std::conditional_t<sizeof(T) == 1, tuning<256, 64, 4>,
                       std::conditional_t<sizeof(T) == 4, tuning<128, 128, 0>,
                                          std::conditional_t<sizeof(T) == 16, tuning<256, 64, 0>,
                                                             tuning<128, 64, 0>>>>;

// The tile: S x S elements, V to a 16-byte chunk, C chunks to a tile row; its side is what
// the policy's threads hold.
template <class T>
struct transpose_tile : transpose_tuning<T> {
  using policy = transpose_tuning<T>;
  static constexpr int vec = int(16 / sizeof(T));
  static constexpr int side = [] {
    const int elements = policy::threads * policy::bytes_per_thread / int(sizeof(T));
    int side = 1;
    while ((side + 1) * (side + 1) <= elements)
      ++side;
    return side;
  }();
  static_assert(side * side * int(sizeof(T)) == policy::threads * policy::bytes_per_thread,
                "a square tile");
  static constexpr int chunks = side / vec;
  static constexpr int chunks_per_thread = policy::bytes_per_thread / 16;
  // Four-byte tiles write faster with every gather of a thread issued before its stores.
  static constexpr int write_unroll = sizeof(T) == 4 ? chunks_per_thread : 1;
};

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

}  // namespace ppat::detail
