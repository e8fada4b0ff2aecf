// Tile state for single-pass algorithms: each tile learns the combination of every tile
// before it while those tiles are still running (decoupled look-back, Merrill & Garland
// 2016), in a variant whose result does not depend on timing.
//
// Classic look-back stops at the first predecessor that has published its inclusive
// prefix, so a tile's prefix is associated differently from run to run, and floating-point
// scans differ in their last bits. Here every combination has a fixed shape:
//   - tiles form groups of 32, groups form supergroups of 32 (1024 tiles);
//   - every tile publishes its aggregate as soon as it has it; the last tile of a group
//     publishes the group's aggregate as soon as its group's tile aggregates are in;
//   - a tile's prefix is its supergroup's prefix, then the aggregates of the groups and
//     tiles before it within the supergroup and group, each level combined by one warp as
//     a fixed tree; the last tile of a supergroup publishes the next supergroup's prefix.
// Only supergroup prefixes chain, one hop per 1024 tiles; everything else waits only on
// aggregates, as classic look-back does. A warp reads every level in one round trip to
// L2, one slot per lane and level, so waiting tiles poll few lines and few words. (Groups
// of 256 tiles read directly cost 8 reads a lane and ran slower; a third level, which
// moves the chain to one hop per 32768 tiles, added registers and ran no faster.) Values
// of up to 12 bytes travel in one 64- or 128-bit word with their ready flag; larger ones
// sit beside their flags and take a second round trip.
//
// Tile ids come from an atomic counter, not blockIdx: a tile only ever waits on tiles that
// were handed out earlier, to blocks already running, so the waits always end.
#pragma once

#include <cuda/atomic>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "launch.cuh"
#include "partial.cuh"
#include "warp.cuh"

namespace ppat::detail {

constexpr unsigned lookback_fan_in = 32;  // units of one level per unit of the next: a warp
constexpr int lookback_levels = 2;        // tiles, groups

// A ready flag in the first 4 bytes of a word that holds the value in the rest: 8-byte
// words for values of up to 4 bytes, 16-byte words (read and written whole, as one
// single-copy-atomic 128-bit access) for values of up to 12.
template <class T>
constexpr int packed_words = sizeof(T) <= 4    ? 1
                             : sizeof(T) <= 12 ? 2
                                               : 0;  // 64-bit words
template <class T>
constexpr bool packs_with_flag = packed_words<T> != 0;

template <int Words>
struct alignas(8 * Words) packed_word {
  std::uint64_t part[Words];
};

// Published values, one per slot. Zeroed control memory means "not yet published".
template <class T, bool Packed = packs_with_flag<T>>
struct published;

template <class T>
struct published<T, true> {
  using word = packed_word<packed_words<T>>;
  using raw = word;  // what a read of a slot brings back
  static constexpr std::size_t control_bytes = sizeof(word);
  static constexpr std::size_t value_bytes = 0;
  word* words;
};

// A ready flag (control memory) and the value beside it (value memory).
template <class T>
struct published<T, false> {
  using raw = unsigned;  // the flag
  static constexpr std::size_t control_bytes = sizeof(unsigned);
  static constexpr std::size_t value_bytes = sizeof(T);
  unsigned* ready;
  T* values;
};

template <class T>
struct lookback_state {
  unsigned* tile_counter;                    // next tile id to hand out
  published<T> aggregates[lookback_levels];  // per tile, group
  published<T> super_prefixes;               // per supergroup, from supergroup 1 on
};

// The temporary memory of a look-back over `tiles` tiles: control memory that must be
// zeroed before each launch, then values that need no initialization.
struct lookback_layout {
  std::size_t slots[lookback_levels + 1];  // aggregates per level, supergroup prefixes
  std::size_t control_bytes;
  std::size_t values_offset;
  std::size_t total_bytes;
};

// The tile counter takes the first 16 bytes, so that packed words stay aligned.
constexpr std::size_t lookback_counter_bytes = 16;

template <class T>
lookback_layout plan_lookback(std::size_t tiles) {
  constexpr std::size_t value_alignment = alignof(T) > 16 ? alignof(T) : 16;
  lookback_layout layout{};
  std::size_t slots = 0;
  std::size_t units = tiles;
  for (int level = 0; level <= lookback_levels; ++level) {
    layout.slots[level] = level < lookback_levels ? units : units + 1;
    slots += layout.slots[level];
    units = ceil_div(units, lookback_fan_in);
  }
  layout.control_bytes = lookback_counter_bytes + slots * published<T>::control_bytes;
  layout.values_offset = ceil_div(layout.control_bytes, value_alignment) * value_alignment;
  layout.total_bytes = layout.values_offset + slots * published<T>::value_bytes;
  return layout;
}

template <class T>
lookback_state<T> lookback_view(void* memory, const lookback_layout& layout) {
  unsigned char* control = static_cast<unsigned char*>(memory) + lookback_counter_bytes;
  T* values = reinterpret_cast<T*>(static_cast<unsigned char*>(memory) + layout.values_offset);
  published<T> parts[lookback_levels + 1];
  for (int p = 0; p <= lookback_levels; ++p) {
    if constexpr (packs_with_flag<T>) {
      parts[p] = {reinterpret_cast<typename published<T>::word*>(control)};
    } else {
      parts[p] = {reinterpret_cast<unsigned*>(control), values};
      values += layout.slots[p];
    }
    control += layout.slots[p] * published<T>::control_bytes;
  }
  lookback_state<T> state{static_cast<unsigned*>(memory), {}, parts[lookback_levels]};
  for (int level = 0; level < lookback_levels; ++level)
    state.aggregates[level] = parts[level];
  return state;
}

template <class Word>
using device_atomic = cuda::atomic_ref<Word, cuda::thread_scope_device>;

// A value's bits in 32-bit pieces, after a first piece that holds the ready flag.
template <class T>
__device__ typename published<T>::word packed_with_flag(const T& value) {
  constexpr int words = packed_words<T>;
  std::uint32_t pieces[2 * words] = {1u};
  std::memcpy(&pieces[1], &value, sizeof(T));
  typename published<T>::word word;
#pragma unroll
  for (int w = 0; w < words; ++w)
    word.part[w] = std::uint64_t(pieces[2 * w]) | std::uint64_t(pieces[2 * w + 1]) << 32;
  return word;
}

template <class T>
__device__ T unpacked(const typename published<T>::word& word) {
  constexpr int words = packed_words<T>;
  std::uint32_t pieces[2 * words];
#pragma unroll
  for (int w = 0; w < words; ++w) {
    pieces[2 * w] = std::uint32_t(word.part[w]);
    pieces[2 * w + 1] = std::uint32_t(word.part[w] >> 32);
  }
  T value;
  std::memcpy(&value, &pieces[1], sizeof(T));
  return value;
}

// Relaxed loads and stores of whole packed words: the flag and the value arrive together.
template <int Words>
__device__ packed_word<Words> load_word(const packed_word<Words>* from) {
  packed_word<Words> word;
  if constexpr (Words == 1) {
    word.part[0] =
        device_atomic<const std::uint64_t>(from->part[0]).load(cuda::memory_order_relaxed);
  } else {
    asm volatile(
        "{\n\t.reg .b128 w;\n\tld.relaxed.gpu.global.b128 w, [%2];\n\tmov.b128 {%0, %1}, w;\n\t}"
        : "=l"(word.part[0]), "=l"(word.part[1])
        : "l"(from)
        : "memory");
  }
  return word;
}

template <int Words>
__device__ void store_word(packed_word<Words>* to, const packed_word<Words>& word) {
  if constexpr (Words == 1) {
    device_atomic<std::uint64_t>(to->part[0]).store(word.part[0], cuda::memory_order_relaxed);
  } else {
    asm volatile(
        "{\n\t.reg .b128 w;\n\tmov.b128 w, {%1, %2};\n\tst.relaxed.gpu.global.b128 [%0], w;\n\t}" ::
            "l"(to),
        "l"(word.part[0]), "l"(word.part[1])
        : "memory");
  }
}

template <class T>
__device__ void publish(const published<T>& slot, unsigned index, const T& value) {
  if constexpr (packs_with_flag<T>) {
    // The value travels inside the flag's word, so nothing else needs ordering.
    store_word(&slot.words[index], packed_with_flag(value));
  } else {
    slot.values[index] = value;
    device_atomic<unsigned>(slot.ready[index]).store(1, cuda::memory_order_release);
  }
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

// A lane's reads of slots [begin, begin + count), count <= K, of one published array. All
// reads of every pending read go out together, so waiting on several costs one round trip.
template <class T, int K>
struct slot_read {
  static constexpr bool values_beside_flags = !packs_with_flag<T>;
  published<T> slot;
  unsigned begin;
  unsigned count;
  T values[K];
  typename published<T>::raw raw[K];

  // Loads the packed words, or the ready flags.
  __device__ void issue() {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (unsigned(k) >= count) {
        raw[k] = {1u};
      } else if constexpr (packs_with_flag<T>) {
        raw[k] = load_word(&slot.words[begin + k]);
      } else {
        raw[k] = device_atomic<unsigned>(slot.ready[begin + k]).load(cuda::memory_order_relaxed);
      }
    }
  }
  __device__ bool ready() const {
    bool all = true;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if constexpr (packs_with_flag<T>) {
        all &= (raw[k].part[0] & 1u) != 0;
      } else {
        all &= raw[k] != 0;
      }
    }
    return all;
  }
  // Once ready (and, for values beside their flags, after an acquire fence).
  __device__ void finish() {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if constexpr (packs_with_flag<T>) {
        values[k] = unpacked<T>(raw[k]);
      } else if (unsigned(k) < count) {
        values[k] = load_published(&slot.values[begin + k]);
      }
    }
  }
};

template <int K, class T>
__device__ slot_read<T, K> read_of(const published<T>& slot, unsigned begin, unsigned count) {
  return {slot, begin, count};
}

// Waits until every read's slots are published, then reads the values.
template <class... Reads>
__device__ void wait_for(Reads&... reads) {
  unsigned backoff = 16;
  for (;;) {
    (reads.issue(), ...);
    if ((reads.ready() && ...)) break;
    __nanosleep(backoff);
    if (backoff < 256) backoff *= 2;
  }
  if constexpr ((Reads::values_beside_flags || ...)) {
    // One fence orders every value read after every flag read.
    cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
  }
  (reads.finish(), ...);
}

// Slot `index` of `slot`, read by lanes where `wanted`.
template <class T>
__device__ slot_read<T, 1> lane_read(const published<T>& slot, unsigned index, bool wanted) {
  return read_of<1>(slot, index, wanted ? 1u : 0u);
}

// Called by a whole warp after a lane_read per lane: the wanted values, lanes left to right.
template <class T, class Op>
__device__ partial<T> lanes_combined(const slot_read<T, 1>& read, Op op) {
  return warp_reduce(partial<T>{read.values[0], read.count > 0}, op);
}

// Called by one whole warp of the block that owns `tile`, once its `aggregate` is known.
// Returns the combination of `start` (what precedes tile 0, e.g. an exclusive scan's
// init) and every tile before `tile`.
template <class T, class Op>
__device__ partial<T> lookback_prefix(const lookback_state<T>& state, unsigned tile,
                                      const T& aggregate, const partial<T>& start, Op op) {
  const unsigned lane = unsigned(lane_id());
  if (lane == 0) publish(state.aggregates[0], tile, aggregate);
  // At each level: this tile's unit, and how many units before it share its parent.
  unsigned unit[lookback_levels + 1];
  unsigned units_before[lookback_levels];
  slot_read<T, 1> reads[lookback_levels];
  unit[0] = tile;
#pragma unroll
  for (int level = 0; level < lookback_levels; ++level) {
    unit[level + 1] = unit[level] / lookback_fan_in;
    units_before[level] = unit[level] % lookback_fan_in;
    reads[level] = lane_read(state.aggregates[level], unit[level] - units_before[level] + lane,
                             lane < units_before[level]);
  }
  const unsigned super = unit[lookback_levels];
  auto super_read = lane_read(state.super_prefixes, super, lane == 0 && super > 0);

  // The last tile of a unit publishes the unit's aggregate as soon as it is known, level by
  // level, since later units wait on it. (Supergroups, the top level, chain through their
  // prefixes instead; their last tile's extra wait there costs nothing, as it needs the
  // same slots next.)
  partial<T> before[lookback_levels];
  bool last[lookback_levels];  // in its unit at this level and every level below
  T unit_aggregate = aggregate;
#pragma unroll
  for (int level = 0; level < lookback_levels; ++level) {
    last[level] = units_before[level] == lookback_fan_in - 1 && (level == 0 || last[level - 1]);
    if (last[level]) {
      wait_for(reads[level]);
      before[level] = lanes_combined(reads[level], op);
      unit_aggregate = after(before[level], unit_aggregate, op);
      if (level + 1 < lookback_levels && lane == 0) {
        publish(state.aggregates[level + 1], unit[level + 1], unit_aggregate);
      }
    }
  }
  static_assert(lookback_levels == 2);
  wait_for(reads[0], reads[1], super_read);
  partial<T> prefix = super > 0 ? partial<T>{shuffle_from(super_read.values[0], 0), true} : start;
#pragma unroll
  for (int level = lookback_levels - 1; level >= 0; --level) {
    if (!last[level]) before[level] = lanes_combined(reads[level], op);
    prefix = then(prefix, before[level], op);
  }
  if (last[lookback_levels - 1] && lane == 0) {
    publish(state.super_prefixes, super + 1, after(prefix, aggregate, op));
  }
  return prefix;
}

}  // namespace ppat::detail
