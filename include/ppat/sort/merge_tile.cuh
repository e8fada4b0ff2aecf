// Small inputs sorted by one block's merge sort: the keys staged in shared memory, each
// thread's items sorted in its registers, then runs merged in pairs up to the whole tile
// (sort/merge.cuh). A radix sort of 4-byte keys makes four passes, each ranking every key by
// its digit through shared-memory atomics and barriers; a tile of a few thousand keys merges
// in fewer steps than that, with no atomics (docs/patterns.md, "Radix sort", the figures).
//
// The merges compare the keys' images by the bits sorted (complemented for descending) and
// keep equal keys in input order, so the sort is the radix sort's, NaNs included: positions
// travel with the images where a key cannot be taken back from its image (floats in a tile
// that holds a NaN, whose NaNs share one image; a sort by some of the bits) or where values
// follow the keys, and the outputs gather by them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/no_values.cuh"
#include "merge.cuh"
#include "plan.cuh"
#include "radix_key.cuh"
#include "tile.cuh"

namespace ppat::detail {

template <int Threads, int Items>
struct merge_tile_shape {
  static constexpr int threads = Threads;
  static constexpr int items = Items;
  static constexpr int tile_items = Threads * Items;
};

// A tile's shared memory: its keys (and values) in input order, the merges' runs, and the
// positions the sorted items came from. A slot of padding every 32 items puts the items a
// thread holds, Items apart, in distinct banks. Where the keys come back from their images
// (integer keys by all their bits; floats alone, by all their bits, in a tile without NaN),
// the merges run in the keys' own array, and the sorted keys are written back there in order.
template <class Shape, class K, class V, bool AllBits>
struct merge_tile_storage {
  using image_type = typename radix_key<K>::image_type;
  static constexpr bool keys_from_images = radix_key<K>::invertible && AllBits;
  // Floats alone by all their bits, where the tile holds no NaN.
  static constexpr bool numbers_from_images =
      !radix_key<K>::invertible && AllBits && !has_values_of<V>;
  static constexpr bool carry_positions = has_values_of<V> || !keys_from_images;
  static constexpr int slots = Shape::tile_items + Shape::tile_items / 32;
  static __device__ unsigned slot(unsigned item) { return item + item / 32; }

  K keys[slots];
  value_or_char<V> values[has_values_of<V> ? slots : 1];
  image_type images[keys_from_images ? 1 : slots];
  unsigned short positions[carry_positions ? slots : 1];
};

// What the merges compare: the bits [begin_bit, end_bit) of the key's image, complemented for
// a descending sort (which is then an ascending one).
template <class K, bool AllBits>
struct merge_image {
  using image_type = typename radix_key<K>::image_type;
  image_type flip;
  int begin_bit;
  image_type mask;  // of end_bit - begin_bit bits, fewer than the image's where !AllBits

  __device__ image_type operator()(const K& key) const {
    const image_type image = image_type(radix_key<K>::image(key) ^ flip);
    if constexpr (AllBits) {
      return image;
    } else {
      return image_type(image_type(image >> begin_bit) & mask);
    }
  }
};

// The staged keys sorted: each thread's items by image, with their positions where
// CarryPositions, merged up to the tile (in the keys' own array where FromImages, whose keys
// are then taken back from their images in place), then each output place given its key (and
// value).
template <class Shape, bool FromImages, bool CarryPositions, bool AllBits, class K, class V>
__device__ void merge_staged_tile(K* keys_out, V* values_out, unsigned n,
                                  const merge_image<K, AllBits>& image_of,
                                  merge_tile_storage<Shape, K, V, AllBits>& storage) {
  using storage_type = merge_tile_storage<Shape, K, V, AllBits>;
  using image_type = typename radix_key<K>::image_type;
  constexpr int threads = Shape::threads;
  constexpr int items = Shape::items;
  const auto slot = storage_type::slot;
  const unsigned thread = threadIdx.x % unsigned(threads);

  // Thread t sorts items t x items to t x items + items - 1; past the end, the largest image,
  // after every key by position.
  image_type images[items];
  unsigned short positions[items];
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned e = thread * unsigned(items) + unsigned(i);
    images[i] = e < n ? image_of(storage.keys[slot(e)]) : image_type(~image_type(0));
    positions[i] = (unsigned short)e;
  }
  image_type* const merged =
      FromImages ? reinterpret_cast<image_type*>(storage.keys) : storage.images;
  merge_sort_lanes<threads, items, CarryPositions>(images, positions, merged, storage.positions,
                                                   thread, slot);
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned sorted_slot = slot(thread * unsigned(items) + unsigned(i));
    if constexpr (FromImages) {
      const image_type image = image_type(images[i] ^ image_of.flip);
      if constexpr (radix_key<K>::invertible) {
        storage.keys[sorted_slot] = radix_key<K>::key(image);
      } else {
        storage.keys[sorted_slot] = radix_key<K>::number(image);
      }
    }
    if constexpr (CarryPositions) storage.positions[sorted_slot] = positions[i];
  }
  __syncthreads();

  // Each output place takes the key (and value) at the position its sorted item holds (an
  // image does not give back a NaN's bits), or the key taken back from its image.
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned e = unsigned(i * threads) + thread;
    if (e < n) {
      if constexpr (CarryPositions) {
        const unsigned from = slot(storage.positions[slot(e)]);
        keys_out[e] = FromImages ? storage.keys[slot(e)] : storage.keys[from];
        if constexpr (has_values_of<V>) values_out[e] = storage.values[from];
      } else {
        keys_out[e] = storage.keys[slot(e)];
      }
    }
  }
}

// The n keys (and values), n <= Shape::tile_items, sorted by Shape::threads threads: the
// block, or one of its tiles where the block holds several (threads t x Shape::threads up).
// The barriers are the block's: every thread of the block calls it, each tile with its own
// keys and storage (n may be 0), and a tile of floats takes positions where any tile of the
// block holds a NaN. The whole input is read before any of it is written, which keeps a sort
// in place right; the storage is free again when it returns.
template <class Shape, bool AllBits, class K, class V>
__device__ void sort_in_merge_tile(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                                   unsigned n, const merge_image<K, AllBits>& image_of,
                                   merge_tile_storage<Shape, K, V, AllBits>& storage) {
  using storage_type = merge_tile_storage<Shape, K, V, AllBits>;
  constexpr int threads = Shape::threads;
  constexpr int items = Shape::items;
  const auto slot = storage_type::slot;
  const unsigned thread = threadIdx.x % unsigned(threads);

  // Staged in input order, so that the reads coalesce.
  bool any_nan = false;
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned e = unsigned(i * threads) + thread;
    if (e < n) {
      const K key = keys_in[e];
      storage.keys[slot(e)] = key;
      if constexpr (storage_type::numbers_from_images) any_nan |= radix_key<K>::is_nan(key);
      if constexpr (has_values_of<V>) storage.values[slot(e)] = values_in[e];
    }
  }

  constexpr bool carry = storage_type::carry_positions;
  if constexpr (storage_type::keys_from_images) {
    __syncthreads();
    merge_staged_tile<Shape, true, carry>(keys_out, values_out, n, image_of, storage);
  } else if constexpr (storage_type::numbers_from_images) {
    // Floats alone come back from their images where the tile holds no NaN, and need no
    // positions then.
    if (__syncthreads_or(any_nan)) {
      merge_staged_tile<Shape, false, true>(keys_out, values_out, n, image_of, storage);
    } else {
      merge_staged_tile<Shape, true, false>(keys_out, values_out, n, image_of, storage);
    }
  } else {
    __syncthreads();
    merge_staged_tile<Shape, false, carry>(keys_out, values_out, n, image_of, storage);
  }
  __syncthreads();  // every read of the storage before its next writes
}

template <class Shape, bool AllBits, class K, class V>
__global__ void __launch_bounds__(Shape::threads)
    merge_tile_sort_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                           unsigned n, merge_image<K, AllBits> image_of) {
  sort_in_merge_tile<Shape>(keys_in, keys_out, values_in, values_out, n, image_of,
                            dynamic_shared_storage<merge_tile_storage<Shape, K, V, AllBits>>());
}

template <class Shape, bool AllBits, class K, class V>
void launch_merge_tile_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                            std::size_t n, order ord, int begin_bit, int end_bit,
                            const call_context& call) {
  using image_type = typename radix_key<K>::image_type;
  const int width = end_bit - begin_bit;
  const merge_image<K, AllBits> image_of{
      ord == order::descending ? image_type(~image_type(0)) : image_type(0), begin_bit,
      width >= int(8 * sizeof(image_type)) ? image_type(~image_type(0))
                                           : image_type((1ull << width) - 1)};
  constexpr auto kernel = merge_tile_sort_kernel<Shape, AllBits, K, V>;
  allow_dynamic_shared_bytes<kernel>(call);
  kernel<<<1, Shape::threads, sizeof(merge_tile_storage<Shape, K, V, AllBits>), call.stream()>>>(
      keys_in, keys_out, values_in, values_out, unsigned(n), image_of);
  check_launch(call.function(), "merge_tile_sort_kernel");
}

// n keys (and values), at most Shape::tile_items, sorted by one block's merge sort.
template <class Shape, class K, class V>
void merge_tile_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                     std::size_t n, order ord, int begin_bit, int end_bit,
                     const call_context& call) {
  if (begin_bit == 0 && end_bit == int(8 * sizeof(K))) {
    launch_merge_tile_sort<Shape, true>(keys_in, keys_out, values_in, values_out, n, ord, begin_bit,
                                        end_bit, call);
  } else {
    launch_merge_tile_sort<Shape, false>(keys_in, keys_out, values_in, values_out, n, ord,
                                         begin_bit, end_bit, call);
  }
}

// The merge tile that sorts n keys (and values) fastest: f(Shape{}) and true, or false where
// the radix paths are faster or the tile's shared memory is more than the call's GPU gives a
// block. 128, 256 and 512 threads holding 4 keys each up to 2,048, 512 x 8 up to 4,096 and
// 512 x 16 up to 8,192 for 8-byte keys and for 4-byte keys alone by all their bits (floats
// among them, which carry positions only where the tile holds a NaN). A radix sort by 16 bits
// or fewer takes two passes, which the merges do not beat, nor one of 24 bits or fewer (three)
// past 2,048 keys; nor do they beat the one-tile radix sort of 4,097 to 8,192 4-byte keys that
// carry their positions through the merges (pairs, bit ranges: docs/patterns.md, "Radix sort",
// the figures).
template <class K, class V, class F>
bool on_merge_tile(std::size_t n, int begin_bit, int end_bit, const call_context& call, F&& f) {
  if constexpr (sizeof(K) < 4) {
    return false;
  } else {
    const int width = end_bit - begin_bit;
    if (width <= 16 || (width <= 24 && n > 2048)) return false;
    const auto take = [&](auto shape) {
      using storage = merge_tile_storage<decltype(shape), K, V, false>;
      if (sizeof(storage) > std::size_t(call.limits().shared_bytes_per_block_optin)) return false;
      f(shape);
      return true;
    };
    if (n <= 512) return take(merge_tile_shape<128, 4>{});
    if (n <= 1024) return take(merge_tile_shape<256, 4>{});
    if (n <= 2048) return take(merge_tile_shape<512, 4>{});
    if (n <= 4096) return take(merge_tile_shape<512, 8>{});
    const bool alone_by_all_bits = !has_values_of<V> && end_bit - begin_bit == int(8 * sizeof(K));
    if (n <= 8192 && (sizeof(K) == 8 || alone_by_all_bits))
      return take(merge_tile_shape<512, 16>{});
    return false;
  }
}

}  // namespace ppat::detail
