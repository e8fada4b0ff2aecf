// One selection tile, by one block: the select kernel as named steps, in the order they run.
//
//   load_tile          the tile's items (and values) into registers, all loads at once
//   pick_items         which items the rule keeps, a bit each
//   publish_count      their ranks (core/block.cuh: ranks in the warp, then the warps'
//                      offsets), and the tile's tally, published at once for the tiles after
//   stage_tile         warp 0 learns what the tiles before kept (core/lookback.cuh) while the
//                      other warps stage the tile in shared memory in output order
//   store_tile         the kept run (and the partitions' rejected one) as whole 16-byte vectors;
//                      partition's rejected run once the tile knows the total kept
//   write_run_lengths  run_length_encode's counts, from the staged positions of run heads
//
// No register holds an item while the tile waits on the look-back.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../core/block.cuh"
#include "../core/launch.cuh"
#include "../core/lookback.cuh"
#include "../core/no_values.cuh"
#include "../core/operators.cuh"
#include "../core/partial.cuh"
#include "../core/shared_storage.cuh"
#include "../core/staged_run.cuh"
#include "../core/vector_io.cuh"
#include "../core/warp.cuh"
#include "../scan/single_pass.cuh"
#include "rules.cuh"

namespace ppat::detail {

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

// Where a selection's rejected items go: nowhere (the selections), after the kept ones in
// `out` (partition), or to an output of their own (partition_copy).
enum class rejected_items { dropped, after_kept, own_output };

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

// A tile's shared memory: its ticket, what the steps hand each other, the look-back's
// windows and the staged tile, within the 48 KB a launch gets without opting in.
template <class Shape, class T, class V, class Count>
struct select_tile_storage {
  static constexpr bool has_counts = !std::is_same_v<Count, no_values>;
  unsigned tile;
  unsigned tile_selected;
  select_tally tally_before_tile;
  std::uint64_t kept_in_all;  // partition: every tile's kept items, which the rejected follow
  block_scan_storage<Shape::warps, unsigned> warp_offsets;
  unsigned warp_last_heads[has_counts ? Shape::warps : 1];
  lookback_storage<select_tally> lookback;
  select_staging<Shape, T, V, Count> staged;
};

// Where a block's tile lies, and where the lane's rows start in it.
template <class Shape>
struct select_tile {
  unsigned index;
  std::size_t first;       // the tile's first item
  std::size_t lane_first;  // the lane's first item of row 0
  bool full;

  __device__ select_tile(unsigned tile, std::size_t n)
      : index(tile),
        first(std::size_t(tile) * Shape::tile_items),
        lane_first(first + int(threadIdx.x / 32) * Shape::warp_items + lane_id() * Shape::vec),
        full(first + Shape::tile_items <= n) {}
  __device__ std::size_t row_first(int r) const {
    return lane_first + std::size_t(r) * 32 * Shape::vec;
  }
  // The tile's count of items: Shape::tile_items, except in the last tile, which holds the
  // rest.
  __device__ unsigned items(std::size_t n) const {
    return unsigned(min(n - first, std::size_t(Shape::tile_items)));
  }
  __device__ bool last(std::size_t n) const { return first + Shape::tile_items >= n; }
};

template <class Shape, bool Aligned, class T, class V, class Count, class Rule, class Items,
          class Values>
__device__ __forceinline__ void load_tile(select_buffers<T, V, Count, Rule> io,
                                          const select_tile<Shape>& tile, Items& items,
                                          Values& values) {
  using value = value_or_char<V>;
  const std::size_t n = io.n;
#pragma unroll
  for (int r = 0; r < Shape::rows; ++r) {
    if (tile.full) {
      items[r].template load<Aligned>(io.in + tile.row_first(r));
      if constexpr (has_values_of<V>)
        values[r].template load<Aligned>(io.values_in + tile.row_first(r));
    } else {
      T padded[Shape::vec];
#pragma unroll
      for (int j = 0; j < Shape::vec; ++j)
        padded[j] = io.in[min(tile.row_first(r) + j, n - 1)];
      items[r].assign(padded);
      if constexpr (has_values_of<V>) {
        value padded_values[Shape::vec];
#pragma unroll
        for (int j = 0; j < Shape::vec; ++j)
          padded_values[j] = io.values_in[min(tile.row_first(r) + j, n - 1)];
        values[r].assign(padded_values);
      }
    }
  }
}

template <class Shape, class T, class V, class Count, class Rule, class Items>
__device__ __forceinline__ void pick_items(select_buffers<T, V, Count, Rule> io,
                                           const select_tile<Shape>& tile, const Items& items,
                                           unsigned (&selected)[Shape::rows]) {
  constexpr int vec = Shape::vec;
  const std::size_t n = io.n;
#pragma unroll
  for (int r = 0; r < Shape::rows; ++r) {
    T previous{};
    if constexpr (Rule::needs_previous) {
      // Lane l's previous item is lane l-1's last; lane 0's, the last of the row before, or
      // the one before the warp's first (padding past n reads the last item).
      const T last = items[r][vec - 1];
      previous = shuffle_up(last, 1);
      const T row_before = shuffle_from(items[r > 0 ? r - 1 : 0][vec - 1], 31);
      if (lane_id() == 0) {
        previous = r > 0                   ? row_before
                   : tile.row_first(0) > 0 ? io.in[min(tile.row_first(0) - 1, n - 1)]
                                           : T{};
      }
    }
    selected[r] = io.rule.template pick<vec>(items[r], tile.row_first(r), n, previous);
    if (!tile.full) {
      const std::size_t left = tile.row_first(r) < n ? n - tile.row_first(r) : 0;
      if (left < std::size_t(vec)) selected[r] &= (1u << left) - 1u;
    }
  }
}

// Leaves the warps' offsets within the tile in the storage and the tile's tally in warp 0's
// `tile_tally`, published at once so that the tiles after it wait as little as possible.
// run_length_encode's tally holds where its last run head sits: the latest of the warps' last
// heads.
template <class Shape, class T, class V, class Count>
__device__ __forceinline__ void publish_count(const select_tile<Shape>& tile,
                                              const unsigned (&selected)[Shape::rows],
                                              unsigned warp_selected,
                                              const lookback_state<select_tally>& state,
                                              select_tile_storage<Shape, T, V, Count>& storage,
                                              select_tally& tile_tally) {
  constexpr bool has_counts = select_tile_storage<Shape, T, V, Count>::has_counts;
  const int lane = lane_id();
  if constexpr (has_counts) {
    unsigned last = 0;  // 1 + the tile position of the lane's last head, 0 if none
#pragma unroll
    for (int r = 0; r < Shape::rows; ++r) {
      if (selected[r] != 0)
        last = unsigned(tile.row_first(r) - tile.first) + 32 - __clz(int(selected[r]));
    }
    last = warp_reduce(partial<unsigned>{last, true}, maximum{}).value;
    if (lane == 0) storage.warp_last_heads[threadIdx.x / 32] = last;  // read after the barrier
  }
  block_warp_prefix(warp_selected, plus{}, storage.warp_offsets, [&](unsigned tile_count) {
    std::uint64_t last_head = 0;  // 1 + its position
    if constexpr (has_counts) {
      const unsigned last =
          warp_reduce(
              partial<unsigned>{lane < Shape::warps ? storage.warp_last_heads[lane] : 0u, true},
              maximum{})
              .value;
      if (last > 0) last_head = tile.first + last;
    }
    tile_tally = select_tally::of(tile_count, last_head);
    publish_aggregate(state, tile.index, tile_tally,
                      partial<select_tally>{select_tally::of(0, 0), true}, tally_op{});
    if (lane == 0) storage.tile_selected = tile_count;
    return partial<unsigned>{0u, false};  // offsets within the tile
  });
}

// Kept items at their ranks, then (the partitions) the rejected ones in input order. Warp 0
// stages its part once it knows the prefix: a tile waits only on the look-back.
template <class Shape, rejected_items Rejected, class T, class V, class Count, class Rule,
          class Items, class Values>
__device__ __forceinline__ void stage_tile(
    select_buffers<T, V, Count, Rule> io, const select_tile<Shape>& tile, const Items& items,
    const Values& values, const unsigned (&selected)[Shape::rows],
    const warp_ranks<Shape::rows>& ranks, const select_tally& tile_tally,
    const lookback_state<select_tally>& state, select_tile_storage<Shape, T, V, Count>& storage) {
  using staging = select_staging<Shape, T, V, Count>;
  const unsigned tile_count = storage.tile_selected;
  if (threadIdx.x / 32 == 0) {
    const partial<select_tally> before = wait_for_prefix(
        state, tile.index, tile_tally, partial<select_tally>{select_tally::of(0, 0), true},
        tally_op{}, storage.lookback);
    if (lane_id() == 0) {
      storage.tally_before_tile = before.value;
      if (tile.last(io.n) && !io.total_counted)
        *io.num_selected = before.value.count() + tile_count;
    }
  }
  const partial<unsigned> before_warp = storage.warp_offsets.warp_prefixes[threadIdx.x / 32];
  const unsigned warp_offset = before_warp.valid ? before_warp.value : 0u;
  T* const staged_items = reinterpret_cast<T*>(&storage.staged.first[0]);
  auto* const staged_second =
      reinterpret_cast<typename staging::second_kind*>(&storage.staged.second[0]);
#pragma unroll
  for (int r = 0; r < Shape::rows; ++r) {
#pragma unroll
    for (int j = 0; j < Shape::vec; ++j) {
      const unsigned position = unsigned(tile.row_first(r) + j - tile.first);
      const unsigned rank = warp_offset + ranks.before[r] + selected_below(selected[r], j);
      if ((selected[r] >> j & 1u) != 0) {
        staged_items[rank] = items[r][j];
        if constexpr (has_values_of<V>) staged_second[rank] = values[r][j];
        // run_length_encode's run heads: their positions, where values would go (asked of
        // the storage, not of the staged type, which unique_by_key's u16 values share).
        if constexpr (select_tile_storage<Shape, T, V, Count>::has_counts)
          staged_second[rank] = std::uint16_t(position);
      } else if (Rejected != rejected_items::dropped && position < tile.items(io.n)) {
        staged_items[tile_count + position - rank] = items[r][j];
      }
    }
  }
  __syncthreads();
}

// partition's total kept, which its rejected items follow. The last tile knows it; the others
// read it where a count pass left it or, all tiles resident at once, wait for the last tile's
// inclusive prefix (select.cuh says which).
template <class Shape, class T, class V, class Count, class Rule>
__device__ std::uint64_t kept_in_all(select_buffers<T, V, Count, Rule> io,
                                     const select_tile<Shape>& tile,
                                     const lookback_state<select_tally>& state,
                                     const select_tile_storage<Shape, T, V, Count>& storage) {
  if (tile.last(io.n)) return storage.tally_before_tile.count() + storage.tile_selected;
  if (io.total_counted) return *io.num_selected;
  return wait_for_last_inclusive(state).count();
}

template <class Shape, rejected_items Rejected, class T, class V, class Count, class Rule>
__device__ __forceinline__ void store_tile(select_buffers<T, V, Count, Rule> io,
                                           const select_tile<Shape>& tile,
                                           const lookback_state<select_tally>& state,
                                           select_tile_storage<Shape, T, V, Count>& storage) {
  using staging = select_staging<Shape, T, V, Count>;
  const unsigned tile_count = storage.tile_selected;
  const std::uint64_t kept_before = storage.tally_before_tile.count();
  const T* const staged_items = reinterpret_cast<const T*>(&storage.staged.first[0]);
  store_staged<Shape::threads>(io.out + kept_before, staged_items, int(tile_count));
  if constexpr (has_values_of<V>) {
    store_staged<Shape::threads>(
        io.values_out + kept_before,
        reinterpret_cast<const typename staging::second_kind*>(&storage.staged.second[0]),
        int(tile_count));
  }
  if constexpr (Rejected != rejected_items::dropped) {
    // The rejected items follow those the tiles before rejected: in an output of their own
    // (partition_copy), or after every kept item (partition).
    const unsigned tile_rejected = tile.items(io.n) - tile_count;
    const std::uint64_t rejected_before = tile.first - kept_before;
    T* rejected = io.rejected_out;
    if constexpr (Rejected == rejected_items::after_kept) {
      // Learnt once the kept run is on its way: a tile waiting for the last one waits with
      // its stores in flight.
      if (threadIdx.x == 0) storage.kept_in_all = kept_in_all(io, tile, state, storage);
      __syncthreads();
      rejected = io.out + storage.kept_in_all;
    }
    store_staged<Shape::threads>(rejected + rejected_before, staged_items + tile_count,
                                 int(tile_rejected));
  }
}

// Run k's length is where run k + 1 starts less where run k starts. This tile's runs start at
// ranks 0 .. tile_count - 1; the run before rank 0 started where the look-back says, and the
// last tile ends the last run at n. Consecutive lengths, coalesced.
template <class Shape, class T, class V, class Count, class Rule>
__device__ __forceinline__ void write_run_lengths(
    select_buffers<T, V, Count, Rule> io, const select_tile<Shape>& tile,
    select_tile_storage<Shape, T, V, Count>& storage) {
  const unsigned tile_count = storage.tile_selected;
  const select_tally before_tile = storage.tally_before_tile;
  const std::uint64_t kept_before = before_tile.count();
  const auto* const head_positions =
      reinterpret_cast<const std::uint16_t*>(&storage.staged.second[0]);
  const unsigned first_run = kept_before == 0 ? 1 : 0;
  const unsigned end_run = tile_count + (tile.last(io.n) ? 1 : 0);
  for (unsigned rank = first_run + threadIdx.x; rank < end_run; rank += Shape::threads) {
    const std::uint64_t starts = rank < tile_count ? tile.first + head_positions[rank] : io.n;
    const std::uint64_t started =
        rank > 0 ? tile.first + head_positions[rank - 1] : before_tile.end() - 1;
    io.counts_out[kept_before + rank - 1] = Count(starts - started);
  }
}

// The steps, in order.
template <class Shape, rejected_items Rejected, bool Aligned, class T, class V, class Count,
          class Rule>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    select_kernel(select_buffers<T, V, Count, Rule> io, lookback_state<select_tally> state) {
  using storage_type = select_tile_storage<Shape, T, V, Count>;
  static_assert(sizeof(storage_type) <= 48 * 1024, "a tile's shared memory needs no opt-in");
  __shared__ storage_type storage;
  if (threadIdx.x == 0) storage.tile = next_tile(state);
  __syncthreads();
  // Past the last tile only if another kernel shared the counter, which the stream_scratch
  // rules out: such a block touches nothing.
  if (storage.tile >= state.tiles) return;
  const select_tile<Shape> tile(storage.tile, io.n);

  register_items<T, Shape::vec> items[Shape::rows];
  register_items<value_or_char<V>, Shape::vec> values[has_values_of<V> ? Shape::rows : 1];
  load_tile<Shape, Aligned>(io, tile, items, values);
  unsigned selected[Shape::rows];
  pick_items(io, tile, items, selected);
  const warp_ranks<Shape::rows> ranks = rank_in_warp<Shape::rows, Shape::vec>(selected);
  select_tally tile_tally{};  // warp 0's
  publish_count(tile, selected, ranks.total, state, storage, tile_tally);
  stage_tile<Shape, Rejected>(io, tile, items, values, selected, ranks, tile_tally, state, storage);
  store_tile<Shape, Rejected>(io, tile, state, storage);
  if constexpr (storage_type::has_counts) write_run_lengths(io, tile, storage);
}

}  // namespace ppat::detail
