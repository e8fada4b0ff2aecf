// Tile state for single-pass algorithms: each tile learns the combination of every tile
// before it while those tiles are still running (decoupled look-back, Merrill & Garland
// 2016), in a variant whose result does not depend on timing.
//
// Classic look-back stops at the first predecessor that has published its inclusive
// prefix, so a tile's prefix is associated differently from run to run, and floating-point
// scans differ in their last bits. Here every combination has a fixed shape:
//   - tiles form groups of 256, groups form supergroups of 256 groups (65536 tiles);
//   - every tile publishes its aggregate as soon as it has it;
//   - the last tile of a group publishes the group's aggregate (its group's tile aggregates,
//     combined by one warp in a fixed order) and then the next group's exclusive prefix:
//     the supergroup's prefix followed by the supergroup's group aggregates so far;
//   - a tile's prefix is its group's prefix followed by the aggregates of the tiles before
//     it in the group.
// No value waits on a chain of earlier prefixes except the supergroup prefix, one hop per
// 65536 tiles; everything else waits only on aggregates, as classic look-back does.
//
// Tile ids come from an atomic counter, not blockIdx: a tile only ever waits on tiles that
// were handed out earlier, to blocks already running, so the waits always end.
#pragma once

#include <cuda/atomic>

#include <cstddef>
#include <cstring>

#include "launch.cuh"
#include "partial.cuh"
#include "warp.cuh"

namespace ppat::detail {

constexpr unsigned lookback_group = 256;  // tiles per group, and groups per supergroup

// One published value per slot: ready flags (zeroed before each launch) and the values.
template <class T>
struct published {
  unsigned* ready;
  T* values;
};

template <class T>
struct lookback_state {
  unsigned* tile_counter;         // next tile id to hand out
  published<T> tile_aggregates;   // per tile
  published<T> group_aggregates;  // per group
  published<T> group_prefixes;    // per group, from group 1 on
  published<T> super_prefixes;    // per supergroup, from supergroup 1 on
};

// The temporary memory of a look-back over `tiles` tiles: control words that must be
// zeroed before each launch, then values that need no initialization.
struct lookback_layout {
  std::size_t slots[4];  // tile aggregates, group aggregates, group and supergroup prefixes
  std::size_t control_bytes;
  std::size_t values_offset;
  std::size_t total_bytes;
};

template <class T>
lookback_layout plan_lookback(std::size_t tiles) {
  constexpr std::size_t value_alignment = alignof(T) > 16 ? alignof(T) : 16;
  const std::size_t groups = ceil_div(tiles, lookback_group);
  const std::size_t supers = ceil_div(groups, lookback_group);
  lookback_layout layout{{tiles, groups, groups + 1, supers + 1}, 0, 0, 0};
  const std::size_t slots = tiles + groups + (groups + 1) + (supers + 1);
  layout.control_bytes = (1 + slots) * sizeof(unsigned);
  layout.values_offset = ceil_div(layout.control_bytes, value_alignment) * value_alignment;
  layout.total_bytes = layout.values_offset + slots * sizeof(T);
  return layout;
}

template <class T>
lookback_state<T> lookback_view(void* memory, const lookback_layout& layout) {
  unsigned* flags = static_cast<unsigned*>(memory) + 1;
  T* values = reinterpret_cast<T*>(static_cast<unsigned char*>(memory) + layout.values_offset);
  published<T> parts[4];
  for (int p = 0; p < 4; ++p) {
    parts[p] = {flags, values};
    flags += layout.slots[p];
    values += layout.slots[p];
  }
  return {static_cast<unsigned*>(memory), parts[0], parts[1], parts[2], parts[3]};
}

__device__ inline void publish(unsigned* flag) {
  cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*flag).store(1, cuda::memory_order_release);
}

// Waits until flags[begin, end) are all set, polling them together (relaxed loads can be in
// flight at once; one acquire fence then orders the value loads after them).
__device__ inline void wait_for_all(unsigned* flags, unsigned begin, unsigned end) {
  unsigned backoff = 32;
  for (;;) {
    bool ready = true;
    for (unsigned t = begin; t < end; ++t) {
      ready &= cuda::atomic_ref<unsigned, cuda::thread_scope_device>(flags[t]).load(
                   cuda::memory_order_relaxed) != 0;
    }
    if (ready) break;
    __nanosleep(backoff);
    if (backoff < 512) backoff *= 2;
  }
  cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
}

// A value another block published: read from L2, never from a line this SM's L1 may hold
// from before the value was written.
template <class T>
__device__ T load_published(const T* from) {
  T value;
  if constexpr (sizeof(T) % 4 == 0 && alignof(T) >= 4) {
    unsigned words[sizeof(T) / 4];
    for (unsigned w = 0; w < sizeof(T) / 4; ++w) {
      words[w] = __ldcg(reinterpret_cast<const unsigned*>(from) + w);
    }
    std::memcpy(&value, words, sizeof(T));
  } else {
    unsigned char bytes[sizeof(T)];
    for (unsigned b = 0; b < sizeof(T); ++b) {
      bytes[b] = __ldcg(reinterpret_cast<const unsigned char*>(from) + b);
    }
    std::memcpy(&value, bytes, sizeof(T));
  }
  return value;
}

template <class T>
__device__ void publish(const published<T>& slot, unsigned index, const T& value) {
  slot.values[index] = value;
  publish(&slot.ready[index]);
}

// Called by a whole warp: the values of slots [begin, end) combined in a fixed order (lane l
// takes its share of the range in order, then the lanes combine left to right), waiting
// for each to be published.
template <class T, class Op>
__device__ partial<T> ordered_combination(const published<T>& slot, unsigned begin, unsigned end,
                                          Op op) {
  constexpr unsigned share = lookback_group / 32;
  const unsigned mine_begin = min(begin + lane_id() * share, end);
  const unsigned mine_end = min(mine_begin + share, end);
  wait_for_all(slot.ready, mine_begin, mine_end);
  partial<T> mine{T{}, false};
  for (unsigned i = mine_begin; i < mine_end; ++i) {
    mine = then(mine, partial<T>{load_published(&slot.values[i]), true}, op);
  }
  return warp_reduce(mine, op);
}

template <class T>
__device__ partial<T> wait_and_load(const published<T>& slot, unsigned index) {
  wait_for_all(slot.ready, index, index + 1);
  return {load_published(&slot.values[index]), true};
}

// Called by one whole warp of the block that owns `tile`, once its `aggregate` is known.
// Returns the combination of `start` (what precedes tile 0, e.g. an exclusive scan's
// init) and every tile before `tile`.
template <class T, class Op>
__device__ partial<T> lookback_prefix(const lookback_state<T>& state, unsigned tile,
                                      const T& aggregate, const partial<T>& start, Op op) {
  if (lane_id() == 0) publish(state.tile_aggregates, tile, aggregate);
  const unsigned group = tile / lookback_group;
  const unsigned first_tile = group * lookback_group;
  const partial<T> in_group = ordered_combination(state.tile_aggregates, first_tile, tile, op);

  if (tile == first_tile + lookback_group - 1) {
    // Last tile of its group: publish the group's aggregate, then the next group's prefix.
    const T group_aggregate = after(in_group, aggregate, op);
    if (lane_id() == 0) publish(state.group_aggregates, group, group_aggregate);
    const unsigned super = group / lookback_group;
    const unsigned first_group = super * lookback_group;
    const partial<T> super_prefix = super == 0 ? start : wait_and_load(state.super_prefixes, super);
    const partial<T> groups_before =
        ordered_combination(state.group_aggregates, first_group, group, op);
    const T next_prefix = after(then(super_prefix, groups_before, op), group_aggregate, op);
    if (lane_id() == 0) {
      publish(state.group_prefixes, group + 1, next_prefix);
      if (group == first_group + lookback_group - 1) {
        publish(state.super_prefixes, super + 1, next_prefix);
      }
    }
  }

  const partial<T> group_prefix = group == 0 ? start : wait_and_load(state.group_prefixes, group);
  return then(group_prefix, in_group, op);
}

}  // namespace ppat::detail
