// Tile state for single-pass algorithms: each tile learns the combination of every tile
// before it while those tiles are still running (decoupled look-back, Merrill & Garland
// 2016), in a variant whose result does not depend on timing.
//
// Classic look-back stops at the first predecessor that has published its inclusive
// prefix, so a tile's prefix is associated differently from run to run, and floating-point
// scans differ in their last bits. Here tiles form groups of `lookback_group`; every tile
// publishes its aggregate at once, and the last tile of each group publishes the group's
// exclusive prefix. A tile's prefix is always
//     (exclusive prefix of its group) op (aggregates of the tiles before it in its group),
// the second part combined by one warp in a fixed order. The only serial chain runs
// through group prefixes, one hop per 256 tiles, far apart enough in time to stay off the
// critical path; the wait for the in-group aggregates is the classic look-back's wait.
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

constexpr unsigned lookback_group = 256;

template <class T>
struct lookback_state {
  unsigned* tile_counter;     // next tile id to hand out
  unsigned* aggregate_ready;  // per tile
  unsigned* group_ready;      // per group: its exclusive prefix is published
  T* aggregates;              // per tile
  T* group_prefixes;          // per group (group 0 has none: it starts the sequence)
};

// The temporary memory of a look-back over `tiles` tiles: control words that must be
// zeroed before each launch, then values that need no initialization. Group prefixes are
// indexed 1..groups (the prefix of group g is published by the last tile of group g - 1).
struct lookback_layout {
  std::size_t tiles;
  std::size_t group_slots;  // groups + 1
  std::size_t control_bytes;
  std::size_t values_offset;
  std::size_t total_bytes;
};

template <class T>
lookback_layout plan_lookback(std::size_t tiles) {
  constexpr std::size_t value_alignment = alignof(T) > 16 ? alignof(T) : 16;
  lookback_layout layout{};
  layout.tiles = tiles;
  layout.group_slots = ceil_div(tiles, lookback_group) + 1;
  layout.control_bytes = (1 + tiles + layout.group_slots) * sizeof(unsigned);
  layout.values_offset = ceil_div(layout.control_bytes, value_alignment) * value_alignment;
  layout.total_bytes = layout.values_offset + (tiles + layout.group_slots) * sizeof(T);
  return layout;
}

template <class T>
lookback_state<T> lookback_view(void* memory, const lookback_layout& layout) {
  auto* words = static_cast<unsigned*>(memory);
  T* values = reinterpret_cast<T*>(static_cast<unsigned char*>(memory) + layout.values_offset);
  return {words, words + 1, words + 1 + layout.tiles, values, values + layout.tiles};
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

// Called by one whole warp of the block that owns `tile`, once its `aggregate` is known.
// Returns the combination of `start` (what precedes tile 0, e.g. an exclusive scan's
// init) and every tile before `tile`.
template <class T, class Op>
__device__ partial<T> lookback_prefix(const lookback_state<T>& state, unsigned tile,
                                      const T& aggregate, const partial<T>& start, Op op) {
  const int lane = lane_id();
  if (lane == 0) {
    state.aggregates[tile] = aggregate;
    publish(&state.aggregate_ready[tile]);
  }
  const unsigned group = tile / lookback_group;
  const unsigned first = group * lookback_group;

  // The aggregates before `tile` in its group: lane l combines its fixed share in order.
  constexpr unsigned share = lookback_group / 32;
  const unsigned begin = min(first + lane * share, tile);
  const unsigned end = min(begin + share, tile);
  wait_for_all(state.aggregate_ready, begin, end);
  partial<T> mine{aggregate, false};
  for (unsigned t = begin; t < end; ++t) {
    mine = then(mine, partial<T>{load_published(&state.aggregates[t]), true}, op);
  }
  const partial<T> in_group = warp_reduce(mine, op);

  partial<T> group_prefix = start;
  if (group > 0) {
    wait_for_all(state.group_ready, group, group + 1);
    group_prefix = partial<T>{load_published(&state.group_prefixes[group]), true};
  }
  const partial<T> prefix = then(group_prefix, in_group, op);

  const bool last_in_group = tile == first + lookback_group - 1;
  if (last_in_group && lane == 0) {
    state.group_prefixes[group + 1] = after(prefix, aggregate, op);
    publish(&state.group_ready[group + 1]);
  }
  return prefix;
}

}  // namespace ppat::detail
