// The single-pass scan every scan in ppat runs on: one launch, one pass over memory,
// deterministic. A source (plain_source in scan.cuh, by_key_source and segment_reduce_source
// in scan/by_key.cuh) says what a position loads and what it writes; the kernel reads one
// tile into registers, scans it across its warps (core/block.cuh), and learns the tile's
// prefix from the tiles before it through the look-back of core/lookback.cuh.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "../core/arguments.cuh"
#include "../core/block.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/lookback.cuh"
#include "../core/memory.cuh"
#include "../core/partial.cuh"
#include "../core/shared_storage.cuh"
#include "../core/vector_io.cuh"
#include "../core/warp.cuh"

namespace ppat::detail {

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

// The H200's policies: 256 threads, and as many tiles an SM as their registers allow, each
// the fastest measured at 2^28 with the look-back of core/lookback.cuh (docs/patterns.md,
// "Scan", how it got here):
//   - i32: 32 items a thread at 4 tiles an SM (24 at 4 or 5 tiles, and the same tiles
//     staged in shared memory, were slower);
//   - i64: 16 items a thread at 3 tiles an SM (12 to 24 items at 2 to 4 tiles slower; 16 at
//     4 tiles spills);
//   - u8 and i16 (packed four and two to a register): 96 bytes a thread at 3 tiles an SM
//     (64 bytes at 4 or 5 tiles, 128 bytes at 2, slower);
//   - larger items: 96 bytes at 2 tiles, which their registers fit.
template <class Item>
using scan_tuning =
    std::conditional_t<sizeof(Item) < 4, tuning<256, 96, 3>,
                       std::conditional_t<sizeof(Item) == 4, tuning<256, 128, 4>,
                                          std::conditional_t<sizeof(Item) == 8, tuning<256, 128, 3>,
                                                             tuning<256, 96, 2>>>>;
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

template <class Shape, class Source>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    single_pass_scan_kernel(Source source, std::size_t n,
                            lookback_state<typename Source::item> state,
                            scan_start<typename Source::item> start) {
  using item = typename Source::item;
  constexpr int vec = Shape::vec;
  constexpr int rows = Shape::rows;
  const typename Source::combiner op = source.op;
  // The tile's shared memory: its ticket, the warps' prefixes, and the look-back's windows
  // of 32 items (lookback_windows: up to four and 4 KB of them, one for items over 64
  // bytes), within the 48 KB a launch gets without opting in. Declared apart, not as one
  // struct: as one, the i32 scan one item off 16 B took 12% longer at 2^28 (1092 us against
  // 972), with the same registers.
  __shared__ unsigned tile_slot;
  __shared__ block_scan_storage<Shape::warps, item> warp_prefixes;
  __shared__ lookback_storage<item> lookback;
  static_assert(sizeof(tile_slot) + sizeof(warp_prefixes) + sizeof(lookback) <= 48 * 1024,
                "ppat scans take items of up to 1.2 KB");
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
  // vectors up to n: item by item, the last tile of a u8 scan took about 3 us longer. With
  // fewer, it moves item by item: the extra branch made the exclusive scan by key spill and
  // cost it 18% at 2^28 (docs/patterns.md, "Scan", how it got here).
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
  // The warps' prefixes within the tile, after the tile's prefix from the look-back. Only
  // tile 0 reads the start: the others have it through tile 0's inclusive prefix.
  partial<item> before_row =
      block_warp_prefix(warp_total, op, warp_prefixes, [&](const item& tile_total) {
        const partial<item> before_tiles = tile == 0 ? start.get() : start.value;
        return lookback_prefix(state, tile, tile_total, before_tiles, op, lookback);
      });

  // Combine every item with everything before it, and store. Results off 16-byte boundaries
  // leave a warp row at a time as whole vectors (store_warp_row, core/staged_run.cuh) where
  // the source can store them so, in full tiles.
  const auto store_vector_or_items = [&](int r, const typename Source::result_type(&results)[vec]) {
    if (whole_vector(r)) {
      source.store(row_first(r), results);
    } else {
#pragma unroll
      for (int j = 0; j < vec; ++j) {
        if (row_first(r) + j < n) source.store_one(row_first(r) + j, results[j]);
      }
    }
  };
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
    if constexpr (Source::stores_rows) {
      if (full_tile) {
        source.store_row(row_first(r) - lane * vec, results);
      } else {
        store_vector_or_items(r, results);
      }
    } else {
      store_vector_or_items(r, results);
    }
    before_row = then(before_row, partial<item>{shuffle_from(lane_inclusive[r], 31), true}, op);
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
  single_pass_scan_kernel<Shape><<<unsigned(tiles), Shape::threads, 0, call.stream()>>>(
      source, n, lookback_view<item>(flags.data(), flags.epoch(), values.data(), layout), start);
  check_launch(call.function(), "single_pass_scan_kernel");
  values.release();
  flags.release();
}

}  // namespace ppat::detail
