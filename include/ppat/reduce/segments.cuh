// Segmented reduce, the kernels: each segment folded on the path its length needs.
//
//   up to thread_items      one thread folds it, init first, then its items left to right
//                           (read straight from memory up to direct_items)
//   up to stage_items       one warp folds it, lane l items l, l + 32, ... (or row by row)
//   up to warp_items        one warp folds it, as a tile of the reduce folds (warp_shape)
//   longer                  parts of at least part_items_least items, each folded by a block
//                           as a tile run of the reduce (block_shape); thread t folds part
//                           values t * parts_a_thread onwards in order, the block combines
//                           the threads' folds in order, and init goes first
//
// A long segment's parts run on as many blocks as are free (spread), each writing its value
// for the last of them to combine; or one after another on a single block (whole), which
// combines the same values the same way. Which one a segment takes depends on the memory for
// part values, never its result: a segment's operations depend only on its length, so
// floating-point results are the same bits on every run (docs/patterns.md, "Segmented
// reduce").
//
// Segments up to stage_items are staged in shared memory first, so that a warp reads all of
// its short segments at once. reduce_short_segments_kernel folds the segments up to
// warp_items and lists the long ones;
// reduce_long_segments_kernel folds the listed ones (or the rows of a matrix, which need no
// list). Where the segments are no more than a few times the blocks the GPU holds at once,
// reduce_few_segments_kernel folds them all in one launch instead, each block a few of them,
// with the same results to the bit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../core/atomic.cuh"
#include "../core/block.cuh"
#include "../core/launch.cuh"
#include "../core/operators.cuh"
#include "../core/partial.cuh"
#include "../core/segments.cuh"
#include "../core/shared_storage.cuh"
#include "../core/vector_io.cuh"
#include "../core/warp.cuh"
#include "../reduce.cuh"

namespace ppat::detail {

template <class T>
struct segment_reduce_paths {
  static constexpr int vec = items_per_vector<T>;
  using warp_shape = reduce_tile_shape<tuning<32, 64, 1>, T, vec>;
  // Blocks of 256 threads, six an SM: a long segment's part is one block's tiles, and many
  // blocks an SM overlap one part's combining with another's reads.
  using block_shape = reduce_tile_shape<tuning<256, 64, 6>, T, vec>;
  // A warp stages the short segments of its 32 in shared memory, 2 KB at a time: all their
  // reads in flight together, then each folded there.
  static constexpr int stage_rows = std::clamp(2048 / (32 * int(sizeof(T))), 1, 32);
  static constexpr std::size_t stage_items = 32 * std::size_t(stage_rows);
  static constexpr std::size_t direct_items = 8;
  static constexpr std::size_t thread_items = 32;
  static constexpr std::size_t warp_items =
      std::max(4 * std::size_t(warp_shape::tile_items), stage_items);
  static constexpr std::size_t part_items_least = 4 * std::size_t(block_shape::tile_items);
  static constexpr unsigned parts_a_thread = 8;
  static constexpr unsigned most_parts = unsigned(block_shape::threads) * parts_a_thread;
};

constexpr int short_segment_threads = 256;

// How a long segment of `length` items is cut: as few parts as give each at least
// part_items_least items, at most most_parts, a whole number of block tiles each but the last.
struct segment_parts {
  std::size_t items;  // of every part but the last, which may hold fewer
  unsigned count;
};

template <class T>
__host__ __device__ segment_parts parts_of(std::size_t length) {
  using paths = segment_reduce_paths<T>;
  const std::size_t wanted = ceil_div(length, paths::part_items_least);
  const std::size_t parts = wanted < paths::most_parts ? wanted : paths::most_parts;
  const std::size_t tile = paths::block_shape::tile_items;
  const std::size_t items = ceil_div(ceil_div(length, parts), tile) * tile;
  return {items, unsigned(ceil_div(length, items))};
}

// `count` items from `first`, folded by warp `warp` of a Shape block (fold_tile_run), with
// 16-byte reads where `first` allows them.
template <class Shape, bool Commutative, class T, class Op>
__device__ partial<T> fold_items(const T* first, std::size_t count, int warp, Op op) {
  const std::size_t tiles = ceil_div(count, Shape::tile_items);
  if constexpr (Shape::vec > 1) {
    if (reinterpret_cast<std::uintptr_t>(first) % 16 != 0)
      return fold_tile_run<Shape, Commutative, false>(first, count, 0, tiles, warp, op);
  }
  return fold_tile_run<Shape, Commutative, true>(first, count, 0, tiles, warp, op);
}

// init, then the `count` (at most direct_items) items from `first`, all read at once.
template <class T, class Op>
__device__ T fold_alone(const T* first, std::size_t count, const T& init, Op op) {
  constexpr int most = int(segment_reduce_paths<T>::direct_items);
  T items[most];
#pragma unroll
  for (int j = 0; j < most; ++j) {
    if (std::size_t(j) < count) items[j] = load_item(first + j);
  }
  T total = init;
#pragma unroll
  for (int j = 0; j < most; ++j) {
    if (std::size_t(j) < count) total = op(total, items[j]);
  }
  return total;
}

// A warp's staging memory: the items of some of its segments, one after another, where
// segment l (of lane l) begins at starts[l] and ends at starts[l + 1], and where in `in`.
// Item p lies at p + p / 32: with a gap after every 32, lanes folding their own segments
// (16 items apart, say) read different banks, where without it they took turns (ncu: the
// shared-memory pipe was the limit of segments of 16 items).
template <class T>
struct segment_stage {
  static constexpr int room = int(segment_reduce_paths<T>::stage_items * 33 / 32);
  uninitialized_array<T, room> slots;
  unsigned starts[33];
  std::size_t begins[32];

  __device__ T& item(unsigned p) { return slots[int(p + p / 32)]; }
};

// The `length` staged items from `start`, folded by the warp: lane l folds items l, l + 32,
// ... in order (Commutative) or each row of 32 is folded across the warp first; the warp's
// result on every lane.
template <bool Commutative, class T, class Op>
__device__ partial<T> warp_fold_staged(segment_stage<T>& stage, unsigned start, unsigned length,
                                       Op op) {
  const unsigned lane = unsigned(lane_id());
  partial<T> folded{T{}, false};
  for (unsigned row = 0; row < length; row += 32) {
    const partial<T> item = row + lane < length ? partial<T>{stage.item(start + row + lane), true}
                                                : partial<T>{T{}, false};
    folded = then(folded, Commutative ? item : warp_reduce(item, op), op);
  }
  return Commutative ? warp_reduce(folded, op) : folded;
}

// Folds the segments of this warp's lanes that `staged` marks (each at most stage_items
// long), writing out[index]: as many as fit the stage at a time, lanes in order. Every lane
// reads stage_rows items of the run of staged segments at once, so a warp has its segments'
// reads in flight together however short they are; a segment of at most thread_items is then
// folded by its own lane, init first, left to right, and a longer one by the warp.
template <class T, class Op>
__device__ void fold_staged_segments(const T* in, T* out, bool staged, std::size_t index,
                                     const segment_range& range, const T& init, Op op,
                                     segment_stage<T>& stage) {
  using paths = segment_reduce_paths<T>;
  constexpr bool reorder = commutative<T, Op>;
  const int lane = lane_id();
  unsigned waiting = __ballot_sync(full_warp, staged);
  while (waiting != 0) {
    const bool mine = (waiting >> lane) & 1u;
    const unsigned length = mine ? unsigned(range.length) : 0u;
    const unsigned through = warp_inclusive_scan(length, plus{});
    const bool in_batch = mine && through <= paths::stage_items;
    const unsigned batch = __ballot_sync(full_warp, in_batch);
    const unsigned total = __shfl_sync(full_warp, through, 31 - __clz(batch));
    const unsigned start = through - length;
    stage.starts[lane] = start < total ? start : total;
    stage.begins[lane] = range.begin;
    if (lane == 0) stage.starts[32] = total;
    __syncwarp();

    T items[paths::stage_rows];
    int segment = 0;
#pragma unroll
    for (int k = 0; k < paths::stage_rows; ++k) {
      const unsigned at = unsigned(lane + 32 * k);
      if (at < total) {
        while (stage.starts[segment + 1] <= at)
          ++segment;
        items[k] = load_item(in + stage.begins[segment] + (at - stage.starts[segment]));
      }
    }
#pragma unroll
    for (int k = 0; k < paths::stage_rows; ++k) {
      const unsigned at = unsigned(lane + 32 * k);
      if (at < total) stage.item(at) = items[k];
    }
    __syncwarp();

    if (in_batch && length <= paths::thread_items) {
      T folded = init;
      for (unsigned j = 0; j < length; ++j)
        folded = op(folded, stage.item(start + j));
      out[index] = folded;
    }
    unsigned by_warp = __ballot_sync(full_warp, in_batch && length > paths::thread_items);
    while (by_warp != 0) {
      const int owner = __ffs(by_warp) - 1;
      by_warp &= by_warp - 1;
      const partial<T> total_of_segment = warp_fold_staged<reorder>(
          stage, __shfl_sync(full_warp, start, owner), __shfl_sync(full_warp, length, owner), op);
      if (lane == owner) out[index] = op(init, total_of_segment.value);
    }
    __syncwarp();  // the stage read
    waiting &= ~batch;
  }
}

// One segment of up to warp_items items, folded by the calling warp (every lane calls) as the
// short-segment kernel folds it, so that its result is the same bits: by lane 0 straight from
// memory, staged and folded by lane 0 or by the warp, or by the warp from memory.
template <class T, class Op>
__device__ void fold_segment_by_warp(const T* in, T* out, std::size_t index,
                                     const segment_range& range, const T& init, Op op,
                                     segment_stage<T>& stage) {
  using paths = segment_reduce_paths<T>;
  const int lane = lane_id();
  if (range.length <= paths::direct_items) {
    if (lane == 0) out[index] = fold_alone(in + range.begin, range.length, init, op);
  } else if (range.length <= paths::stage_items) {
    fold_staged_segments(in, out, lane == 0, index, range, init, op, stage);
  } else {
    const partial<T> total = fold_items<typename paths::warp_shape, commutative<T, Op>>(
        in + range.begin, range.length, 0, op);
    if (lane == 0) out[index] = op(init, total.value);
  }
}

// ---- The list of long segments ---------------------------------------------------------------

constexpr unsigned no_parts = 0xFFFFFFFFu;

struct long_segment {
  std::size_t index;
  segment_range range;
  unsigned first_part;  // its first part slot, or no_parts
};

// The long segments the short-segment kernel found, for the long-segment kernel. Segments
// found beyond `capacity` are counted, not listed: then the long-segment kernel looks at
// every segment again. A listed segment of several parts takes part slots while they last;
// without them (or with one part) a single block folds it whole.
template <class T>
struct long_segment_list {
  // In counter memory (0 when lent, put back to 0 by the long-segment kernel): segments
  // found, part slots taken, the long-segment kernel's finished blocks, then a ticket a part
  // slot: the parts finished of the segment whose first slot it is.
  unsigned long long* counts;
  unsigned* tickets;
  // Temporary memory, written before it is read.
  long_segment* entries;
  unsigned* part_entry;  // of each part slot
  T* part_values;        // of each part slot
  std::size_t capacity;  // entries
  std::size_t parts_capacity;

  // Called by every lane of a warp: lists the segments of the lanes with `is_long`.
  __device__ void add(bool is_long, std::size_t index, const segment_range& range) const {
    if (__ballot_sync(full_warp, is_long) == 0) return;
    const int lane = lane_id();
    const unsigned long long entry = warp_claim_slot(&counts[0], is_long);
    const bool listed = is_long && entry < capacity;
    const segment_parts parts = listed ? parts_of<T>(range.length) : segment_parts{0, 0};
    const unsigned spread = parts.count > 1 ? parts.count : 0;
    const unsigned spread_through = warp_inclusive_scan(spread, plus{});
    const unsigned spread_total = __shfl_sync(full_warp, spread_through, 31);
    unsigned long long first_slot = 0;
    if (lane == 0 && spread_total > 0) first_slot = atomicAdd(&counts[1], spread_total);
    const unsigned long long slot =
        __shfl_sync(full_warp, first_slot, 0) + (spread_through - spread);
    const bool has_slots = spread > 0 && slot + spread <= parts_capacity;
    if (listed) entries[entry] = {index, range, has_slots ? unsigned(slot) : no_parts};
    // The warp names the entry of every slot its lanes took, one lane's slots at a time.
    unsigned naming = __ballot_sync(full_warp, has_slots);
    while (naming != 0) {
      const int owner = __ffs(naming) - 1;
      naming &= naming - 1;
      const unsigned owner_slot = __shfl_sync(full_warp, unsigned(slot), owner);
      const unsigned owner_parts = __shfl_sync(full_warp, spread, owner);
      const unsigned owner_entry = __shfl_sync(full_warp, unsigned(entry), owner);
      for (unsigned j = unsigned(lane); j < owner_parts; j += 32)
        part_entry[owner_slot + j] = owner_entry;
    }
  }

  // Calls spread(index, range, parts, part, values, ticket) for every listed part slot and
  // whole(index, range, parts) for every long segment without slots, each once, over the
  // grid's blocks; every thread of a block calls them together. A block takes a run of
  // consecutive slots, most of them of one segment, whose entry it reads once.
  template <class Segments, class Spread, class Whole>
  __device__ void each(const Segments& segments, Spread spread, Whole whole) const {
    const unsigned long long found = counts[0];
    const unsigned long long taken = counts[1];
    const std::size_t listed = found < capacity ? std::size_t(found) : capacity;
    const std::size_t slots = taken < parts_capacity ? std::size_t(taken) : parts_capacity;
    unsigned known = no_parts;
    long_segment segment{};
    segment_parts parts{};
    for (std::size_t p = slots * blockIdx.x / gridDim.x; p < slots * (blockIdx.x + 1) / gridDim.x;
         ++p) {
      // A slot of a run that did not fit has no entry: what it holds names none whose slots
      // include it.
      const unsigned entry = part_entry[p];
      if (entry >= listed) continue;
      if (entry != known) {
        known = entry;
        segment = entries[entry];
        parts = parts_of<T>(segment.range.length);
      }
      if (segment.first_part == no_parts || p < segment.first_part ||
          p - segment.first_part >= parts.count)
        continue;
      spread(segment.index, segment.range, parts, unsigned(p - segment.first_part),
             part_values + segment.first_part, tickets + segment.first_part);
    }
    // Whole segments: the next one's entry read while this one is folded.
    long_segment next = blockIdx.x < listed ? entries[blockIdx.x] : long_segment{};
    for (std::size_t e = blockIdx.x; e < listed; e += gridDim.x) {
      const long_segment current = next;
      if (e + gridDim.x < listed) next = entries[e + gridDim.x];
      if (current.first_part == no_parts)
        whole(current.index, current.range, parts_of<T>(current.range.length));
    }
    if (found > capacity) {
      // Some long segments were not listed: every long one is folded whole, the listed ones
      // again, to the same bits.
      for (std::size_t index = blockIdx.x; index < segments.count; index += gridDim.x) {
        const segment_range range = segments(index);
        if (range.length > segment_reduce_paths<T>::warp_items)
          whole(index, range, parts_of<T>(range.length));
      }
    }
  }

  // Called by one thread of each block once it is done with the counts.
  __device__ void finished() const {
    if (last_to_finish(reinterpret_cast<unsigned*>(&counts[2]), gridDim.x)) {
      counts[0] = 0;
      counts[1] = 0;
    }
  }
};

// Rows of one length, longer than a warp folds: parts spread when a row has several
// (`part_values` holds rows x parts, `tickets` one a row, in counter memory), whole rows
// otherwise.
template <class T>
struct long_rows {
  T* part_values;
  unsigned* tickets;

  template <class Spread, class Whole>
  __device__ void each(const row_segments& rows, Spread spread, Whole whole) const {
    const segment_parts parts = parts_of<T>(rows.cols);
    if (parts.count == 1) {
      for (std::size_t row = blockIdx.x; row < rows.count; row += gridDim.x)
        whole(row, rows(row), parts);
      return;
    }
    const std::size_t slots = rows.count * parts.count;
    for (std::size_t p = blockIdx.x; p < slots; p += gridDim.x) {
      const std::size_t row = p / parts.count;
      spread(row, rows(row), parts, unsigned(p - row * parts.count),
             part_values + row * parts.count, tickets + row);
    }
  }
  __device__ void finished() const {}
};

// ---- The kernels ---------------------------------------------------------------------------

// Each warp takes `per_warp` segments at a time (one a lane; fewer than 32 when segments are
// few, so that they spread over the GPU's warps). Segments of up to direct_items are folded
// by their lane straight from memory, those up to stage_items are staged and folded by
// their warp's lanes or the warp, longer ones a warp folds are folded by the warp straight
// from memory, one after another, and long ones are listed.
template <class T, class Segments, class Op>
__global__ void __launch_bounds__(short_segment_threads)
    reduce_short_segments_kernel(const T* in, T* out, Segments segments, unsigned per_warp, T init,
                                 Op op, long_segment_list<T> longs) {
  using paths = segment_reduce_paths<T>;
  constexpr bool reorder = commutative<T, Op>;
  constexpr unsigned warps = short_segment_threads / 32;
  __shared__ segment_stage<T> stages[warps];
  const int lane = lane_id();
  segment_stage<T>& stage = stages[threadIdx.x / 32];
  const std::size_t step = std::size_t(gridDim.x) * warps * per_warp;
  for (std::size_t first = (std::size_t(blockIdx.x) * warps + threadIdx.x / 32) * per_warp;
       first < segments.count; first += step) {
    const std::size_t index = first + unsigned(lane);
    const bool real = unsigned(lane) < per_warp && index < segments.count;
    const segment_range range = real ? segments(index) : segment_range{0, 0};
    if (real && range.length <= paths::direct_items)
      out[index] = fold_alone(in + range.begin, range.length, init, op);
    fold_staged_segments(
        in, out, real && range.length > paths::direct_items && range.length <= paths::stage_items,
        index, range, init, op, stage);

    unsigned by_warp = __ballot_sync(
        full_warp, real && range.length > paths::stage_items && range.length <= paths::warp_items);
    while (by_warp != 0) {
      const int owner = __ffs(by_warp) - 1;
      by_warp &= by_warp - 1;
      const std::size_t begin = shuffle_from(range.begin, owner);
      const std::size_t length = shuffle_from(range.length, owner);
      const partial<T> total =
          fold_items<typename paths::warp_shape, reorder>(in + begin, length, 0, op);
      if (lane == owner) out[index] = op(init, total.value);
    }

    longs.add(real && range.length > paths::warp_items, index, range);
  }
}

template <class T>
using long_segment_shape = typename segment_reduce_paths<T>::block_shape;

// A block's folds of segments longer than a warp folds, for reduce_long_segments_kernel and
// reduce_few_segments_kernel: a part; a part of a spread segment, whose value the last block
// to finish the segment combines with the others; a whole segment, part after part,
// combining the same values the same way. Every thread of the block calls them together.
template <class T, class Op>
struct block_segment_folds {
  using shape = long_segment_shape<T>;
  using paths = segment_reduce_paths<T>;
  static constexpr bool reorder = commutative<T, Op>;

  struct storage {
    block_reduce_storage<shape::warps, T> warp_results;
    uninitialized_array<T, 1> part_value;
    bool is_last;
  };

  const T* in;
  T* out;
  T init;
  Op op;
  storage& shared;

  // Part `part` of the segment at `range`, folded; its value on thread 0.
  __device__ T fold_part(const segment_range& range, const segment_parts& parts,
                         unsigned part) const {
    const int warp = int(threadIdx.x / 32);
    const std::size_t offset = std::size_t(part) * parts.items;
    const std::size_t count =
        range.length - offset < parts.items ? range.length - offset : parts.items;
    const partial<T> value =
        block_reduce_warps(fold_items<shape, reorder>(in + range.begin + offset, count, warp, op),
                           op, shared.warp_results);
    __syncthreads();  // warp_results read
    return value.value;
  }

  // Each thread's fold of its parts, combined in order after init.
  __device__ void finish(std::size_t index, const partial<T>& mine) const {
    const partial<T> total = block_reduce_warps(warp_reduce(mine, op), op, shared.warp_results);
    if (threadIdx.x == 0) out[index] = op(init, total.value);
    __syncthreads();  // warp_results read
  }

  // Part `part`, its value written to values[part]; the block that finishes the segment's
  // last part (the ticket says which) combines them all.
  __device__ void spread(std::size_t index, const segment_range& range, const segment_parts& parts,
                         unsigned part, T* values, unsigned* ticket) const {
    const T value = fold_part(range, parts, part);
    if (threadIdx.x == 0) {
      values[part] = value;
      shared.is_last = last_to_finish(ticket, parts.count);
    }
    __syncthreads();
    if (!shared.is_last) return;  // written again only past fold_part's barriers
    partial<T> mine{T{}, false};
    for (unsigned j = 0; j < paths::parts_a_thread; ++j) {
      const unsigned p = threadIdx.x * paths::parts_a_thread + j;
      if (p < parts.count) mine = then(mine, partial<T>{load_published(&values[p]), true}, op);
    }
    finish(index, mine);
  }

  __device__ void whole(std::size_t index, const segment_range& range,
                        const segment_parts& parts) const {
    if (parts.count == 1) {  // what finish would make of one part value, without its steps
      const T value = fold_part(range, parts, 0);
      if (threadIdx.x == 0) out[index] = op(init, value);
      return;
    }
    partial<T> mine{T{}, false};
    for (unsigned p = 0; p < parts.count; ++p) {
      const T value = fold_part(range, parts, p);
      if (threadIdx.x == 0) shared.part_value[0] = value;
      __syncthreads();
      if (threadIdx.x == p / paths::parts_a_thread)
        mine = then(mine, partial<T>{shared.part_value[0], true}, op);
      __syncthreads();  // part_value read
    }
    finish(index, mine);
  }
};

// A block at a time: each part of a spread segment, or a whole segment.
template <class T, class Segments, class Work, class Op>
__global__ void __launch_bounds__(long_segment_shape<T>::threads,
                                  long_segment_shape<T>::min_blocks_per_sm)
    reduce_long_segments_kernel(const T* in, T* out, Segments segments, Work work, T init, Op op) {
  wait_for_earlier_kernels();
  __shared__ typename block_segment_folds<T, Op>::storage storage;
  const block_segment_folds<T, Op> folds{in, out, init, op, storage};
  work.each(
      segments,
      [&](std::size_t index, const segment_range& range, const segment_parts& parts, unsigned part,
          T* values, unsigned* ticket) { folds.spread(index, range, parts, part, values, ticket); },
      [&](std::size_t index, const segment_range& range, const segment_parts& parts) {
        folds.whole(index, range, parts);
      });
  if (threadIdx.x == 0) work.finished();
}

// ---- Few segments, one launch ------------------------------------------------------------

// Memory of reduce_few_segments_kernel, lent as counters_epochs_then_values, at places fixed
// for every call: counters, epoch-tagged words, a ticket a part slot, then the slots' entries
// and part values, written before they are read.
template <class T>
struct few_segment_slots {
  static constexpr std::size_t most = std::size_t(1) << 16;
  static constexpr std::size_t counts_offset = 0;   // listers done, slots taken
  static constexpr std::size_t listed_offset = 16;  // epoch << 32 | slots listed
  static constexpr std::size_t cursor_offset = 24;  // epoch << 32 | slots the helpers claimed
  static constexpr std::size_t tickets_offset = 32;
  static constexpr std::size_t entries_offset = tickets_offset + 4 * most;
  static constexpr std::size_t values_offset =
      (entries_offset + 8 * most + alignof(T) - 1) / alignof(T) * alignof(T);
  static constexpr std::size_t bytes = values_offset + sizeof(T) * most;

  unsigned char* memory;
  unsigned epoch;
  std::size_t capacity;  // slots this call may take, at most `most`

  __device__ unsigned* counts() const { return reinterpret_cast<unsigned*>(memory); }
  __device__ unsigned long long* listed() const {
    return reinterpret_cast<unsigned long long*>(memory + listed_offset);
  }
  __device__ unsigned long long* cursor() const {
    return reinterpret_cast<unsigned long long*>(memory + cursor_offset);
  }
  __device__ unsigned* tickets() const {
    return reinterpret_cast<unsigned*>(memory + tickets_offset);
  }
  // A slot's part, segment << 32 | part << 1 | 1, until a block claims it (0).
  __device__ unsigned long long* entries() const {
    return reinterpret_cast<unsigned long long*>(memory + entries_offset);
  }
  __device__ T* values() const { return reinterpret_cast<T*>(memory + values_offset); }
};

// A helper waits this long at most for the listers (see below).
constexpr unsigned long long few_segment_patience_ns = 20000;
// Blocks an SM: four (64 registers) for items of 4 bytes and more, which spilled at six (40
// registers); three (80) for 1- and 2-byte items, whose warp folds spilled at four.
template <class T>
constexpr int few_segment_blocks_per_sm = sizeof(T) >= 4 ? 4 : 3;
// Segments a block of reduce_few_segments_kernel takes at most: one a warp, so that segments
// a warp folds are folded side by side.
template <class T>
constexpr unsigned few_segments_a_block = unsigned(long_segment_shape<T>::threads / 32);

// Segments up to few_segments_a_block times the blocks resident at once, in one launch:
// block b of the grid's g takes segments b, b + g, ... (its segments; none for b past the
// last segment: a helper). A block with segments
//   1. reads them; those that spread over several parts take a run of part slots and list
//      their parts there, and the last block to have listed says how many slots there are;
//   2. folds them as the two-kernel path would, so that the results are the same bits:
//      those a warp folds, a warp each side by side (a block with one segment of more than
//      stage_items reads it into shared memory at once instead, all its threads' loads in
//      flight, and a warp folds it there); those of one part, or that found no slots, on the
//      whole block; those listed, the block claiming their parts from the last one down until
//      it finds one taken.
// A helper waits for every block with segments to have listed, then claims slots from the
// first up, a part folded by the block that claims it and the last to finish a segment
// combining its parts. Where segments are at least as many as the blocks, there is no
// helper: each block helps once it has folded all but the parts it listed, and then claims
// what is left of those. Blocks are not sure to run together: a helper that has waited
// few_segment_patience_ns without the listing done claims nothing, and the segments' blocks
// fold whatever parts no helper claimed.
template <class T, class Segments, class Op>
__global__ void __launch_bounds__(long_segment_shape<T>::threads, few_segment_blocks_per_sm<T>)
    reduce_few_segments_kernel(const T* in, T* out, Segments segments, T init, Op op,
                               few_segment_slots<T> slots) {
  using paths = segment_reduce_paths<T>;
  constexpr unsigned threads = unsigned(long_segment_shape<T>::threads);
  constexpr unsigned most = few_segments_a_block<T>;
  // A block's one segment of more than stage_items is read by the whole block into `run`
  // first, all at once, where 16-byte vectors hold whole items of at least 4 bytes (1- and
  // 2-byte items spilled, 32 and 16 a thread).
  constexpr bool block_reads_run = one_access<T, paths::vec> && sizeof(T) >= 4;
  struct alignas(16) staged_run {
    uninitialized_array<T, block_reads_run ? int(paths::warp_items) : 1> items;
  };
  // A segment of the block's, as step 1 read it.
  struct planned_segment {
    segment_range range;
    segment_parts parts;  // of a segment longer than a warp folds; no parts otherwise
    std::size_t first;    // its first part slot, where it spreads
    bool listed;          // its parts are in the slots
  };
  // The warps' staging memory, or the run of a block's one segment.
  union warp_stages_or_run {
    segment_stage<T> stages[most];
    staged_run run;
  };
  __shared__ typename block_segment_folds<T, Op>::storage fold_storage;
  __shared__ warp_stages_or_run staging;
  __shared__ planned_segment planned[most];
  __shared__ unsigned long long shared_word;
  const block_segment_folds<T, Op> folds{in, out, init, op, fold_storage};
  const unsigned long long epoch = std::uint64_t(slots.epoch) << 32;
  const std::size_t grid = gridDim.x;
  const auto index_of = [&](unsigned j) { return blockIdx.x + std::size_t(j) * grid; };
  const unsigned mine =
      blockIdx.x < segments.count ? unsigned(ceil_div(segments.count - blockIdx.x, grid)) : 0u;
  // The part of `slot`, if this block is the first to claim it (false if not). Every thread
  // calls.
  const auto fold_claimed = [&](unsigned long long slot) {
    __syncthreads();  // shared_word read
    if (threadIdx.x == 0)
      shared_word = device_atomic<unsigned long long>(slots.entries()[slot]).exchange(0);
    __syncthreads();
    const unsigned long long entry = shared_word;
    if (entry == 0) return false;  // claimed by another block, or a slot of a run that did not fit
    const std::size_t index = std::size_t(entry >> 32);
    const auto part = unsigned(entry & 0xFFFFFFFFull) >> 1;
    const segment_range range = segments(index);
    const std::size_t first = std::size_t(slot) - part;
    folds.spread(index, range, parts_of<T>(range.length), part, slots.values() + first,
                 slots.tickets() + first);
    return true;
  };

  if (mine > 0) {
    // 1. The segments, and the parts of those that spread: warp 0 reads them, a lane each,
    // and takes the block's slots with one addition.
    if (threadIdx.x < 32) {
      const unsigned j = threadIdx.x;
      const segment_range range = j < mine ? segments(index_of(j)) : segment_range{0, 0};
      const segment_parts parts =
          range.length > paths::warp_items ? parts_of<T>(range.length) : segment_parts{0, 0};
      const unsigned spread = parts.count > 1 ? parts.count : 0u;
      const unsigned through = warp_inclusive_scan(spread, plus{});
      const unsigned total = __shfl_sync(full_warp, through, 31);
      unsigned block_first = 0;
      if (j == 0 && total > 0) block_first = atomicAdd(&slots.counts()[1], total);
      const std::size_t first =
          std::size_t(__shfl_sync(full_warp, block_first, 0)) + (through - spread);
      if (j < mine)
        planned[j] = {range, parts, first, spread > 0 && first + spread <= slots.capacity};
    }
    __syncthreads();
    bool spreads = false;
    for (unsigned j = 0; j < mine; ++j) {
      const planned_segment& s = planned[j];
      if (s.parts.count <= 1) continue;
      spreads = true;
      const std::size_t index = index_of(j);
      for (unsigned p = threadIdx.x; p < s.parts.count && s.first + p < slots.capacity;
           p += threads)
        slots.entries()[s.first + p] = s.listed ? std::uint64_t(index) << 32 | p << 1 | 1u : 0;
    }
    __syncthreads();  // the slots written
    // Said by a thread of the second warp. Its addition does not acquire, so that the warp
    // need not wait for it (and releases only the slots the block wrote): the last block to
    // add (which the value before it tells) opens the slots to the helpers, at once, so that
    // blocks done with their own segments need not wait for its folds.
    const std::size_t listers = segments.count < grid ? segments.count : grid;
    if (threadIdx.x == 32 &&
        device_atomic<unsigned>(slots.counts()[0])
                .fetch_add(1, spreads ? cuda::memory_order_release : cuda::memory_order_relaxed) ==
            listers - 1) {
      cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
      device_atomic<unsigned> done(slots.counts()[0]);
      device_atomic<unsigned> taken(slots.counts()[1]);
      const unsigned long long taken_slots = taken.load(cuda::memory_order_relaxed);
      taken.store(0, cuda::memory_order_relaxed);
      done.store(0, cuda::memory_order_relaxed);
      device_atomic<unsigned long long>(*slots.cursor()).store(epoch, cuda::memory_order_relaxed);
      device_atomic<unsigned long long>(*slots.listed())
          .store(epoch | (taken_slots < slots.capacity ? taken_slots : slots.capacity),
                 cuda::memory_order_release);
    }

    // 2. The folds: first the segments a warp folds, a warp each.
    const bool one_run = block_reads_run && mine == 1 &&
                         planned[0].range.length > paths::stage_items &&
                         planned[0].range.length <= paths::warp_items;
    const unsigned warp = threadIdx.x / 32;
    if (warp < mine && !one_run && planned[warp].range.length <= paths::warp_items)
      fold_segment_by_warp(in, out, index_of(warp), planned[warp].range, init, op,
                           staging.stages[warp]);
    if (one_run) {
      if constexpr (block_reads_run) {
        // Every item in flight at once, then the warp's fold of them.
        const segment_range range = planned[0].range;
        constexpr int items_a_thread = int(paths::warp_items / threads);
        static_assert(paths::warp_items % threads == 0, "the run is whole rows of the block");
        T items[items_a_thread];
#pragma unroll
        for (int k = 0; k < items_a_thread; ++k) {
          const unsigned i = threadIdx.x + unsigned(k) * threads;
          if (i < range.length) items[k] = load_item(in + range.begin + i);
        }
#pragma unroll
        for (int k = 0; k < items_a_thread; ++k) {
          const unsigned i = threadIdx.x + unsigned(k) * threads;
          if (i < range.length) staging.run.items[int(i)] = items[k];
        }
        __syncthreads();
        if (threadIdx.x < 32) {
          const partial<T> total = fold_items<typename paths::warp_shape, commutative<T, Op>>(
              &staging.run.items[0], range.length, 0, op);
          if (threadIdx.x == 0) out[index_of(0)] = op(init, total.value);
        }
      }
    }
    // Then those of one part, or without slots, on the block.
    for (unsigned j = 0; j < mine; ++j) {
      const planned_segment& s = planned[j];
      if (s.range.length > paths::warp_items && !s.listed)
        folds.whole(index_of(j), s.range, s.parts);
    }
  }
  // Its own parts of the segments it listed, from the last down, while the helpers claim
  // slots from the first up: where a part is taken, a helper has taken the rest or will.
  const auto fold_own_parts = [&] {
    for (unsigned j = 0; j < mine; ++j) {
      const planned_segment& s = planned[j];
      if (!s.listed) continue;
      for (unsigned p = s.parts.count; p-- > 0;) {
        if (!fold_claimed(s.first + p)) break;
      }
    }
  };
  // Where there are helpers, a block with segments folds its own parts and is done. Where
  // there are none, every block helps first, from the first slot up with the others, and then
  // folds what no block has claimed of its own (nothing, unless the listing was not done in
  // time): had each block folded its own parts first, the blocks done early would have
  // walked through slots already taken, two atomics a slot (segments of 100,000 items, 671 of
  // them, took 10% longer than on the two kernels; docs/patterns.md, "Segmented reduce").
  if (mine > 0 && segments.count < grid) {
    fold_own_parts();
    return;
  }

  // 3. Helping: the listed slots, in order, once every block with segments has listed.
  __syncthreads();  // shared_word read
  if (threadIdx.x == 0) {
    const device_atomic<unsigned long long> listed(*slots.listed());
    const unsigned long long since = global_time_ns();
    unsigned long long word = listed.load(cuda::memory_order_acquire);
    while ((word & ~0xFFFFFFFFull) != epoch && global_time_ns() - since < few_segment_patience_ns) {
      __nanosleep(100);
      word = listed.load(cuda::memory_order_acquire);
    }
    shared_word = (word & ~0xFFFFFFFFull) == epoch ? word & 0xFFFFFFFFull : 0;
  }
  __syncthreads();
  const unsigned long long total = shared_word;
  while (total != 0) {
    __syncthreads();  // shared_word read
    if (threadIdx.x == 0) shared_word = atomicAdd(slots.cursor(), 1ull) & 0xFFFFFFFFull;
    __syncthreads();
    const unsigned long long slot = shared_word;
    if (slot >= total) break;
    fold_claimed(slot);
  }
  fold_own_parts();
}

}  // namespace ppat::detail
