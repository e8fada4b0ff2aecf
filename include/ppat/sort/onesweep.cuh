// Large inputs: onesweep (Adinets & Merrill 2022). One kernel reads every key once and
// counts the digits of all passes at once; its last block turns the counts into where each
// digit's keys start in the output, and gives each pass its role (sort/plan.cuh): a pass in
// which one digit holds every key is skipped, and so is every pass where the keys are sorted
// already, which the counting sees too. Then one kernel a pass, whose tiles
// (sort/tile.cuh) rank their keys, publish their digit counts, and learn through a look-back
// with a chain per digit where each digit's keys go. Keys move once a pass: read once,
// written once.
//
// A published count takes 30 bits of a 32-bit word beside its 2-bit status, so a pass covers
// at most 2^29 keys a launch: larger inputs run in portions, each portion's digit starts
// carried to the next by its last tile. That leaves no bits for the epoch with which core's
// look-back (core/lookback.cuh) tells this call's words from stale ones, in a word that a
// tile publishes 256 of; so the words are zeroed by a memset just before each launch. That
// memset also leaves the words in L2, where the launch's atomics find them: zeroing them one
// launch ahead instead, in the kernel, measured slower (docs/patterns.md, "Radix sort").
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "../core/atomic.cuh"
#include "../core/block.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/memory.cuh"
#include "digit_counts.cuh"
#include "plan.cuh"
#include "tile.cuh"

namespace ppat::detail {

// Large inputs: tiles two an SM. The look-back and the digit-start loads are paid per tile,
// so large tiles pay them for more keys: 4-byte keys 512 threads x 16; pairs 384 threads (80
// registers) x as many as 184 bytes a thread hold, at most 23 (23 u32/u32 pairs, 15 of 12
// bytes, 11 of 16): what two tiles' staged pairs and rank counts leave of an SM's shared
// memory, and CUB's shape for 8-byte pairs. 512 threads x 16 (64 registers), 256 threads three
// an SM, one 512-thread tile an SM, and 384 x 20 to 22 were all slower for pairs. 8-byte keys
// alone take 384 x 18: with 23, ptxas spills 108 to 148 bytes a thread of their 80 registers
// (f64 12 at 18), and of 384 x 16 to 23, 512 x 16 and 256 x 16, 18 was the one at or above
// CUB for u64, i64 and f64 at every size timed (docs/patterns.md, "Radix sort", the figures).
template <class K, class V>
constexpr bool eight_byte_keys_alone = sizeof(K) == 8 && !has_values_of<V>;
template <class K, class V>
using onesweep_tuning = std::conditional_t<
    pair_bytes<K, V> <= 4, tuning<512, 64, 2>,
    std::conditional_t<eight_byte_keys_alone<K, V>, tuning<384, 144, 2>, tuning<384, 184, 2>>>;
template <class K, class V>
using onesweep_shape = tile_shape<K, V, onesweep_tuning<K, V>, 23, true>;

// Digit counting for the large-input passes: 256 threads reading 8 keys each a step (8-byte
// keys 4, the same bytes: 8 spilled 116 bytes a thread of the 32 registers with the order
// watch), 8 blocks an SM (docs/patterns.md, "Radix sort", has the shapes measured).
template <class K>
struct digit_count_tuning : tuning<256, (sizeof(K) == 8 ? 32 : 8 * int(sizeof(K))), 8, 8> {
  static constexpr int keys = digit_count_tuning::bytes_per_thread / int(sizeof(K));
};

// Keys a pass covers in one launch, at most: below 2^30. A portion holds whole tiles.
constexpr std::size_t portion_items = std::size_t{1} << 29;
template <class Shape>
constexpr std::size_t portion_of = (portion_items / Shape::tile_items) * Shape::tile_items;

// Memory one sort call needs, zeroed by one memset where marked.
struct onesweep_scratch {
  unsigned long long* counts;  // [copy][pass][digit], zeroed
  unsigned* blocks_done;       // zeroed; the counting kernel's last block puts it back to 0
  unsigned* tile_counter;      // zeroed; each launch's last tile puts it back to 0
  unsigned* out_of_order;      // zeroed; set where a block sees keys out of the sort's order
  unsigned long long* starts;  // [pass][2][digit]: where a portion's digits start, ping-pong
  unsigned* published;         // [tile][digit] of a portion, zeroed before every launch
  pass_role* roles;            // [pass], from the counting kernel's last block
};

// ---- Digit counts --------------------------------------------------------------------------

// The counting kernel's shared memory: its counters, one copy a block, and what its last
// block needs to turn the totals into digit starts. Lanes adding to one counter cost no more
// than lanes adding to counters in different banks; counters in one bank cost one access
// each, so four copies of each counter 4 KB apart, all in one bank (lane l adding to copy
// l % 4, as this kernel did), made floats, whose high digits take few values, count slower
// than with one copy (docs/patterns.md, "Radix sort").
template <class K>
struct digit_count_storage {
  pass_digit_counts<K> counts;
  bool last_block;
  unsigned moving;  // bit p: pass p has keys of more than one digit
  block_sum_storage<radix / 32, unsigned long long> digit_sums;
};

// Every pass's digit counts, from one read of the keys, which also tells whether they are
// sorted already. Each block counts in shared memory; the last block to finish turns the
// totals into each digit's first output position, for every pass, and gives the passes their
// roles (`inputs_are` as plan_pass_roles takes it).
template <class Tuning, class K>
__global__ void __launch_bounds__(Tuning::threads, Tuning::min_blocks_per_sm)
    digit_counts_kernel(const K* keys, std::size_t n, radix_passes passes, order ord, int end_bit,
                        pass_buffer inputs_are, onesweep_scratch scratch) {
  constexpr int threads = Tuning::threads;
  __shared__ digit_count_storage<K> storage;
  for (int i = int(threadIdx.x); i < most_passes<K> * radix; i += threads)
    (&storage.counts[0][0])[i] = 0;
  __syncthreads();

  radix_digit<K> digits[most_passes<K>];
  digits_of_passes(passes, ord, end_bit, digits);
  order_watch<K> watch{passes.begin_bit == 0 && end_bit == 8 * int(sizeof(K))};
  const std::size_t chunk = std::size_t(threads) * Tuning::keys;
  for (std::size_t first = std::size_t(blockIdx.x) * chunk; first < n;
       first += std::size_t(gridDim.x) * chunk) {
    count_pass_digits<threads, Tuning::keys>(keys, first, n, digits, storage.counts, watch);
  }
  const bool block_in_order = __syncthreads_and(watch.in_order);
  if (threadIdx.x == 0 && !block_in_order) *scratch.out_of_order = 1;
  add_digit_totals<threads>(storage.counts, passes.count,
                            block_total_copy(scratch.counts, passes.count));
  __threadfence();  // every thread's additions (and the order seen) before thread 0's ticket
  __syncthreads();
  if (threadIdx.x == 0) storage.last_block = last_to_finish(scratch.blocks_done, gridDim.x);
  __syncthreads();
  if (!storage.last_block) return;
  if (threadIdx.x == 0) storage.moving = 0;
  __syncthreads();
  for (int p = 0; p < passes.count; ++p) {
    const unsigned long long total =
        threadIdx.x < radix ? digit_total(scratch.counts, passes.count, p, threadIdx.x) : 0;
    if (total != 0 && total != n) atomicOr(&storage.moving, 1u << p);
    const unsigned long long start = block_exclusive_sum(total, storage.digit_sums);
    if (threadIdx.x < radix) scratch.starts[std::size_t(p) * 2 * radix + threadIdx.x] = start;
  }
  __syncthreads();
  // Keys sorted already need no pass to sort them.
  if (threadIdx.x == 0) {
    const bool sorted = load_published(scratch.out_of_order) == 0;
    plan_pass_roles(sorted ? 0u : storage.moving, passes.count, inputs_are, scratch.roles);
  }
}

// ---- One pass ------------------------------------------------------------------------------

// What a pass's role takes beside its tiles (onesweep_pass, which sort from and to the
// buffers pass_buffers gives the pass): where the role is, and what a copy reads and writes.
// A parameter of its own: nested in one with the tiles, it cost u64/u32 pairs a spilled
// register.
template <class K, class V>
struct pass_role_of {
  const pass_role* role;
  pass_arrays<K> keys;
  pass_arrays<V> values;
  std::size_t first;  // the portion's first key
};

template <class Shape, class K, class V>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    onesweep_kernel(onesweep_pass<K, V> pass, pass_role_of<K, V> role_of) {
  auto& storage = dynamic_shared_storage<tile_storage<Shape, K, V>>();
  if (threadIdx.x == 0) storage.tile = take_ticket(pass.tile_counter, pass.tiles);
  const pass_role role = *role_of.role;  // while thread 0 waits for its tile
  clear_tile_storage(storage);
  __syncthreads();
  if (role.action == pass_action::sort) {
    sort_tile<Shape, false>(pass, storage.tile, storage);
  } else if (role.action == pass_action::copy) {
    const std::size_t tile_first = std::size_t(storage.tile) * Shape::tile_items;
    const unsigned valid = unsigned(min(pass.count - tile_first, std::size_t(Shape::tile_items)));
    const std::size_t first = role_of.first + tile_first;
    copy_tile_items<Shape, false>(role_of.keys.from(role.from), role_of.keys.to(role.to), first,
                                  valid);
    if constexpr (has_values_of<V>) {
      copy_tile_items<Shape, false>(role_of.values.from(role.from), role_of.values.to(role.to),
                                    first, valid);
    }
  }
}

// ---- The sort --------------------------------------------------------------------------------

// `Shape`: the tiles, onesweep_shape but where a probe times another against it.
template <class K, class V, class Shape = onesweep_shape<K, V>>
void onesweep_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                   radix_passes passes, order ord, int end_bit, const call_context& call) {
  using shape = Shape;
  constexpr std::size_t portion = portion_of<shape>;
  const std::size_t portion_tiles = ceil_div(std::min(n, portion), shape::tile_items);
  // The zeroed head: counts, blocks_done, tile_counter and out_of_order (16 bytes for the
  // three), then the published counts; the digit starts and the passes' roles last.
  const std::size_t pass_counts_bytes =
      std::size_t(passes.count) * radix * sizeof(unsigned long long);
  const std::size_t counts_bytes = digit_total_copies * pass_counts_bytes;
  const std::size_t published_bytes = portion_tiles * radix * sizeof(unsigned);
  const std::size_t starts_bytes = 2 * pass_counts_bytes;
  const std::size_t roles_bytes = most_passes<K> * sizeof(pass_role);
  temporary_buffer<unsigned char> scratch_memory(
      counts_bytes + 16 + published_bytes + starts_bytes + roles_bytes, call);
  unsigned char* const head = scratch_memory.data();
  unsigned char* const starts_at = head + counts_bytes + 16 + published_bytes;
  const onesweep_scratch scratch{reinterpret_cast<unsigned long long*>(head),
                                 reinterpret_cast<unsigned*>(head + counts_bytes),
                                 reinterpret_cast<unsigned*>(head + counts_bytes + 4),
                                 reinterpret_cast<unsigned*>(head + counts_bytes + 8),
                                 reinterpret_cast<unsigned long long*>(starts_at),
                                 reinterpret_cast<unsigned*>(head + counts_bytes + 16),
                                 reinterpret_cast<pass_role*>(starts_at + starts_bytes)};
  call.check(cudaMemsetAsync(head, 0, counts_bytes + 16 + published_bytes, call.stream()),
             "cudaMemsetAsync");

  // The buffers first: the counting kernel plans the passes' roles with them.
  pass_buffers<K, V> buffers(keys_in, keys_out, values_in, values_out, n, passes.count, call);
  using counting = digit_count_tuning<K>;
  digit_counts_kernel<counting>
      <<<grid_stride_blocks<counting>(n, counting::threads * counting::keys, call.limits()),
         counting::threads, 0, call.stream()>>>(keys_in, n, passes, ord, end_bit,
                                                buffers.inputs_are(), scratch);
  check_launch(call.function(), "digit_counts_kernel");

  constexpr std::size_t shared_bytes = sizeof(tile_storage<shape, K, V>);
  allow_dynamic_shared_bytes<onesweep_kernel<shape, K, V>>(call);
  const std::size_t portions = ceil_div(n, portion);
  for (int pass = 0; pass < passes.count; ++pass) {
    unsigned long long* const starts = scratch.starts + std::size_t(pass) * 2 * radix;
    for (std::size_t p = 0; p < portions; ++p) {
      if (pass > 0 || p > 0) {
        call.check(cudaMemsetAsync(scratch.published, 0, published_bytes, call.stream()),
                   "cudaMemsetAsync");
      }
      const std::size_t first = p * portion;
      const std::size_t count = std::min(n - first, portion);
      const unsigned tiles = unsigned(ceil_div(count, shape::tile_items));
      const onesweep_pass<K, V> launch{
          buffers.keys_from(pass) + first,
          buffers.keys_to(pass),
          has_values_of<V> ? buffers.values_from(pass) + first : nullptr,
          buffers.values_to(pass),
          count,
          tiles,
          passes.digit<K>(pass, ord, end_bit),
          scratch.tile_counter,
          scratch.published,
          starts + (p % 2) * radix,
          p + 1 < portions ? starts + ((p + 1) % 2) * radix : nullptr};
      const pass_role_of<K, V> role_of{scratch.roles + pass, buffers.keys(), buffers.values(),
                                       first};
      onesweep_kernel<shape>
          <<<tiles, shape::threads, shared_bytes, call.stream()>>>(launch, role_of);
      check_launch(call.function(), "onesweep_kernel");
    }
  }
  buffers.release();
  scratch_memory.release();
}

}  // namespace ppat::detail
