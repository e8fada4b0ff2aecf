// One tile of one radix sort pass, by one block: what the onesweep passes, the one-launch
// sort and the one-tile sort all run. In the order the steps run:
//
//   load_tile_items        the tile's keys into registers
//   rank_in_warps          each key's rank among its group's keys of its digit   } the block
//   tile_digit_count       the tile's count of each digit, published at once     } radix rank
//   add_tile_starts        each group's first position of each digit in the tile }
//   stage_keys_in_digit_order  keys staged in shared memory in digit order; then the values
//                          are read (load_tile_items)
//   look_back_digit_starts where each digit's keys go: the tiles before, thread d walking back
//                          through their published counts of digit d
//   stage_values_in_digit_order  values staged beside their keys
//   scatter_staged         consecutive staged keys of a digit to consecutive places
//
// The block radix rank is core's (core/radix_rank.cuh). A tile's keys are striped as it ranks
// them: each half-warp holds 16 x items consecutive keys, row by row (ranked_item), so that
// ranking in that order keeps the sort stable.
#pragma once

#include <cstddef>
#include <type_traits>

#include "../core/atomic.cuh"
#include "../core/block.cuh"
#include "../core/launch.cuh"
#include "../core/no_values.cuh"
#include "../core/radix_rank.cuh"
#include "../core/shared_storage.cuh"
#include "../core/warp.cuh"
#include "plan.cuh"
#include "radix_key.cuh"

namespace ppat::detail {

template <class K, class V>
constexpr int pair_bytes = int(sizeof(K)) + (has_values_of<V> ? int(sizeof(V)) : 0);

// A tile: `Tuning`'s threads ranking `items` keys each (at most `MostItems`, a power of two
// unless `AnyItems`), with their values, as many as a thread's bytes hold; the tile is staged
// in shared memory.
template <class K, class V, class Tuning, int MostItems = 16, bool AnyItems = false>
struct tile_shape : Tuning {
  static constexpr int items = [] {
    int most = Tuning::groups_per_thread(pair_bytes<K, V>, MostItems);
    int power = 1;
    while (power * 2 <= most)
      power *= 2;
    return AnyItems ? most : power;
  }();
  static constexpr int tile_items = Tuning::threads * items;
};

// A published digit count: status in the top 2 bits, the count in the rest. 0: nothing yet.
constexpr unsigned count_aggregate = 1u << 30;
constexpr unsigned count_inclusive = 2u << 30;
constexpr unsigned count_mask = count_aggregate - 1;
// Tiles a digit's look-back reads at a time (one at a time, the walk back through tiles
// that have published only their own counts held each tile for microseconds).
constexpr int lookback_window = 8;

// What one pass's tiles read and write.
template <class K, class V>
struct onesweep_pass {
  const K* keys_in;  // the portion's
  K* keys_out;       // the whole output
  const V* values_in;
  V* values_out;
  std::size_t count;  // keys in the portion
  unsigned tiles;
  radix_digit<K> digit;
  unsigned* tile_counter;
  unsigned* published;
  const unsigned long long* starts;  // the portion's digit starts
  unsigned long long* next_starts;   // the next portion's, or null
};

// Where one tile of a pass sits: its keys from `first` of the pass's input, `valid` of them;
// its look-back walks back to `chain_first`, the first tile whose keys share its digit starts
// (`starts`): tile 0 of a portion, or a segment's first tile in a segmented sort.
struct pass_tile {
  unsigned tile;
  unsigned chain_first;
  std::size_t first;
  unsigned valid;
  const unsigned long long* starts;
};

// Shared memory of one tile: the block radix rank's, and the keys staged in the bytes of its
// words once the groups have ranked them.
template <class Shape, class K, class V>
struct tile_storage {
  radix_rank_storage<Shape::warps, radix> rank;
  // Where the staged key at r of digit d goes: the address of r = 0 were the digit's places
  // to run on down, as an integer (it can lie below the output), so that a place costs one
  // multiply-add. Its value goes to the same place of the values, found from the key's.
  unsigned long long digit_keys_to[radix];
  struct staging {
    uninitialized_array<K, Shape::tile_items> keys;
    uninitialized_array<value_or_char<V>, has_values_of<V> ? Shape::tile_items : 1> values;
  };
  union {
    radix_rank_lanes<Shape::warps, radix> lanes;
    staging staged;
  };
  unsigned tile;  // the onesweep kernel's ticket
};

// A tile kernel's storage, in dynamic shared memory: it can exceed the 48 KB a kernel may
// declare statically.
template <class Storage>
__device__ Storage& dynamic_shared_storage() {
  extern __shared__ __align__(16) unsigned char tile_bytes[];
  return *reinterpret_cast<Storage*>(tile_bytes);
}

// Zeroes the rank's words; a barrier must follow before sort_tile.
template <class Shape, class K, class V>
__device__ void clear_tile_storage(tile_storage<Shape, K, V>& storage) {
  clear_radix_rank<Shape::threads>(storage.lanes);
}

// A tile's keys, or its values, in registers, each thread's where the ranking puts them
// (ranked_item); past the end of the input nothing is read (the ranking pads the keys with
// the last digit, which ranks after every real key of the tile and is never written).
// `FromL2`: the items were written by other blocks of the same kernel, which this SM's L1 may
// hold older copies of.
template <class Shape, bool FromL2, bool Full, class T>
__device__ __forceinline__ void load_tile_items(const T* in, std::size_t tile_first, unsigned valid,
                                                T (&items)[Shape::items]) {
#pragma unroll
  for (int i = 0; i < Shape::items; ++i) {
    const unsigned at = ranked_item<Shape::items>(i);
    if (Full || at < valid) {
      if constexpr (FromL2) {
        items[i] = load_published(in + tile_first + at);
      } else {
        items[i] = in[tile_first + at];
      }
    }
  }
}

// A pass that sorts nothing but moves the keys (plan_pass_roles): the tile's keys, or its
// values, to the same places of another buffer, read as the ranking reads them.
template <class Shape, bool FromL2, class T>
__device__ __forceinline__ void copy_tile_items(const T* from, T* to, std::size_t tile_first,
                                                unsigned valid) {
  T items[Shape::items];
  load_tile_items<Shape, FromL2, false>(from, tile_first, valid, items);
#pragma unroll
  for (int i = 0; i < Shape::items; ++i) {
    const unsigned at = ranked_item<Shape::items>(i);
    if (at < valid) to[tile_first + at] = items[i];
  }
}

// ---- Staging and scattering -------------------------------------------------------------------

// Keys staged in the tile's digit order; rows wholly past `valid` were not ranked and are
// not staged. Each rank becomes the key's place in that order, where its value goes.
template <class Shape, bool Full, class K, class V>
__device__ __forceinline__ void stage_keys_in_digit_order(const K (&keys)[Shape::items],
                                                          unsigned valid,
                                                          unsigned (&ranks)[Shape::items],
                                                          tile_storage<Shape, K, V>& storage) {
#pragma unroll
  for (int i = 0; i < Shape::items; ++i) {
    if (!Full && rank_row_past<Shape::items>(i, valid)) break;
    ranks[i] = tile_position(storage.rank, ranks[i]);
    storage.staged.keys[int(ranks[i])] = keys[i];
  }
}

template <class Shape, bool Full, class K, class V>
__device__ __forceinline__ void stage_values_in_digit_order(
    const value_or_char<V> (&values)[Shape::items], unsigned valid,
    const unsigned (&places)[Shape::items], tile_storage<Shape, K, V>& storage) {
#pragma unroll
  for (int i = 0; i < Shape::items; ++i) {
    if (!Full && rank_row_past<Shape::items>(i, valid)) break;
    storage.staged.values[int(places[i])] = values[i];
  }
}

// Thread d < radix: how many keys of digit d the tiles of the chain before this one hold,
// from the newest inclusive count back, reading `lookback_window` tiles at a time; then this
// tile's inclusive count for the tiles after it. Where the tile's keys of digit d go follows,
// and the last tile of a portion hands the next portion its digit starts.
template <class Shape, class K, class V>
__device__ __forceinline__ void look_back_digit_starts(const onesweep_pass<K, V>& pass,
                                                       const pass_tile& place, unsigned tile_count,
                                                       unsigned tile_start,
                                                       tile_storage<Shape, K, V>& storage) {
  const unsigned d = threadIdx.x;
  if (d >= radix) return;
  const unsigned tile = place.tile;
  unsigned before = 0;  // a chain holds fewer than 2^30 keys
  if (tile > place.chain_first) {
    int newest = int(tile) - 1;
    for (;;) {
      unsigned words[lookback_window];
#pragma unroll
      for (int w = 0; w < lookback_window; ++w) {
        words[w] = newest - w >= int(place.chain_first)
                       ? device_atomic<unsigned>(pass.published[unsigned(newest - w) * radix + d])
                             .load(cuda::memory_order_relaxed)
                       : count_inclusive;
      }
      // Up to the newest inclusive count: all published, or the window is read again.
      bool ready = true, inclusive = false;
      unsigned sum = 0;
#pragma unroll
      for (int w = 0; w < lookback_window; ++w) {
        if (inclusive) continue;
        ready = ready && words[w] != 0;
        sum += words[w] & count_mask;
        inclusive = (words[w] & count_inclusive) != 0;
      }
      if (!ready) {
        __nanosleep(32);  // a spinning thread takes issue slots from the tiles still ranking
        continue;
      }
      before += sum;
      if (inclusive) break;
      newest -= lookback_window;
    }
    atomicExch(&pass.published[std::size_t(tile) * radix + d],
               count_inclusive | (before + tile_count));
  }
  const unsigned long long start = place.starts[d] + before;
  const unsigned long long first_place = start - tile_start;
  storage.digit_keys_to[d] =
      reinterpret_cast<unsigned long long>(pass.keys_out) + first_place * sizeof(K);
  if (pass.next_starts != nullptr && tile == pass.tiles - 1)
    pass.next_starts[d] = start + tile_count;
}

// Consecutive staged keys of one digit go to consecutive places.
template <class Shape, bool Full, class K, class V>
__device__ __forceinline__ void scatter_staged(const onesweep_pass<K, V>& pass, unsigned valid,
                                               tile_storage<Shape, K, V>& storage) {
#pragma unroll
  for (int k = 0; k < Shape::items; ++k) {
    const unsigned r = threadIdx.x + unsigned(k * Shape::threads);
    if (Full || r < valid) {
      const K key = storage.staged.keys[int(r)];
      K* const key_to =
          reinterpret_cast<K*>(storage.digit_keys_to[pass.digit(key)] + r * sizeof(K));
      *key_to = key;
      // The value's place from the key's: integer work in place of a second shared-memory
      // load a key, where the pass waits on shared memory (docs/patterns.md, "Radix sort").
      if constexpr (has_values_of<V>)
        pass.values_out[key_to - pass.keys_out] = storage.staged.values[int(r)];
    }
  }
}

// ---- The tile ---------------------------------------------------------------------------------

template <class Shape, bool FromL2, bool Full, class K, class V>
__device__ void sort_tile_of(const onesweep_pass<K, V>& pass, const pass_tile& place,
                             tile_storage<Shape, K, V>& storage) {
  static_assert(Shape::threads >= radix, "a thread a digit");
  const unsigned valid = Full ? unsigned(Shape::tile_items) : place.valid;
  K keys[Shape::items];
  load_tile_items<Shape, FromL2, Full>(pass.keys_in, place.first, valid, keys);
  unsigned ranks[Shape::items];
  rank_in_warps<Shape::items, Full>([&](int i) { return pass.digit(keys[i]); }, valid,
                                    pass.digit.mask, storage.lanes, ranks);
  __syncthreads();

  // Thread d: the tile's count of digit d, published at once.
  const unsigned tile_count =
      tile_digit_count<Shape::items>(storage.lanes, storage.rank, valid, pass.digit.mask);
  if (threadIdx.x < radix) {
    atomicExch(&pass.published[std::size_t(place.tile) * radix + threadIdx.x],
               (place.tile == place.chain_first ? count_inclusive : count_aggregate) | tile_count);
  }
  const unsigned tile_start = add_tile_starts(storage.rank, tile_count);
  __syncthreads();
  stage_keys_in_digit_order<Shape, Full>(keys, valid, ranks, storage);
  // Values are read only now, into the keys' registers: the ranking holds no values (read
  // with the keys, u32/u32 pairs spilled at 64 registers), and their loads are in flight
  // while thread d looks back (docs/patterns.md, "Radix sort").
  value_or_char<V> values[Shape::items];
  if constexpr (has_values_of<V>)
    load_tile_items<Shape, FromL2, Full>(pass.values_in, place.first, valid, values);
  look_back_digit_starts(pass, place, tile_count, tile_start, storage);
  if constexpr (has_values_of<V>)
    stage_values_in_digit_order<Shape, Full>(values, valid, ranks, storage);
  __syncthreads();
  scatter_staged<Shape, Full>(pass, valid, storage);
  __syncthreads();  // before the block's next tile reuses the storage
}

// A tile of `valid` keys; full tiles sort without a bound check a key.
template <class Shape, bool FromL2, class K, class V>
__device__ void sort_tile_at(const onesweep_pass<K, V>& pass, const pass_tile& place,
                             tile_storage<Shape, K, V>& storage) {
  if (place.valid == unsigned(Shape::tile_items)) {
    sort_tile_of<Shape, FromL2, true>(pass, place, storage);
  } else {
    sort_tile_of<Shape, FromL2, false>(pass, place, storage);
  }
}

// Tile `tile` of a portion, whose tiles form one chain: every tile but the last is full.
template <class Shape, bool FromL2, class K, class V>
__device__ void sort_tile(const onesweep_pass<K, V>& pass, unsigned tile,
                          tile_storage<Shape, K, V>& storage) {
  const std::size_t first = std::size_t(tile) * Shape::tile_items;
  const unsigned valid = unsigned(min(pass.count - first, std::size_t(Shape::tile_items)));
  sort_tile_at<Shape, FromL2>(pass, pass_tile{tile, 0, first, valid, pass.starts}, storage);
}

}  // namespace ppat::detail
