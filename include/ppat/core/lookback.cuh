// Tile state for single-pass algorithms: each tile learns the combination of every tile
// before it while those tiles are still running (decoupled look-back, Merrill & Garland
// 2016), in a variant whose result does not depend on timing.
//
// Every tile publishes its aggregate as soon as it has it, then its inclusive prefix as soon
// as it knows its exclusive one. A waiting tile's warp reads the 32 tiles before it, one slot
// a lane, and walks further back, a window at a time, until it sees an inclusive prefix.
// Classic look-back then adds up the aggregates after that prefix as a tree, so the
// association depends on which tile had published first, and float scans differ from run to
// run in their last bits. Here the walk keeps every window it read in shared memory and
// folds them strictly left to right, starting at the newest inclusive prefix it saw:
//     exclusive(i) = inclusive(j) op aggregate(j+1) op ... op aggregate(i-1)
// By induction every inclusive prefix is then the left fold of `start` and all aggregates up
// to its tile, whichever j each tile happened to find: the bits are fixed by n alone. The
// fold is serial, but it is short when the chain keeps up (j is usually among the last few
// tiles), and only one warp a block does it.
//
// Publication is an atomic exchange, not a store: a store waits in the SM's queue behind
// the tile stores of every block on the SM, while an atomic goes straight to L2: the largest
// single step of the scan's tuning (docs/patterns.md, "Scan"). Values of up to 12 bytes
// travel in one 64- or 128-bit word with their flag, so one read brings both; larger ones sit
// beside their flags, in separate arrays for aggregates and inclusive prefixes, since a slot
// is read while its tile moves from one to the other.
//
// Tile ids come from an atomic counter, not blockIdx: a tile only ever waits on tiles that
// were handed out earlier, to blocks already running, and every tile publishes its
// aggregate before it waits on anything, so the waits always end. That holds while the
// counter and the status words belong to this kernel alone: they live in a stream_scratch
// (core/memory.cuh), lent to one call at a time. Statuses carry the call's epoch, and the
// block that takes the last ticket puts the counter back to 0, so a scan needs no memset.
// (Sharing them is what hung and corrupted calls from several threads on
// cudaStreamPerThread when this memory was kept by stream handle: two kernels drew tile ids
// from one counter, so a tile could wait on an id another kernel had taken, under its own
// epoch, forever, and an id past the grid addressed past the status words.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "atomic.cuh"
#include "launch.cuh"
#include "memory.cuh"
#include "operators.cuh"
#include "partial.cuh"
#include "shared_storage.cuh"
#include "warp.cuh"

namespace ppat::detail {

// What a tile has published: nothing yet (zeroed memory), its aggregate, or its inclusive
// prefix.
enum tile_status : unsigned { status_none = 0, status_aggregate = 1, status_inclusive = 2 };

// A status in the first 4 bytes of a word that holds the value in the rest: 8-byte words
// for values of up to 4 bytes, 16-byte words (read and written whole, as one
// single-copy-atomic 128-bit access) for values of up to 12.
template <class T>
constexpr int packed_words = sizeof(T) <= 4    ? 1
                             : sizeof(T) <= 12 ? 2
                                               : 0;  // 64-bit words
template <class T>
constexpr bool packs_with_status = packed_words<T> != 0;

template <int Words>
struct alignas(8 * Words) packed_word {
  std::uint64_t part[Words];
};

// One slot per tile. A status of another call's epoch, or zeroed memory, means nothing
// published.
template <class T, bool Packed = packs_with_status<T>>
struct tile_slots;

template <class T>
struct tile_slots<T, true> {
  using word = packed_word<packed_words<T>>;
  static constexpr std::size_t status_bytes = sizeof(word);
  word* words;
};

// A status word, and the aggregate and the inclusive prefix in arrays of their own.
template <class T>
struct tile_slots<T, false> {
  static constexpr std::size_t status_bytes = sizeof(unsigned);
  unsigned* status;
  T* aggregates;
  T* inclusives;
};

template <class T>
struct lookback_state {
  unsigned* tile_counter;  // tickets for tile ids, 0 when the kernel starts and ends
  unsigned tiles;
  unsigned epoch;  // this call's, which tags every status it publishes
  tile_slots<T> slots;
};

// A look-back over `tiles` tiles: the tile counter and the status words in a stream_scratch
// of their own layout (`lookback_purpose`), values too large to pack in temporary memory.
struct lookback_layout {
  std::size_t tiles;
  std::size_t flag_bytes;
  std::size_t values;  // of T
};

// The tile counter takes the first 16 bytes, so that packed words stay aligned.
constexpr std::size_t lookback_counter_bytes = 16;

template <class T>
constexpr scratch_purpose lookback_purpose = packed_words<T> == 1   ? lookback_8_byte_words
                                             : packed_words<T> == 2 ? lookback_16_byte_words
                                                                    : lookback_status_words;

template <class T>
lookback_layout plan_lookback(std::size_t tiles) {
  return {tiles, lookback_counter_bytes + tiles * tile_slots<T>::status_bytes,
          packs_with_status<T> ? 0 : 2 * tiles};
}

template <class T>
lookback_state<T> lookback_view(unsigned char* flags, unsigned epoch, T* values,
                                const lookback_layout& layout) {
  unsigned char* slots = flags + lookback_counter_bytes;
  lookback_state<T> state{reinterpret_cast<unsigned*>(flags), unsigned(layout.tiles), epoch, {}};
  if constexpr (packs_with_status<T>) {
    state.slots = {reinterpret_cast<typename tile_slots<T>::word*>(slots)};
  } else {
    state.slots = {reinterpret_cast<unsigned*>(slots), values, values + layout.tiles};
  }
  return state;
}

// Called by one thread of each block: the block's tile id. The block that takes the last
// one puts the counter back to 0 for the next call.
template <class T>
__device__ unsigned next_tile(const lookback_state<T>& state) {
  return take_ticket(state.tile_counter, state.tiles);
}

// A status word's first 32 bits: the epoch above the status. Words of earlier calls (or
// zeroed memory) hold other epochs and read as nothing published.
__device__ inline std::uint32_t status_bits(tile_status status, unsigned epoch) {
  return epoch << 2 | status;
}
__device__ inline tile_status status_in(std::uint32_t bits, unsigned epoch) {
  return bits >> 2 == epoch ? tile_status(bits & 3u) : status_none;
}

// A value's bits in 32-bit pieces, after a first piece that holds the status.
template <class T>
__device__ typename tile_slots<T>::word packed_with_status(std::uint32_t status, const T& value) {
  constexpr int words = packed_words<T>;
  std::uint32_t pieces[2 * words] = {status};
  std::memcpy(&pieces[1], &value, sizeof(T));
  typename tile_slots<T>::word word;
#pragma unroll
  for (int w = 0; w < words; ++w)
    word.part[w] = std::uint64_t(pieces[2 * w]) | std::uint64_t(pieces[2 * w + 1]) << 32;
  return word;
}

template <class T>
__device__ T unpacked(const typename tile_slots<T>::word& word) {
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

// Relaxed whole-word reads and exchanges: the status and the value travel together.
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
__device__ void exchange_word(packed_word<Words>* to, const packed_word<Words>& word) {
  if constexpr (Words == 1) {
    device_atomic<std::uint64_t>(to->part[0]).exchange(word.part[0], cuda::memory_order_relaxed);
  } else {
#if __CUDA_ARCH__ >= 900
    asm volatile(
        "{\n\t.reg .b128 w, old;\n\tmov.b128 w, {%1, %2};\n\t"
        "atom.relaxed.gpu.global.exch.b128 old, [%0], w;\n\t}" ::"l"(to),
        "l"(word.part[0]), "l"(word.part[1])
        : "memory");
#else
    // No 128-bit atomics before sm_90: a single-copy-atomic 128-bit store.
    asm volatile(
        "{\n\t.reg .b128 w;\n\tmov.b128 w, {%1, %2};\n\tst.relaxed.gpu.global.b128 [%0], w;\n\t}" ::
            "l"(to),
        "l"(word.part[0]), "l"(word.part[1])
        : "memory");
#endif
  }
}

template <class T>
__device__ void publish(const lookback_state<T>& state, unsigned tile, tile_status status,
                        const T& value) {
  const std::uint32_t bits = status_bits(status, state.epoch);
  if constexpr (packs_with_status<T>) {
    exchange_word(&state.slots.words[tile], packed_with_status(bits, value));
  } else {
    (status == status_inclusive ? state.slots.inclusives : state.slots.aggregates)[tile] = value;
    device_atomic<unsigned>(state.slots.status[tile]).exchange(bits, cuda::memory_order_release);
  }
}

// One lane's read of one tile's slot: its status, and once published, its value.
template <class T>
struct slot_read {
  tile_status status;
  T value;
};

template <class T>
__device__ slot_read<T> read_slot(const lookback_state<T>& state, unsigned tile) {
  if constexpr (packs_with_status<T>) {
    const auto word = load_word(&state.slots.words[tile]);
    return {status_in(std::uint32_t(word.part[0]), state.epoch), unpacked<T>(word)};
  } else {
    const tile_status status = status_in(
        device_atomic<unsigned>(state.slots.status[tile]).load(cuda::memory_order_acquire),
        state.epoch);
    slot_read<T> read{status, {}};
    if (status != status_none) {
      read.value = load_published(
          &(status == status_inclusive ? state.slots.inclusives : state.slots.aggregates)[tile]);
    }
    return read;
  }
}

// Combinations whose result is exact whatever their order and grouping: integer sums,
// minima and maxima, and operators that say so (`static constexpr bool any_order = true`).
// Their look-back folds a walk's windows across the lanes in a few steps instead of one
// slot after another: a walk that found its inclusive prefix 100 tiles back folded 100
// 12-byte tallies serially, which held every select tile for over a microsecond.
template <class Op, class = void>
struct declares_any_order : std::false_type {};
template <class Op>
struct declares_any_order<Op, std::void_t<decltype(Op::any_order)>>
    : std::bool_constant<Op::any_order> {};
template <class T, class Op>
constexpr bool combines_in_any_order = declares_any_order<Op>::value ||
                                       (std::is_integral_v<T> &&
                                        (std::is_same_v<Op, plus> || std::is_same_v<Op, minimum> ||
                                         std::is_same_v<Op, maximum>));

// Windows of 32 tiles a waiting warp keeps while it walks back: up to 4 KB of them, at most
// 4, since the chain seldom lags further (at 2^28 i32, walks of 1 and 4 windows ran within
// 1%). Past them, the warp polls its furthest window until an inclusive prefix appears there.
template <class T>
constexpr int lookback_windows = std::clamp(int(4096 / (32 * sizeof(T))), 1, 4);

// The windows, in the shared memory of the kernel that waits (its storage holds one).
template <class T>
struct lookback_storage {
  uninitialized_array<T, 32 * lookback_windows<T>> seen;
};

template <class T, class Op>
__device__ void publish_aggregate(const lookback_state<T>& state, unsigned tile, const T& aggregate,
                                  const partial<T>& start, Op op);
template <class T, class Op>
__device__ partial<T> wait_for_prefix(const lookback_state<T>& state, unsigned tile,
                                      const T& aggregate, const partial<T>& start, Op op,
                                      lookback_storage<T>& storage);

// Called by one whole warp of the block that owns `tile`, once its `aggregate` is known.
// Returns the combination of `start` (what precedes tile 0, e.g. an exclusive scan's
// init) and every tile before `tile`, always in the same order.
template <class T, class Op>
__device__ partial<T> lookback_prefix(const lookback_state<T>& state, unsigned tile,
                                      const T& aggregate, const partial<T>& start, Op op,
                                      lookback_storage<T>& storage) {
  publish_aggregate(state, tile, aggregate, start, op);
  return wait_for_prefix(state, tile, aggregate, start, op, storage);
}

// The two halves of lookback_prefix, for a block with work to do between them: the later a
// tile publishes its aggregate, the longer the tiles after it wait.
//
// By one lane: the tile's aggregate (tile 0's inclusive prefix, which is then final).
template <class T, class Op>
__device__ void publish_aggregate(const lookback_state<T>& state, unsigned tile, const T& aggregate,
                                  const partial<T>& start, Op op) {
  if (lane_id() != 0) return;
  if (tile == 0) {
    publish(state, tile, status_inclusive, after(start, aggregate, op));
  } else {
    publish(state, tile, status_aggregate, aggregate);
  }
}

// By one whole warp, after publish_aggregate: waits for the tile's prefix, and publishes its
// inclusive prefix.
template <class T, class Op>
__device__ partial<T> wait_for_prefix(const lookback_state<T>& state, unsigned tile,
                                      const T& aggregate, const partial<T>& start, Op op,
                                      lookback_storage<T>& storage) {
  constexpr int windows = lookback_windows<T>;
  // Window w (0 the newest) at [windows - 1 - w], so that tiles ascend with addresses.
  auto& seen = storage.seen;
  const int lane = lane_id();
  if (tile == 0) return start;
  // The window's first tile, walking back towards tile 0, which is always inclusive.
  int window = 0;
  long long first = static_cast<long long>(tile) - 32;
  for (;;) {
    const long long mine = first + lane;
    const slot_read<T> read =
        mine >= 0 ? read_slot(state, unsigned(mine)) : slot_read<T>{status_aggregate, {}};
    if (!__all_sync(full_warp, read.status != status_none)) continue;
    T* row = &seen[32 * (windows - 1 - window)];
    row[lane] = read.value;
    __syncwarp();
    const unsigned inclusive = __ballot_sync(full_warp, read.status == status_inclusive);
    if (inclusive != 0) {
      const int newest = 31 - __clz(int(inclusive));
      const T* const end = &seen[32 * windows];
      T prefix;
      if constexpr (combines_in_any_order<T, Op>) {
        // Lane l folds slot l of the windows from the inclusive prefix on; the lanes' folds
        // then combine across the warp.
        partial<T> mine{T{}, lane >= newest};
        if (mine.valid) mine.value = row[lane];
        for (const T* newer = row + 32; newer != end; newer += 32)
          mine = then(mine, partial<T>{newer[lane], true}, op);
        prefix = warp_reduce(mine, op).value;
      } else {
        prefix = row[newest];
#pragma unroll 4
        for (const T* next = row + newest + 1; next != end; ++next)
          prefix = op(prefix, *next);
      }
      __syncwarp();
      if (lane == 0) publish(state, tile, status_inclusive, op(prefix, aggregate));
      return {prefix, true};
    }
    if (window + 1 < windows) {
      ++window;
      first -= 32;
    }
  }
}

// By one lane, in a kernel whose tiles are all resident at once (a cooperative launch), where
// a tile may wait on tiles after it: the last tile's inclusive prefix, once published (the
// total, which places partition's rejected items).
template <class T>
__device__ T wait_for_last_inclusive(const lookback_state<T>& state) {
  for (;;) {
    const slot_read<T> read = read_slot(state, state.tiles - 1);
    if (read.status == status_inclusive) return read.value;
    __nanosleep(64);  // every waiting tile polls this one word
  }
}

}  // namespace ppat::detail
