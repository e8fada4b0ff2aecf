// The distributed sort's merge: the sorted runs a rank receives, one from each rank, merged
// in rounds of neighbouring pairs by a merge-path kernel (a block a tile of the output).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/memory.cuh"
#include "../core/no_values.cuh"
#include "../core/shared_storage.cuh"
#include "../sort/plan.cuh"
#include "../sort/radix_key.cuh"

namespace ppat::distributed::detail {

using namespace ppat::detail;

// The key's place in the sort order as an unsigned integer: its image, flipped for descending.
template <class K>
__device__ typename radix_key<K>::image_type ordered_image(const K& key, order ord) {
  using image = typename radix_key<K>::image_type;
  const image bits = radix_key<K>::image(key);
  return ord == order::ascending ? bits : image(~bits);
}

template <class K, class V>
constexpr int merge_item_bytes = int(sizeof(K) + (has_values_of<V> ? sizeof(V) : 0));
// Two sorted runs of 2^29 u32 keys merged on an H200 (CUB's merge 2.48 ms, a copy of the
// bytes 2.01): 16 keys a thread in a padded tile took 3.50 ms (60 registers, four blocks an
// SM); unpadded, 13 took 3.11 or 4.06 by the compiler's choice of registers from one build to
// the next, 15 at eight blocks an SM 3.16, 17 at six 3.14. u32/u32 pairs (CUB 6.80 ms): 8 a
// thread padded 5.48, 11 unpadded at six blocks an SM 5.19 (512 threads: 5.09). Wider items
// keep the bytes a thread, and the compiler chooses their blocks.
template <class K, class V>
using merge_tuning = std::conditional_t<
    merge_item_bytes<K, V> <= 4, tuning<256, 68, 6>,
    std::conditional_t<merge_item_bytes<K, V> <= 8, tuning<256, 88, 6>, tuning<256, 112, 0>>>;
// Items a thread merges: the largest odd count within its bytes, at most 17 (an odd count
// keeps a warp's accesses to shared memory in different banks: see merge_pair_kernel).
template <class K, class V>
constexpr int merge_items =
    (merge_tuning<K, V>::groups_per_thread(merge_item_bytes<K, V>, 17) - 1) / 2 * 2 + 1;
template <class K, class V>
constexpr int merge_tile = merge_tuning<K, V>::threads* merge_items<K, V>;
constexpr int partition_threads = 256;

// How many of the first `diagonal` outputs of merging runs a and b (a(x), b(x): their items)
// come from a, a's item first on ties: a binary search along the diagonal.
template <class Index, class RunA, class RunB>
__device__ Index merge_split(RunA a, Index a_count, RunB b, Index b_count, Index diagonal,
                             order ord) {
  Index low = diagonal > b_count ? diagonal - b_count : 0;
  Index high = diagonal < a_count ? diagonal : a_count;
  while (low < high) {
    const Index middle = low + (high - low) / 2;
    // a's item at middle comes before b's at diagonal - 1 - middle unless b's is strictly
    // earlier.
    if (ordered_image(b(diagonal - 1 - middle), ord) < ordered_image(a(middle), ord)) {
      high = middle;
    } else {
      low = middle + 1;
    }
  }
  return low;
}

// a_taken[t]: the items of run a among the first t x tile outputs of the merge (t <= tiles;
// the last, all of a).
template <class K>
__global__ void merge_partitions_kernel(const K* a_keys, std::size_t a_count, const K* b_keys,
                                        std::size_t b_count, order ord, std::size_t tile,
                                        std::size_t tiles, std::size_t* a_taken) {
  const std::size_t t = std::size_t(blockIdx.x) * partition_threads + threadIdx.x;
  if (t > tiles) return;
  const std::size_t total = a_count + b_count;
  const std::size_t diagonal = t * tile < total ? t * tile : total;
  a_taken[t] = merge_split([&](std::size_t x) { return a_keys[x]; }, a_count,
                           [&](std::size_t x) { return b_keys[x]; }, b_count, diagonal, ord);
}

// A block writes one tile of the output. merge_partitions_kernel found, by a binary search
// along each tile's first diagonal, which items of runs a and b the tile takes; the block
// loads them into shared memory (a's, then b's), each thread finds its own diagonal there and
// merges its items into registers, and the merged tile goes back through shared memory so
// that every load and store is coalesced. A thread's items sit merge_items apart, an odd
// count, so that a warp's reads and writes of them fall in different banks: 16 apart, they
// hit the same banks, and the merge ran at 40% of a copy's bandwidth, bound by shared memory.
template <class K, class V>
__global__ void __launch_bounds__(merge_tuning<K, V>::threads,
                                  merge_tuning<K, V>::min_blocks_per_sm)
    merge_pair_kernel(const K* a_keys, const V* a_values, std::size_t a_count, const K* b_keys,
                      const V* b_values, std::size_t b_count, const std::size_t* a_taken,
                      K* keys_out, V* values_out, order ord) {
  constexpr bool has_values = has_values_of<V>;
  constexpr int threads = merge_tuning<K, V>::threads;
  constexpr int items = merge_items<K, V>;
  constexpr int tile = merge_tile<K, V>;
  using value = value_or_char<V>;
  __shared__ uninitialized_array<K, tile> tile_keys;
  __shared__ uninitialized_array<value, has_values ? tile : 1> tile_values;
  const std::size_t total = a_count + b_count;
  const std::size_t first = std::size_t(blockIdx.x) * tile;
  const std::size_t end = first + tile < total ? first + tile : total;
  const std::size_t a_first = a_taken[blockIdx.x], b_first = first - a_first;
  const unsigned count = unsigned(end - first);
  const unsigned a_tile = unsigned(a_taken[blockIdx.x + 1] - a_first);
  const auto key_at = [&](unsigned x) { return tile_keys[int(x)]; };

  // Every load of the thread issued before any store to shared memory.
  K keys[items];
  value values[items];
#pragma unroll
  for (int k = 0; k < items; ++k) {
    const unsigned t = unsigned(k * threads) + threadIdx.x;
    if (t >= count) continue;
    keys[k] = t < a_tile ? a_keys[a_first + t] : b_keys[b_first + (t - a_tile)];
    if constexpr (has_values)
      values[k] = t < a_tile ? a_values[a_first + t] : b_values[b_first + (t - a_tile)];
  }
#pragma unroll
  for (int k = 0; k < items; ++k) {
    const unsigned t = unsigned(k * threads) + threadIdx.x;
    if (t >= count) continue;
    tile_keys[int(t)] = keys[k];
    if constexpr (has_values) tile_values[int(t)] = values[k];
  }
  __syncthreads();

  // The thread's outputs [diagonal, diagonal + items): the next key of each run waits
  // in a register, so each output costs one shared-memory read, the same for every thread
  // whichever run it takes from (a branch there made the warps diverge on keys that
  // interleave finely).
  const unsigned diagonal = min(unsigned(threadIdx.x) * items, count);
  unsigned i = merge_split(
      key_at, a_tile, [&](unsigned x) { return key_at(a_tile + x); }, count - a_tile, diagonal,
      ord);
  unsigned j = a_tile + (diagonal - i);
  const unsigned last = tile - 1;
  K a_key = key_at(min(i, last)), b_key = key_at(min(j, last));
  unsigned taken_from[items];
#pragma unroll
  for (int k = 0; k < items; ++k) {
    const bool from_a =
        j >= count || (i < a_tile && !(ordered_image(b_key, ord) < ordered_image(a_key, ord)));
    keys[k] = from_a ? a_key : b_key;
    taken_from[k] = from_a ? i : j;
    i += from_a ? 1 : 0;
    j += from_a ? 0 : 1;
    const K next = key_at(min(from_a ? i : j, last));
    a_key = from_a ? next : a_key;
    b_key = from_a ? b_key : next;
  }
  if constexpr (has_values) {
#pragma unroll
    for (int k = 0; k < items; ++k)
      values[k] = tile_values[int(min(taken_from[k], last))];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < items; ++k) {
    if (diagonal + unsigned(k) >= count) continue;
    tile_keys[int(diagonal) + k] = keys[k];
    if constexpr (has_values) tile_values[int(diagonal) + k] = values[k];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < items; ++k) {
    const unsigned t = unsigned(k * threads) + threadIdx.x;
    if (t >= count) continue;
    keys_out[first + t] = tile_keys[int(t)];
    if constexpr (has_values) values_out[first + t] = tile_values[int(t)];
  }
}

// The sorted runs [run_first[r], run_first[r + 1]) of `keys` (and `values`), merged in
// rounds of neighbouring pairs, the earlier run winning ties: stable, so ties stay in (rank,
// index) order. The rounds alternate between the output and `keys` (`values`), which the
// first round frees; after an even count of rounds the result is copied to the output.
template <class K, class V>
void merge_runs(K* keys, V* values, const std::vector<std::size_t>& run_first, K* keys_out,
                V* values_out, order ord, const call_context& call) {
  constexpr bool has_values = has_values_of<V>;
  const std::size_t total = run_first.back();
  std::vector<std::size_t> runs;  // the non-empty runs' bounds
  runs.push_back(0);
  for (std::size_t r = 1; r < run_first.size(); ++r)
    if (run_first[r] != run_first[r - 1]) runs.push_back(run_first[r]);
  if (total == 0) return;
  // Where each tile of each merge starts in its run a (the tiles' ends, one more than tiles).
  constexpr std::size_t tile = merge_tile<K, V>;
  temporary_buffer<std::size_t> a_taken(ceil_div(total, tile) + runs.size(), call);
  K* from_keys = keys;
  V* from_values = values;
  for (int round = 0; runs.size() > 2; ++round) {
    const bool to_output = round % 2 == 0;
    K* const to_keys = to_output ? keys_out : keys;
    V* const to_values = to_output ? values_out : values;
    std::vector<std::size_t> merged(1, 0);
    std::size_t* pair_taken = a_taken.data();
    for (std::size_t r = 0; r + 1 < runs.size(); r += 2) {
      const std::size_t a = runs[r], b = runs[r + 1];
      const std::size_t end = r + 2 < runs.size() ? runs[r + 2] : b;
      const std::size_t tiles = ceil_div(end - a, tile);
      merge_partitions_kernel<<<unsigned(ceil_div(tiles + 1, std::size_t(partition_threads))),
                                partition_threads, 0, call.stream()>>>(
          from_keys + a, b - a, from_keys + b, end - b, ord, tile, tiles, pair_taken);
      check_launch(call.function(), "merge_partitions_kernel");
      merge_pair_kernel<<<unsigned(tiles), merge_tuning<K, V>::threads, 0, call.stream()>>>(
          from_keys + a, has_values ? from_values + a : nullptr, b - a, from_keys + b,
          has_values ? from_values + b : nullptr, end - b, pair_taken, to_keys + a,
          has_values ? to_values + a : nullptr, ord);
      check_launch(call.function(), "merge_pair_kernel");
      pair_taken += tiles + 1;
      merged.push_back(end);
    }
    runs = merged;
    from_keys = to_keys;
    from_values = to_values;
  }
  a_taken.release();
  if (from_keys == keys_out) return;
  copy_items(from_keys, keys_out, total, call);
  if constexpr (has_values) copy_items(from_values, values_out, total, call);
}

}  // namespace ppat::distributed::detail
