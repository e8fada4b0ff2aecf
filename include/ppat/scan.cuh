// Production scans: one pass over memory, one launch, deterministic.
//
//   ppat::inclusive_scan(in, out, n, op, stream)        out[i] = in[0] op ... op in[i]
//   ppat::exclusive_scan(in, out, n, init, op, stream)  out[i] = init op in[0] op ... op in[i-1]
//   ppat::inclusive_scan_by_key(keys, in, out, n, op, stream)
//   ppat::exclusive_scan_by_key(keys, in, out, n, init, op, stream)
//       the same within each segment, a maximal run of equal consecutive keys
//
// Any associative `op`, commutative or not; any trivially copyable T; in == out allowed.
// Each block reads one tile (256 threads x up to 128 bytes) into registers with 16-byte
// accesses coalesced across the warp (item-sized ones where a buffer is not 16-byte
// aligned), scans it, and learns the tile's prefix from the tiles before it through the
// deterministic decoupled look-back of core/lookback.cuh. Every combination happens in an
// order fixed by n alone, whatever the buffers' alignment, so floating-point results are the
// same bits on every run on the same GPU.
//
// A scan by key is a plain scan of (value, number of segment starts) pairs under an
// operator that restarts where a segment starts. Each item reads only its own value and
// key and the key before it, so both scans by key work in place (`keys` must not overlap
// `out`).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/arguments.cuh"
#include "core/device.cuh"
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
void scan(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
          const char* function);
template <bool Exclusive, class K, class T, class Op>
void scan_by_key(const K* keys, const T* in, T* out, std::size_t n, T init, Op op,
                 cudaStream_t stream, const char* function);

}  // namespace detail

template <class T, class Op = plus>
void inclusive_scan(const T* in, T* out, std::size_t n, Op op = {}, cudaStream_t stream = 0) {
  detail::scan<false>(in, out, n, T{}, op, stream, "ppat::inclusive_scan");
}

template <class T, class Op = plus>
void exclusive_scan(const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                    cudaStream_t stream = 0) {
  detail::scan<true>(in, out, n, init, op, stream, "ppat::exclusive_scan");
}

template <class K, class T, class Op = plus>
void inclusive_scan_by_key(const K* keys, const T* in, T* out, std::size_t n, Op op = {},
                           cudaStream_t stream = 0) {
  detail::scan_by_key<false>(keys, in, out, n, T{}, op, stream, "ppat::inclusive_scan_by_key");
}

template <class K, class T, class Op = plus>
void exclusive_scan_by_key(const K* keys, const T* in, T* out, std::size_t n, T init = T{},
                           Op op = {}, cudaStream_t stream = 0) {
  detail::scan_by_key<true>(keys, in, out, n, init, op, stream, "ppat::exclusive_scan_by_key");
}

namespace detail {

// What the single-pass kernel scans. A source loads the items to combine (`item`, combined
// by `op`), from `vec` consecutive positions at a time, and writes each position's result
// from the combination of everything before it and everything through it.
template <bool Exclusive, class T, class Op, int Vec, bool Aligned>
struct plain_source {
  using item = T;
  using held = register_items<T, Vec>;
  using combiner = Op;
  using result_type = T;
  static constexpr int vec = Vec;
  const T* in;
  T* out;
  Op op;

  __device__ void load(std::size_t first, held& to) const { to.template load<Aligned>(in + first); }
  __device__ T load_one(std::size_t i) const { return in[i]; }
  // An exclusive scan always has a prefix: `start` at the very least.
  __device__ static T result(const partial<T>& before, const T& through) {
    return Exclusive ? before.value : through;
  }
  __device__ void store(std::size_t first, const T (&results)[Vec]) const {
    store_items<Aligned>(out + first, results);
  }
  __device__ void store_one(std::size_t i, const T& result) const { out[i] = result; }
};

// A value, and how many segments start within the items it combines. The scans by key
// count modulo 2^32 (`unsigned`): only differences of counts matter there, and whether a
// right operand holds any start; right operands never span more than one tile, far fewer
// than 2^32 items. Segmented reductions count exactly (`segment_count`, select.cuh).
template <class T, class Count = unsigned>
struct segmented {
  T value;
  Count starts;
};

// Combines within segments: a right operand in which a segment starts discards the left.
template <class Op>
struct segmented_op {
  Op op;
  template <class T, class Count>
  __device__ segmented<T, Count> operator()(const segmented<T, Count>& a,
                                            const segmented<T, Count>& b) const {
    return {b.starts != Count{} ? b.value : op(a.value, b.value), a.starts + b.starts};
  }
};

// Which of the Vec keys at keys[first..] start a segment, a bit each: the first item, and
// every key that differs from the one before it.
template <bool Aligned, int Vec, class K>
__device__ unsigned segment_starts(const K* keys, std::size_t first) {
  K k[Vec];
  load_items<Aligned>(keys + first, k);
  K previous = first > 0 ? keys[first - 1] : K{};
  unsigned starts = 0;
#pragma unroll
  for (int j = 0; j < Vec; ++j) {
    starts |= ((first == 0 && j == 0) || !(k[j] == previous) ? 1u : 0u) << j;
    previous = k[j];
  }
  return starts;
}

template <class K>
__device__ bool starts_segment(const K* keys, std::size_t i) {
  return i == 0 || !(keys[i] == keys[i - 1]);
}

// Vec values as loaded (`Values`, register_items or the like), and which of them start a
// segment, a bit each: fewer registers than Vec (value, count) pairs.
template <class Values, class Count, int Vec>
struct segment_items {
  using value_type = std::remove_cv_t<decltype(std::declval<const Values&>()[0])>;
  using item = segmented<value_type, Count>;
  Values values;
  unsigned starts;

  __device__ item operator[](int j) const { return {values[j], Count((starts >> j) & 1u)}; }
  __device__ void assign(const item (&items)[Vec]) {
    value_type v[Vec];
    starts = 0;
#pragma unroll
    for (int j = 0; j < Vec; ++j) {
      v[j] = items[j].value;
      starts |= (items[j].starts != Count{} ? 1u : 0u) << j;
    }
    values.assign(v);
  }
};

// Item i is (in[i], 1) when a segment starts at i (i == 0, or its key differs from the one
// before), else (in[i], 0). The inclusive result is the combination through i; the
// exclusive one is init, followed by the combination before i unless i starts a segment.
// Each item reads only its own value, so the scan works in place.
template <bool Exclusive, class K, class T, class Op, int Vec, bool Aligned>
struct by_key_source {
  using item = segmented<T>;
  using combiner = segmented_op<Op>;
  using result_type = T;
  static constexpr int vec = Vec;
  using held = segment_items<register_items<T, Vec>, unsigned, Vec>;
  const K* keys;
  const T* in;
  T* out;
  T init;
  combiner op;

  __device__ void load(std::size_t first, held& to) const {
    to.starts = segment_starts<Aligned, Vec>(keys, first);
    to.values.template load<Aligned>(in + first);
  }
  __device__ item load_one(std::size_t i) const {
    return {in[i], starts_segment(keys, i) ? 1u : 0u};
  }
  __device__ T result(const partial<item>& before, const item& through) const {
    if constexpr (Exclusive) {
      const unsigned starts_before = before.valid ? before.value.starts : 0u;
      const bool starts_here = through.starts != starts_before;
      return starts_here ? init : op.op(init, before.value.value);
    } else {
      return through.value;
    }
  }
  __device__ void store(std::size_t first, const T (&results)[Vec]) const {
    store_items<Aligned>(out + first, results);
  }
  __device__ void store_one(std::size_t i, const T& result) const { out[i] = result; }
};

// A tile of `Tuning`'s threads: each warp owns `rows` x 32 x `vec` consecutive items, row
// r of lane l being the `vec` items at r * 32 * vec + l * vec. With 16-byte vectors every
// row is one fully coalesced 512-byte access per warp.
template <class Tuning, int Vec, int Rows>
struct scan_tile_shape : Tuning {
  static constexpr int vec = Vec;
  static constexpr int rows = Rows;
  static constexpr int warp_items = 32 * vec * rows;
  static constexpr int tile_items = Tuning::warps * warp_items;
};

// The tile that holds `Tuning`'s bytes of `Item`s read `Vec` at a time. Items loaded one at
// a time are scanned across the warp one by one, so they get fewer rows.
template <class Tuning, class Item, int Vec>
using scan_tile_of =
    scan_tile_shape<Tuning, Vec,
                    Tuning::groups_per_thread(int(sizeof(Item)) * Vec, Vec == 1 ? 8 : 16)>;

// The H200's policies: 256 threads, and as many tiles an SM as their registers allow.
// Measured at 2^28 with the look-back of core/lookback.cuh:
//   - i32: 24 items a thread at 4 and 5 tiles an SM reach 89% and 92% of copy, 32 items at
//     4 tiles 94%; the same tiles staged in shared memory instead, 81-85%;
//   - i64: 16 items a thread at 3 tiles an SM, 87.7%; 12 to 24 items at 2 to 4 tiles,
//     84-86% (16 at 4 tiles spills); 8 items at 6 tiles, 50%;
//   - u8 and i16 (packed four and two to a register): 96 bytes a thread at 3 tiles an SM,
//     75% and 82%; u8 at 64 bytes and 4 or 5 tiles, 56-64%, at 128 bytes and 2 tiles, 71%;
//   - larger items: 96 bytes at 2 tiles, which their registers fit.
template <class Item>
using scan_tuning =
    std::conditional_t<sizeof(Item) < 4, tuning<256, 96, 3>,
                       std::conditional_t<sizeof(Item) == 4, tuning<256, 128, 4>,
                                          std::conditional_t<sizeof(Item) == 8, tuning<256, 128, 3>,
                                                             tuning<256, 96, 2>>>>;
// By key (i32 keys and f32 values): 96 bytes of values a thread at 4 tiles an SM, 85% of
// copy (a few bytes spill); 64 bytes, 62%; 48 bytes, 57%.
template <class Item>
using scan_by_key_tuning = std::conditional_t<
    sizeof(Item) < 4, tuning<256, 96, 3>,
    std::conditional_t<sizeof(Item) <= 8, tuning<256, 96, 4>, tuning<256, 96, 2>>>;
// 1- and 2-byte items in fewer of the 6-row tiles above than the GPU has SMs: 64 bytes a
// thread (4-row tiles) spread them over more SMs. Event-timed on the H200 against CUB in the
// same run, u8 at 2^16 to 2^19 took 0.58-0.69x CUB's time in 4-row tiles against 0.68-0.82x
// in 6-row ones, and i16 at 2^16 to 2^18 0.62-0.64x against 0.66-0.71x. Where 6-row tiles
// fill the GPU, they are as fast or faster: i16 at 2^21 and 2^22, 0.65x and 0.68x against
// 0.68x and 0.72x.
using scan_small_input_tuning = tuning<256, 64, 4>;

// What precedes a scan's first item: a value the host knows, or one that an earlier kernel
// on the stream left in device memory (a distributed scan's prefix of the ranks before).
template <class T>
struct scan_start {
  partial<T> value;
  const partial<T>* in_memory = nullptr;

  scan_start(partial<T> known) : value(known) {}  // implicit: a known start is passed as is
  explicit scan_start(const partial<T>* left_by_a_kernel)
      : value{T{}, false}, in_memory(left_by_a_kernel) {}
  __device__ partial<T> get() const { return in_memory != nullptr ? *in_memory : value; }
};

template <class Source>
void plain_scan(const Source& source, std::size_t n, scan_start<typename Source::item> start,
                const call_context& call);
template <class Shape, class Source>
void launch_single_pass_scan(const Source& source, std::size_t n,
                             scan_start<typename Source::item> start, const call_context& call);
template <class Shape, class Source>
__global__ void single_pass_scan_kernel(Source source, std::size_t n,
                                        lookback_state<typename Source::item> state,
                                        scan_start<typename Source::item> start);

template <bool Exclusive, class T, class Op>
void scan(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
          const char* function) {
  require_buffer(in, n, function, "in");
  require_buffer(out, n, function, "out");
  require_same_or_disjoint(in, out, n, function);
  if (n == 0) return;
  const call_context call(stream, function);
  require_device_readable(in, n, call, "in");
  require_device_readable(out, n, call, "out");
  // 16-byte accesses need both buffers 16-byte aligned; anything else takes T-sized ones,
  // with the same tiles.
  constexpr int vec = items_per_vector<T>;
  const partial<T> start{init, Exclusive};
  if (vec == 1 || (aligned_to(in, 16) && aligned_to(out, 16))) {
    plain_scan(plain_source<Exclusive, T, Op, vec, true>{in, out, op}, n, start, call);
  } else if constexpr (vec != 1) {
    plain_scan(plain_source<Exclusive, T, Op, vec, false>{in, out, op}, n, start, call);
  }
}

// 1- and 2-byte items too few to give every SM one production tile take smaller tiles.
template <class Source>
void plain_scan(const Source& source, std::size_t n, scan_start<typename Source::item> start,
                const call_context& call) {
  using T = typename Source::item;
  using production_shape = scan_tile_of<scan_tuning<T>, T, Source::vec>;
  if constexpr (sizeof(T) < 4) {
    if (ceil_div(n, production_shape::tile_items) < std::size_t(call.limits().sm_count)) {
      using small_shape = scan_tile_of<scan_small_input_tuning, T, Source::vec>;
      launch_single_pass_scan<small_shape>(source, n, start, call);
      return;
    }
  }
  launch_single_pass_scan<production_shape>(source, n, start, call);
}

template <bool Exclusive, class K, class T, class Op>
void scan_by_key(const K* keys, const T* in, T* out, std::size_t n, T init, Op op,
                 cudaStream_t stream, const char* function) {
  require_buffer(keys, n, function, "keys");
  require_buffer(in, n, function, "in");
  require_buffer(out, n, function, "out");
  require_same_or_disjoint(in, out, n, function);
  require_disjoint(keys, n, out, n, function, "keys", "out");
  if (n == 0) return;
  const call_context call(stream, function);
  require_device_readable(keys, n, call, "keys");
  require_device_readable(in, n, call, "in");
  require_device_readable(out, n, call, "out");
  constexpr int vec = items_per_vector<T>;
  const bool keys_aligned = sizeof(K) * vec != 16 || aligned_to(keys, 16);
  const partial<segmented<T>> start{{init, 0u}, false};
  const segmented_op<Op> combiner{op};
  using shape = scan_tile_of<scan_by_key_tuning<T>, T, vec>;
  if (vec == 1 || (aligned_to(in, 16) && aligned_to(out, 16) && keys_aligned)) {
    launch_single_pass_scan<shape>(
        by_key_source<Exclusive, K, T, Op, vec, true>{keys, in, out, init, combiner}, n, start,
        call);
  } else if constexpr (vec != 1) {
    launch_single_pass_scan<shape>(
        by_key_source<Exclusive, K, T, Op, vec, false>{keys, in, out, init, combiner}, n, start,
        call);
  }
}

template <class Shape, class Source>
void launch_single_pass_scan(const Source& source, std::size_t n,
                             scan_start<typename Source::item> start, const call_context& call) {
  using item = typename Source::item;
  const std::size_t tiles = ceil_div(n, Shape::tile_items);
  require(tiles <= std::size_t(std::numeric_limits<int>::max()), call.function(), "n",
          "needs more tiles than one grid can launch");
  const lookback_layout layout = plan_lookback<item>(tiles);
  stream_scratch flags(layout.flag_bytes, lookback_purpose<item>, call);
  temporary_buffer<item> values(layout.values, call);
  // The look-back keeps its windows of 32 items (up to 4 KB of them, or one window of items
  // over 32 bytes), and the warps' prefixes, in static shared memory, within the 48 KB a
  // launch gets without opting in.
  static_assert(32 * lookback_windows<item> * sizeof(item) + Shape::warps * sizeof(partial<item>) <=
                    47 * 1024,
                "ppat scans take items of up to 1.2 KB");
  single_pass_scan_kernel<Shape><<<unsigned(tiles), Shape::threads, 0, call.stream()>>>(
      source, n, lookback_view<item>(flags.data(), flags.epoch(), values.data(), layout), start);
  check_launch(call.function(), "single_pass_scan_kernel");
  values.release();
  flags.release();
}

template <class Shape, class Source>
__global__ void __launch_bounds__(Shape::threads, Shape::blocks_per_sm)
    single_pass_scan_kernel(Source source, std::size_t n,
                            lookback_state<typename Source::item> state,
                            scan_start<typename Source::item> start) {
  using item = typename Source::item;
  constexpr int vec = Shape::vec;
  constexpr int rows = Shape::rows;
  const typename Source::combiner op = source.op;
  __shared__ unsigned tile_slot;
  __shared__ uninitialized_array<partial<item>, Shape::warps> warp_prefixes;
  if (threadIdx.x == 0) tile_slot = next_tile(state);
  __syncthreads();
  const unsigned tile = tile_slot;
  // Past the last tile only if another kernel shared the counter, which the stream_scratch
  // rules out: such a block touches nothing. (A __trap() here made the scans by key spill
  // 16 more bytes a thread.)
  if (tile >= state.tiles) return;
  const int warp = int(threadIdx.x / 32);
  const int lane = lane_id();
  const std::size_t tile_first = std::size_t(tile) * Shape::tile_items;
  const std::size_t lane_first = tile_first + warp * Shape::warp_items + lane * vec;
  const bool full_tile = tile_first + Shape::tile_items <= n;
  const auto row_first = [&](int r) { return lane_first + r * 32 * vec; };

  // The tile waits out the look-back in registers, all of its loads issued at once. The
  // partial last tile pads with copies of its last item, whose results are never stored
  // (and no later tile needs its aggregate).
  //
  // With 8 or 16 items a vector (1- and 2-byte items), the partial tile still moves whole
  // vectors up to n: item by item, the last tile of a u8 scan took about 3 us longer (at
  // 2^16 items, 12.1 us a scan against 9.4). With fewer, it moves item by item: the extra
  // branch cost the exclusive scan by key 18% at 2^28 (989 us against 811): it spilled 16
  // bytes a thread instead of 10.
  constexpr bool whole_vectors_in_partial_tile = vec >= 8;
  const auto whole_vector = [&](int r) {
    return full_tile || (whole_vectors_in_partial_tile && row_first(r) + vec <= n);
  };
  typename Source::held tile_vectors[rows];
#pragma unroll
  for (int r = 0; r < rows; ++r) {
    if (whole_vector(r)) {
      source.load(row_first(r), tile_vectors[r]);
    } else {
      item padded[vec];
#pragma unroll
      for (int j = 0; j < vec; ++j)
        padded[j] = source.load_one(min(row_first(r) + j, n - 1));
      tile_vectors[r].assign(padded);
    }
  }

  // Scan each vector, then each row across the warp. The vector scans are done again when
  // the results are written, rather than held, so that 1- and 2-byte items stay packed.
  const auto scan_vector = [&](int r, item(&items)[vec]) {
    items[0] = tile_vectors[r][0];
#pragma unroll
    for (int j = 1; j < vec; ++j)
      items[j] = op(items[j - 1], tile_vectors[r][j]);
  };
  item lane_inclusive[rows];
  item warp_total;
#pragma unroll
  for (int r = 0; r < rows; ++r) {
    item items[vec];
    scan_vector(r, items);
    lane_inclusive[r] = warp_inclusive_scan(items[vec - 1], op);
    const item row_total = shuffle_from(lane_inclusive[r], 31);
    warp_total = r == 0 ? row_total : op(warp_total, row_total);
  }
  if (lane == 0) warp_prefixes[warp] = partial<item>{warp_total, true};
  __syncthreads();

  // Warp 0: the warps' prefixes within the tile, then the tile's prefix from the look-back.
  if (warp == 0) {
    const item warp_value = lane < Shape::warps ? warp_prefixes[lane].value : warp_total;
    const item through_warp = warp_inclusive_scan(warp_value, op);
    const item tile_total = shuffle_from(through_warp, Shape::warps - 1);
    const partial<item> before_warp{shuffle_up(through_warp, 1), lane > 0};
    // Only tile 0 reads the start: the others have it through tile 0's inclusive prefix.
    const partial<item> before_tiles = tile == 0 ? start.get() : start.value;
    const partial<item> tile_prefix = lookback_prefix(state, tile, tile_total, before_tiles, op);
    if (lane < Shape::warps) warp_prefixes[lane] = then(tile_prefix, before_warp, op);
  }
  __syncthreads();

  // Combine every item with everything before it, and store.
  partial<item> before_row = warp_prefixes[warp];
#pragma unroll
  for (int r = 0; r < rows; ++r) {
    item items[vec];
    scan_vector(r, items);
    const partial<item> before_vector =
        then(before_row, partial<item>{shuffle_up(lane_inclusive[r], 1), lane > 0}, op);
    partial<item> before = before_vector;
    typename Source::result_type results[vec];
#pragma unroll
    for (int j = 0; j < vec; ++j) {
      // items[j] already combines the vector's items up to j.
      const partial<item> through{after(before_vector, items[j], op), true};
      results[j] = source.result(before, through.value);
      before = through;
    }
    if (whole_vector(r)) {
      source.store(row_first(r), results);
    } else {
#pragma unroll
      for (int j = 0; j < vec; ++j) {
        if (row_first(r) + j < n) source.store_one(row_first(r) + j, results[j]);
      }
    }
    before_row = then(before_row, partial<item>{shuffle_from(lane_inclusive[r], 31), true}, op);
  }
}

}  // namespace detail
}  // namespace ppat
