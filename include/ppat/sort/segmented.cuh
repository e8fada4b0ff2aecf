// Segmented sorts: every segment of an array sorted on its own, with lengths that only the
// device knows. A binning kernel reads each segment's offsets and sends it down the path its
// length calls for:
//
//   0 or 1 keys        nothing to sort: a lone key is copied (where the output is not the input)
//   up to 256 keys     a group of 2 to 32 lanes a segment, staged in shared memory: a
//                      bitonic sort in registers up to 32 keys, then (keys of up to 4
//                      bytes) a merge sort of the lanes' sorted runs
//   up to one tile     one block a segment, every pass in shared memory (sort/one_tile.cuh's
//                      block sort), in the three block sizes the whole-array sort has
//   longer             the onesweep passes (sort/onesweep.cuh) over all such segments at
//                      once, each segment a chain of tiles with digit starts of its own, so
//                      that a long segment is sorted by every SM, never by one block
//
// A look-back chain counts fewer than 2^30 keys, so a segment longer than portion_items is
// several chains, each starting where the ones before it end. The host only knows bounds
// (how many segments each path can hold at most); every kernel reads the counts the binning
// kernel left, and blocks past them do nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "../core/block.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/memory.cuh"
#include "../core/no_values.cuh"
#include "../core/segments.cuh"
#include "../core/warp.cuh"
#include "digit_counts.cuh"
#include "one_tile.cuh"
#include "onesweep.cuh"
#include "plan.cuh"
#include "radix_key.cuh"
#include "tile.cuh"

namespace ppat::detail {

// The paths of segments that one group of lanes or one block sorts, shortest first: groups
// of lanes up to 256 keys (group_shape), then blocks of 256 threads with 4, 8 and 16 keys
// each (the last at three blocks an SM for keys of up to 4 bytes; 8-byte keys would spill)
// and the one-tile sort's 512 x 16; blocks too are fastest the smallest that hold the
// segment (docs/patterns.md, "Segmented sorts").
constexpr int group_bins = 6;
constexpr int short_bins = group_bins + 4;

// The group of lanes that sorts a segment of bin Bin (up to 8 << Bin keys). Fewer lanes
// holding more keys each measured faster, up to 16 keys of up to 4 bytes a lane (8 of 8
// bytes, whose words would otherwise fill the registers): a compare within a lane costs
// less than one across lanes. From 33 keys of up to 4 bytes a merge sort of the lanes' runs
// beats the bitonic network. For 65 to 128 keys, values of up to 4 bytes are not staged but
// read by position after the sort, which leaves shared memory for a fourth block an SM. All
// measured, docs/patterns.md.
template <class K, class V, int Bin>
struct group_shape {
  static constexpr int items = Bin <= 1 ? 4 : Bin == 2 || sizeof(K) > 4 || Bin == 5 ? 8 : 16;
  static constexpr int lanes = (8 << Bin) / items;
  static constexpr bool merges = Bin >= 3 && sizeof(K) <= 4;
  static constexpr bool stages_values =
      has_values_of<V> && !(merges && Bin == 4 && sizeof(value_or_char<V>) <= 4);
};
template <class K, class V, int Bin>
using segment_block_shape = std::conditional_t<
    Bin == group_bins, one_tile_tiny_shape<K, V>,
    std::conditional_t<
        Bin == group_bins + 1, tile_shape<K, V, tuning<256, 128, 0>, 8>,
        std::conditional_t<Bin == group_bins + 2,
                           tile_shape<K, V, tuning<256, 128, sizeof(K) <= 4 ? 3 : 0>>,
                           one_tile_large_shape<K, V>>>>;
template <class K, class V, int Bin>
constexpr unsigned short_bin_capacity = [] {
  if constexpr (Bin < group_bins) {
    return unsigned(group_shape<K, V, Bin>::lanes * group_shape<K, V, Bin>::items);
  } else {
    return unsigned(segment_block_shape<K, V, Bin>::tile_items);
  }
}();
// Longer segments: the onesweep's tiles.
template <class K, class V>
using segment_chain_shape = onesweep_shape<K, V>;

// Up to portion_items keys of a long segment, whose tiles look back only to one another.
struct segment_chain {
  std::size_t begin;  // the chain's first key
  unsigned length;
  unsigned first_tile;
  unsigned segment_first;   // the slot of its segment's first chain
  unsigned segment_chains;  // chains in its segment
};

// Where the binning kernel sends the segments, in device memory.
struct segment_bins {
  unsigned long long* sizes;             // [short_bins]: segments in each, zeroed
  std::size_t* segments[short_bins];     // their indices
  unsigned long long* chains_and_tiles;  // chains << 32 | their tiles, zeroed
  segment_chain* chains;
  unsigned capacity[short_bins];  // keys a group or block of each bin sorts
  unsigned chain_tile_items;
};
constexpr int chain_count_shift = 32;

__device__ inline unsigned chain_count(const segment_bins& bins) {
  return unsigned(*bins.chains_and_tiles >> chain_count_shift);
}
__device__ inline unsigned chain_tile_count(const segment_bins& bins) {
  return unsigned(*bins.chains_and_tiles);
}

// ---- Binning -----------------------------------------------------------------------------

// A long segment as chains of up to portion_items keys, appended with their tiles by one
// atomic, so that the chains of every segment take consecutive slots and tiles, in the same
// order.
__device__ inline void append_chains(const segment_range& segment, const segment_bins& bins) {
  const std::size_t chains = ceil_div(segment.length, portion_items);
  const std::size_t last_length = segment.length - (chains - 1) * portion_items;
  const std::size_t tiles = (chains - 1) * (portion_items / bins.chain_tile_items) +
                            ceil_div(last_length, bins.chain_tile_items);
  const unsigned long long at =
      atomicAdd(bins.chains_and_tiles,
                (chains << chain_count_shift) | static_cast<unsigned long long>(tiles));
  const unsigned slot = unsigned(at >> chain_count_shift);
  unsigned tile = unsigned(at);
  for (std::size_t c = 0; c < chains; ++c) {
    const unsigned length = unsigned(c + 1 < chains ? portion_items : last_length);
    bins.chains[slot + c] = {segment.begin + c * portion_items, length, tile, slot,
                             unsigned(chains)};
    tile += unsigned(ceil_div(length, bins.chain_tile_items));
  }
}

// Segments to their paths, `segments_a_thread` each a step. A block appends its segments of
// each bin with one atomic, their places among the block's from shared-memory counts, so
// that millions of short segments do not queue on one word a bin.
constexpr int binning_threads = 256;
constexpr int segments_a_thread = 4;

template <class Segments, class K, class V>
__global__ void __launch_bounds__(binning_threads)
    bin_segments_kernel(Segments segments, const K* keys_in, K* keys_out, const V* values_in,
                        V* values_out, segment_bins bins) {
  __shared__ unsigned block_count[short_bins];
  __shared__ unsigned long long block_first[short_bins];
  constexpr std::size_t step = std::size_t(binning_threads) * segments_a_thread;
  for (std::size_t base = std::size_t(blockIdx.x) * step; base < segments.count;
       base += std::size_t(gridDim.x) * step) {
    if (threadIdx.x < short_bins) block_count[threadIdx.x] = 0;
    __syncthreads();
    int bin[segments_a_thread];
    unsigned place[segments_a_thread];
    segment_range segment[segments_a_thread];
#pragma unroll
    for (int j = 0; j < segments_a_thread; ++j) {
      const std::size_t i = base + std::size_t(j) * binning_threads + threadIdx.x;
      segment[j] = i < segments.count ? segments(i) : segment_range{0, 0};
      bin[j] = -1;
      if (segment[j].length == 1) {
        const std::size_t at = segment[j].begin;
        if (keys_in != keys_out) keys_out[at] = keys_in[at];
        if constexpr (has_values_of<V>) {
          if (values_in != values_out) values_out[at] = values_in[at];
        }
      } else if (segment[j].length > 1) {
        bin[j] = 0;
        while (bin[j] < short_bins && segment[j].length > bins.capacity[bin[j]])
          ++bin[j];
      }
      if (bin[j] >= 0 && bin[j] < short_bins) place[j] = atomicAdd(&block_count[bin[j]], 1u);
    }
    __syncthreads();
    if (threadIdx.x < short_bins && block_count[threadIdx.x] != 0)
      block_first[threadIdx.x] = atomicAdd(&bins.sizes[threadIdx.x], block_count[threadIdx.x]);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < segments_a_thread; ++j) {
      const std::size_t i = base + std::size_t(j) * binning_threads + threadIdx.x;
      if (bin[j] >= 0 && bin[j] < short_bins)
        bins.segments[bin[j]][block_first[bin[j]] + place[j]] = i;
      if (bin[j] == short_bins) append_chains(segment[j], bins);
    }
    __syncthreads();  // before the next step clears the counts
  }
}

// ---- One group of lanes a segment ------------------------------------------------------------

// What a group sorts an item of a short segment by: its image (complemented for descending)
// and then its position in the segment, so that equal keys keep their order and no two
// items tie. Keys of up to 4 bytes pack both in one word.
template <class K, bool Wide = (sizeof(K) > 4)>
struct group_sort_word {
  unsigned long long word;
  group_sort_word() = default;
  __device__ group_sort_word(unsigned long long image, unsigned position)
      : word(image << 32 | position) {}
  __device__ unsigned position() const { return unsigned(word); }
  __device__ bool operator<(const group_sort_word& other) const { return word < other.word; }
  __device__ group_sort_word from_lane_xor(int mask) const {
    group_sort_word other = *this;
    other.word = __shfl_xor_sync(full_warp, word, mask);
    return other;
  }
};
template <class K>
struct group_sort_word<K, true> {
  unsigned long long image;
  unsigned at;
  group_sort_word() = default;
  __device__ group_sort_word(unsigned long long image_, unsigned position)
      : image(image_), at(position) {}
  __device__ unsigned position() const { return at; }
  __device__ bool operator<(const group_sort_word& other) const {
    return image < other.image || (image == other.image && at < other.at);
  }
  __device__ group_sort_word from_lane_xor(int mask) const {
    return {__shfl_xor_sync(full_warp, image, mask), __shfl_xor_sync(full_warp, at, mask)};
  }
};

// Bitonic sort of a group's Lanes x Items words, lane l holding items l * Items to
// l * Items + Items - 1: partners fewer than Items apart compare within a lane, farther ones
// through shuffles. So the merges up to Items keys shuffle nothing, and each later merge
// shuffles only in its first log2(Lanes) steps (with items striped across the lanes, all
// but the last log2(Items) steps of every merge shuffled; docs/patterns.md has both timed).
template <int Lanes, int Items, class Word>
__device__ __forceinline__ void bitonic_sort_group(Word (&words)[Items], unsigned lane) {
  constexpr int items = Lanes * Items;
#pragma unroll
  for (int k = 2; k <= items; k *= 2) {
#pragma unroll
    for (int j = k / 2; j > 0; j /= 2) {
#pragma unroll
      for (int s = 0; s < Items; ++s) {
        const bool ascending = ((lane * unsigned(Items) + unsigned(s)) & unsigned(k)) == 0;
        if (j < Items) {
          const int partner = s ^ j;
          if (partner > s && (words[partner] < words[s]) == ascending) {
            const Word low = words[partner];
            words[partner] = words[s];
            words[s] = low;
          }
        } else {
          const int lanes_apart = j / Items;
          const Word other = words[s].from_lane_xor(lanes_apart);
          const bool lower = (lane & unsigned(lanes_apart)) == 0;
          if (lower == ascending ? other < words[s] : words[s] < other) words[s] = other;
        }
      }
    }
  }
}

// Stable merge sort of a group's Lanes x Items keys by image alone, lane l holding items
// l * Items to l * Items + Items - 1 (`images`, with the `positions` they came from): each
// lane sorts its own by odd-even transposition, then runs of Items, 2 x Items, ... are merged
// in pairs through shared memory (`merged_images`, `merged_positions`, item i at slot
// `slot(i)`), each lane finding where its Items outputs start on the merge path and
// taking them one at a time, the left run's first where keys are equal. A compare reads the
// keys' images alone, where the network's compares (image, position) words
// (docs/patterns.md, "Segmented sorts").
template <int Lanes, int Items, class Image, class Slot>
__device__ __forceinline__ void merge_sort_group(Image (&images)[Items],
                                                 unsigned short (&positions)[Items],
                                                 Image* merged_images,
                                                 unsigned short* merged_positions, unsigned lane,
                                                 Slot slot) {
#pragma unroll
  for (int pass = 0; pass < Items; ++pass) {
#pragma unroll
    for (int i = pass % 2; i + 1 < Items; i += 2) {
      if (images[i + 1] < images[i]) {
        const Image image = images[i];
        images[i] = images[i + 1];
        images[i + 1] = image;
        const unsigned short position = positions[i];
        positions[i] = positions[i + 1];
        positions[i + 1] = position;
      }
    }
  }
#pragma unroll
  for (int run_lanes = 1; run_lanes < Lanes; run_lanes *= 2) {
    constexpr unsigned items = unsigned(Items);
    const unsigned run = unsigned(run_lanes) * items;  // keys a run
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      merged_images[slot(lane * items + unsigned(i))] = images[i];
      merged_positions[slot(lane * items + unsigned(i))] = positions[i];
    }
    __syncwarp();
    const unsigned left = (lane & ~unsigned(2 * run_lanes - 1)) * items;
    const auto a = [&](unsigned i) { return merged_images[slot(left + i)]; };
    const auto b = [&](unsigned i) { return merged_images[slot(left + run + i)]; };
    const unsigned diagonal = (lane & unsigned(2 * run_lanes - 1)) * items;
    // The merge path: the fewest keys of `a` among the first `diagonal` outputs.
    unsigned low = diagonal > run ? diagonal - run : 0;
    unsigned high = min(diagonal, run);
    while (low < high) {
      const unsigned middle = (low + high) / 2;
      if (b(diagonal - 1 - middle) < a(middle)) {
        high = middle;
      } else {
        low = middle + 1;
      }
    }
    unsigned from_a = low;
    unsigned from_b = diagonal - low;
    Image next_a = a(min(from_a, run - 1));
    Image next_b = b(min(from_b, run - 1));
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const bool take_a = from_a < run && (from_b >= run || !(next_b < next_a));
      images[i] = take_a ? next_a : next_b;
      positions[i] = merged_positions[slot(left + (take_a ? from_a : run + from_b))];
      if (take_a) {
        next_a = a(min(++from_a, run - 1));
      } else {
        next_b = b(min(++from_b, run - 1));
      }
    }
    __syncwarp();  // every lane's reads before the next run's writes
  }
}

constexpr int group_sort_threads = 256;

// A block's groups' segments in shared memory: each group's keys (and values, where the
// shape stages them) as read, in input order so that the reads coalesce; the merge's runs;
// then the positions its sorted items hold, by which the output places take their key and
// value, again in input order. A slot of padding every 32 items puts the items a lane
// touches, Items apart, in distinct banks. The merge groups keep each array for all groups
// one after another: unpadded, or in one structure a group, lanes of a warp 8 or 16 items
// apart (or in other groups) met in one bank; the network groups' one structure a group
// measured faster at 8 and 16 keys (docs/patterns.md, "Segmented sorts").
template <class K, class V, class Shape, bool ArrayByArray = Shape::merges>
struct group_staging {
  static constexpr int groups = group_sort_threads / Shape::lanes;
  static constexpr int items = Shape::lanes * Shape::items;
  static constexpr int slots = items + items / 32;
  static __device__ unsigned slot(unsigned item) { return item + item / 32; }
  K all_keys[groups][slots];
  value_or_char<V> all_values[Shape::stages_values ? groups : 1][Shape::stages_values ? slots : 1];
  typename radix_key<K>::image_type all_merged_images[groups][slots];
  unsigned short all_positions[groups][slots];
  __device__ K* keys(unsigned group) { return all_keys[group]; }
  __device__ value_or_char<V>* values(unsigned group) { return all_values[group]; }
  __device__ typename radix_key<K>::image_type* merged_images(unsigned group) {
    return all_merged_images[group];
  }
  __device__ unsigned short* positions(unsigned group) { return all_positions[group]; }
};
template <class K, class V, class Shape>
struct group_network_arrays {
  static constexpr int slots = Shape::lanes * Shape::items + Shape::lanes * Shape::items / 32;
  K keys[slots];
  value_or_char<V> values[Shape::stages_values ? slots : 1];
  unsigned short positions[slots];
};
template <class K, class V, class Shape>
struct group_staging<K, V, Shape, false> {
  static constexpr int groups = group_sort_threads / Shape::lanes;
  static constexpr int slots = group_network_arrays<K, V, Shape>::slots;
  static __device__ unsigned slot(unsigned item) { return item + item / 32; }
  // Each group's arrays padded to an odd number of words where their alignment allows (up
  // to 4 bytes), so that the groups of a warp start in different banks.
  static constexpr std::size_t words = ceil_div(sizeof(group_network_arrays<K, V, Shape>), 4);
  struct group_arrays : group_network_arrays<K, V, Shape> {
    unsigned pad[words % 2 == 0 ? 1 : 2];
  };
  group_arrays all[groups];
  __device__ K* keys(unsigned group) { return all[group].keys; }
  __device__ value_or_char<V>* values(unsigned group) { return all[group].values; }
  __device__ unsigned short* positions(unsigned group) { return all[group].positions; }
};

// Each group of Shape::lanes lanes sorts segments of up to lanes x items keys: the segment
// staged in shared memory, each lane's items sorted with their positions (by the bitonic
// network, or the merge sort), then every output place takes the key (and value) at the
// position its sorted item holds (an image does not give back a NaN's bits). The whole
// segment is read before any of it is written (values not staged are read into registers
// first), which keeps a sort in place right.
template <class Shape, class Segments, class K, class V>
__global__ void __launch_bounds__(group_sort_threads)
    segment_group_sort_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                              Segments segments, const std::size_t* listed,
                              const unsigned long long* listed_count, order ord) {
  using image_type = typename radix_key<K>::image_type;
  using staging = group_staging<K, V, Shape>;
  constexpr int Lanes = Shape::lanes;
  constexpr int Items = Shape::items;
  constexpr int groups_per_warp = 32 / Lanes;
  constexpr int warps_per_block = group_sort_threads / 32;
  staging& staged = dynamic_shared_storage<staging>();
  const unsigned group = threadIdx.x / Lanes;
  K* const keys = staged.keys(group);
  value_or_char<V>* const staged_values = staged.values(group);
  unsigned short* const positions_of = staged.positions(group);
  const image_type flip = ord == order::descending ? image_type(~image_type(0)) : image_type(0);
  const unsigned lane = threadIdx.x % Lanes;
  const std::size_t count = listed == nullptr ? segments.count : std::size_t(*listed_count);
  const std::size_t warp = std::size_t(blockIdx.x) * warps_per_block + threadIdx.x / 32;
  const std::size_t warps = std::size_t(gridDim.x) * warps_per_block;
  for (std::size_t first = warp * groups_per_warp; first < count;
       first += warps * groups_per_warp) {
    const std::size_t s = first + threadIdx.x % 32 / Lanes;
    const segment_range segment =
        s < count ? segments(listed == nullptr ? s : listed[s]) : segment_range{0, 0};
    const unsigned length = unsigned(segment.length);
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const unsigned e = unsigned(i * Lanes) + lane;
      if (e < length) {
        keys[staging::slot(e)] = keys_in[segment.begin + e];
        if constexpr (Shape::stages_values)
          staged_values[staging::slot(e)] = values_in[segment.begin + e];
      }
    }
    __syncwarp();
    // Past the end: the largest image, after every key by position.
    const auto image_at = [&](unsigned e) {
      return e < length ? image_type(radix_key<K>::image(keys[staging::slot(e)]) ^ flip)
                        : image_type(~image_type(0));
    };
    if constexpr (Shape::merges) {
      image_type images[Items];
      unsigned short positions[Items];
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        const unsigned e = lane * unsigned(Items) + unsigned(i);
        images[i] = image_at(e);
        positions[i] = (unsigned short)e;
      }
      merge_sort_group<Lanes, Items>(images, positions, staged.merged_images(group), positions_of,
                                     lane, staging::slot);
#pragma unroll
      for (int i = 0; i < Items; ++i)
        positions_of[staging::slot(lane * unsigned(Items) + unsigned(i))] = positions[i];
    } else {
      group_sort_word<K> words[Items];
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        const unsigned e = lane * unsigned(Items) + unsigned(i);
        words[i] = group_sort_word<K>(image_at(e), e);
      }
      bitonic_sort_group<Lanes, Items>(words, lane);
#pragma unroll
      for (int i = 0; i < Items; ++i)
        positions_of[staging::slot(lane * unsigned(Items) + unsigned(i))] =
            (unsigned short)words[i].position();
    }
    __syncwarp();
    const auto from = [&](unsigned e) { return unsigned(positions_of[staging::slot(e)]); };
    if constexpr (has_values_of<V> && !Shape::stages_values) {
      V values[Items];
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        const unsigned e = unsigned(i * Lanes) + lane;
        if (e < length) values[i] = values_in[segment.begin + from(e)];
      }
      __syncwarp();  // every value read before any is written
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        const unsigned e = unsigned(i * Lanes) + lane;
        if (e < length) {
          keys_out[segment.begin + e] = keys[staging::slot(from(e))];
          values_out[segment.begin + e] = values[i];
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        const unsigned e = unsigned(i * Lanes) + lane;
        if (e < length) {
          const unsigned slot = staging::slot(from(e));
          keys_out[segment.begin + e] = keys[slot];
          if constexpr (has_values_of<V>) values_out[segment.begin + e] = staged_values[slot];
        }
      }
    }
    __syncwarp();  // before the next segments are staged
  }
}

// ---- One block a segment -------------------------------------------------------------------

// Block b sorts segments b, b + gridDim.x, ... of its bin's list (`listed`), or of all the
// segments where there is no list (rows, all of one bin).
template <class Shape, class Segments, class K, class V>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    segment_block_sort_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                              Segments segments, const std::size_t* listed,
                              const unsigned long long* listed_count, radix_passes passes,
                              order ord, int end_bit) {
  auto& storage = dynamic_shared_storage<tile_storage<Shape, K, V>>();
  const std::size_t count = listed == nullptr ? segments.count : std::size_t(*listed_count);
  for (std::size_t s = blockIdx.x; s < count; s += gridDim.x) {
    const segment_range segment = segments(listed == nullptr ? s : listed[s]);
    const std::size_t b = segment.begin;
    if constexpr (has_values_of<V>) {
      sort_in_one_tile<Shape>(keys_in + b, keys_out + b, values_in + b, values_out + b,
                              unsigned(segment.length), passes, ord, end_bit, storage);
    } else {
      sort_in_one_tile<Shape>(keys_in + b, keys_out + b, values_in, values_out,
                              unsigned(segment.length), passes, ord, end_bit, storage);
    }
  }
}

// The segments of short bin `Bin`: `listed` (`listed_count` of them, at most
// `most_segments`), or every segment where there is no list.
template <int Bin, class K, class V, class Segments>
void sort_short_segments(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                         const Segments& segments, const std::size_t* listed,
                         const unsigned long long* listed_count, std::size_t most_segments,
                         order ord, const call_context& call) {
  if constexpr (Bin < group_bins) {
    using shape = group_shape<K, V, Bin>;
    constexpr auto kernel = segment_group_sort_kernel<shape, Segments, K, V>;
    constexpr std::size_t groups_per_block = group_sort_threads / shape::lanes;
    constexpr std::size_t shared_bytes = sizeof(group_staging<K, V, shape>);
    allow_dynamic_shared_bytes<kernel>(call);
    const std::size_t blocks =
        std::min(ceil_div(most_segments, groups_per_block),
                 resident_blocks<kernel>(group_sort_threads, shared_bytes, call));
    kernel<<<unsigned(std::max<std::size_t>(blocks, 1)), group_sort_threads, shared_bytes,
             call.stream()>>>(keys_in, keys_out, values_in, values_out, segments, listed,
                              listed_count, ord);
    check_launch(call.function(), "segment_group_sort_kernel");
  } else {
    using shape = segment_block_shape<K, V, Bin>;
    constexpr auto kernel = segment_block_sort_kernel<shape, Segments, K, V>;
    constexpr std::size_t shared_bytes = sizeof(tile_storage<shape, K, V>);
    allow_dynamic_shared_bytes<kernel>(call);
    const std::size_t blocks =
        std::min(most_segments, resident_blocks<kernel>(shape::threads, shared_bytes, call));
    kernel<<<unsigned(std::max<std::size_t>(blocks, 1)), shape::threads, shared_bytes,
             call.stream()>>>(keys_in, keys_out, values_in, values_out, segments, listed,
                              listed_count, radix_passes::of(0, 8 * int(sizeof(K))), ord,
                              8 * int(sizeof(K)));
    check_launch(call.function(), "segment_block_sort_kernel");
  }
}

// ---- Chains of tiles ---------------------------------------------------------------------------

// Block c: chain c's tiles marked as its own, their published counts of the first pass
// zeroed, and the chain's digit counts zeroed; block 0 zeroes every pass's ticket counter.
// (The kernels of a header-only library are templates, one definition in every translation
// unit: this one and the digit starts' on the key type they serve.)
template <class K>
__global__ void __launch_bounds__(256)
    map_chain_tiles_kernel(segment_bins bins, unsigned* tile_chains, unsigned* first_published,
                           unsigned* tile_counters, unsigned long long* counts, int passes) {
  if (blockIdx.x == 0 && int(threadIdx.x) < passes) tile_counters[threadIdx.x] = 0;
  const unsigned chains = chain_count(bins);
  for (unsigned c = blockIdx.x; c < chains; c += gridDim.x) {
    const segment_chain chain = bins.chains[c];
    const unsigned tiles = unsigned(ceil_div(chain.length, bins.chain_tile_items));
    for (unsigned t = threadIdx.x; t < tiles; t += blockDim.x)
      tile_chains[chain.first_tile + t] = c;
    unsigned* const published = first_published + std::size_t(chain.first_tile) * radix;
    for (unsigned i = threadIdx.x; i < tiles * radix; i += blockDim.x)
      published[i] = 0;
    for (int i = int(threadIdx.x); i < passes * radix; i += int(blockDim.x))
      counts[std::size_t(c) * passes * radix + unsigned(i)] = 0;
  }
}

// The chains' counting: the onesweep's shape at four blocks an SM, not eight, since its walk
// over chains needs more registers than eight blocks leave (8-byte keys spilled 40 bytes).
template <class K>
struct chain_digit_count_tuning : tuning<256, 8 * int(sizeof(K)), 4, 4> {
  static constexpr int keys = chain_digit_count_tuning::bytes_per_thread / int(sizeof(K));
};

// Every chain's digit counts of every pass ([chain][pass][digit]), from one read of its keys:
// block b counts its share of the tiles, adding its counts to a chain's when it moves past
// the chain's tiles.
template <class Tuning, class K>
__global__ void __launch_bounds__(Tuning::threads, Tuning::min_blocks_per_sm)
    chain_digit_counts_kernel(const K* keys, segment_bins bins, const unsigned* tile_chains,
                              radix_passes passes, order ord, unsigned long long* counts) {
  constexpr int threads = Tuning::threads;
  __shared__ digit_count_storage<K> storage;
  const auto clear_counts = [&] {
    for (int i = int(threadIdx.x); i < most_passes<K> * radix; i += threads)
      (&storage.counts[0][0])[i] = 0;
  };
  // Every thread's additions are in before the counts are read, and every count is cleared
  // before any thread adds the next chain's keys.
  const auto add_counts_to = [&](unsigned chain) {
    __syncthreads();
    add_digit_totals<threads>(storage.counts, passes.count,
                              counts + std::size_t(chain) * passes.count * radix);
    __syncthreads();
    clear_counts();
    __syncthreads();
  };
  clear_counts();
  __syncthreads();

  radix_digit<K> digits[most_passes<K>];
  digits_of_passes(passes, ord, 8 * int(sizeof(K)), digits);
  const std::size_t tiles = chain_tile_count(bins);
  const unsigned first = unsigned(tiles * blockIdx.x / gridDim.x);
  const unsigned end = unsigned(tiles * (blockIdx.x + 1) / gridDim.x);
  unsigned counting = ~0u;
  for (unsigned t = first; t < end; ++t) {
    const unsigned c = tile_chains[t];
    if (c != counting) {
      if (counting != ~0u) add_counts_to(counting);
      counting = c;
    }
    const segment_chain chain = bins.chains[c];
    const std::size_t from =
        chain.begin + std::size_t(t - chain.first_tile) * bins.chain_tile_items;
    const std::size_t to = min(from + bins.chain_tile_items, chain.begin + chain.length);
    for (std::size_t at = from; at < to; at += std::size_t(threads) * Tuning::keys) {
      count_pass_digits<threads, Tuning::keys>(keys, at, to, digits, storage.counts);
    }
  }
  if (counting != ~0u) add_counts_to(counting);
}

// Thread d of the block of a segment's first chain: the counts of digit d become where each
// chain's keys of digit d start, every pass: after the segment's keys of smaller digits, and
// after the chain's before it.
template <class K>
__global__ void __launch_bounds__(radix)
    chain_digit_starts_kernel(segment_bins bins, int passes, unsigned long long* counts) {
  __shared__ block_sum_storage<radix / 32, unsigned long long> digit_sums;
  const unsigned chains = chain_count(bins);
  for (unsigned c = blockIdx.x; c < chains; c += gridDim.x) {
    const segment_chain first = bins.chains[c];
    if (first.segment_first != c) continue;
    for (int p = 0; p < passes; ++p) {
      const auto word = [&](unsigned chain) -> unsigned long long& {
        return counts[(std::size_t(chain) * passes + unsigned(p)) * radix + threadIdx.x];
      };
      unsigned long long total = 0;
      for (unsigned q = 0; q < first.segment_chains; ++q)
        total += word(c + q);
      unsigned long long start = first.begin + block_exclusive_sum(total, digit_sums);
      for (unsigned q = 0; q < first.segment_chains; ++q) {
        const unsigned long long keys = word(c + q);
        word(c + q) = start;
        start += keys;
      }
    }
  }
}

// What a pass's tiles of chains read besides the pass.
struct chained_tiles {
  const segment_chain* chains;
  const unsigned* tile_chains;
  const unsigned long long* chains_and_tiles;
  const unsigned long long* starts;  // [chain][pass][digit], from this pass's
  int passes;
  unsigned* next_published;  // the next pass's published counts, or null after the last
};

// Each block takes tiles by ticket until the chains' tiles run out: the grid is what fits on
// the GPU at once, not the most tiles the chains could have, so a pass over few chains (or
// none) costs a wave of blocks rather than one a possible tile. A tile's look-back waits only
// on tiles taken before it, by blocks already running. Each pass has a ticket counter of its
// own, which names no last ticket (take_ticket's reset would hand out tiles twice here).
// Passes take turns between two arrays of published counts, and each tile zeroes its own
// counts in the array the next pass reads, which the pass before this one has finished with:
// only the chains' tiles are zeroed, with no memset between passes.
template <class Shape, class K, class V>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    chained_onesweep_kernel(onesweep_pass<K, V> pass, chained_tiles tiles) {
  auto& storage = dynamic_shared_storage<tile_storage<Shape, K, V>>();
  const unsigned chain_tiles = unsigned(*tiles.chains_and_tiles);
  for (;;) {
    if (threadIdx.x == 0) storage.tile = atomicAdd(pass.tile_counter, 1u);
    clear_tile_storage(storage);  // while thread 0 waits for its tile
    __syncthreads();
    const unsigned tile = storage.tile;
    if (tile >= chain_tiles) return;
    if (tiles.next_published != nullptr && threadIdx.x < radix)
      tiles.next_published[std::size_t(tile) * radix + threadIdx.x] = 0;
    const unsigned c = tiles.tile_chains[tile];
    const segment_chain chain = tiles.chains[c];
    const unsigned done = (tile - chain.first_tile) * unsigned(Shape::tile_items);
    const pass_tile place{tile, chain.first_tile, chain.begin + done,
                          min(chain.length - done, unsigned(Shape::tile_items)),
                          tiles.starts + std::size_t(c) * tiles.passes * radix};
    sort_tile_at<Shape, false>(pass, place, storage);  // ends with a barrier
  }
}

// The chains' passes: counts, starts, then one onesweep launch a pass over every chain's
// tiles.
template <class K, class V>
void sort_segment_chains(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                         std::size_t n, const segment_bins& bins, std::size_t most_chains,
                         std::size_t most_tiles, radix_passes passes, order ord,
                         const call_context& call) {
  using shape = segment_chain_shape<K, V>;
  const std::size_t counts_items = most_chains * std::size_t(passes.count) * radix;
  const std::size_t published_items = most_tiles * radix;
  temporary_buffer<unsigned long long> counts(counts_items, call);
  // A ticket counter a pass, two arrays of published counts, then each tile's chain.
  temporary_buffer<unsigned> tile_words(most_passes<K> + 2 * published_items + most_tiles, call);
  unsigned* const tile_counters = tile_words.data();
  unsigned* const published[2] = {tile_counters + most_passes<K>,
                                  tile_counters + most_passes<K> + published_items};
  unsigned* const tile_chains = published[1] + published_items;

  const unsigned chain_blocks =
      unsigned(std::min<std::size_t>(most_chains, 8 * call.limits().sm_count));
  map_chain_tiles_kernel<K><<<chain_blocks, 256, 0, call.stream()>>>(
      bins, tile_chains, published[0], tile_counters, counts.data(), passes.count);
  check_launch(call.function(), "map_chain_tiles_kernel");
  using counting = chain_digit_count_tuning<K>;
  chain_digit_counts_kernel<counting>
      <<<grid_stride_blocks<counting>(n, counting::threads * counting::keys, call.limits()),
         counting::threads, 0, call.stream()>>>(keys_in, bins, tile_chains, passes, ord,
                                                counts.data());
  check_launch(call.function(), "chain_digit_counts_kernel");
  chain_digit_starts_kernel<K>
      <<<chain_blocks, radix, 0, call.stream()>>>(bins, passes.count, counts.data());
  check_launch(call.function(), "chain_digit_starts_kernel");

  pass_buffers<K, V> buffers(keys_in, keys_out, values_in, values_out, n, passes.count, call);
  constexpr auto pass_kernel = chained_onesweep_kernel<shape, K, V>;
  constexpr std::size_t shared_bytes = sizeof(tile_storage<shape, K, V>);
  allow_dynamic_shared_bytes<pass_kernel>(call);
  const unsigned pass_blocks = unsigned(
      std::min(most_tiles, resident_blocks<pass_kernel>(shape::threads, shared_bytes, call)));
  const int end_bit = 8 * int(sizeof(K));
  for (int pass = 0; pass < passes.count; ++pass) {
    const onesweep_pass<K, V> launch{buffers.keys_from(pass),
                                     buffers.keys_to(pass),
                                     buffers.values_from(pass),
                                     buffers.values_to(pass),
                                     0,
                                     unsigned(most_tiles),
                                     passes.digit<K>(pass, ord, end_bit),
                                     tile_counters + pass,
                                     published[pass % 2],
                                     nullptr,
                                     nullptr};
    const chained_tiles tiles{
        bins.chains,           tile_chains,
        bins.chains_and_tiles, counts.data() + std::size_t(pass) * radix,
        passes.count,          pass + 1 < passes.count ? published[(pass + 1) % 2] : nullptr};
    pass_kernel<<<pass_blocks, shape::threads, shared_bytes, call.stream()>>>(launch, tiles);
    check_launch(call.function(), "chained_onesweep_kernel");
  }
  buffers.release();
  tile_words.release();
  counts.release();
}

}  // namespace ppat::detail
