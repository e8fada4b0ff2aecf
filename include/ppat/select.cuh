// Stream compaction and its relatives: one pass over memory, stable, counts written on the
// device.
//
//   ppat::select_if(in, out, num_selected, n, pred, stream)        the items pred accepts
//   ppat::select_flagged(in, flags, out, num_selected, n, stream)  the items whose flag is set
//   ppat::partition(in, out, num_selected, n, pred, stream)        accepted, then rejected
//   ppat::unique(in, out, num_selected, n, stream)                 the first of each run
//   ppat::unique_by_key(keys_in, values_in, keys_out, values_out, num_selected, n, stream)
//   ppat::run_length_encode(in, unique_out, counts_out, num_runs, n, stream)
//   ppat::reduce_by_key(keys_in, values_in, unique_out, aggregates_out, num_segments, n, op,
//                       stream)                                    each run's values folded
//
// Selection (all but reduce_by_key): each block reads one tile into registers, decides which
// items it keeps, a bit each, ranks them within the tile (core/block.cuh) and stages them
// in shared memory in output order. Only then does it learn, through the look-back of
// core/lookback.cuh, how many items the tiles before it kept, and so where its run goes:
// no register holds an item while the tile waits. The block writes the run as whole 16-byte
// vectors. One launch; the count is the last tile's. run_length_encode's runs are unique's,
// their lengths the distances between run heads: the look-back also carries where the last
// head before a tile sits.
//
// partition keeps the rejected items in input order too, after the selected ones. Where they
// start is the total selected, which only the last tile learns, so over several tiles each
// tile writes its rejected items from the end of `out` backwards, and a second kernel
// reverses that run in place: the rejected items move twice.
//
// reduce_by_key is the scan by key of scan.cuh with an exact 64-bit segment count: at each
// segment start the item writes its key to unique_out and the previous segment's total to
// aggregates_out, both at the number of segments before it; the last item writes the last
// total and the count.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/arguments.cuh"
#include "core/block.cuh"
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
#include "scan.cuh"

namespace ppat {
namespace detail {

template <class Pred>
struct predicate_rule;
template <class Flag>
struct flag_rule;
struct run_head_rule;
template <class T, class V, class Count, class Rule>
struct select_buffers;
template <bool Partition, class T, class V, class Count, class Rule>
void select(const select_buffers<T, V, Count, Rule>& io, const char* function, cudaStream_t stream);
template <class K, class V, class Op>
void reduce_by_key(const K* keys, const V* values, K* unique_out, V* aggregates_out,
                   std::size_t* num_segments, std::size_t n, Op op, cudaStream_t stream,
                   const char* function);

// The selections without values or run lengths.
template <class T, class Rule>
using plain_selection = select_buffers<T, no_values, no_values, Rule>;

}  // namespace detail

template <class T, class Pred>
void select_if(const T* in, T* out, std::size_t* num_selected, std::size_t n, Pred pred,
               cudaStream_t stream = 0) {
  detail::select<false>(
      detail::plain_selection<T, detail::predicate_rule<Pred>>{
          in, out, nullptr, nullptr, nullptr, num_selected, n, {pred}},
      "ppat::select_if", stream);
}

template <class T, class Flag>
void select_flagged(const T* in, const Flag* flags, T* out, std::size_t* num_selected,
                    std::size_t n, cudaStream_t stream = 0) {
  static_assert(std::is_integral_v<Flag>, "ppat::select_flagged: flags are integers or bool");
  constexpr const char* function = "ppat::select_flagged";
  detail::require_buffer(flags, n, function, "flags");
  detail::require_disjoint(flags, n, out, detail::require_result_output(out, n, function, "out"),
                           function, "flags", "out");
  detail::require_disjoint(flags, n, num_selected, 1, function, "flags", "num_selected");
  detail::select<false>(
      detail::plain_selection<T, detail::flag_rule<Flag>>{
          in, out, nullptr, nullptr, nullptr, num_selected, n, {flags}},
      function, stream);
}

template <class T, class Pred>
void partition(const T* in, T* out, std::size_t* num_selected, std::size_t n, Pred pred,
               cudaStream_t stream = 0) {
  detail::select<true>(
      detail::plain_selection<T, detail::predicate_rule<Pred>>{
          in, out, nullptr, nullptr, nullptr, num_selected, n, {pred}},
      "ppat::partition", stream);
}

template <class T>
void unique(const T* in, T* out, std::size_t* num_selected, std::size_t n,
            cudaStream_t stream = 0) {
  detail::select<false>(
      detail::plain_selection<T, detail::run_head_rule>{
          in, out, nullptr, nullptr, nullptr, num_selected, n, {}},
      "ppat::unique", stream);
}

template <class K, class V>
void unique_by_key(const K* keys_in, const V* values_in, K* keys_out, V* values_out,
                   std::size_t* num_selected, std::size_t n, cudaStream_t stream = 0) {
  detail::select<false>(
      detail::select_buffers<K, V, detail::no_values, detail::run_head_rule>{
          keys_in, keys_out, values_in, values_out, nullptr, num_selected, n, {}},
      "ppat::unique_by_key", stream);
}

template <class K, class V, class Op = plus>
void reduce_by_key(const K* keys_in, const V* values_in, K* unique_out, V* aggregates_out,
                   std::size_t* num_segments, std::size_t n, Op op = {}, cudaStream_t stream = 0) {
  detail::reduce_by_key(keys_in, values_in, unique_out, aggregates_out, num_segments, n, op, stream,
                        "ppat::reduce_by_key");
}

template <class T, class Count>
void run_length_encode(const T* in, T* unique_out, Count* counts_out, std::size_t* num_runs,
                       std::size_t n, cudaStream_t stream = 0) {
  static_assert(std::is_integral_v<Count>, "ppat::run_length_encode: counts are integers");
  detail::select<false>(
      detail::select_buffers<T, detail::no_values, Count, detail::run_head_rule>{
          in, unique_out, nullptr, nullptr, counts_out, num_runs, n, {}},
      "ppat::run_length_encode", stream);
}

namespace detail {

// ---- Selection ----------------------------------------------------------------------------

// What a selection reads and writes: the items examined and kept (`T`), the values that
// travel with them (`V`: unique_by_key's), the length of each kept item's run (`Count`:
// run_length_encode's), and the rule that picks them. no_values where there are none.
template <class T, class V, class Count, class Rule>
struct select_buffers {
  const T* in;
  T* out;
  const V* values_in;
  V* values_out;
  Count* counts_out;
  std::size_t* num_selected;
  std::size_t n;
  Rule rule;
  static constexpr bool has_values = !std::is_same_v<V, no_values>;
  static constexpr bool has_counts = !std::is_same_v<Count, no_values>;
};

// A rule picks from a lane's vector of `Vec` items at in[first..], a bit each. Items at or
// past `n` may be padding; their bits are cleared by the kernel. `previous` is the item
// before the vector (read only by rules that ask for it).
template <class Pred>
struct predicate_rule {
  static constexpr bool needs_previous = false;
  Pred pred;

  void require_readable(std::size_t, const call_context&) const {}
  template <int Vec, class T, class Items>
  __device__ unsigned pick(const Items& items, std::size_t, std::size_t, const T&) const {
    unsigned bits = 0;
#pragma unroll
    for (int j = 0; j < Vec; ++j)
      bits |= (static_cast<bool>(pred(items[j])) ? 1u : 0u) << j;
    return bits;
  }
};

template <class Flag>
struct flag_rule {
  static constexpr bool needs_previous = false;
  const Flag* flags;

  void require_readable(std::size_t n, const call_context& call) const {
    require_device_readable(flags, n, call, "flags");
  }
  template <int Vec, class T, class Items>
  __device__ unsigned pick(const Items&, std::size_t first, std::size_t n, const T&) const {
    unsigned bits = 0;
#pragma unroll
    for (int j = 0; j < Vec; ++j) {
      if (first + j < n) bits |= (is_set(flags + first + j) ? 1u : 0u) << j;
    }
    return bits;
  }
  // Nonzero: a bool is read as its byte, so that any nonzero byte counts.
  __device__ static bool is_set(const Flag* flag) {
    if constexpr (std::is_same_v<Flag, bool>) {
      return load_item(reinterpret_cast<const unsigned char*>(flag)) != 0;
    } else {
      return load_item(flag) != Flag{};
    }
  }
};

// The first item of every run of equal items (==: for floating point -0.0 == +0.0, and a
// NaN starts a run of its own).
struct run_head_rule {
  static constexpr bool needs_previous = true;

  void require_readable(std::size_t, const call_context&) const {}
  template <int Vec, class T, class Items>
  __device__ unsigned pick(const Items& items, std::size_t first, std::size_t,
                           const T& previous) const {
    unsigned bits = 0;
    T before = previous;
#pragma unroll
    for (int j = 0; j < Vec; ++j) {
      const T item = items[j];
      bits |= ((first == 0 && j == 0) || !(item == before) ? 1u : 0u) << j;
      before = item;
    }
    return bits;
  }
};

// What the tiles before a tile kept: how many items, and 1 + the position of the last of
// them (0 for none; read only by run_length_encode, whose run lengths are distances between
// run heads). Both below 2^48 in 12 bytes, so that a tally and a look-back status pack in
// one 16-byte word. Positions grow with tiles, so the last is the greatest: tallies combine
// by sum and maximum, exactly in any order (core/lookback.cuh folds them across a warp).
struct select_tally {
  unsigned count_low;
  unsigned end_low;
  unsigned high;  // the count's bits 32 to 47, then the end's

  __host__ __device__ static select_tally of(std::uint64_t count, std::uint64_t end) {
    return {unsigned(count), unsigned(end),
            (unsigned(count >> 32) & 0xFFFFu) | unsigned(end >> 32) << 16};
  }
  __host__ __device__ std::uint64_t count() const {
    return std::uint64_t(high & 0xFFFFu) << 32 | count_low;
  }
  __host__ __device__ std::uint64_t end() const {
    return std::uint64_t(high >> 16) << 32 | end_low;
  }
};
constexpr std::size_t select_max_items = (std::size_t{1} << 48) - 1;

struct tally_op {
  static constexpr bool any_order = true;
  __device__ select_tally operator()(const select_tally& a, const select_tally& b) const {
    return select_tally::of(a.count() + b.count(), a.end() > b.end() ? a.end() : b.end());
  }
};

// The H200's policy: 256 threads holding up to 128 bytes each of items and values in
// registers (64 for 1- and 2-byte items, which take a register each once unpacked), 4 tiles
// an SM, and up to 40 KB of a tile staged in shared memory (items, then values or, for
// run_length_encode, 2-byte positions of the run heads). A tile is staged in output order
// before its look-back, so no register holds an item while it waits. Larger tiles are
// better: the look-back's inclusive prefixes advance a few tiles at a time, whatever their
// size.
template <class T>
using select_tuning = tuning<256, sizeof(T) < 4 ? 64 : 128, 4>;
constexpr int select_staging_budget = 40 * 1024;
template <class T, class V>
constexpr int select_register_bytes = int(sizeof(T)) +
                                      (std::is_same_v<V, no_values> ? 0 : int(sizeof(V)));
template <class T, class V, class Count>
constexpr int select_staged_bytes = int(sizeof(T)) +
                                    (std::is_same_v<V, no_values> ? 0 : int(sizeof(V))) +
                                    (std::is_same_v<Count, no_values> ? 0
                                                                      : int(sizeof(std::uint16_t)));
// Items a lane reads at a time: a 16-byte vector of T, halved while a vector's items and
// values would pass a thread's bytes (1-byte keys with 12-byte values: 4 at a time).
template <class T, class V>
constexpr int select_vec = [] {
  constexpr int register_bytes = select_register_bytes<T, V>;
  int vec = items_per_vector<T>;
  while (vec > 1 && vec * register_bytes > select_tuning<T>::bytes_per_thread)
    vec /= 2;
  return vec;
}();
// Rows: as many as the thread's bytes hold and the staging budget takes (fewer for items
// read one at a time).
template <class T, class V, class Count, int Vec = select_vec<T, V>>
constexpr int select_rows = [] {
  using policy = select_tuning<T>;
  constexpr int most = Vec == 1 ? 8 : 16;
  constexpr int staged_row_bytes = policy::threads * select_staged_bytes<T, V, Count> * Vec;
  return std::min(policy::groups_per_thread(select_register_bytes<T, V> * Vec, most),
                  std::clamp(select_staging_budget / staged_row_bytes, 1, most));
}();
template <class T, class V, class Count, int Vec = select_vec<T, V>>
using select_tile_shape = scan_tile_shape<select_tuning<T>, Vec, select_rows<T, V, Count, Vec>>;

// The kernel's shared staging: the tile's items in output order, and their values or (for
// run_length_encode) their positions in the tile.
template <class Shape, class T, class V, class Count>
struct select_staging {
  static_assert(Shape::tile_items <= 65536, "tile positions fit 16 bits");
  using second_kind =
      std::conditional_t<std::is_same_v<V, no_values>,
                         std::conditional_t<std::is_same_v<Count, no_values>, char, std::uint16_t>,
                         V>;
  // 16 bytes past each run, which store_staged may read beyond its last item.
  static constexpr int first_words =
      int(ceil_div(std::size_t(Shape::tile_items) * sizeof(T), 16)) + 1;
  static constexpr int second_words =
      std::is_same_v<second_kind, char>
          ? 1
          : int(ceil_div(std::size_t(Shape::tile_items) * sizeof(second_kind), 16)) + 1;
  uninitialized_array<uint4, first_words> first;
  uninitialized_array<uint4, second_words> second;
};

template <class Shape, bool Partition, bool Aligned, class T, class V, class Count, class Rule>
__global__ void select_kernel(select_buffers<T, V, Count, Rule> io,
                              lookback_state<select_tally> state);
template <class T>
__global__ void reverse_rejected_kernel(T* out, const std::size_t* num_selected, std::size_t n);
template <class T>
struct reverse_shape;

template <bool Partition, class T, class V, class Count, class Rule>
void select(const select_buffers<T, V, Count, Rule>& io, const char* function,
            cudaStream_t stream) {
  using buffers = select_buffers<T, V, Count, Rule>;
  constexpr bool has_values = buffers::has_values;
  constexpr bool has_counts = buffers::has_counts;
  const std::size_t n = io.n;
  const char* const in_name = has_values ? "keys_in" : "in";
  const char* const out_name = has_values ? "keys_out" : has_counts ? "unique_out" : "out";
  const char* const count_name = has_counts ? "num_runs" : "num_selected";
  require_buffer(io.in, n, function, in_name);
  require_buffer(io.num_selected, 1, function, count_name);
  require(n < select_max_items, function, "n", "must be below 2^48");
  // partition's output holds all n items; the others' hold what the data keeps, and only
  // their first item is certain (require_result_output).
  const auto output_extent = [&](const auto* out, const char* name) {
    if constexpr (Partition) {
      require_buffer(out, n, function, name);
      return n;
    } else {
      return require_result_output(out, n, function, name);
    }
  };
  const std::size_t out_extent = output_extent(io.out, out_name);
  require_disjoint(io.in, n, io.out, out_extent, function, in_name, out_name);
  require_disjoint(io.in, n, io.num_selected, 1, function, in_name, count_name);
  require_disjoint(io.out, out_extent, io.num_selected, 1, function, out_name, count_name);
  if constexpr (has_values) {
    require_buffer(io.values_in, n, function, "values_in");
    const std::size_t values_extent = output_extent(io.values_out, "values_out");
    require_disjoint(io.values_in, n, io.values_out, values_extent, function, "values_in",
                     "values_out");
    require_disjoint(io.in, n, io.values_out, values_extent, function, "keys_in", "values_out");
    require_disjoint(io.values_in, n, io.out, out_extent, function, "values_in", "keys_out");
    require_disjoint(io.out, out_extent, io.values_out, values_extent, function, "keys_out",
                     "values_out");
    require_disjoint(io.values_in, n, io.num_selected, 1, function, "values_in", "num_selected");
    require_disjoint(io.values_out, values_extent, io.num_selected, 1, function, "values_out",
                     "num_selected");
  }
  if constexpr (has_counts) {
    const std::size_t counts_extent = output_extent(io.counts_out, "counts_out");
    require_disjoint(io.in, n, io.counts_out, counts_extent, function, "in", "counts_out");
    require_disjoint(io.out, out_extent, io.counts_out, counts_extent, function, "unique_out",
                     "counts_out");
    require_disjoint(io.counts_out, counts_extent, io.num_selected, 1, function, "counts_out",
                     "num_runs");
  }
  const call_context call(stream, function);
  require_device_readable(io.num_selected, 1, call, count_name);
  if (n == 0) {
    call.check(cudaMemsetAsync(io.num_selected, 0, sizeof(std::size_t), call.stream()),
               "cudaMemsetAsync");
    return;
  }
  require_device_readable(io.in, n, call, in_name);
  require_device_readable(io.out, n, call, out_name);
  if constexpr (has_values) {
    require_device_readable(io.values_in, n, call, "values_in");
    require_device_readable(io.values_out, n, call, "values_out");
  }
  if constexpr (has_counts) require_device_readable(io.counts_out, n, call, "counts_out");
  io.rule.require_readable(n, call);

  using shape = select_tile_shape<T, V, Count>;
  constexpr int vec = shape::vec;
  const std::size_t tiles = ceil_div(n, shape::tile_items);
  require(tiles <= std::size_t(std::numeric_limits<int>::max()), function, "n",
          "needs more tiles than one grid can launch");
  const lookback_layout layout = plan_lookback<select_tally>(tiles);
  stream_scratch flags(layout.flag_bytes, lookback_purpose<select_tally>, call);
  const auto state = lookback_view<select_tally>(flags.data(), flags.epoch(), nullptr, layout);
  // 16-byte loads need every array read that way 16-byte aligned; anything else reads item
  // by item, with the same tiles.
  constexpr bool vector_values = has_values && one_access<value_or_char<V>, vec>;
  constexpr bool vector_loads = one_access<T, vec> || vector_values;
  const bool aligned = (!one_access<T, vec> || aligned_to(io.in, 16)) &&
                       (!vector_values || aligned_to(io.values_in, 16));
  if (aligned) {
    select_kernel<shape, Partition, true>
        <<<unsigned(tiles), shape::threads, 0, call.stream()>>>(io, state);
  } else if constexpr (vector_loads) {
    select_kernel<shape, Partition, false>
        <<<unsigned(tiles), shape::threads, 0, call.stream()>>>(io, state);
  }
  check_launch(function, "select_kernel");
  flags.release();
  if (Partition && tiles > 1) {
    // As many blocks as the most rejected items need; those past the real count return.
    using reverse = reverse_shape<T>;
    reverse_rejected_kernel<<<unsigned(ceil_div(n / 2, reverse::items)), reverse::threads, 0,
                              call.stream()>>>(io.out, io.num_selected, n);
    check_launch(function, "reverse_rejected_kernel");
  }
}

template <class Shape, bool Partition, bool Aligned, class T, class V, class Count, class Rule>
__global__ void __launch_bounds__(Shape::threads, Shape::blocks_per_sm)
    select_kernel(select_buffers<T, V, Count, Rule> io, lookback_state<select_tally> state) {
  constexpr int vec = Shape::vec;
  constexpr int rows = Shape::rows;
  using buffers = select_buffers<T, V, Count, Rule>;
  constexpr bool has_values = buffers::has_values;
  constexpr bool has_counts = buffers::has_counts;
  using value = value_or_char<V>;
  using staging = select_staging<Shape, T, V, Count>;
  __shared__ unsigned tile_slot;
  __shared__ unsigned warp_offsets[Shape::warps];
  __shared__ unsigned tile_selected;
  __shared__ select_tally tally_before_tile;
  __shared__ unsigned warp_last_heads[has_counts ? Shape::warps : 1];
  __shared__ staging staged;
  if (threadIdx.x == 0) tile_slot = next_tile(state);
  __syncthreads();
  const unsigned tile = tile_slot;
  // Past the last tile only if another kernel shared the counter, which the stream_scratch
  // rules out: such a block touches nothing.
  if (tile >= state.tiles) return;
  const std::size_t n = io.n;
  const int warp = int(threadIdx.x / 32);
  const int lane = lane_id();
  const std::size_t tile_first = std::size_t(tile) * Shape::tile_items;
  const std::size_t lane_first = tile_first + warp * Shape::warp_items + lane * vec;
  const bool full_tile = tile_first + Shape::tile_items <= n;
  const bool last_tile = tile == state.tiles - 1;
  const auto row_first = [&](int r) { return lane_first + std::size_t(r) * 32 * vec; };

  // The tile's items (and values) in registers, all loads issued at once; the partial last
  // tile pads with copies of its last item, never selected.
  register_items<T, vec> items[rows];
  register_items<value, vec> values[has_values ? rows : 1];
#pragma unroll
  for (int r = 0; r < rows; ++r) {
    if (full_tile) {
      items[r].template load<Aligned>(io.in + row_first(r));
      if constexpr (has_values) values[r].template load<Aligned>(io.values_in + row_first(r));
    } else {
      T padded[vec];
#pragma unroll
      for (int j = 0; j < vec; ++j)
        padded[j] = io.in[min(row_first(r) + j, n - 1)];
      items[r].assign(padded);
      if constexpr (has_values) {
        value padded_values[vec];
#pragma unroll
        for (int j = 0; j < vec; ++j)
          padded_values[j] = io.values_in[min(row_first(r) + j, n - 1)];
        values[r].assign(padded_values);
      }
    }
  }

  // Which items the tile keeps, a bit each, and their ranks within the warp.
  unsigned selected[rows];
#pragma unroll
  for (int r = 0; r < rows; ++r) {
    T previous{};
    if constexpr (Rule::needs_previous) {
      // Lane l's previous item is lane l-1's last; lane 0's, the last of the row before, or
      // the one before the warp's first (padding past n reads the last item).
      const T last = items[r][vec - 1];
      previous = shuffle_up(last, 1);
      const T row_before = shuffle_from(items[r > 0 ? r - 1 : 0][vec - 1], 31);
      if (lane == 0) {
        previous = r > 0              ? row_before
                   : row_first(0) > 0 ? io.in[min(row_first(0) - 1, n - 1)]
                                      : T{};
      }
    }
    selected[r] = io.rule.template pick<vec>(items[r], row_first(r), n, previous);
    if (!full_tile) {
      const std::size_t left = row_first(r) < n ? n - row_first(r) : 0;
      if (left < std::size_t(vec)) selected[r] &= (1u << left) - 1u;
    }
  }
  const warp_ranks<rows> ranks = rank_in_warp<rows, vec>(selected);

  // The warps' offsets within the tile; warp 0 then publishes the tile's tally at once, so
  // that the tiles after it wait as little as possible. run_length_encode's tally holds where
  // its last run head sits: the warps' last heads, the latest of them.
  if (lane == 0) warp_offsets[warp] = ranks.total;
  if constexpr (has_counts) {
    unsigned last = 0;  // 1 + the tile position of the lane's last head, 0 if none
#pragma unroll
    for (int r = 0; r < rows; ++r) {
      if (selected[r] != 0)
        last = unsigned(row_first(r) - tile_first) + 32 - __clz(int(selected[r]));
    }
    last = warp_reduce(partial<unsigned>{last, true}, maximum{}).value;
    if (lane == 0) warp_last_heads[warp] = last;
  }
  __syncthreads();
  const partial<select_tally> nothing_before{select_tally::of(0, 0), true};
  select_tally tile_tally{};  // warp 0's
  if (warp == 0) {
    const unsigned warp_count = lane < Shape::warps ? warp_offsets[lane] : 0u;
    const unsigned through_warp =
        warp_inclusive_scan(warp_count, [](unsigned a, unsigned b) { return a + b; });
    const unsigned count = __shfl_sync(full_warp, through_warp, Shape::warps - 1);
    std::uint64_t last_head = 0;  // 1 + its position
    if constexpr (has_counts) {
      const unsigned last =
          warp_reduce(partial<unsigned>{lane < Shape::warps ? warp_last_heads[lane] : 0u, true},
                      maximum{})
              .value;
      if (last > 0) last_head = tile_first + last;
    }
    tile_tally = select_tally::of(count, last_head);
    publish_aggregate(state, tile, tile_tally, nothing_before, tally_op{});
    if (lane < Shape::warps) warp_offsets[lane] = through_warp - warp_count;
    if (lane == 0) tile_selected = count;
  }
  __syncthreads();

  // Warp 0 learns what the tiles before this one kept, through the look-back, while the
  // other warps stage the tile in output order: kept items at their ranks, then (partition)
  // the rejected ones; over several tiles those go in reverse, as they are written from the
  // end of `out`. Warp 0 stages its part once it knows: a tile waits only on the look-back.
  const unsigned tile_count = tile_selected;
  if (warp == 0) {
    const partial<select_tally> before =
        wait_for_prefix(state, tile, tile_tally, nothing_before, tally_op{});
    if (lane == 0) {
      tally_before_tile = before.value;
      if (last_tile) *io.num_selected = before.value.count() + tile_count;
    }
  }
  const unsigned tile_items = unsigned(min(n - tile_first, std::size_t(Shape::tile_items)));
  const unsigned tile_rejected = tile_items - tile_count;
  const unsigned warp_offset = warp_offsets[warp];
  T* const staged_items = reinterpret_cast<T*>(&staged.first[0]);
  auto* const staged_second = reinterpret_cast<typename staging::second_kind*>(&staged.second[0]);
#pragma unroll
  for (int r = 0; r < rows; ++r) {
#pragma unroll
    for (int j = 0; j < vec; ++j) {
      const unsigned position = unsigned(row_first(r) + j - tile_first);
      const unsigned rank = warp_offset + ranks.before[r] + selected_below(selected[r], j);
      if ((selected[r] >> j & 1u) != 0) {
        staged_items[rank] = items[r][j];
        if constexpr (has_values) staged_second[rank] = values[r][j];
        if constexpr (has_counts) staged_second[rank] = std::uint16_t(position);
      } else if (Partition && position < tile_items) {
        const unsigned rejected_rank = position - rank;
        staged_items[tile_count +
                     (state.tiles == 1 ? rejected_rank : tile_rejected - 1 - rejected_rank)] =
            items[r][j];
      }
    }
  }
  __syncthreads();

  const select_tally before_tile = tally_before_tile;
  const std::uint64_t kept_before = before_tile.count();
  store_staged<Shape::threads>(io.out + kept_before, staged_items, int(tile_count));
  if constexpr (has_values) {
    store_staged<Shape::threads>(io.values_out + kept_before, staged_second, int(tile_count));
  }
  if constexpr (Partition) {
    // One tile knows the total kept: its rejected items go right after them. Over several
    // tiles, a tile's run ends where the rejected items of the tiles before it start.
    const std::uint64_t rejected_before = tile_first - kept_before;
    T* const to =
        state.tiles == 1 ? io.out + tile_count : io.out + (n - rejected_before - tile_rejected);
    store_staged<Shape::threads>(to, staged_items + tile_count, int(tile_rejected));
  }
  if constexpr (has_counts) {
    // Run k's length is where run k + 1 starts less where run k starts. This tile's runs
    // start at ranks 0 .. tile_count - 1; the run before rank 0 started where the look-back
    // says, and the last tile ends the last run at n. Consecutive lengths, coalesced.
    const unsigned first_run = kept_before == 0 ? 1 : 0;
    const unsigned end_run = tile_count + (last_tile ? 1 : 0);
    for (unsigned rank = first_run + threadIdx.x; rank < end_run; rank += Shape::threads) {
      const std::uint64_t starts = rank < tile_count ? tile_first + staged_second[rank] : n;
      const std::uint64_t started =
          rank > 0 ? tile_first + staged_second[rank - 1] : before_tile.end() - 1;
      io.counts_out[kept_before + rank - 1] = Count(starts - started);
    }
  }
}

// Puts partition's rejected items, written in reverse from the end of `out`, back in input
// order. Block b swaps pairs [b x items, (b + 1) x items) of the run: it reads the two runs
// that mirror each other as whole 16-byte vectors into shared memory, reverses each there,
// and writes each where the other was: 16 KB of each run a block.
template <class T>
struct reverse_shape : tuning<256, 64, 0> {
  static constexpr int items = std::max(threads * bytes_per_thread / int(sizeof(T)), 1);
};

template <class T>
__global__ void __launch_bounds__(reverse_shape<T>::threads, reverse_shape<T>::blocks_per_sm)
    reverse_rejected_kernel(T* out, const std::size_t* num_selected, std::size_t n) {
  constexpr int threads = reverse_shape<T>::threads;
  constexpr int items = reverse_shape<T>::items;
  constexpr int words = int(ceil_div(std::size_t(items) * sizeof(T), 16)) + 1;
  __shared__ uninitialized_array<uint4, words> low_staged, high_staged;
  const std::size_t first = *num_selected;
  const std::size_t pairs = (n - first) / 2;
  const std::size_t first_pair = std::size_t(blockIdx.x) * items;
  if (first_pair >= pairs) return;
  const int count = int(min(pairs - first_pair, std::size_t(items)));
  T* const low = out + first + first_pair;
  T* const high = out + (n - first_pair - count);
  T* const low_items = reinterpret_cast<T*>(&low_staged[0]);
  T* const high_items = reinterpret_cast<T*>(&high_staged[0]);
  load_run<threads>(low, low_items, count);
  load_run<threads>(high, high_items, count);
  __syncthreads();
  for (int k = int(threadIdx.x); k < count / 2; k += threads) {
    const T low_item = low_items[k], high_item = high_items[k];
    low_items[k] = low_items[count - 1 - k];
    low_items[count - 1 - k] = low_item;
    high_items[k] = high_items[count - 1 - k];
    high_items[count - 1 - k] = high_item;
  }
  __syncthreads();
  store_staged<threads>(low, high_items, count);
  store_staged<threads>(high, low_items, count);
}

// ---- Run-based reductions ----------------------------------------------------------------

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
  __device__ void store(std::size_t first, const result_type (&results)[Vec]) const {
#pragma unroll
    for (int j = 0; j < Vec; ++j)
      store_one(first + j, results[j]);
  }
  __device__ void store_one(std::size_t i, const result_type& result) const {
    if (result.starts) {
      unique_out[result.starts_before] = keys[i];
      if (i > 0) aggregates_out[result.starts_before - 1] = result.before;
    }
    if (i == n - 1) {
      const std::uint64_t segments = result.starts_before + (result.starts ? 1 : 0);
      aggregates_out[segments - 1] = result.through;
      *num_segments = segments;
    }
  }
};

// The scan kernel's policy for reduce_by_key: the bytes of 24 values a thread, at most 8 rows
// (16 values for 16-item vectors), each value a (value, 64-bit count) pair while the tile is
// scanned, 3 tiles an SM.
template <class V>
using segment_reduce_tuning = tuning<256, 24 * int(sizeof(V)), 3>;
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

}  // namespace detail
}  // namespace ppat
