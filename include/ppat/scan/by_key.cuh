// Scans by key and reduce_by_key: single-pass scans (scan/single_pass.cuh) of (value, number
// of segment starts) pairs under an operator that restarts where a segment starts. Each
// position reads only its own value and key and the key before it, so both scans by key
// work in place (`keys` must not overlap `out`).
//
// reduce_by_key is the same scan with an exact 64-bit segment count: at each segment start
// the item writes its key to unique_out and the previous segment's total to aggregates_out,
// both at the number of segments before it; the last item writes the last total and the
// count.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/partial.cuh"
#include "../core/vector_io.cuh"
#include "single_pass.cuh"

namespace ppat::detail {

// ---- Scans by key --------------------------------------------------------------------------

// A value, and how many segments start within the items it combines. The scans by key
// count modulo 2^32 (`unsigned`): only differences of counts matter there, and whether a
// right operand holds any start; right operands never span more than one tile, far fewer
// than 2^32 items. Reductions by key count exactly (`segment_count`, below).
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
  // Item by item off 16-byte boundaries: whole-vector rows (plain_source) took the scan by key
  // longer (docs/patterns.md, "Scan").
  static constexpr bool stores_rows = false;
};

// By key, u32 keys: 128 bytes of values a thread at 3 tiles an SM for 4-byte values, 192 at 2
// for 8-byte ones, 128 at 2 for 1- and 2-byte ones, each the fastest of the shapes measured
// (docs/patterns.md, "Scan", how it got here); larger values 96 bytes at 2.
template <class T>
using scan_by_key_tuning =
    std::conditional_t<sizeof(T) < 4, tuning<256, 128, 2>,
                       std::conditional_t<sizeof(T) == 4, tuning<256, 128, 3>,
                                          std::conditional_t<sizeof(T) == 8, tuning<256, 192, 2>,
                                                             tuning<256, 96, 2>>>>;
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

// ---- Reductions by key ---------------------------------------------------------------------

// An exact 64-bit count in two 32-bit words: 4-byte aligned, so that a 4-byte value and its
// count pack with a look-back status in one 16-byte word.
struct segment_count {
  unsigned low = 0;
  unsigned high = 0;

  segment_count() = default;
  __host__ __device__ constexpr segment_count(std::uint64_t count)
      : low(unsigned(count)), high(unsigned(count >> 32)) {}
  __host__ __device__ constexpr std::uint64_t value() const {
    return std::uint64_t(high) << 32 | low;
  }
  __host__ __device__ friend constexpr segment_count operator+(segment_count a, segment_count b) {
    return segment_count(a.value() + b.value());
  }
  __host__ __device__ friend constexpr bool operator!=(segment_count a, segment_count b) {
    return a.low != b.low || a.high != b.high;
  }
};

// reduce_by_key as a scan of (value, segment count) pairs: each position writes what its
// segment start or its being last calls for, at the segment count before it.
template <bool Aligned, int Vec, class K, class V, class Op>
struct segment_reduce_source {
  using item = segmented<V, segment_count>;
  using held = segment_items<register_items<V, Vec>, segment_count, Vec>;
  using combiner = segmented_op<Op>;
  static constexpr int vec = Vec;
  struct result_type {
    V before;  // the previous segment's total, where this position starts one
    V through;
    std::uint64_t starts_before;
    bool starts;
  };
  const K* keys;
  const V* values;
  K* unique_out;
  V* aggregates_out;
  std::size_t* num_segments;
  std::size_t n;
  combiner op;

  __device__ void load(std::size_t first, held& to) const {
    to.starts = segment_starts<Aligned, Vec>(keys, first);
    to.values.template load<Aligned>(values + first);
  }
  __device__ item load_one(std::size_t i) const {
    return {values[i], segment_count(starts_segment(keys, i) ? 1u : 0u)};
  }
  __device__ result_type result(const partial<item>& before, const item& through) const {
    const std::uint64_t starts_before = before.valid ? before.value.starts.value() : 0;
    return {before.value.value, through.value, starts_before,
            through.starts.value() != starts_before};
  }
  // Its results are stores at segment starts, not a row of items.
  static constexpr bool stores_rows = false;
  // A whole vector holds the last position only as its last item: one comparison a vector
  // instead of one an item (docs/patterns.md, "Stream compaction, unique, runs").
  __device__ void store(std::size_t first, const result_type (&results)[Vec]) const {
#pragma unroll
    for (int j = 0; j < Vec; ++j)
      store_segment_start(first + j, results[j]);
    if (first + Vec == n) store_last(results[Vec - 1]);
  }
  __device__ void store_one(std::size_t i, const result_type& result) const {
    store_segment_start(i, result);
    if (i == n - 1) store_last(result);
  }
  // A segment starting at i: its key, and the previous segment's total.
  __device__ void store_segment_start(std::size_t i, const result_type& result) const {
    if (result.starts) {
      unique_out[result.starts_before] = keys[i];
      if (i > 0) aggregates_out[result.starts_before - 1] = result.before;
    }
  }
  // The last position: the last segment's total, and the count.
  __device__ void store_last(const result_type& result) const {
    const std::uint64_t segments = result.starts_before + (result.starts ? 1 : 0);
    aggregates_out[segments - 1] = result.through;
    *num_segments = segments;
  }
};

// The scan kernel's policy for reduce_by_key, each value a (value, 64-bit count) pair while
// the tile is scanned: 4-byte values 16 a thread in 512-thread tiles, 2 an SM (8192 values a
// tile, as with 256 threads holding 32, but twice the warps to hide the latency); 8-byte
// values 24 a thread and 1-byte values 48 (three vectors), in 256-thread tiles 2 an SM, where
// three an SM spilled 8-byte values and gave 1-byte ones a single vector; others the bytes of
// 24 values at 3; at most 8 rows (16 values for 16-item vectors) (docs/patterns.md, "Stream
// compaction", has the shapes measured).
template <class V>
using segment_reduce_tuning =
    std::conditional_t<sizeof(V) == 4, tuning<512, 64, 2>,
                       std::conditional_t<sizeof(V) == 8, tuning<256, 192, 2>,
                                          std::conditional_t<sizeof(V) == 1, tuning<256, 48, 2>,
                                                             tuning<256, 24 * int(sizeof(V)), 3>>>>;
template <class V, int Vec>
using segment_reduce_shape =
    scan_tile_shape<segment_reduce_tuning<V>, Vec,
                    segment_reduce_tuning<V>::groups_per_thread(int(sizeof(V)) * Vec, 8)>;

template <class K, class V, class Op>
void reduce_by_key(const K* keys, const V* values, K* unique_out, V* aggregates_out,
                   std::size_t* num_segments, std::size_t n, Op op, cudaStream_t stream,
                   const char* function) {
  require_buffer(keys, n, function, "keys_in");
  require_buffer(values, n, function, "values_in");
  require_buffer(num_segments, 1, function, "num_segments");
  // Both outputs hold one item a segment, as many as the data makes: only the first is
  // certain (require_result_output).
  const std::size_t unique_extent = require_result_output(unique_out, n, function, "unique_out");
  const std::size_t aggregates_extent =
      require_result_output(aggregates_out, n, function, "aggregates_out");
  const auto require_apart = [&](const auto* a, std::size_t a_count, const char* a_name,
                                 const auto* b, std::size_t b_count, const char* b_name) {
    require_disjoint(a, a_count, b, b_count, function, a_name, b_name);
  };
  require_apart(keys, n, "keys_in", unique_out, unique_extent, "unique_out");
  require_apart(keys, n, "keys_in", aggregates_out, aggregates_extent, "aggregates_out");
  require_apart(values, n, "values_in", unique_out, unique_extent, "unique_out");
  require_apart(values, n, "values_in", aggregates_out, aggregates_extent, "aggregates_out");
  require_apart(unique_out, unique_extent, "unique_out", aggregates_out, aggregates_extent,
                "aggregates_out");
  require_apart(keys, n, "keys_in", num_segments, 1, "num_segments");
  require_apart(values, n, "values_in", num_segments, 1, "num_segments");
  require_apart(unique_out, unique_extent, "unique_out", num_segments, 1, "num_segments");
  require_apart(aggregates_out, aggregates_extent, "aggregates_out", num_segments, 1,
                "num_segments");
  const call_context call(stream, function);
  require_device_readable(num_segments, 1, call, "num_segments");
  if (n == 0) {
    call.check(cudaMemsetAsync(num_segments, 0, sizeof(std::size_t), call.stream()),
               "cudaMemsetAsync");
    return;
  }
  require_device_readable(keys, n, call, "keys_in");
  require_device_readable(values, n, call, "values_in");
  require_device_readable(unique_out, n, call, "unique_out");
  require_device_readable(aggregates_out, n, call, "aggregates_out");

  constexpr int vec = items_per_vector<V>;
  using shape = segment_reduce_shape<V, vec>;
  const bool keys_aligned = sizeof(K) * vec != 16 || aligned_to(keys, 16);
  const partial<segmented<V, segment_count>> start{{V{}, segment_count{}}, false};
  const segmented_op<Op> combiner{op};
  if (vec == 1 || (keys_aligned && aligned_to(values, 16))) {
    launch_single_pass_scan<shape>(
        segment_reduce_source<true, vec, K, V, Op>{keys, values, unique_out, aggregates_out,
                                                   num_segments, n, combiner},
        n, start, call);
  } else if constexpr (vec != 1) {
    launch_single_pass_scan<shape>(
        segment_reduce_source<false, vec, K, V, Op>{keys, values, unique_out, aggregates_out,
                                                    num_segments, n, combiner},
        n, start, call);
  }
}

}  // namespace ppat::detail
