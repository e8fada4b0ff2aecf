// Radix select: the kernels of top_k. The k keys that come first in an order are those whose
// rank images (the sort's key images, complemented for descending order) are the k
// smallest, ties taken by the lower position. The threshold image t, the k-th smallest, is
// found a digit at a time from the top: a pass counts, among the keys that share the digits
// found so far, how many hold each value of the next digit, and keeps the digit where the
// count of keys still needed falls. Then every key below t is taken, and of the keys equal to
// t the first ones, as many as are still needed: each block counts both kinds over its run
// of tiles, then writes its taken keys, in input order, where the counts before it put them.
// The host sorts the k taken keys (stable, so ties stay by position).
//
// The batched form (top_k_batched) gives each row of a matrix to one block, which finds its
// row's threshold with a histogram in shared memory, a read of the row a digit, and stops as
// soon as the keys sharing the digits found are exactly the ones still needed; then it writes
// the row's taken keys as the whole-array kernels do.
#pragma once

#include <cstddef>

#include "../core/block.cuh"
#include "../core/launch.cuh"
#include "../core/vector_io.cuh"
#include "plan.cuh"
#include "radix_key.cuh"

namespace ppat::detail {

constexpr int select_digit_bits = 8;
constexpr int select_bins = 1 << select_digit_bits;
constexpr int select_threads = 256;
constexpr int select_warps = select_threads / 32;
constexpr int select_items_a_thread = 8;
constexpr int select_tile_items = select_threads * select_items_a_thread;

template <class K>
using rank_image_type = typename radix_key<K>::image_type;

template <class K>
__device__ rank_image_type<K> rank_image(const K& key, bool descending) {
  const rank_image_type<K> image = radix_key<K>::image(key);
  return descending ? rank_image_type<K>(~image) : image;
}

// What the passes found: the threshold's digits so far, and how many of the keys that share
// them are still needed.
template <class Image>
struct radix_select_state {
  Image prefix;
  unsigned long long needed;
};

template <class Image>
__global__ void start_select_kernel(radix_select_state<Image>* state, unsigned long long k,
                                    unsigned long long* histogram) {
  if (threadIdx.x == 0) *state = {Image(0), k};
  histogram[threadIdx.x] = 0;
}

// The pass of digit [shift, shift + 8): the count of each of its values among the keys
// whose higher digits are the threshold's found so far.
template <class K>
__global__ void __launch_bounds__(select_threads)
    count_select_digit_kernel(const K* keys, std::size_t n, bool descending,
                              const radix_select_state<rank_image_type<K>>* state, int shift,
                              unsigned long long* histogram) {
  using image_type = rank_image_type<K>;
  constexpr int image_bits = 8 * int(sizeof(image_type));
  __shared__ unsigned counts[select_bins];
  counts[threadIdx.x] = 0;
  __syncthreads();
  const int known_from = shift + select_digit_bits;  // the found digits' lowest bit
  const image_type prefix = state->prefix;
  const std::size_t stride = std::size_t(gridDim.x) * select_threads;
  for (std::size_t i = std::size_t(blockIdx.x) * select_threads + threadIdx.x; i < n; i += stride) {
    const image_type image = rank_image(load_item(keys + i), descending);
    if (known_from >= image_bits || (image >> known_from) == (prefix >> known_from))
      atomicAdd(&counts[(image >> shift) & (select_bins - 1)], 1u);
  }
  __syncthreads();
  if (counts[threadIdx.x] != 0) atomicAdd(&histogram[threadIdx.x], counts[threadIdx.x]);
}

// One block of select_bins threads: the digit where the needed count falls, and the
// histogram cleared for the next pass.
template <class Image>
__global__ void __launch_bounds__(select_bins)
    pick_select_digit_kernel(radix_select_state<Image>* state, int shift,
                             unsigned long long* histogram) {
  __shared__ block_sum_storage<select_bins / 32, unsigned long long> storage;
  const unsigned long long needed = state->needed;
  const unsigned long long count = histogram[threadIdx.x];
  const unsigned long long before = block_exclusive_sum<select_bins / 32>(count, storage);
  if (before < needed && needed <= before + count) {  // one digit holds the needed key
    state->prefix = Image(state->prefix | (Image(threadIdx.x) << shift));
    state->needed = needed - before;
  }
  histogram[threadIdx.x] = 0;
}

// Keys below the threshold, and equal to it, in a run of keys.
struct taken_counts {
  unsigned long long below;
  unsigned long long equal;
};

// Which keys are taken: those whose images are below the threshold's in the digits from bit
// `known_from` up, and the first `needed` of those equal to it there.
template <class Image>
struct taken_rule {
  Image threshold;
  int known_from;
  unsigned long long needed;

  __device__ Image known(Image image) const { return Image(image >> known_from); }
  __device__ bool below(Image image) const { return known(image) < known(threshold); }
  __device__ bool equal(Image image) const { return known(image) == known(threshold); }
};

// Block b's run of tiles: [tiles * b / grid, tiles * (b + 1) / grid).
struct select_run {
  std::size_t first_tile, end_tile;
  __device__ select_run(std::size_t n) {
    const std::size_t tiles = ceil_div(n, select_tile_items);
    first_tile = tiles * blockIdx.x / gridDim.x;
    end_tile = tiles * (blockIdx.x + 1) / gridDim.x;
  }
};

// Thread t's items of a tile are the select_items_a_thread from first + t * that: the order
// of threads is the order of items.
template <class K>
struct tile_keys {
  rank_image_type<K> images[select_items_a_thread];
  K keys[select_items_a_thread];
  std::size_t first;  // this thread's first item

  __device__ tile_keys(const K* keys_in, std::size_t n, std::size_t tile, bool descending) {
    first = tile * select_tile_items + std::size_t(threadIdx.x) * select_items_a_thread;
#pragma unroll
    for (int j = 0; j < select_items_a_thread; ++j) {
      if (first + j < n) {
        keys[j] = load_item(keys_in + first + j);
        images[j] = rank_image(keys[j], descending);
      }
    }
  }
};

template <class K>
__global__ void __launch_bounds__(select_threads)
    count_taken_kernel(const K* keys, std::size_t n, bool descending,
                       const radix_select_state<rank_image_type<K>>* state,
                       taken_counts* block_counts) {
  __shared__ block_reduce_storage<select_warps, unsigned long long> storage;
  const taken_rule<rank_image_type<K>> rule{state->prefix, 0, state->needed};
  const select_run run(n);
  unsigned long long below = 0, equal = 0;
  for (std::size_t tile = run.first_tile; tile < run.end_tile; ++tile) {
    const tile_keys<K> items(keys, n, tile, descending);
#pragma unroll
    for (int j = 0; j < select_items_a_thread; ++j) {
      if (items.first + j < n) {
        below += rule.below(items.images[j]);
        equal += rule.equal(items.images[j]);
      }
    }
  }
  const partial<unsigned long long> below_total = block_reduce_warps(
      warp_reduce(partial<unsigned long long>{below, true}, plus{}), plus{}, storage);
  __syncthreads();  // storage read
  const partial<unsigned long long> equal_total = block_reduce_warps(
      warp_reduce(partial<unsigned long long>{equal, true}, plus{}), plus{}, storage);
  if (threadIdx.x == 0) block_counts[blockIdx.x] = {below_total.value, equal_total.value};
}

// Writes the taken keys of tiles [first_tile, end_tile) of `keys`, and their positions, in
// input order: a taken key below the threshold goes after every one taken before it, the
// equal ones within the first `needed`. `below_before` and `equal_before` count those of
// the keys before the first tile. Every thread of the block calls it.
template <class K, class Index>
__device__ void write_taken_tiles(const K* keys, std::size_t n, std::size_t first_tile,
                                  std::size_t end_tile, bool descending,
                                  const taken_rule<rank_image_type<K>>& rule,
                                  unsigned long long below_before, unsigned long long equal_before,
                                  K* taken_keys, Index* taken_positions,
                                  block_sum_storage<select_warps, unsigned long long>& storage,
                                  unsigned long long& tile_total) {
  // A tile's counts travel in one word, below in the high half: a tile holds 2048 keys.
  for (std::size_t tile = first_tile; tile < end_tile; ++tile) {
    const tile_keys<K> items(keys, n, tile, descending);
    unsigned below = 0, equal = 0;
#pragma unroll
    for (int j = 0; j < select_items_a_thread; ++j) {
      if (items.first + j < n) {
        below += rule.below(items.images[j]);
        equal += rule.equal(items.images[j]);
      }
    }
    const unsigned long long mine = (static_cast<unsigned long long>(below) << 32) | equal;
    const unsigned long long before_mine = block_exclusive_sum<select_warps>(mine, storage);
    if (threadIdx.x == select_threads - 1) tile_total = before_mine + mine;
    unsigned long long below_at = below_before + (before_mine >> 32);
    unsigned long long equal_at = equal_before + (before_mine & 0xFFFFFFFFu);
#pragma unroll
    for (int j = 0; j < select_items_a_thread; ++j) {
      if (items.first + j >= n) continue;
      if (rule.below(items.images[j])) {
        const unsigned long long at = below_at + (equal_at < rule.needed ? equal_at : rule.needed);
        taken_keys[at] = items.keys[j];
        taken_positions[at] = Index(items.first + j);
        ++below_at;
      } else if (rule.equal(items.images[j])) {
        if (equal_at < rule.needed) {
          taken_keys[below_at + equal_at] = items.keys[j];
          taken_positions[below_at + equal_at] = Index(items.first + j);
        }
        ++equal_at;
      }
    }
    __syncthreads();  // tile_total written
    below_before += tile_total >> 32;
    equal_before += tile_total & 0xFFFFFFFFu;
    __syncthreads();  // tile_total read
  }
}

template <class K, class Index>
__global__ void __launch_bounds__(select_threads)
    write_taken_kernel(const K* keys, std::size_t n, bool descending,
                       const radix_select_state<rank_image_type<K>>* state,
                       const taken_counts* block_counts, K* taken_keys, Index* taken_positions) {
  __shared__ block_reduce_storage<select_warps, unsigned long long> reduce_storage;
  __shared__ block_sum_storage<select_warps, unsigned long long> sum_storage;
  __shared__ unsigned long long tile_total;

  // The blocks before this one: their counts, summed by the whole block.
  unsigned long long below_blocks = 0, equal_blocks = 0;
  for (unsigned b = threadIdx.x; b < blockIdx.x; b += select_threads) {
    below_blocks += block_counts[b].below;
    equal_blocks += block_counts[b].equal;
  }
  const partial<unsigned long long> below_total = block_reduce_warps(
      warp_reduce(partial<unsigned long long>{below_blocks, true}, plus{}), plus{}, reduce_storage);
  if (threadIdx.x == 0) tile_total = below_total.value;
  __syncthreads();
  const unsigned long long below_before = tile_total;
  __syncthreads();  // tile_total and reduce_storage read
  const partial<unsigned long long> equal_total = block_reduce_warps(
      warp_reduce(partial<unsigned long long>{equal_blocks, true}, plus{}), plus{}, reduce_storage);
  if (threadIdx.x == 0) tile_total = equal_total.value;
  __syncthreads();
  const unsigned long long equal_before = tile_total;
  __syncthreads();  // tile_total read

  const select_run run(n);
  write_taken_tiles(keys, n, run.first_tile, run.end_tile, descending,
                    taken_rule<rank_image_type<K>>{state->prefix, 0, state->needed}, below_before,
                    equal_before, taken_keys, taken_positions, sum_storage, tile_total);
}

// ---- Batched: a block a row ------------------------------------------------------------------

// Row r's k taken keys (cols < 2^32 keys a row) to taken_keys[r * k, (r + 1) * k), in input
// order, with their positions in the row.
template <class K, class Index>
__global__ void __launch_bounds__(select_threads)
    select_rows_kernel(const K* in, std::size_t rows, std::size_t cols, std::size_t k,
                       bool descending, K* taken_keys, Index* taken_positions) {
  using image_type = rank_image_type<K>;
  constexpr int image_bits = 8 * int(sizeof(image_type));
  __shared__ unsigned counts[select_bins];
  __shared__ block_sum_storage<select_warps, unsigned long long> sum_storage;
  __shared__ taken_rule<image_type> found;
  __shared__ unsigned long long found_count;  // keys that share the digits found
  __shared__ unsigned long long tile_total;
  const std::size_t tiles = ceil_div(cols, select_tile_items);

  for (std::size_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const K* keys = in + row * cols;
    // The threshold, a digit at a time from the top.
    taken_rule<image_type> rule{image_type(0), image_bits, k};
    for (int shift = image_bits - select_digit_bits; shift >= 0; shift -= select_digit_bits) {
      counts[threadIdx.x] = 0;
      __syncthreads();
      for (std::size_t tile = 0; tile < tiles; ++tile) {
        const tile_keys<K> items(keys, cols, tile, descending);
#pragma unroll
        for (int j = 0; j < select_items_a_thread; ++j) {
          if (items.first + j < cols &&
              (rule.known_from == image_bits || rule.equal(items.images[j])))
            atomicAdd(&counts[(items.images[j] >> shift) & (select_bins - 1)], 1u);
        }
      }
      __syncthreads();
      const unsigned long long count = counts[threadIdx.x];
      const unsigned long long before = block_exclusive_sum<select_warps>(count, sum_storage);
      if (before < rule.needed && rule.needed <= before + count) {  // one digit holds it
        found = {image_type(rule.threshold | (image_type(threadIdx.x) << shift)), shift,
                 rule.needed - before};
        found_count = count;
      }
      __syncthreads();
      rule = found;
      const bool all_taken = found_count == rule.needed;
      __syncthreads();  // counts, found and found_count read
      if (all_taken) break;
    }
    write_taken_tiles(keys, cols, 0, tiles, descending, rule, 0, 0, taken_keys + row * k,
                      taken_positions + row * k, sum_storage, tile_total);
  }
}

}  // namespace ppat::detail
