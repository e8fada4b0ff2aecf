// Segmented sorts: every segment of an array sorted on its own, with lengths that only the
// device knows. A binning kernel reads each segment's offsets and sends it down the path its
// length calls for:
//
//   0 or 1 keys        nothing to sort: a lone key is copied (where the output is not the input)
//   up to 256 keys     a group of 2 to 32 lanes a segment, staged in shared memory: a
//                      bitonic sort in registers up to 32 keys, then (keys of up to 4
//                      bytes) a merge sort of the lanes' sorted runs
//   up to 8,192 keys   a tile a segment, of 512 to 8,192 keys: a merge sort (sort/merge_tile.cuh)
//                      or the one-tile radix sort (sort/one_tile.cuh's block sort), every
//                      step in shared memory
//   longer             the onesweep passes (sort/onesweep.cuh) over all such segments at
//                      once, each segment a chain of tiles with digit starts of its own, so
//                      that a long segment is sorted by every SM, never by one block
//
// A look-back chain counts fewer than 2^30 keys, so a segment longer than portion_items is
// several chains, each starting where the ones before it end. The host only knows bounds
// (how many segments each path can hold at most); every kernel reads the counts the binning
// kernel left, and blocks past them do nothing. A small call, bound by the host's launches
// rather than by the GPU, launches fewer kernels: one for the short bins of 256-thread blocks,
// and one cooperative launch for all of the chains' steps, which take every longer segment;
// and a call whose every key fits one of those blocks, in few segments, skips the binning: a
// block takes each segment and sorts it on the path its length calls for, in one launch.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "../core/block.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/memory.cuh"
#include "../core/no_values.cuh"
#include "../core/segments.cuh"
#include "../core/warp.cuh"
#include "digit_counts.cuh"
#include "merge.cuh"
#include "merge_tile.cuh"
#include "one_launch.cuh"
#include "one_tile.cuh"
#include "onesweep.cuh"
#include "plan.cuh"
#include "radix_key.cuh"
#include "tile.cuh"

namespace ppat::detail {

// The paths of segments that one group of lanes or one block sorts, shortest first: groups
// of lanes up to 256 keys (group_shape), then a block a segment up to 512, 1,024, 2,048,
// 4,096 and 8,192 keys (segment_block_shape): the smallest that holds a segment is the fastest
// (docs/patterns.md, "Segmented sorts").
constexpr int group_bins = 7;
constexpr int block_bins = 5;
constexpr int short_bins = group_bins + block_bins;
// The threads of a block of groups, and of the short bins' one launch.
constexpr int group_sort_threads = 256;

// The group of lanes that sorts a segment of bin Bin: up to 8, 16, 32, 64, 104, 128 and 256
// keys. Fewer lanes holding more keys each measured faster over many segments, up to 16 keys of
// up to 4 bytes a lane (8 of 8 bytes, whose words would otherwise fill the registers): a compare
// within a lane costs less than one across lanes. From 33 keys of up to 4 bytes a merge sort of
// the lanes' runs beats the bitonic network; its 104-key bin (8 lanes x 13) spares segments of
// 65 to 104 keys the 128-key bin's work (segments of 100 took as long as those of 128), and
// holds nothing for 8-byte keys, whose network needs a power of two (the 64-key bin's shape, so
// that no segment is past the bin before it). Where the segments are too few to fill the GPU
// (`Wide`), a segment's time is what counts: the merging bins then take a warp a segment, whose
// merge path is shorter (segments of 100 keys: 8.9 us a launch where 8 lanes took 10.8). All
// measured, docs/patterns.md.
template <class K, class V, int Bin, bool Wide = false>
struct group_shape {
  static constexpr bool merges = Bin >= 3 && sizeof(K) <= 4;
  // The 104-key bin is the one whose keys are not a power of two; power_of_two_keys is the one
  // at or above a bin's keys.
  static constexpr bool between = Bin == 4;
  static constexpr int power_of_two_keys = 8 << (Bin <= 4 ? Bin : Bin - 1);
  static constexpr int items = Wide && merges ? power_of_two_keys / 32
                               : between      ? (merges ? 13 : 8)
                               : Bin <= 1     ? 4
                               : Bin == 2 || sizeof(K) > 4 || Bin == group_bins - 1 ? 8
                                                                                    : 16;
  static constexpr int lanes = between && !(Wide && merges) ? 8 : power_of_two_keys / items;
};
// The blocks' bins: a block sorts a segment of up to 512 << (Bin - group_bins) keys by a
// merge sort (sort/merge_tile.cuh) or by the one-tile sort's radix passes (sort/one_tile.cuh).
// A merge sorts the whole tile whatever the segment's length, so it takes tiles of the bin's
// size, 128 threads holding 4, 8 and 16 keys up to 2,048 keys (two tiles a block of
// group_sort_threads) and 256 and 512 threads holding 16 beyond; the radix passes, in blocks
// of 256 threads with 4, 8 and 16 keys each (the last at three blocks an SM for keys of up to
// 4 bytes; 8-byte keys would spill) and of 512 with 16, cost by the keys sorted. Merges take
// keys of 4 and 8 bytes up to 2,048; 4,096 only for the keys a radix tile sorts in more passes
// or in more steps a pass than a merge (8-byte keys, integer keys alone, which need no
// positions); 8,192 for 8-byte keys and for pairs, while the tile's shared memory fits every GPU
// from sm_80 on. Keys of 1 and 2 bytes take the radix passes (one or two); they start at 1,024
// keys, with no 512-key bin. All measured, docs/patterns.md, "Segmented sorts".
template <class K, class V, int Bin>
constexpr bool block_bin_merges = [] {
  if constexpr (Bin < group_bins || sizeof(K) < 4) {
    return false;
  } else if constexpr (Bin < group_bins + 3) {
    return true;
  } else if constexpr (Bin == group_bins + 3) {
    return sizeof(K) == 8 || (radix_key<K>::invertible && !has_values_of<V>);
  } else {
    constexpr std::size_t sm80_shared_bytes = 163 * 1024;
    constexpr bool fits =
        sizeof(merge_tile_storage<merge_tile_shape<512, 16>, K, V, true>) <= sm80_shared_bytes;
    return fits && (sizeof(K) == 8 || has_values_of<V>);
  }
}();
template <int Bin>
using merge_bin_shape =
    std::conditional_t<(Bin < group_bins + 3),
                       merge_tile_shape<128, 4 << std::clamp(Bin - group_bins, 0, 2)>,
                       merge_tile_shape<256 << std::clamp(Bin - group_bins - 3, 0, 1), 16>>;
template <class K, class V, int Bin>
using segment_block_shape = std::conditional_t<
    block_bin_merges<K, V, Bin>, merge_bin_shape<Bin>,
    std::conditional_t<
        Bin <= group_bins + 1, one_tile_tiny_shape<K, V>,
        std::conditional_t<
            Bin == group_bins + 2, tile_shape<K, V, tuning<256, 128, 0>, 8>,
            std::conditional_t<Bin == group_bins + 3,
                               tile_shape<K, V, tuning<256, 128, sizeof(K) <= 4 ? 3 : 0>>,
                               one_tile_large_shape<K, V>>>>>;
// Whether bin Bin can hold a segment: the 104-key bin sorts only keys of up to 4 bytes, the
// 512-key bin only keys of 4 and 8.
template <class K, class V, int Bin>
constexpr bool short_bin_used =
    Bin < group_bins ? !group_shape<K, V, Bin>::between || group_shape<K, V, Bin>::merges
                     : Bin != group_bins || block_bin_merges<K, V, Bin>;
// The threads of a block of bin Bin: a merge tile of fewer than group_sort_threads shares its
// block with others.
template <class K, class V, int Bin>
constexpr int segment_block_threads = block_bin_merges<K, V, Bin>
                                          ? std::max(segment_block_shape<K, V, Bin>::threads,
                                                     group_sort_threads)
                                          : segment_block_shape<K, V, Bin>::threads;
// The blocks of bin Bin that its kernel keeps on an SM at least, which bounds their registers:
// a merge's tiles as many as measured fastest on their own (mseg probe, docs/patterns.md); the
// 8,192-key radix tile of keys alone two, which its shared memory allows (left to itself,
// ptxas gave its kernel over offsets 109 registers, one block an SM, where rows took 61).
template <class K, class V, int Bin>
constexpr int segment_block_min_blocks = [] {
  if constexpr (!block_bin_merges<K, V, Bin>) {
    return Bin == group_bins + 4 && !has_values_of<V>
               ? 2
               : segment_block_shape<K, V, Bin>::min_blocks_per_sm;
  } else if constexpr (Bin == group_bins) {
    return sizeof(K) <= 4 ? 5 : 4;
  } else if constexpr (Bin == group_bins + 1) {
    return 4;
  } else if constexpr (Bin == group_bins + 2) {
    return sizeof(K) <= 4 ? 3 : 2;
  } else {
    return 512 / segment_block_threads<K, V, Bin>;
  }
}();
template <class K, class V, int Bin>
constexpr unsigned short_bin_capacity = [] {
  if constexpr (Bin < group_bins) {
    return unsigned(group_shape<K, V, Bin>::lanes * group_shape<K, V, Bin>::items);
  } else if constexpr (!short_bin_used<K, V, Bin>) {
    return short_bin_capacity<K, V, Bin - 1>;
  } else {
    return unsigned(segment_block_shape<K, V, Bin>::tile_items);
  }
}();
template <class K, class V, int... b>
constexpr std::array<unsigned, short_bins> short_bin_capacities(std::integer_sequence<int, b...>) {
  return {short_bin_capacity<K, V, b>...};
}
// Longer segments: the onesweep's tiles for 4-byte keys; pairs and 8-byte keys 384 threads x
// as many as 144 bytes hold, at most 16 (u32/u32 16, 12-byte pairs 12, 16-byte 9). The chains'
// pass loops over tiles, which keeps more values live than the onesweep's one tile a block:
// with its 384 x 23, u32/u32 pairs spilled 276 bytes a thread (68 with 16 items) and segments
// of 10,000 took 1.5x as long (docs/patterns.md, "Segmented sorts"). In a small call's one
// cooperative launch, the one-launch sort's 256-thread tiles, shorter (more SMs a chain,
// and no spills: two blocks an SM leave them 128 registers).
template <class K, class V>
using segment_chain_shape = std::conditional_t<pair_bytes<K, V> <= 4, onesweep_shape<K, V>,
                                               tile_shape<K, V, tuning<384, 144, 2>, 16, true>>;
template <class K, class V>
using segment_chain_one_launch_shape = one_launch_small_shape<K, V>;
template <class K, class V>
constexpr std::size_t chain_tile_items(bool in_one_launch) {
  return in_one_launch ? segment_chain_one_launch_shape<K, V>::tile_items
                       : segment_chain_shape<K, V>::tile_items;
}

// Up to portion_items keys of a long segment, whose tiles look back only to one another.
struct segment_chain {
  std::size_t begin;  // the chain's first key
  unsigned length;
  unsigned first_tile;
  unsigned segment_first;   // the slot of its segment's first chain
  unsigned segment_chains;  // chains in its segment
};

// A short bin's segment as its list holds it: its first key's place and its length in one
// word (a short segment is at most 8,192 keys), so that the bin's kernel reads one word a
// segment where it read the segment's index and then its offsets, one load after the other.
constexpr int listed_length_bits = 14;
__device__ inline unsigned long long listed_segment(const segment_range& segment) {
  return (unsigned long long)segment.begin << listed_length_bits | segment.length;
}
__device__ inline segment_range unlisted_segment(unsigned long long word) {
  return {std::size_t(word >> listed_length_bits),
          std::size_t(word & ((1ull << listed_length_bits) - 1))};
}

// Where the binning kernel sends the segments, in device memory.
struct segment_bins {
  unsigned long long* sizes;                 // [short_bins]: segments in each, zeroed
  unsigned long long* segments[short_bins];  // each one's listed_segment
  unsigned long long* chains_and_tiles;      // chains << 32 | their tiles, zeroed
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
// order. A tile need not divide portion_items: a full chain's last tile may be part-filled.
__device__ inline void append_chains(const segment_range& segment, const segment_bins& bins) {
  const std::size_t chains = ceil_div(segment.length, portion_items);
  const std::size_t last_length = segment.length - (chains - 1) * portion_items;
  const std::size_t tiles = (chains - 1) * ceil_div(portion_items, bins.chain_tile_items) +
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

// A segment of one key, sorted: copied where the output is not the input.
template <class K, class V>
__device__ void copy_lone_key(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                              std::size_t at) {
  if (keys_in != keys_out) keys_out[at] = keys_in[at];
  if constexpr (has_values_of<V>) {
    if (values_in != values_out) values_out[at] = values_in[at];
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
  static_assert(short_bin_capacity<K, V, short_bins - 1> < (1u << listed_length_bits),
                "a short segment's length fits its listed bits");
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
        copy_lone_key(keys_in, keys_out, values_in, values_out, segment[j].begin);
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
      if (bin[j] >= 0 && bin[j] < short_bins)
        bins.segments[bin[j]][block_first[bin[j]] + place[j]] = listed_segment(segment[j]);
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

// A block's groups' segments in shared memory: each group's keys (and values) as read, in input
// order so that the reads coalesce; the merge's runs; then the positions its sorted items hold, by
// which the output places take their key and value, again in input order. A slot of padding every
// 32 items puts the items a lane touches, Items apart, in distinct banks. The merge groups keep
// each array for all groups one after another: unpadded, or in one structure a group, lanes of a
// warp 8 or 16 items apart (or in other groups) met in one bank; the network groups' one structure
// a group measured faster at 8 and 16 keys (docs/patterns.md, "Segmented sorts"). Integer keys
// come back from their images (`sorted_from_images`): the merge's runs then take the keys' own
// array, whose keys the lanes hold as images by then, and the sorted keys are written back there
// in order, so that the output reads them in place instead of gathering them by position
// (measured, docs/patterns.md).
template <class K, class V, class Shape, bool ArrayByArray = Shape::merges>
struct group_staging {
  using image_type = typename radix_key<K>::image_type;
  static constexpr bool sorted_from_images = radix_key<K>::invertible;
  static constexpr int groups = group_sort_threads / Shape::lanes;
  static constexpr int items = Shape::lanes * Shape::items;
  static constexpr int slots = items + items / 32;
  static __device__ unsigned slot(unsigned item) { return item + item / 32; }
  K all_keys[groups][slots];
  value_or_char<V> all_values[has_values_of<V> ? groups : 1][has_values_of<V> ? slots : 1];
  image_type all_merged_images[sorted_from_images ? 1 : groups][sorted_from_images ? 1 : slots];
  unsigned short all_positions[groups][slots];
  __device__ K* keys(unsigned group) { return all_keys[group]; }
  __device__ value_or_char<V>* values(unsigned group) { return all_values[group]; }
  __device__ image_type* merged_images(unsigned group) {
    if constexpr (sorted_from_images) {
      return reinterpret_cast<image_type*>(all_keys[group]);
    } else {
      return all_merged_images[group];
    }
  }
  __device__ unsigned short* positions(unsigned group) { return all_positions[group]; }
};
template <class K, class V, class Shape>
struct group_network_arrays {
  static constexpr int slots = Shape::lanes * Shape::items + Shape::lanes * Shape::items / 32;
  K keys[slots];
  value_or_char<V> values[has_values_of<V> ? slots : 1];
  unsigned short positions[slots];
};
template <class K, class V, class Shape>
struct group_staging<K, V, Shape, false> {
  static constexpr bool sorted_from_images = false;  // the network's words carry positions
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
// segment is read before any of it is written, which keeps a sort in place right. The block is
// `block` of `blocks` taking this bin's segments.
template <class Shape, class Segments, class K, class V>
__device__ void sort_segments_in_groups(const K* keys_in, K* keys_out, const V* values_in,
                                        V* values_out, const Segments& segments,
                                        const unsigned long long* listed,
                                        const unsigned long long* listed_count, order ord,
                                        unsigned block, unsigned blocks) {
  using image_type = typename radix_key<K>::image_type;
  using staging = group_staging<K, V, Shape>;
  constexpr int Lanes = Shape::lanes;
  constexpr int Items = Shape::items;
  constexpr int groups_per_warp = 32 / Lanes;
  constexpr int warps_per_block = group_sort_threads / 32;
  constexpr bool warp_wide_moves = Shape::merges && Lanes < 32 && has_values_of<V>;
  staging& staged = dynamic_shared_storage<staging>();
  const unsigned group = threadIdx.x / Lanes;
  K* const keys = staged.keys(group);
  unsigned short* const positions_of = staged.positions(group);
  const image_type flip = ord == order::descending ? image_type(~image_type(0)) : image_type(0);
  const unsigned lane = threadIdx.x % Lanes;
  const std::size_t count = listed == nullptr ? segments.count : std::size_t(*listed_count);
  const std::size_t warp = std::size_t(block) * warps_per_block + threadIdx.x / 32;
  const std::size_t warps = std::size_t(blocks) * warps_per_block;
  for (std::size_t first = warp * groups_per_warp; first < count;
       first += warps * groups_per_warp) {
    const std::size_t s = first + threadIdx.x % 32 / Lanes;
    const segment_range segment = s >= count          ? segment_range{0, 0}
                                  : listed == nullptr ? segments(s)
                                                      : unlisted_segment(listed[s]);
    const unsigned length = unsigned(segment.length);
    // move(g, begin, e) for every item e this lane moves between global and shared memory, of
    // group g's segment that starts at `begin`: its own group's items Lanes apart; or, for pairs
    // in merging groups narrower than a warp, each of the warp's segments in turn, 32
    // consecutive items an instruction, which read and write fewer sectors (keys alone measured
    // slower so, docs/patterns.md, "Segmented sorts").
    const auto each_moved_item = [&](auto&& move) {
      if constexpr (warp_wide_moves) {
#pragma unroll
        for (int g = 0; g < groups_per_warp; ++g) {
          const unsigned source = unsigned(g * Lanes);
          const std::size_t begin = __shfl_sync(full_warp, segment.begin, source);
          const unsigned items = __shfl_sync(full_warp, length, source);
          const unsigned warp_group = threadIdx.x / 32 * unsigned(groups_per_warp) + unsigned(g);
#pragma unroll
          for (int j = 0; j < int(ceil_div(Items * Lanes, 32)); ++j) {
            const unsigned e = unsigned(j * 32) + threadIdx.x % 32;
            if (e < items) move(warp_group, begin, e);
          }
        }
      } else {
#pragma unroll
        for (int i = 0; i < Items; ++i) {
          const unsigned e = unsigned(i * Lanes) + lane;
          if (e < length) move(group, segment.begin, e);
        }
      }
    };
    each_moved_item([&](unsigned g, std::size_t begin, unsigned e) {
      staged.keys(g)[staging::slot(e)] = keys_in[begin + e];
      if constexpr (has_values_of<V>) staged.values(g)[staging::slot(e)] = values_in[begin + e];
    });
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
      // Integer keys alone come back from their images: their positions are not needed.
      constexpr bool carry_positions = has_values_of<V> || !staging::sorted_from_images;
      merge_sort_lanes<Lanes, Items, carry_positions>(
          images, positions, staged.merged_images(group), positions_of, lane, staging::slot);
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        const unsigned sorted_slot = staging::slot(lane * unsigned(Items) + unsigned(i));
        if constexpr (staging::sorted_from_images)
          keys[sorted_slot] = radix_key<K>::key(image_type(images[i] ^ flip));
        if constexpr (has_values_of<V> || !staging::sorted_from_images)
          positions_of[sorted_slot] = positions[i];
      }
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
    each_moved_item([&](unsigned g, std::size_t begin, unsigned e) {
      const auto from = [&] { return staging::slot(staged.positions(g)[staging::slot(e)]); };
      if constexpr (staging::sorted_from_images) {
        keys_out[begin + e] = staged.keys(g)[staging::slot(e)];
        if constexpr (has_values_of<V>) values_out[begin + e] = staged.values(g)[from()];
      } else {
        const unsigned slot = from();
        keys_out[begin + e] = staged.keys(g)[slot];
        if constexpr (has_values_of<V>) values_out[begin + e] = staged.values(g)[slot];
      }
    });
    __syncwarp();  // before the next segments are staged
  }
}

// ---- One block a segment -------------------------------------------------------------------

// The shared memory of a block of bin Bin: a radix tile, or each of its merge tiles.
template <class K, class V, int Bin>
using segment_block_storage =
    std::conditional_t<block_bin_merges<K, V, Bin>,
                       merge_tile_storage<segment_block_shape<K, V, Bin>, K, V, true>,
                       tile_storage<segment_block_shape<K, V, Bin>, K, V>>;
template <class K, class V, int Bin>
constexpr int segment_block_tiles =
    segment_block_threads<K, V, Bin> / segment_block_shape<K, V, Bin>::threads;

// Block `block` of `blocks` of bin Bin sorts segments of its bin's list (`listed`), or of all
// the segments where there is no list (rows, all of one bin), every bit of their keys: a
// segment a tile, segments block x tiles + tile, then blocks x tiles on from there. A merge
// tile's barriers are the block's, so every tile runs as many merges as the others, on an
// empty segment where the list has run out.
template <int Bin, class Segments, class K, class V>
__device__ void sort_segments_in_blocks(const K* keys_in, K* keys_out, const V* values_in,
                                        V* values_out, const Segments& segments,
                                        const unsigned long long* listed,
                                        const unsigned long long* listed_count, order ord,
                                        unsigned block, unsigned blocks) {
  using shape = segment_block_shape<K, V, Bin>;
  using image_type = typename radix_key<K>::image_type;
  constexpr int tiles = segment_block_tiles<K, V, Bin>;
  constexpr int end_bit = 8 * int(sizeof(K));
  const unsigned tile = tiles == 1 ? 0u : threadIdx.x / unsigned(shape::threads);
  auto& storage = (&dynamic_shared_storage<segment_block_storage<K, V, Bin>>())[tile];
  const radix_passes passes = radix_passes::of(0, end_bit);
  const merge_image<K, true> image_of{
      ord == order::descending ? image_type(~image_type(0)) : image_type(0), 0,
      image_type(~image_type(0))};
  const std::size_t count = listed == nullptr ? segments.count : std::size_t(*listed_count);
  for (std::size_t first = std::size_t(block) * tiles; first < count;
       first += std::size_t(blocks) * tiles) {
    const std::size_t s = first + tile;
    const segment_range segment = s >= count          ? segment_range{0, 0}
                                  : listed == nullptr ? segments(s)
                                                      : unlisted_segment(listed[s]);
    const std::size_t b = segment.begin;
    const V* segment_values_in = values_in;
    V* segment_values_out = values_out;
    if constexpr (has_values_of<V>) {
      segment_values_in += b;
      segment_values_out += b;
    }
    if constexpr (block_bin_merges<K, V, Bin>) {
      sort_in_merge_tile<shape>(keys_in + b, keys_out + b, segment_values_in, segment_values_out,
                                unsigned(segment.length), image_of, storage);
    } else {
      sort_in_one_tile<shape>(keys_in + b, keys_out + b, segment_values_in, segment_values_out,
                              unsigned(segment.length), passes, ord, end_bit, storage);
    }
  }
}

template <class Shape, class Segments, class K, class V>
__global__ void __launch_bounds__(group_sort_threads)
    segment_group_sort_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                              Segments segments, const unsigned long long* listed,
                              const unsigned long long* listed_count, order ord) {
  wait_for_earlier_kernels();
  sort_segments_in_groups<Shape>(keys_in, keys_out, values_in, values_out, segments, listed,
                                 listed_count, ord, blockIdx.x, gridDim.x);
}

template <int Bin, class Segments, class K, class V>
__global__ void __launch_bounds__(segment_block_threads<K, V, Bin>,
                                  segment_block_min_blocks<K, V, Bin>)
    segment_block_sort_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                              Segments segments, const unsigned long long* listed,
                              const unsigned long long* listed_count, order ord) {
  wait_for_earlier_kernels();
  sort_segments_in_blocks<Bin>(keys_in, keys_out, values_in, values_out, segments, listed,
                               listed_count, ord, blockIdx.x, gridDim.x);
}

// f(std::integral_constant<int, b>{}) for every short bin b.
template <class F, int... b>
void each_short_bin(F f, std::integer_sequence<int, b...>) {
  (f(std::integral_constant<int, b>{}), ...);
}
template <class F>
void each_short_bin(F f) {
  each_short_bin(f, std::make_integer_sequence<int, short_bins>{});
}
// The same for the short bins that can hold a segment of K keys (short_bin_used).
template <class K, class V, class F>
void each_used_short_bin(F f) {
  each_short_bin([&](auto bin) {
    if constexpr (short_bin_used<K, V, decltype(bin)::value>) f(bin);
  });
}

// The shared memory and the blocks of a launch of short bin `Bin` (`most_segments` at most,
// `resident` blocks of its kernel fitting on the GPU at once).
template <class K, class V, int Bin, bool Wide = false>
constexpr std::size_t short_bin_shared_bytes() {
  if constexpr (Bin < group_bins) {
    return sizeof(group_staging<K, V, group_shape<K, V, Bin, Wide>>);
  } else {
    return segment_block_tiles<K, V, Bin> * sizeof(segment_block_storage<K, V, Bin>);
  }
}
template <class K, class V, int Bin, bool Wide = false>
std::size_t short_bin_blocks(std::size_t most_segments, std::size_t resident) {
  if constexpr (Bin < group_bins) {
    constexpr std::size_t groups_per_block =
        group_sort_threads / group_shape<K, V, Bin, Wide>::lanes;
    return std::min(ceil_div(most_segments, groups_per_block), resident);
  } else {
    return std::min(ceil_div(most_segments, segment_block_tiles<K, V, Bin>), resident);
  }
}

// Whether bin Bin's groups have a wide form apart from theirs (group_shape).
template <class K, class V, int Bin>
constexpr bool has_wide_groups = [] {
  if constexpr (Bin < group_bins) {
    return group_shape<K, V, Bin, true>::lanes != group_shape<K, V, Bin>::lanes;
  } else {
    return false;
  }
}();

// How many segments of bin Bin its wide groups sort at once on the GPU: up to that many, a
// segment's time is the call's, and a warp a segment finishes first (docs/patterns.md,
// "Segmented sorts").
template <class K, class V, int Bin, class Segments>
std::size_t wide_groups_resident(const call_context& call) {
  constexpr auto kernel = segment_group_sort_kernel<group_shape<K, V, Bin, true>, Segments, K, V>;
  constexpr std::size_t groups_per_block = group_sort_threads / group_shape<K, V, Bin, true>::lanes;
  return groups_per_block * resident_blocks<kernel>(group_sort_threads,
                                                    short_bin_shared_bytes<K, V, Bin, true>(),
                                                    call);
}

// The segments of short bin `Bin`: `listed` (`listed_count` of them, at most
// `most_segments`), or every segment where there is no list; in wide groups where `Wide`.
template <int Bin, bool Wide = false, class K, class V, class Segments>
void sort_short_segments(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                         const Segments& segments, const unsigned long long* listed,
                         const unsigned long long* listed_count, std::size_t most_segments,
                         order ord, const call_context& call) {
  constexpr std::size_t shared_bytes = short_bin_shared_bytes<K, V, Bin, Wide>();
  if constexpr (Bin < group_bins) {
    constexpr auto kernel = segment_group_sort_kernel<group_shape<K, V, Bin, Wide>, Segments, K, V>;
    allow_dynamic_shared_bytes<kernel>(call);
    const std::size_t blocks = short_bin_blocks<K, V, Bin, Wide>(
        most_segments, resident_blocks<kernel>(group_sort_threads, shared_bytes, call));
    launch_dependent(kernel, unsigned(std::max<std::size_t>(blocks, 1)), group_sort_threads,
                     shared_bytes, call, "segment_group_sort_kernel", keys_in, keys_out, values_in,
                     values_out, segments, listed, listed_count, ord);
  } else {
    constexpr int threads = segment_block_threads<K, V, Bin>;
    constexpr auto kernel = segment_block_sort_kernel<Bin, Segments, K, V>;
    allow_dynamic_shared_bytes<kernel>(call);
    const std::size_t blocks = short_bin_blocks<K, V, Bin>(
        most_segments, resident_blocks<kernel>(threads, shared_bytes, call));
    launch_dependent(kernel, unsigned(std::max<std::size_t>(blocks, 1)), threads, shared_bytes,
                     call, "segment_block_sort_kernel", keys_in, keys_out, values_in, values_out,
                     segments, listed, listed_count, ord);
  }
}

// ---- Small inputs: the short bins in one launch -----------------------------------------------

// A small call is bound by the host's launches, one for each path it may need (4-5 us each
// on the H200's host, docs/patterns.md, "Segmented sorts"): there, every short bin whose
// blocks have group_sort_threads threads runs in one launch, each bin a range of its blocks,
// in as much shared memory as the largest needs.
template <class K, class V, int Bin>
constexpr bool in_short_launch = [] {
  if constexpr (Bin < group_bins) {
    return short_bin_used<K, V, Bin>;
  } else {
    return short_bin_used<K, V, Bin> && segment_block_threads<K, V, Bin> == group_sort_threads;
  }
}();
// The fewest blocks an SM that the short launch's block bins ask for
// (segment_block_min_blocks), where it holds merge bins: one kernel takes the registers its
// most demanding bin needs, and the merges' would cost the radix bins the blocks an SM they
// run fastest at (f32 keys: 120 registers, segments of 2,049-4,096 at 2^22 1.16x slower).
// Keys of 1 and 2 bytes, no merges, keep the compiler's choice (f16/u32 pairs would spill 40
// bytes a thread at the bound); so does the launch a block a segment, whose wide groups would
// spill at it (1.9 KB a thread for f32 keys).
template <class K, class V, int Bin = group_bins>
constexpr int short_launch_min_blocks() {
  if constexpr (Bin == short_bins || sizeof(K) < 4) {
    return 0;
  } else {
    constexpr int rest = short_launch_min_blocks<K, V, Bin + 1>();
    constexpr int own = in_short_launch<K, V, Bin> ? segment_block_min_blocks<K, V, Bin> : 0;
    return own == 0 ? rest : rest == 0 ? own : std::min(own, rest);
  }
}
template <class K, class V, int Bin = 0, bool Wide = false>
constexpr std::size_t short_launch_shared_bytes() {
  if constexpr (Bin == short_bins) {
    return 0;
  } else {
    return std::max(in_short_launch<K, V, Bin> ? short_bin_shared_bytes<K, V, Bin, Wide>() : 0,
                    short_launch_shared_bytes<K, V, Bin + 1, Wide>());
  }
}

// Bin b's blocks of the launch: [first[b], first[b + 1]).
struct short_launch_blocks {
  unsigned first[short_bins + 1];
};

// This block's share of the bin whose range holds it, from bin `Bin` on.
template <int Bin, class Segments, class K, class V>
__device__ void sort_segments_of_block_bin(const K* keys_in, K* keys_out, const V* values_in,
                                           V* values_out, const Segments& segments,
                                           const segment_bins& bins,
                                           const short_launch_blocks& blocks, order ord) {
  if constexpr (Bin < short_bins) {
    const unsigned first = blocks.first[Bin], end = blocks.first[Bin + 1];
    if (!in_short_launch<K, V, Bin> || blockIdx.x >= end) {
      sort_segments_of_block_bin<Bin + 1>(keys_in, keys_out, values_in, values_out, segments, bins,
                                          blocks, ord);
    } else if constexpr (Bin < group_bins && in_short_launch<K, V, Bin>) {
      sort_segments_in_groups<group_shape<K, V, Bin>>(
          keys_in, keys_out, values_in, values_out, segments, bins.segments[Bin], bins.sizes + Bin,
          ord, blockIdx.x - first, end - first);
    } else if constexpr (in_short_launch<K, V, Bin>) {
      sort_segments_in_blocks<Bin>(keys_in, keys_out, values_in, values_out, segments,
                                   bins.segments[Bin], bins.sizes + Bin, ord, blockIdx.x - first,
                                   end - first);
    }
  }
}

template <class Segments, class K, class V>
__global__ void __launch_bounds__(group_sort_threads, short_launch_min_blocks<K, V>())
    short_segments_sort_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                               Segments segments, segment_bins bins, short_launch_blocks blocks,
                               order ord) {
  wait_for_earlier_kernels();
  sort_segments_of_block_bin<0>(keys_in, keys_out, values_in, values_out, segments, bins, blocks,
                                ord);
}

// The binned segments of every short bin in the launch (at most `most_in_bin[b]` in bin b).
template <class K, class V, class Segments>
void sort_short_segments_in_one_launch(const K* keys_in, K* keys_out, const V* values_in,
                                       V* values_out, const Segments& segments,
                                       const segment_bins& bins,
                                       const std::size_t (&most_in_bin)[short_bins], order ord,
                                       const call_context& call) {
  constexpr auto kernel = short_segments_sort_kernel<Segments, K, V>;
  constexpr std::size_t shared_bytes = short_launch_shared_bytes<K, V>();
  allow_dynamic_shared_bytes<kernel>(call);
  const std::size_t resident = resident_blocks<kernel>(group_sort_threads, shared_bytes, call);
  short_launch_blocks blocks{};
  std::size_t next = 0;
  each_short_bin([&](auto bin) {
    constexpr int b = decltype(bin)::value;
    blocks.first[b] = unsigned(next);
    if constexpr (in_short_launch<K, V, b>)
      next += short_bin_blocks<K, V, b>(most_in_bin[b], resident);
  });
  blocks.first[short_bins] = unsigned(next);
  if (next == 0) return;
  launch_dependent(kernel, unsigned(next), group_sort_threads, shared_bytes, call,
                   "short_segments_sort_kernel", keys_in, keys_out, values_in, values_out, segments,
                   bins, blocks, ord);
}

// ---- Small inputs of short segments: a block a segment, no binning ------------------------------

// Where every segment fits the short launch's largest block (n at most its capacity), and
// the segments are few, the whole call is one launch: block b sorts segments b, b + blocks,
// ... each on the path its length calls for (a group's in wide groups), without the binning
// kernel, the memset before it and the launch after it (docs/patterns.md, "Segmented sorts").
template <class K, class V, int Bin = short_bins - 1>
constexpr unsigned short_launch_capacity() {
  if constexpr (in_short_launch<K, V, Bin>) {
    return short_bin_capacity<K, V, Bin>;
  } else {
    return short_launch_capacity<K, V, Bin - 1>();
  }
}
constexpr std::size_t most_segments_a_block_each = 4096;

// One segment, as the group and block sorts take a list of them.
struct single_segment {
  segment_range range;
  static constexpr std::size_t count = 1;
  __device__ segment_range operator()(std::size_t) const { return range; }
};

// A segment of 2 to short_launch_capacity keys, sorted by this block on the path of the
// first short bin that holds it.
template <int Bin, class K, class V>
__device__ void sort_segment_on_its_path(const K* keys_in, K* keys_out, const V* values_in,
                                         V* values_out, const segment_range& segment, order ord) {
  if constexpr (Bin < short_bins) {
    if (!in_short_launch<K, V, Bin> || segment.length > short_bin_capacity<K, V, Bin>) {
      sort_segment_on_its_path<Bin + 1>(keys_in, keys_out, values_in, values_out, segment, ord);
    } else if constexpr (Bin < group_bins && in_short_launch<K, V, Bin>) {
      sort_segments_in_groups<group_shape<K, V, Bin, true>>(keys_in, keys_out, values_in,
                                                            values_out, single_segment{segment},
                                                            nullptr, nullptr, ord, 0, 1);
    } else if constexpr (in_short_launch<K, V, Bin>) {
      sort_segments_in_blocks<Bin>(keys_in, keys_out, values_in, values_out,
                                   single_segment{segment}, nullptr, nullptr, ord, 0, 1);
    }
  }
}

template <class Segments, class K, class V>
__global__ void __launch_bounds__(group_sort_threads)
    segments_a_block_sort_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                                 Segments segments, order ord) {
  for (std::size_t s = blockIdx.x; s < segments.count; s += gridDim.x) {
    const segment_range segment = segments(s);
    if (segment.length == 1) {
      if (threadIdx.x == 0) copy_lone_key(keys_in, keys_out, values_in, values_out, segment.begin);
    } else if (segment.length > 1) {
      sort_segment_on_its_path<0>(keys_in, keys_out, values_in, values_out, segment, ord);
    }
    __syncthreads();  // the next segment's path takes the shared memory this one's used
  }
}

// True where the call fits this path and is launched; false (nothing launched) where not.
template <class K, class V, class Segments>
bool sort_segments_a_block_each(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                                std::size_t n, const Segments& segments, order ord,
                                const call_context& call) {
  if (n > short_launch_capacity<K, V>() || segments.count > most_segments_a_block_each)
    return false;
  constexpr auto kernel = segments_a_block_sort_kernel<Segments, K, V>;
  constexpr std::size_t shared_bytes = short_launch_shared_bytes<K, V, 0, true>();
  allow_dynamic_shared_bytes<kernel>(call);
  const std::size_t blocks =
      std::min(segments.count, resident_blocks<kernel>(group_sort_threads, shared_bytes, call));
  kernel<<<unsigned(std::max<std::size_t>(blocks, 1)), group_sort_threads, shared_bytes,
           call.stream()>>>(keys_in, keys_out, values_in, values_out, segments, ord);
  check_launch(call.function(), "segments_a_block_sort_kernel");
  return true;
}

// ---- Chains of tiles ---------------------------------------------------------------------------
//
// The chains' steps, each a device function that a kernel of its own runs on large inputs
// and that one cooperative launch runs in turn on small ones (chained_sort_kernel):
//
//   map_chain_tiles       each chain's tiles marked as its own, their counts zeroed
//   count_chain_digits    every chain's digit counts of every pass, from one read of its keys
//   chain_digit_starts    the counts become where each chain's keys of each digit start
//   sort_chained_tiles    one pass over every chain's tiles, taken by ticket

// Block c of `blocks`: chain c's tiles marked as its own, their published counts of the first
// pass zeroed, and the chain's digit counts zeroed; block 0 zeroes every pass's ticket
// counter.
__device__ inline void map_chain_tiles(const segment_bins& bins, unsigned* tile_chains,
                                       unsigned* first_published, unsigned* tile_counters,
                                       unsigned long long* counts, int passes, unsigned block,
                                       unsigned blocks) {
  if (block == 0 && int(threadIdx.x) < passes) tile_counters[threadIdx.x] = 0;
  const unsigned chains = chain_count(bins);
  for (unsigned c = block; c < chains; c += blocks) {
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

// Every chain's digit counts of every pass ([chain][pass][digit]), from one read of its keys:
// block `block` of `blocks` counts its share of the tiles, adding its counts to a chain's when
// it moves past the chain's tiles.
template <int Threads, int KeysPerThread, class K>
__device__ void count_chain_digits(const K* keys, const segment_bins& bins,
                                   const unsigned* tile_chains, radix_passes passes, order ord,
                                   unsigned long long* counts, digit_count_storage<K>& storage,
                                   unsigned block, unsigned blocks) {
  const auto clear_counts = [&] {
    for (int i = int(threadIdx.x); i < most_passes<K> * radix; i += Threads)
      (&storage.counts[0][0])[i] = 0;
  };
  // Every thread's additions are in before the counts are read, and every count is cleared
  // before any thread adds the next chain's keys.
  const auto add_counts_to = [&](unsigned chain) {
    __syncthreads();
    add_digit_totals<Threads>(storage.counts, passes.count,
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
  const unsigned first = unsigned(tiles * block / blocks);
  const unsigned end = unsigned(tiles * (block + 1) / blocks);
  no_order_watch unwatched;  // a chain's keys sorted already still take their passes
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
    for (std::size_t at = from; at < to; at += std::size_t(Threads) * KeysPerThread)
      count_pass_digits<Threads, KeysPerThread>(keys, at, to, digits, storage.counts, unwatched);
  }
  if (counting != ~0u) add_counts_to(counting);
}

// Threads d < radix of the block of a segment's first chain: the counts of digit d become
// where each chain's keys of digit d start, every pass: after the segment's keys of smaller
// digits, and after the chain's before it. The counts are read from L2: a cooperative launch
// wrote them.
__device__ inline void chain_digit_starts(const segment_bins& bins, int passes,
                                          unsigned long long* counts,
                                          block_sum_storage<radix / 32, unsigned long long>& sums,
                                          unsigned block, unsigned blocks) {
  const unsigned d = threadIdx.x;
  const unsigned chains = chain_count(bins);
  for (unsigned c = block; c < chains; c += blocks) {
    const segment_chain first = bins.chains[c];
    if (first.segment_first != c) continue;
    for (int p = 0; p < passes; ++p) {
      const auto word = [&](unsigned chain) {
        return counts + (std::size_t(chain) * passes + unsigned(p)) * radix + d;
      };
      unsigned long long total = 0;
      for (unsigned q = 0; d < radix && q < first.segment_chains; ++q)
        total += load_published(word(c + q));
      unsigned long long start = first.begin + block_exclusive_sum(total, sums);
      for (unsigned q = 0; d < radix && q < first.segment_chains; ++q) {
        const unsigned long long keys = load_published(word(c + q));
        *word(c + q) = start;
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

// The block takes tiles by ticket until the chains' tiles run out: the grid is what fits on
// the GPU at once, not the most tiles the chains could have, so a pass over few chains (or
// none) costs a wave of blocks rather than one a possible tile. A tile's look-back waits only
// on tiles taken before it, by blocks already running. Each pass has a ticket counter of its
// own, which names no last ticket (take_ticket's reset would hand out tiles twice here).
// Passes take turns between two arrays of published counts, and each tile zeroes its own
// counts in the array the next pass reads, which the pass before this one has finished with:
// only the chains' tiles are zeroed, with no memset between passes. Each tile's digit starts
// are read into `digit_starts` (shared memory) first; `FromL2`: the keys, values and starts
// were written by other blocks of the same launch.
template <class Shape, bool FromL2, class K, class V>
__device__ void sort_chained_tiles(const onesweep_pass<K, V>& pass, const chained_tiles& tiles,
                                   tile_storage<Shape, K, V>& storage,
                                   unsigned long long (&digit_starts)[radix]) {
  const unsigned chain_tiles = unsigned(*tiles.chains_and_tiles);
  for (;;) {
    if (threadIdx.x == 0) storage.tile = atomicAdd(pass.tile_counter, 1u);
    clear_tile_storage(storage);  // while thread 0 waits for its tile
    __syncthreads();
    const unsigned tile = storage.tile;
    if (tile >= chain_tiles) return;
    const unsigned c = tiles.tile_chains[tile];
    if (threadIdx.x < radix) {
      if (tiles.next_published != nullptr)
        tiles.next_published[std::size_t(tile) * radix + threadIdx.x] = 0;
      // Read by thread d alone, in the look-back: no barrier needed.
      digit_starts[threadIdx.x] =
          load_published(tiles.starts + std::size_t(c) * tiles.passes * radix + threadIdx.x);
    }
    const segment_chain chain = tiles.chains[c];
    const unsigned done = (tile - chain.first_tile) * unsigned(Shape::tile_items);
    const pass_tile place{tile, chain.first_tile, chain.begin + done,
                          min(chain.length - done, unsigned(Shape::tile_items)), digit_starts};
    sort_tile_at<Shape, FromL2>(pass, place, storage);  // ends with a barrier
  }
}

// The kernels a step, for large inputs. (The kernels of a header-only library are
// templates, one definition in every translation unit: these on the key type they serve.)
template <class K>
__global__ void __launch_bounds__(256)
    map_chain_tiles_kernel(segment_bins bins, unsigned* tile_chains, unsigned* first_published,
                           unsigned* tile_counters, unsigned long long* counts, int passes) {
  wait_for_earlier_kernels();
  map_chain_tiles(bins, tile_chains, first_published, tile_counters, counts, passes, blockIdx.x,
                  gridDim.x);
}

// The chains' counting: the onesweep's shape at four blocks an SM, not eight, since its walk
// over chains needs more registers than eight blocks leave (8-byte keys spilled 40 bytes).
template <class K>
struct chain_digit_count_tuning : tuning<256, 8 * int(sizeof(K)), 4, 4> {
  static constexpr int keys = chain_digit_count_tuning::bytes_per_thread / int(sizeof(K));
};

template <class Tuning, class K>
__global__ void __launch_bounds__(Tuning::threads, Tuning::min_blocks_per_sm)
    chain_digit_counts_kernel(const K* keys, segment_bins bins, const unsigned* tile_chains,
                              radix_passes passes, order ord, unsigned long long* counts) {
  __shared__ digit_count_storage<K> storage;
  wait_for_earlier_kernels();
  count_chain_digits<Tuning::threads, Tuning::keys>(keys, bins, tile_chains, passes, ord, counts,
                                                    storage, blockIdx.x, gridDim.x);
}

template <class K>
__global__ void __launch_bounds__(radix)
    chain_digit_starts_kernel(segment_bins bins, int passes, unsigned long long* counts) {
  __shared__ block_sum_storage<radix / 32, unsigned long long> digit_sums;
  wait_for_earlier_kernels();
  chain_digit_starts(bins, passes, counts, digit_sums, blockIdx.x, gridDim.x);
}

template <class Shape, class K, class V>
struct chained_pass_storage {
  tile_storage<Shape, K, V> tile;
  unsigned long long digit_starts[radix];
};

template <class Shape, class K, class V>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    chained_onesweep_kernel(onesweep_pass<K, V> pass, chained_tiles tiles) {
  auto& storage = dynamic_shared_storage<chained_pass_storage<Shape, K, V>>();
  wait_for_earlier_kernels();
  sort_chained_tiles<Shape, false>(pass, tiles, storage.tile, storage.digit_starts);
}

// Small inputs: every step in one cooperative launch, a grid-wide sync between steps and
// between passes, where the separate kernels would each cost the host a launch
// (docs/patterns.md, "Segmented sorts").
template <class K, class V>
struct chained_sort_args {
  const K* keys_from[most_passes<K>];
  K* keys_to[most_passes<K>];
  const V* values_from[most_passes<K>];
  V* values_to[most_passes<K>];
  segment_bins bins;
  unsigned* tile_chains;
  unsigned* published[2];
  unsigned* tile_counters;
  unsigned long long* counts;
  radix_passes passes;
  order ord;
};

template <class Shape, class K, class V>
struct chained_sort_storage {
  union {
    tile_storage<Shape, K, V> tile;
    digit_count_storage<K> counting;
  };
  unsigned long long digit_starts[radix];
};

template <class Shape, class K, class V>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    chained_sort_kernel(chained_sort_args<K, V> sort) {
  auto& storage = dynamic_shared_storage<chained_sort_storage<Shape, K, V>>();
  const auto grid = cooperative_groups::this_grid();
  const segment_bins& bins = sort.bins;
  if (chain_tile_count(bins) == 0) return;  // every block alike: no segment was long
  const int passes = sort.passes.count;
  map_chain_tiles(bins, sort.tile_chains, sort.published[0], sort.tile_counters, sort.counts,
                  passes, blockIdx.x, gridDim.x);
  grid.sync();
  count_chain_digits<Shape::threads, 8>(sort.keys_from[0], bins, sort.tile_chains, sort.passes,
                                        sort.ord, sort.counts, storage.counting, blockIdx.x,
                                        gridDim.x);
  grid.sync();
  chain_digit_starts(bins, passes, sort.counts, storage.counting.digit_sums, blockIdx.x, gridDim.x);
  grid.sync();
  for (int p = 0; p < passes; ++p) {
    const onesweep_pass<K, V> pass{sort.keys_from[p],
                                   sort.keys_to[p],
                                   sort.values_from[p],
                                   sort.values_to[p],
                                   0,
                                   0,
                                   sort.passes.template digit<K>(p, sort.ord, 8 * int(sizeof(K))),
                                   sort.tile_counters + p,
                                   sort.published[p % 2],
                                   nullptr,
                                   nullptr};
    const chained_tiles tiles{bins.chains,
                              sort.tile_chains,
                              bins.chains_and_tiles,
                              sort.counts + std::size_t(p) * radix,
                              passes,
                              p + 1 < passes ? sort.published[(p + 1) % 2] : nullptr};
    // From L2: other blocks of this launch wrote what every pass but the first reads, and one
    // body for all passes spills less than two.
    sort_chained_tiles<Shape, true>(pass, tiles, storage.tile, storage.digit_starts);
    if (p + 1 < passes) grid.sync();
  }
}

// The chains' memory: the digit counts, a ticket counter a pass, two arrays of published
// counts and each tile's chain.
struct chain_scratch {
  unsigned long long* counts;
  unsigned* tile_counters;
  unsigned* published[2];
  unsigned* tile_chains;
};

// All of the chains' steps in one cooperative launch of Shape's tiles (the binning's); false
// where the launch was refused (launch_cooperative).
template <class Shape, class K, class V>
bool sort_chains_in_one_launch(const pass_buffers<K, V>& buffers, const segment_bins& bins,
                               const chain_scratch& scratch, std::size_t most_tiles,
                               radix_passes passes, order ord, const call_context& call) {
  constexpr auto kernel = chained_sort_kernel<Shape, K, V>;
  constexpr std::size_t shared_bytes = sizeof(chained_sort_storage<Shape, K, V>);
  allow_dynamic_shared_bytes<kernel>(call);
  const std::size_t resident = resident_blocks<kernel>(Shape::threads, shared_bytes, call);
  chained_sort_args<K, V> sort{};
  for (int pass = 0; pass < most_passes<K> && pass < passes.count; ++pass) {
    sort.keys_from[pass] = buffers.keys_from(pass);
    sort.keys_to[pass] = buffers.keys_to(pass);
    sort.values_from[pass] = buffers.values_from(pass);
    sort.values_to[pass] = buffers.values_to(pass);
  }
  sort.bins = bins;
  sort.tile_chains = scratch.tile_chains;
  sort.published[0] = scratch.published[0];
  sort.published[1] = scratch.published[1];
  sort.tile_counters = scratch.tile_counters;
  sort.counts = scratch.counts;
  sort.passes = passes;
  sort.ord = ord;
  void* arguments[] = {&sort};
  return launch_cooperative<kernel>(
      dim3(unsigned(std::max<std::size_t>(std::min(most_tiles, resident), 1))),
      dim3(Shape::threads), arguments, shared_bytes, call);
}

// The chains' steps in launches of their own: map, counts, starts, then one onesweep launch
// a pass over every chain's tiles, of Shape (the binning's).
template <class Shape, class K, class V>
void sort_chains_in_launches(const K* keys_in, std::size_t n, const pass_buffers<K, V>& buffers,
                             const segment_bins& bins, const chain_scratch& scratch,
                             std::size_t most_chains, std::size_t most_tiles, radix_passes passes,
                             order ord, const call_context& call) {
  const unsigned chain_blocks =
      unsigned(std::min<std::size_t>(most_chains, 8 * call.limits().sm_count));
  launch_dependent(map_chain_tiles_kernel<K>, chain_blocks, 256, 0, call, "map_chain_tiles_kernel",
                   bins, scratch.tile_chains, scratch.published[0], scratch.tile_counters,
                   scratch.counts, passes.count);
  using counting = chain_digit_count_tuning<K>;
  launch_dependent(
      chain_digit_counts_kernel<counting, K>,
      grid_stride_blocks<counting>(n, counting::threads * counting::keys, call.limits()),
      counting::threads, 0, call, "chain_digit_counts_kernel", keys_in, bins, scratch.tile_chains,
      passes, ord, scratch.counts);
  launch_dependent(chain_digit_starts_kernel<K>, chain_blocks, radix, 0, call,
                   "chain_digit_starts_kernel", bins, passes.count, scratch.counts);

  constexpr auto pass_kernel = chained_onesweep_kernel<Shape, K, V>;
  constexpr std::size_t shared_bytes = sizeof(chained_pass_storage<Shape, K, V>);
  allow_dynamic_shared_bytes<pass_kernel>(call);
  const unsigned pass_blocks = unsigned(
      std::min(most_tiles, resident_blocks<pass_kernel>(Shape::threads, shared_bytes, call)));
  const int end_bit = 8 * int(sizeof(K));
  for (int pass = 0; pass < passes.count; ++pass) {
    const onesweep_pass<K, V> launch{buffers.keys_from(pass),
                                     buffers.keys_to(pass),
                                     buffers.values_from(pass),
                                     buffers.values_to(pass),
                                     0,
                                     unsigned(most_tiles),
                                     passes.digit<K>(pass, ord, end_bit),
                                     scratch.tile_counters + pass,
                                     scratch.published[pass % 2],
                                     nullptr,
                                     nullptr};
    const chained_tiles tiles{
        bins.chains,
        scratch.tile_chains,
        bins.chains_and_tiles,
        scratch.counts + std::size_t(pass) * radix,
        passes.count,
        pass + 1 < passes.count ? scratch.published[(pass + 1) % 2] : nullptr};
    launch_dependent(pass_kernel, pass_blocks, Shape::threads, shared_bytes, call,
                     "chained_onesweep_kernel", launch, tiles);
  }
}

// Every chain sorted: in one cooperative launch where `in_one_launch` (the binning then took
// the one-launch tiles), else, or where that launch is refused, in launches of their own.
template <class K, class V>
void sort_segment_chains(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                         std::size_t n, const segment_bins& bins, std::size_t most_chains,
                         std::size_t most_tiles, radix_passes passes, order ord, bool in_one_launch,
                         const call_context& call) {
  const std::size_t counts_items = most_chains * std::size_t(passes.count) * radix;
  const std::size_t published_items = most_tiles * radix;
  temporary_buffer<unsigned long long> memory(
      counts_items + ceil_div(most_passes<K> + 2 * published_items + most_tiles, 2), call);
  chain_scratch scratch{};
  scratch.counts = memory.data();
  scratch.tile_counters = reinterpret_cast<unsigned*>(scratch.counts + counts_items);
  scratch.published[0] = scratch.tile_counters + most_passes<K>;
  scratch.published[1] = scratch.published[0] + published_items;
  scratch.tile_chains = scratch.published[1] + published_items;
  pass_buffers<K, V> buffers(keys_in, keys_out, values_in, values_out, n, passes.count, call);
  if (!in_one_launch) {
    sort_chains_in_launches<segment_chain_shape<K, V>>(keys_in, n, buffers, bins, scratch,
                                                       most_chains, most_tiles, passes, ord, call);
  } else if (!sort_chains_in_one_launch<segment_chain_one_launch_shape<K, V>>(
                 buffers, bins, scratch, most_tiles, passes, ord, call)) {
    sort_chains_in_launches<segment_chain_one_launch_shape<K, V>>(
        keys_in, n, buffers, bins, scratch, most_chains, most_tiles, passes, ord, call);
  }
  buffers.release();
  memory.release();
}

}  // namespace ppat::detail
