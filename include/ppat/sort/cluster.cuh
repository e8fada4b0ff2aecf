// Inputs of a few tiles, sorted by one cluster of blocks (sm_90 on): each block holds one
// tile in registers between passes, as the one-tile sort holds its one, and a pass sends
// every key straight to the shared memory of the block that holds its place in the order.
// No global memory between passes, no temporary memory, no memset, no grid-wide sync: two
// cluster barriers a pass. In the order the steps of a pass run:
//
//   rank                   the tile's keys by digit (core/radix_rank.cuh), its digit counts
//                          published in the block's shared memory
//   stage                  the tile in its digit order, so that a digit's keys leave as runs
//   cluster barrier        every block's counts are final
//   cluster digit starts   thread d: keys of digit d in the blocks before this one and in
//                          all; an exclusive sum over the digits gives where each digit starts
//   scatter                each key to its place, in the shared memory of the block that
//                          holds it (distributed shared memory)
//   cluster barrier        the cluster's keys are in their places: each block takes its own
//                          back into registers for the next pass
//
// Against the cooperative one-launch sort it replaces from 8,193 to 65,536 keys, whose
// passes go through global memory with a look-back and a grid-wide sync each, it sorts u32
// keys 1.2-1.7x as fast (docs/patterns.md, "Radix sort", the figures).
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include "../core/device.cuh"
#include "../core/launch.cuh"
#include "../core/no_values.cuh"
#include "../core/radix_rank.cuh"
#include "../core/shared_storage.cuh"
#include "../core/warp.cuh"
#include "one_tile.cuh"
#include "plan.cuh"
#include "tile.cuh"

namespace ppat::detail {

// Blocks a cluster may have on Hopper (more than 8 is a size the kernel must allow).
constexpr unsigned cluster_sort_most_blocks = 16;

template <class Shape, class K, class V>
struct cluster_sort_storage {
  struct tile_items {
    uninitialized_array<K, Shape::tile_items> keys;
    uninitialized_array<value_or_char<V>, has_values_of<V> ? Shape::tile_items : 1> values;
  };
  radix_rank_storage<Shape::warps, radix> rank;
  union {
    radix_rank_lanes<Shape::warps, radix> lanes;
    tile_items staged;  // the block's tile in its digit order
  };
  tile_items next;               // the cluster's places [rank x tile, (rank + 1) x tile)
  unsigned counts[radix];        // the block's digit counts, which the cluster reads
  unsigned digit_offset[radix];  // a staged place of digit d, plus this, is its cluster place
  unsigned long long image_bits[2 * Shape::warps];
  unsigned long long block_bits[2];  // the OR and the AND of the block's images
  unsigned apart;
};

// The n keys (and values) from keys_in sorted into keys_out by the calling cluster, whose
// blocks all call; blocks past the keys' last tile take part in the barriers only.
template <class Shape, class K, class V>
__device__ void sort_in_cluster(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                                unsigned n, radix_passes passes, order ord, int end_bit,
                                cluster_sort_storage<Shape, K, V>& s) {
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  using tile_items = typename cluster_sort_storage<Shape, K, V>::tile_items;
  constexpr int items = Shape::items;
  constexpr unsigned tile = Shape::tile_items;
  const unsigned blocks = cluster.num_blocks();
  const unsigned me = cluster.block_rank();
  const unsigned first = me * tile;
  const unsigned valid = n > first ? min(n - first, tile) : 0u;
  const auto next_of = [&](unsigned block) -> tile_items& {
    return *cluster.map_shared_rank(&s.next, block);
  };

  K keys[items];
  value_or_char<V> values[items];
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned at = ranked_item<items>(i);
    if (at < valid) {
      keys[i] = keys_in[first + at];
      if constexpr (has_values_of<V>) values[i] = values_in[first + at];
    }
  }

  // The passes that sort: where the OR and the AND of the cluster's images differ.
  publish_image_bits<Shape>(keys, valid, passes.digit<K>(0, ord, end_bit), s.image_bits);
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long any = 0, every = ~0ull;
    for (int w = 0; w < Shape::warps; ++w) {
      any |= s.image_bits[w];
      every &= s.image_bits[Shape::warps + w];
    }
    s.block_bits[0] = any;
    s.block_bits[1] = every;
  }
  cluster.sync();
  if (threadIdx.x < 32) {
    unsigned long long any = 0, every = ~0ull;
    if (threadIdx.x < blocks) {
      any = *cluster.map_shared_rank(&s.block_bits[0], threadIdx.x);
      every = *cluster.map_shared_rank(&s.block_bits[1], threadIdx.x);
    }
    any = warp_or_bits(any);
    every = warp_and_bits(every);
    if (threadIdx.x == 0) {
      const unsigned long long differing = any ^ every;
      unsigned apart = 0;
      for (int p = 0; p < passes.count; ++p) {
        const radix_digit<K> digit = passes.digit<K>(p, ord, end_bit);
        if (((differing >> digit.shift) & digit.mask) != 0) apart |= 1u << p;
      }
      s.apart = apart;
    }
  }
  __syncthreads();
  const unsigned apart = s.apart;
  if (apart == 0) {
#pragma unroll
    for (int i = 0; i < items; ++i) {
      const unsigned at = ranked_item<items>(i);
      if (at < valid) {
        keys_out[first + at] = keys[i];
        if constexpr (has_values_of<V>) values_out[first + at] = values[i];
      }
    }
    cluster.sync();  // no block leaves while another reads its bits
    return;
  }

  for (unsigned left = apart; left != 0; left &= left - 1) {
    const radix_digit<K> digit = passes.digit<K>(__ffs(int(left)) - 1, ord, end_bit);
    clear_radix_rank<Shape::threads>(s.lanes);
    __syncthreads();
    unsigned ranks[items];
    rank_in_warps<items, false>([&](int i) { return digit(keys[i]); }, valid, digit.mask, s.lanes,
                                ranks);
    __syncthreads();
    const unsigned count = tile_digit_count<items>(s.lanes, s.rank, valid, digit.mask);
    if (threadIdx.x < radix) s.counts[threadIdx.x] = count;
    const unsigned tile_start = add_tile_starts(s.rank, count);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < items; ++i) {
      if (rank_row_past<items>(i, valid)) break;
      const unsigned place = tile_position(s.rank, ranks[i]);
      s.staged.keys[int(place)] = keys[i];
      if constexpr (has_values_of<V>) s.staged.values[int(place)] = values[i];
    }
    cluster.sync();  // every block's counts
    // Four blocks' counts read at a time: one at a time, each read waits on the last.
    unsigned before = 0, total = 0;
    if (threadIdx.x < radix) {
      for (unsigned b = 0; b < blocks; b += 4) {
        unsigned c[4];
#pragma unroll
        for (unsigned k = 0; k < 4; ++k)
          c[k] = b + k < blocks ? *cluster.map_shared_rank(&s.counts[threadIdx.x], b + k) : 0u;
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) {
          before += b + k < me ? c[k] : 0u;
          total += c[k];
        }
      }
    }
    const unsigned digit_start =
        block_exclusive_sum(threadIdx.x < radix ? total : 0u, s.rank.digit_sums);
    if (threadIdx.x < radix) s.digit_offset[threadIdx.x] = digit_start + before - tile_start;
    __syncthreads();
    // Consecutive staged keys of a digit go to consecutive places: runs of each block's
    // shared memory.
#pragma unroll
    for (int k = 0; k < items; ++k) {
      const unsigned r = threadIdx.x + unsigned(k) * Shape::threads;
      if (r < valid) {
        const K key = s.staged.keys[int(r)];
        const unsigned place = r + s.digit_offset[digit(key)];
        tile_items& to = next_of(place / tile);
        to.keys[int(place % tile)] = key;
        if constexpr (has_values_of<V>) to.values[int(place % tile)] = s.staged.values[int(r)];
      }
    }
    cluster.sync();  // the cluster's keys in their places
    if ((left & (left - 1)) == 0) break;
#pragma unroll
    for (int i = 0; i < items; ++i) {
      const unsigned at = ranked_item<items>(i);
      if (at < valid) {
        keys[i] = s.next.keys[int(at)];
        if constexpr (has_values_of<V>) values[i] = s.next.values[int(at)];
      }
    }
  }
  for (unsigned j = threadIdx.x; j < valid; j += Shape::threads) {
    keys_out[first + j] = s.next.keys[int(j)];
    if constexpr (has_values_of<V>) values_out[first + j] = s.next.values[int(j)];
  }
}

template <class Shape, class K, class V>
__global__ void __launch_bounds__(Shape::threads, 1)
    cluster_sort_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                        unsigned n, radix_passes passes, order ord, int end_bit) {
#if __CUDA_ARCH__ >= 900
  sort_in_cluster<Shape>(keys_in, keys_out, values_in, values_out, n, passes, ord, end_bit,
                         dynamic_shared_storage<cluster_sort_storage<Shape, K, V>>());
#endif
}

// The tiles, each the smallest that lets 16 of them hold the keys: blocks of 256 threads
// with four keys each (1,024 a tile) up to 16,384 keys, with eight up to 32,768, then 4,096
// a tile, 512 threads with eight for keys of up to 4 bytes and u32 pairs, 256 with sixteen
// for 8-byte keys alone (512 x 8 took u64 keys at 65,536 in 77.6 us against 71.7). Pairs of
// more than 8 bytes keep the one-launch sort (not timed here). Measured on an H100
// (docs/patterns.md, "Radix sort").
template <class K, class V>
using cluster_small_shape = tile_shape<K, V, tuning<256, 128, 0>, 4>;
template <class K, class V>
using cluster_medium_shape = tile_shape<K, V, tuning<256, 128, 0>, 8>;
template <class K, class V>
using cluster_large_shape =
    std::conditional_t<sizeof(K) == 8 && !has_values_of<V>, tile_shape<K, V, tuning<256, 256, 0>>,
                       tile_shape<K, V, tuning<512, 128, 0>, 8>>;

// n keys (and values) of 2 to 16 tiles of `Shape` sorted by one cluster, launched; false
// (nothing launched) where the GPU has no clusters, or where no cluster of that many blocks
// fits on it.
template <class Shape, class K, class V>
bool launch_cluster_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                         std::size_t n, radix_passes passes, order ord, int end_bit,
                         const call_context& call) {
  constexpr auto kernel = cluster_sort_kernel<Shape, K, V>;
  constexpr std::size_t bytes = sizeof(cluster_sort_storage<Shape, K, V>);
  const std::size_t blocks = ceil_div(n, Shape::tile_items);
  if (!call.limits().has_clusters || blocks < 2 || blocks > cluster_sort_most_blocks ||
      bytes > std::size_t(call.limits().shared_bytes_per_block_optin))
    return false;
  allow_dynamic_shared_bytes<kernel>(call);
  allow_large_clusters<kernel>(call);
  cudaLaunchAttribute cluster_size{};
  cluster_size.id = cudaLaunchAttributeClusterDimension;
  cluster_size.val.clusterDim.x = unsigned(blocks);
  cluster_size.val.clusterDim.y = 1;
  cluster_size.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(blocks));
  config.blockDim = dim3(Shape::threads);
  config.dynamicSmemBytes = bytes;
  config.stream = call.stream();
  config.attrs = &cluster_size;
  config.numAttrs = 1;
  if (resident_clusters<kernel>(config, unsigned(blocks), call) == 0) return false;
  call.check(cudaLaunchKernelEx(&config, kernel, keys_in, keys_out, values_in, values_out,
                                unsigned(n), passes, ord, end_bit),
             "cudaLaunchKernelEx (cluster_sort_kernel)");
  return true;
}

// n keys (and values) sorted by one cluster of the smallest tiles that hold them, launched;
// false (nothing launched) where none does or where clusters cannot run.
template <class K, class V>
bool cluster_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                  radix_passes passes, order ord, int end_bit, const call_context& call) {
  if constexpr (pair_bytes < K, V >> 8) {
    return false;
  } else {
    const auto launch = [&](auto shape) {
      using Shape = decltype(shape);
      return launch_cluster_sort<Shape>(keys_in, keys_out, values_in, values_out, n, passes, ord,
                                        end_bit, call);
    };
    constexpr std::size_t most = cluster_sort_most_blocks;
    if (n <= most * cluster_small_shape<K, V>::tile_items)
      return launch(cluster_small_shape<K, V>{});
    if (n <= most * cluster_medium_shape<K, V>::tile_items)
      return launch(cluster_medium_shape<K, V>{});
    if (n <= most * cluster_large_shape<K, V>::tile_items)
      return launch(cluster_large_shape<K, V>{});
    return false;
  }
}

}  // namespace ppat::detail
