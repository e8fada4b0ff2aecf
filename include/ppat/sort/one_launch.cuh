// Small inputs: every pass in one launch. Up to as many tiles as the GPU holds at once, one
// cooperative launch does the whole sort, saving the launches and memsets between passes:
// each block counts its tile's digits for every pass, then the blocks sort their tiles pass
// after pass (sort/tile.cuh, the onesweep kernel's tile), with a grid-wide sync between
// passes. As in onesweep, a pass in which one digit holds every key is skipped (or copies,
// sort/plan.cuh), and every pass where the keys are sorted already: every block reads the
// same totals and plans the same roles. Each pass is still a chain of latencies within a
// tile (docs/patterns.md).
#pragma once

#include <cooperative_groups.h>
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
#include "onesweep.cuh"
#include "plan.cuh"
#include "tile.cuh"

namespace ppat::detail {

// Two 256-thread tiles an SM below `one_launch_large_tiles_from` items, which gives more
// blocks (SMs) a tile; above it, keys of up to 4 bytes alone take 512-thread tiles, and pairs
// and wider keys keep the 256-thread ones: each the faster of the two where it runs
// (docs/patterns.md, "Radix sort", the figures).
template <class K, class V>
using one_launch_small_shape = tile_shape<K, V, tuning<256, 128, 2>>;
template <class K, class V>
using one_launch_large_shape =
    tile_shape<K, V,
               std::conditional_t<pair_bytes<K, V> <= 4, tuning<512, 64, 1>, tuning<256, 128, 2>>>;
constexpr std::size_t one_launch_large_tiles_from = std::size_t{1} << 18;

template <class K, class V>
struct one_launch_sort_args {
  const K* keys_from[most_passes<K>];  // a sorting pass's, as pass_buffers lays them out
  K* keys_to[most_passes<K>];
  const V* values_from[most_passes<K>];
  V* values_to[most_passes<K>];
  pass_arrays<K> keys;  // what a copy names (plan_pass_roles)
  pass_arrays<V> values;
  pass_buffer inputs_are;
  std::size_t n;
  radix_passes passes;
  order ord;
  int end_bit;
  unsigned* counts;        // [copy][pass][digit], zeroed
  unsigned* published;     // [pass][tile][digit], zeroed
  unsigned* out_of_order;  // zeroed; set where a block sees keys out of the sort's order
};

// The kernel's shared memory, in dynamic shared memory: the tile's, and each pass's digit
// starts.
template <class Shape, class K, class V>
struct one_launch_storage {
  tile_storage<Shape, K, V> tile;
  unsigned long long digit_starts[radix];
  block_sum_storage<radix / 32, unsigned long long> digit_sums;
  unsigned moving;  // bit p: pass p has keys of more than one digit
  pass_role roles[most_passes<K>];
};

template <class Shape, class K, class V>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    one_launch_sort_kernel(one_launch_sort_args<K, V> sort) {
  auto& shared = dynamic_shared_storage<one_launch_storage<Shape, K, V>>();
  auto& storage = shared.tile;
  // Until the first tile is ranked, the groups' digit counters hold the tile's counts.
  static_assert(2 * Shape::warps >= most_passes<K>, "every pass's counts fit the groups' counters");
  auto& tile_counts = reinterpret_cast<pass_digit_counts<K>&>(storage.rank.group_digit_counts);
  const unsigned tile = blockIdx.x;
  const radix_passes passes = sort.passes;

  // The tile's digits, every pass's, added to the totals.
  for (int i = int(threadIdx.x); i < most_passes<K> * radix; i += Shape::threads)
    (&tile_counts[0][0])[i] = 0;
  if (threadIdx.x == 0) shared.moving = 0;
  __syncthreads();
  radix_digit<K> digits[most_passes<K>];
  digits_of_passes(passes, sort.ord, sort.end_bit, digits);
  // A key a thread in flight: the counting step holds its keys in registers, which the
  // sort's tile then needs (with a tile's keys at once, 96 to 132 bytes spilled a thread).
  const std::size_t first = std::size_t(tile) * Shape::tile_items;
  const std::size_t end = min(sort.n, first + Shape::tile_items);
  order_watch<K> watch{passes.begin_bit == 0 && sort.end_bit == 8 * int(sizeof(K))};
  for (std::size_t keys_first = first; keys_first < end; keys_first += Shape::threads) {
    count_pass_digits<Shape::threads, 1>(sort.keys_from[0], keys_first, end, digits, tile_counts,
                                         watch);
  }
  if (!__syncthreads_and(watch.in_order) && threadIdx.x == 0) *sort.out_of_order = 1;
  add_digit_totals<Shape::threads>(tile_counts, passes.count,
                                   block_total_copy(sort.counts, passes.count));
  cooperative_groups::this_grid().sync();

  // The passes that sort: those with keys of more than one digit, unless the keys are sorted
  // already. Every pass's totals are read at once, and the first pass's kept for its digit
  // starts, so that planning the roles costs no wait of its own.
  const bool sorted = load_published(sort.out_of_order) == 0;
  unsigned moving = 0;
  unsigned first_total = 0;
  if (threadIdx.x < radix) {
#pragma unroll
    for (int p = 0; p < most_passes<K>; ++p) {
      if (p >= passes.count) break;
      const unsigned total = digit_total(sort.counts, passes.count, p, threadIdx.x);
      if (p == 0) first_total = total;
      if (total != 0 && total != sort.n) moving |= 1u << p;
    }
  }
  moving = __reduce_or_sync(~0u, moving);
  if (lane_id() == 0 && moving != 0) atomicOr(&shared.moving, moving);
  __syncthreads();
  if (threadIdx.x == 0)
    plan_pass_roles(sorted ? 0u : shared.moving, passes.count, sort.inputs_are, shared.roles);
  __syncthreads();

  bool moved = false;  // since the last grid-wide sync
  for (int p = 0; p < passes.count; ++p) {
    const pass_role role = shared.roles[p];
    if (role.action == pass_action::skip) continue;
    if (moved) cooperative_groups::this_grid().sync();
    moved = true;
    if (role.action == pass_action::copy) {
      const unsigned valid = unsigned(end - first);
      copy_tile_items<Shape, true>(sort.keys.from(role.from), sort.keys.to(role.to), first, valid);
      if constexpr (has_values_of<V>) {
        copy_tile_items<Shape, true>(sort.values.from(role.from), sort.values.to(role.to), first,
                                     valid);
      }
      continue;
    }
    unsigned long long total = 0;
    if (threadIdx.x < radix)
      total = p == 0 ? first_total : digit_total(sort.counts, passes.count, p, threadIdx.x);
    const unsigned long long start = block_exclusive_sum(total, shared.digit_sums);
    if (threadIdx.x < radix) shared.digit_starts[threadIdx.x] = start;
    clear_tile_storage(storage);
    __syncthreads();
    const onesweep_pass<K, V> pass{sort.keys_from[p],
                                   sort.keys_to[p],
                                   sort.values_from[p],
                                   sort.values_to[p],
                                   sort.n,
                                   gridDim.x,
                                   passes.digit<K>(p, sort.ord, sort.end_bit),
                                   nullptr,
                                   sort.published + std::size_t(p) * gridDim.x * radix,
                                   shared.digit_starts,
                                   nullptr};
    sort_tile<Shape, true>(pass, tile, storage);
  }
}

// Blocks of the one-launch kernel that fit on the GPU at once, queried once per device.
template <class Shape, class K, class V>
std::size_t resident_tiles(const call_context& call) {
  return resident_blocks<one_launch_sort_kernel<Shape, K, V>>(
      Shape::threads, sizeof(one_launch_storage<Shape, K, V>), call);
}

template <class Shape, class K, class V>
void one_launch_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                     std::size_t n, radix_passes passes, order ord, int end_bit,
                     const call_context& call) {
  const unsigned tiles = unsigned(ceil_div(n, Shape::tile_items));
  const std::size_t counts_bytes =
      digit_total_copies * std::size_t(passes.count) * radix * sizeof(unsigned);
  const std::size_t published_bytes = std::size_t(passes.count) * tiles * radix * sizeof(unsigned);
  const std::size_t scratch_bytes = counts_bytes + published_bytes + sizeof(unsigned);
  temporary_buffer<unsigned char> scratch(scratch_bytes, call);
  call.check(cudaMemsetAsync(scratch.data(), 0, scratch_bytes, call.stream()), "cudaMemsetAsync");
  pass_buffers<K, V> buffers(keys_in, keys_out, values_in, values_out, n, passes.count, call);
  one_launch_sort_args<K, V> sort{};
  for (int pass = 0; pass < std::min(passes.count, most_passes<K>); ++pass) {
    sort.keys_from[pass] = buffers.keys_from(pass);
    sort.keys_to[pass] = buffers.keys_to(pass);
    sort.values_from[pass] = buffers.values_from(pass);
    sort.values_to[pass] = buffers.values_to(pass);
  }
  sort.keys = buffers.keys();
  sort.values = buffers.values();
  sort.inputs_are = buffers.inputs_are();
  sort.n = n;
  sort.passes = passes;
  sort.ord = ord;
  sort.end_bit = end_bit;
  sort.counts = reinterpret_cast<unsigned*>(scratch.data());
  sort.published = reinterpret_cast<unsigned*>(scratch.data() + counts_bytes);
  sort.out_of_order = reinterpret_cast<unsigned*>(scratch.data() + counts_bytes + published_bytes);
  void* arguments[] = {&sort};
  const bool launched = launch_cooperative<one_launch_sort_kernel<Shape, K, V>>(
      dim3(tiles), dim3(Shape::threads), arguments, sizeof(one_launch_storage<Shape, K, V>), call);
  buffers.release();
  scratch.release();
  if (!launched)  // refused, although the grid should fit: the passes in launches of their own
    onesweep_sort(keys_in, keys_out, values_in, values_out, n, passes, ord, end_bit, call);
}

}  // namespace ppat::detail
