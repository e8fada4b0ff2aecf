// Radix select: the kernels of top_k. The k keys that come first in an order are those whose
// rank images (the sort's key images, complemented for descending order) are the k
// smallest, ties taken by the lower position: the k smallest composite keys (image,
// position), which are all distinct. The k-th of them, the threshold, is found a digit at a
// time from the top: a pass counts, among the keys that share the digits found so far, how
// many hold each value of the next digit, and its last block to finish keeps the digit where
// the count of keys still needed falls. Once the keys sharing the digits found are few, one
// pass lists them (and writes the positions of the keys below them, all taken) and the
// later passes read only the list; once they are exactly the keys still needed, the passes
// stop. A last kernel writes the positions not yet written of the keys not above the
// threshold; the host sorts the k positions, reads their keys, and sorts the keys (stable,
// so ties stay by position). For long inputs and k small beside n, a sample first bounds the
// threshold, and one read lists the keys at or below the bound: the passes then read only
// that list, unless the input defeated the sample.
//
// The batched form (top_k_batched) gives each row of a matrix to one block, which finds its
// row's threshold with a histogram in shared memory, a read of the row a digit, until the keys
// sharing the digits found are few: one more read lists them in shared memory (and writes the
// keys below them, all taken), and the later digits read the list. It stops as soon as the
// keys sharing the digits found are exactly the ones still needed, and writes the row's taken
// keys in input order, the counts of each tile's taken keys scanned across the block. Fewer
// rows than SMs take a cluster of blocks a row, the row read once into their shared memory;
// rows of one tile, as many as the SMs or more, take a warp a row.
#pragma once

#include <cooperative_groups.h>

#include <cstddef>

#include "../core/atomic.cuh"
#include "../core/block.cuh"
#include "../core/launch.cuh"
#include "../core/shared_storage.cuh"
#include "../core/vector_io.cuh"
#include "../core/warp.cuh"
#include "one_tile.cuh"
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

// ---- A block's digit ---------------------------------------------------------------------------

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

// A block's digit counts: select_count_copies copies of each, lane l adding to copy l % that,
// side by side in shared memory: lanes adding to one digit (keys of a few values, or the
// first digit of floats of one sign and a few exponents) then mostly add to different words
// of different banks.
constexpr int select_count_copies = 8;

struct select_digit_counts {
  unsigned words[select_bins * select_count_copies];

  __device__ void clear() {
    for (int c = int(threadIdx.x); c < select_bins * select_count_copies; c += int(blockDim.x))
      words[c] = 0;
  }
  __device__ void add(unsigned digit) {
    shared_add(unsigned(__cvta_generic_to_shared(words)) +
                   4 * (select_count_copies * digit + unsigned(lane_id() % select_count_copies)),
               1u);
  }
  // The count of `digit`, its copies added up: after a barrier that follows the additions.
  __device__ unsigned total(unsigned digit) const {
    unsigned sum = 0;
#pragma unroll
    for (int c = 0; c < select_count_copies; ++c)
      sum += words[digit * select_count_copies + c];
    return sum;
  }
};

// The rule's next digit, at `shift`: `count` is thread t's count of the keys sharing the
// digits found whose digit there is t; the rule learns the digit where its needed key falls
// and how many keys it still needs there. Returns how many keys share the digits found. Every
// thread of the block calls it; `found` and `found_count` are shared words that hand the
// digit over.
template <class Image>
__device__ unsigned long long narrow_to_digit(
    unsigned long long count, int shift, taken_rule<Image>& rule,
    block_sum_storage<select_warps, unsigned long long>& storage, taken_rule<Image>& found,
    unsigned long long& found_count) {
  const unsigned long long before = block_exclusive_sum<select_warps>(count, storage);
  if (before < rule.needed && rule.needed <= before + count) {  // one digit holds it
    found = {Image(rule.threshold | (Image(threadIdx.x) << shift)), shift, rule.needed - before};
    found_count = count;
  }
  __syncthreads();
  rule = found;
  const unsigned long long sharing = found_count;
  __syncthreads();  // found and found_count read
  return sharing;
}

// ---- The whole array ---------------------------------------------------------------------------

// The passes select over composite keys (image, position): every key is then distinct, the
// threshold is one key, and the k taken are exactly those not above it, whatever ties the
// images hold. A composite's bits are the image's above the position's `position_bits` low
// ones (n - 1's bit width rounded up to whole digits); a digit at composite bit `shift` is
// the image's or the position's.
template <class Image, class Position>
struct select_threshold {
  Image image;
  Position position;
  int known_from;  // the composite bit from which the threshold's digits are found
  int position_bits;

  // The key's found digits against the threshold's: -1 below, 0 the same, 1 above.
  __device__ int compare(Image key_image, Position key_position) const {
    if (known_from >= position_bits) {
      const int from = known_from - position_bits;
      if (from >= 8 * int(sizeof(Image))) return 0;
      const Image mine = Image(key_image >> from), its = Image(image >> from);
      return mine < its ? -1 : int(mine > its);
    }
    if (key_image != image) return key_image < image ? -1 : 1;
    const Position mine = key_position >> known_from, its = position >> known_from;
    return mine < its ? -1 : int(mine > its);
  }

  __device__ unsigned digit(Image key_image, Position key_position, int shift) const {
    return shift >= position_bits
               ? unsigned(key_image >> (shift - position_bits)) & (select_bins - 1)
               : unsigned(key_position >> shift) & (select_bins - 1);
  }
};

// Where the keys that share the threshold's found digits are read from. A pass lists them
// once they are few enough (a read of the input that writes the candidate list and, as
// taken, the keys below them); later passes read only the list.
enum class select_source : int { input, listing, listed };

template <class K, class Position>
struct select_candidate {
  K key;
  Position position;
};

// A list the passes append to, and the most entries it holds.
template <class Entry>
struct select_list {
  Entry* list;
  unsigned long long capacity;
};

template <class K, class Position>
using select_candidates = select_list<select_candidate<K, Position>>;

template <class K, class Position>
struct radix_select_state {
  select_threshold<rank_image_type<K>, Position> threshold;
  unsigned long long needed;   // of the keys sharing the found digits, how many are taken
  unsigned long long sharing;  // how many keys share them
  unsigned long long listed;   // keys in the candidate list
  unsigned long long taken;    // positions in the taken list
  select_source source;
  unsigned tickets;  // last_to_finish's
  unsigned long long histogram[select_bins];
  rank_image_type<K> bound;  // the sampled bound, where `bounded`
  bool bounded;
};

// Once `sharing == needed`, every key that shares the found digits is taken: no pass is
// left to run, and the write takes every key not above the threshold's found digits.
template <class K, class Position>
__global__ void start_select_kernel(radix_select_state<K, Position>* state, std::size_t n,
                                    std::size_t k, int position_bits) {
  if (threadIdx.x == 0) {
    state->threshold = {rank_image_type<K>(0), Position(0),
                        8 * int(sizeof(rank_image_type<K>)) + position_bits, position_bits};
    state->needed = k;
    state->sharing = n;
    state->listed = 0;
    state->taken = 0;
    state->source = select_source::input;
    state->tickets = 0;
    state->bounded = false;
  }
  state->histogram[threadIdx.x] = 0;
}

// The input's keys, a warp's run of select_warp_items at a time, handed to
// `visit(key, image, position, valid)` on every lane of the warp together, so that the lanes
// may list keys together.
constexpr int select_vectors_a_lane = 4;

template <class K>
constexpr int select_warp_items = 32 * items_per_vector<K>* select_vectors_a_lane;

template <bool Aligned, class K, class Visit>
__device__ void visit_input(const K* keys, std::size_t n, bool descending, Visit visit) {
  constexpr int vec = items_per_vector<K>;
  const std::size_t warp = std::size_t(blockIdx.x) * select_warps + threadIdx.x / 32;
  const std::size_t stride = std::size_t(gridDim.x) * select_warps * select_warp_items<K>;
  const std::size_t lane_offset = std::size_t(lane_id()) * vec;
  for (std::size_t first = warp * select_warp_items<K>; first < n; first += stride) {
    const bool whole = first + select_warp_items<K> <= n;
    K items[select_vectors_a_lane][vec];
#pragma unroll
    for (int r = 0; r < select_vectors_a_lane; ++r) {
      const std::size_t at = first + std::size_t(r) * 32 * vec + lane_offset;
      if (whole) {
        load_items<Aligned>(keys + at, items[r]);
      } else {
#pragma unroll
        for (int j = 0; j < vec; ++j)
          items[r][j] = at + j < n ? load_item(keys + at + j) : K{};
      }
    }
#pragma unroll
    for (int r = 0; r < select_vectors_a_lane; ++r) {
#pragma unroll
      for (int j = 0; j < vec; ++j) {
        const std::size_t at = first + std::size_t(r) * 32 * vec + lane_offset + j;
        const bool valid = whole || at < n;
        visit(items[r][j], valid ? rank_image(items[r][j], descending) : rank_image_type<K>(0), at,
              valid);
      }
    }
  }
}

// The candidate list's keys, handed over as visit_input hands the input's.
template <class K, class Position, class Visit>
__device__ void visit_listed(const select_candidates<K, Position>& candidates,
                             unsigned long long listed, bool descending, Visit visit) {
  const std::size_t stride = std::size_t(gridDim.x) * select_threads;
  for (std::size_t first = std::size_t(blockIdx.x) * select_threads + (threadIdx.x & ~31u);
       first < listed; first += stride) {
    const std::size_t at = first + lane_id();
    const bool valid = at < listed;
    const select_candidate<K, Position> candidate =
        valid ? candidates.list[at] : select_candidate<K, Position>{K{}, Position(0)};
    visit(candidate.key, valid ? rank_image(candidate.key, descending) : rank_image_type<K>(0),
          candidate.position, valid);
  }
}

// The lists a listing pass (and the write) append to, a warp's additions staged in shared
// memory.
constexpr int select_stage_slots = 128;

template <class K, class Position>
struct select_stages {
  uninitialized_array<select_candidate<K, Position>, select_warps * select_stage_slots> candidates;
  uninitialized_array<Position, select_warps * select_stage_slots> taken;

  __device__ warp_staged_list<select_candidate<K, Position>, select_stage_slots> candidate_list(
      const select_candidates<K, Position>& to, unsigned long long* length) {
    return {to.list, to.capacity, length, &candidates[int(threadIdx.x / 32) * select_stage_slots]};
  }
  __device__ warp_staged_list<Position, select_stage_slots> taken_list(
      const select_list<Position>& to, unsigned long long* length) {
    return {to.list, to.capacity, length, &taken[int(threadIdx.x / 32) * select_stage_slots]};
  }
};

// ---- The whole array: a sampled bound --------------------------------------------------------

// Before any pass reads every key, a sample bounds the threshold. Of select_sample_items keys,
// one from each of as many equal strides of the input (at a hashed place in its stride, so
// that no period of the input lines up with the sample), take the `rank`-th smallest image,
// `rank` a few past the sample's expected share of the k taken keys: the k-th key's image is
// at or below it all but always, and about `rank` strides' worth of keys are. One read lists
// those keys; where they are at least k and fit the list, the passes read only the list
// (docs/patterns.md, "Top-k"). Where the input defeats the sample, the list is dropped and the
// passes read the input as they would have.
constexpr int select_sample_items_a_thread = 64;
constexpr std::size_t select_sample_items =
    std::size_t(select_threads) * select_sample_items_a_thread;

// Sample key i's position, for n of at least select_sample_items keys.
__host__ __device__ inline std::size_t select_sample_position(std::size_t i, std::size_t n) {
  const std::size_t stride = n / select_sample_items;
  const unsigned long long mixed = (static_cast<unsigned long long>(i) + 1) * 0x9E3779B97F4A7C15ull;
  return i * stride + std::size_t(mixed >> 32) % stride;
}

// The sample's rank images to `images`, a thread a key: the scattered reads overlap across the
// GPU (a block reading them all waited on them in turn).
template <class K>
__global__ void gather_sample_kernel(const K* keys, std::size_t n, bool descending,
                                     rank_image_type<K>* images) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < select_sample_items)
    images[i] = rank_image(load_item(keys + select_sample_position(i, n)), descending);
}

// The bound: the largest image that shares the digits of the sample's `rank`-th smallest
// found before the sample keys sharing them are exactly those still needed (with every
// digit found, its own image). Kept where at most `most` sample keys are at or below it;
// more would foretell a list too long (keys of few values).
template <class K, class Position>
__global__ void __launch_bounds__(select_threads)
    sample_bound_kernel(const rank_image_type<K>* sample, unsigned long long rank,
                        unsigned long long most, radix_select_state<K, Position>* state) {
  using image_type = rank_image_type<K>;
  constexpr int image_bits = 8 * int(sizeof(image_type));
  __shared__ select_digit_counts counts;
  __shared__ block_sum_storage<select_warps, unsigned long long> sum_storage;
  __shared__ taken_rule<image_type> found;
  __shared__ unsigned long long found_count;
  image_type images[select_sample_items_a_thread];
#pragma unroll
  for (int j = 0; j < select_sample_items_a_thread; ++j)
    images[j] = sample[j * select_threads + int(threadIdx.x)];

  taken_rule<image_type> rule{image_type(0), image_bits, rank};
  unsigned long long sharing = select_sample_items;
  for (int shift = image_bits - select_digit_bits; shift >= 0 && sharing != rule.needed;
       shift -= select_digit_bits) {
    counts.clear();
    __syncthreads();
#pragma unroll
    for (int j = 0; j < select_sample_items_a_thread; ++j) {
      if (rule.known_from == image_bits || rule.equal(images[j]))
        counts.add(unsigned(images[j] >> shift) & (select_bins - 1));
    }
    __syncthreads();
    sharing =
        narrow_to_digit(counts.total(threadIdx.x), shift, rule, sum_storage, found, found_count);
  }
  if (threadIdx.x == 0) {
    const image_type below_known =
        rule.known_from == 0
            ? image_type(0)
            : image_type(image_type(~image_type(0)) >> (image_bits - rule.known_from));
    state->bound = image_type(rule.threshold | below_known);
    state->bounded = rank - rule.needed + sharing <= most;
  }
}

// The read that lists the keys at or below the sampled bound. The last block to finish keeps
// the list where it holds at least the k keys needed and fits it, else drops it.
template <bool Aligned, class K, class Position>
__global__ void __launch_bounds__(select_threads)
    list_bounded_kernel(const K* keys, std::size_t n, bool descending,
                        radix_select_state<K, Position>* state,
                        select_candidates<K, Position> candidates) {
  using image_type = rank_image_type<K>;
  __shared__ select_stages<K, Position> stages;
  if (!state->bounded) return;
  const image_type bound = state->bound;
  auto listed = stages.candidate_list(candidates, &state->listed);
  visit_input<Aligned>(keys, n, descending,
                       [&](const K& key, image_type image, std::size_t at, bool valid) {
                         listed.add(valid && image <= bound, {key, Position(at)});
                       });
  listed.flush();
  __syncthreads();  // the block's additions to the length made before its ticket
  if (threadIdx.x == 0 && last_to_finish(&state->tickets, gridDim.x)) {
    const unsigned long long count = load_published(&state->listed);
    if (state->needed <= count && count <= candidates.capacity) {
      state->source = select_source::listed;
      state->sharing = count;
    } else {
      state->listed = 0;
    }
  }
}

// ---- The whole array: the digit passes -------------------------------------------------------

// The pass of the digit at composite bit `shift`: the count of each of its values among the
// keys sharing the found digits, added to the state's histogram; the last block to finish
// keeps the value where the count of keys still needed falls. A listing pass also writes the
// keys sharing the found digits to the candidate list and the positions of those below them
// to the taken list.
template <bool Aligned, class K, class Position>
__global__ void __launch_bounds__(select_threads)
    select_pass_kernel(const K* keys, std::size_t n, bool descending, int shift,
                       radix_select_state<K, Position>* state,
                       select_candidates<K, Position> candidates, select_list<Position> taken) {
  using image_type = rank_image_type<K>;
  __shared__ select_digit_counts counts;
  __shared__ select_stages<K, Position> stages;
  __shared__ block_sum_storage<select_warps, unsigned long long> sum_storage;
  __shared__ bool is_last;
  const unsigned long long needed = state->needed;
  if (state->sharing == needed) return;
  const select_threshold<image_type, Position> threshold = state->threshold;
  const select_source source = state->source;
  counts.clear();
  __syncthreads();

  // Count the digit of every key sharing the found digits (and list, in a listing pass).
  const auto count = [&](image_type image, Position position, bool shares) {
    if (shares) counts.add(threshold.digit(image, position, shift));
  };
  if (source == select_source::listed) {
    visit_listed(candidates, state->listed, descending,
                 [&](const K&, image_type image, Position position, bool valid) {
                   count(image, position, valid && threshold.compare(image, position) == 0);
                 });
  } else if (source == select_source::input) {
    visit_input<Aligned>(
        keys, n, descending, [&](const K&, image_type image, std::size_t at, bool valid) {
          count(image, Position(at), valid && threshold.compare(image, Position(at)) == 0);
        });
  } else {
    auto listed = stages.candidate_list(candidates, &state->listed);
    auto taken_list = stages.taken_list(taken, &state->taken);
    visit_input<Aligned>(keys, n, descending,
                         [&](const K& key, image_type image, std::size_t at, bool valid) {
                           const int order = valid ? threshold.compare(image, Position(at)) : 1;
                           count(image, Position(at), order == 0);
                           listed.add(order == 0, {key, Position(at)});
                           taken_list.add(order < 0, Position(at));
                         });
    listed.flush();
    taken_list.flush();
  }
  __syncthreads();
  const unsigned digit_count = counts.total(threadIdx.x);
  if (digit_count != 0) atomicAdd(&state->histogram[threadIdx.x], digit_count);
  __syncthreads();  // every count added before the block's ticket
  if (threadIdx.x == 0) is_last = last_to_finish(&state->tickets, gridDim.x);
  __syncthreads();
  if (!is_last) return;

  // Every count is in: the digit value where the needed key falls.
  const unsigned long long total = load_published(&state->histogram[threadIdx.x]);
  const unsigned long long before = block_exclusive_sum<select_warps>(total, sum_storage);
  state->histogram[threadIdx.x] = 0;
  if (before < needed && needed <= before + total) {
    select_threshold<image_type, Position> found = threshold;
    if (shift >= threshold.position_bits)
      found.image =
          image_type(found.image | (image_type(threadIdx.x) << (shift - found.position_bits)));
    else
      found.position = Position(found.position | (Position(threadIdx.x) << shift));
    found.known_from = shift;
    state->threshold = found;
    state->needed = needed - before;
    state->sharing = total;
    if (source == select_source::listing)
      state->source = select_source::listed;
    else if (source == select_source::input && total <= candidates.capacity)
      state->source = select_source::listing;
  }
}

// The taken keys the passes left unwritten, every key not above the threshold's found
// digits: from the candidate list where it holds them, else from the input.
template <bool Aligned, class K, class Position>
__global__ void __launch_bounds__(select_threads)
    write_selected_kernel(const K* keys, std::size_t n, bool descending,
                          radix_select_state<K, Position>* state,
                          select_candidates<K, Position> candidates, select_list<Position> taken) {
  using image_type = rank_image_type<K>;
  __shared__ select_stages<K, Position> stages;
  const select_threshold<image_type, Position> threshold = state->threshold;
  auto taken_list = stages.taken_list(taken, &state->taken);
  if (state->source == select_source::listed) {
    visit_listed(candidates, state->listed, descending,
                 [&](const K&, image_type image, Position position, bool valid) {
                   taken_list.add(valid && threshold.compare(image, position) <= 0, position);
                 });
  } else {
    visit_input<Aligned>(
        keys, n, descending, [&](const K&, image_type image, std::size_t at, bool valid) {
          taken_list.add(valid && threshold.compare(image, Position(at)) <= 0, Position(at));
        });
  }
  taken_list.flush();
}

// The taken keys, their positions now in input order, read from the input with them.
template <class K, class Position, class Index>
__global__ void gather_taken_kernel(const K* keys, const Position* positions, std::size_t k,
                                    K* taken_keys, Index* taken_positions) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < k; i += stride) {
    const Position position = positions[i];
    taken_keys[i] = load_item(keys + position);
    taken_positions[i] = Index(position);
  }
}

// ---- Batched: a block a row ------------------------------------------------------------------

// Thread t's items of a tile are the select_items_a_thread from first + t * that: the order
// of threads is the order of items. Their images are taken from the keys where asked for,
// which leaves registers to the loads in flight.
template <class K>
struct tile_keys {
  K keys[select_items_a_thread];
  std::size_t first;  // this thread's first item
  std::size_t n;
  bool descending;

  __device__ tile_keys(const K* keys_in, std::size_t n, std::size_t tile, bool descending)
      : first(tile * select_tile_items + std::size_t(threadIdx.x) * select_items_a_thread),
        n(n),
        descending(descending) {
#pragma unroll
    for (int j = 0; j < select_items_a_thread; ++j) {
      if (valid(j)) keys[j] = load_item(keys_in + first + j);
    }
  }
  __device__ bool valid(int j) const {
    return first + j < n;
  }
  __device__ K key(int j) const {
    return keys[j];
  }
  __device__ rank_image_type<K> image(int j) const {
    return rank_image(keys[j], descending);
  }
  __device__ std::size_t position(int j) const {
    return first + j;
  }
};

// A row's keys still in question once they are few, listed in shared memory with their
// positions in the row, in row order: the digits after the listing read the list, not the
// row. `Items` is the most it holds (at least 1).
constexpr int select_row_list_items = select_tile_items;

template <class K, int Items>
struct row_candidate_list {
  uninitialized_array<K, Items> keys;
  uninitialized_array<unsigned, Items> positions;
};

// Thread t's items of tile `tile` of a row's list of `n` keys, as tile_keys gives a row's,
// each read from the list where asked for: the list's registers are the row's.
template <class K, int Items>
struct listed_keys {
  row_candidate_list<K, Items>& list;
  unsigned first;
  unsigned n;
  bool descending;

  __device__ listed_keys(row_candidate_list<K, Items>& list, unsigned n, unsigned tile,
                         bool descending)
      : list(list),
        first(tile * select_tile_items + threadIdx.x * select_items_a_thread),
        n(n),
        descending(descending) {}
  __device__ bool valid(int j) const { return first + j < n; }
  __device__ K key(int j) const { return list.keys[int(first) + j]; }
  __device__ rank_image_type<K> image(int j) const { return rank_image(key(j), descending); }
  __device__ unsigned position(int j) const { return list.positions[int(first) + j]; }
};

// The tile's keys below the rule's found digits (the high half) and sharing them (the low
// half) held by the threads before the calling one, in one word: a tile holds 2048 keys. The
// last thread leaves the whole tile's in `tile_total`, which a barrier must precede reading.
template <class Items, class Image>
__device__ unsigned long long below_and_equal_before(
    const Items& items, const taken_rule<Image>& rule,
    block_sum_storage<select_warps, unsigned long long>& storage, unsigned long long& tile_total) {
  unsigned below = 0, equal = 0;
#pragma unroll
  for (int j = 0; j < select_items_a_thread; ++j) {
    if (items.valid(j)) {
      below += rule.below(items.image(j));
      equal += rule.equal(items.image(j));
    }
  }
  const unsigned long long mine = (static_cast<unsigned long long>(below) << 32) | equal;
  const unsigned long long before_mine = block_exclusive_sum<select_warps>(mine, storage);
  if (threadIdx.x == select_threads - 1) tile_total = before_mine + mine;
  return before_mine;
}

// Writes the taken keys of one tile (`items`: tile_keys or listed_keys), and their positions,
// in the tile's order: a taken key below the threshold goes after every one taken before it,
// the equal ones within the first `needed`. `below_before` and `equal_before` count those of
// the keys before the tile, and move on past it. Every thread of the block calls it.
template <class Items, class K, class Index>
__device__ void write_taken_tile(const Items& items, const taken_rule<rank_image_type<K>>& rule,
                                 unsigned long long& below_before, unsigned long long& equal_before,
                                 K* taken_keys, Index* taken_positions,
                                 block_sum_storage<select_warps, unsigned long long>& storage,
                                 unsigned long long& tile_total) {
  const unsigned long long before_mine = below_and_equal_before(items, rule, storage, tile_total);
  unsigned long long below_at = below_before + (before_mine >> 32);
  unsigned long long equal_at = equal_before + (before_mine & 0xFFFFFFFFu);
#pragma unroll
  for (int j = 0; j < select_items_a_thread; ++j) {
    if (!items.valid(j)) continue;
    if (rule.below(items.image(j))) {
      const unsigned long long at = below_at + (equal_at < rule.needed ? equal_at : rule.needed);
      taken_keys[at] = items.key(j);
      taken_positions[at] = Index(items.position(j));
      ++below_at;
    } else if (rule.equal(items.image(j))) {
      if (equal_at < rule.needed) {
        taken_keys[below_at + equal_at] = items.key(j);
        taken_positions[below_at + equal_at] = Index(items.position(j));
      }
      ++equal_at;
    }
  }
  __syncthreads();  // tile_total written
  below_before += tile_total >> 32;
  equal_before += tile_total & 0xFFFFFFFFu;
  __syncthreads();  // tile_total read
}

// Writes the taken keys of tiles [first_tile, end_tile) of `keys`, and their positions, in
// input order (write_taken_tile), after those of the keys before the first tile, which
// `below_before` and `equal_before` count.
template <class K, class Index>
__device__ void write_taken_tiles(const K* keys, std::size_t n, std::size_t first_tile,
                                  std::size_t end_tile, bool descending,
                                  const taken_rule<rank_image_type<K>>& rule,
                                  unsigned long long below_before, unsigned long long equal_before,
                                  K* taken_keys, Index* taken_positions,
                                  block_sum_storage<select_warps, unsigned long long>& storage,
                                  unsigned long long& tile_total) {
  for (std::size_t tile = first_tile; tile < end_tile; ++tile) {
    write_taken_tile(tile_keys<K>(keys, n, tile, descending), rule, below_before, equal_before,
                     taken_keys, taken_positions, storage, tile_total);
  }
}

// One read of a row that lists its keys sharing the rule's found digits in `list`, in row
// order, and writes the keys below them, all taken, from taken_keys[0] in row order. Returns
// how many it wrote. The keys sharing the digits must fit the list.
template <class K, class Index, int Items>
__device__ unsigned long long list_row_candidates(
    const K* keys, std::size_t n, bool descending, const taken_rule<rank_image_type<K>>& rule,
    row_candidate_list<K, Items>& list, K* taken_keys, Index* taken_positions,
    block_sum_storage<select_warps, unsigned long long>& storage, unsigned long long& tile_total) {
  unsigned long long below_before = 0, listed_before = 0;
  for (std::size_t tile = 0; tile < ceil_div(n, select_tile_items); ++tile) {
    const tile_keys<K> items(keys, n, tile, descending);
    const unsigned long long before_mine = below_and_equal_before(items, rule, storage, tile_total);
    unsigned long long below_at = below_before + (before_mine >> 32);
    unsigned listed_at = unsigned(listed_before + (before_mine & 0xFFFFFFFFu));
#pragma unroll
    for (int j = 0; j < select_items_a_thread; ++j) {
      if (!items.valid(j)) continue;
      if (rule.below(items.image(j))) {
        taken_keys[below_at] = items.key(j);
        taken_positions[below_at] = Index(items.position(j));
        ++below_at;
      } else if (rule.equal(items.image(j))) {
        list.keys[int(listed_at)] = items.key(j);
        list.positions[int(listed_at)] = unsigned(items.position(j));
        ++listed_at;
      }
    }
    __syncthreads();  // tile_total written
    below_before += tile_total >> 32;
    listed_before += tile_total & 0xFFFFFFFFu;
    __syncthreads();  // tile_total read
  }
  return below_before;
}

// Blocks an SM: the rows' reads want loads in flight. 8-byte keys spill 40-44 bytes a thread
// at four, 12 at three (the 80 registers they took before the list).
template <class K>
constexpr int select_rows_blocks_an_sm = sizeof(K) == 8 ? 3 : 4;

// Row r's k taken keys (cols < 2^32 keys a row) to taken_keys[r * k, (r + 1) * k), with
// their positions in the row. The threshold is found a digit at a time from the top, a read
// of the row a digit, until the keys sharing the digits found fit a list of `ListItems` in
// shared memory: one read then lists them, and writes the keys below them; the later digits
// and the last write read the list. So keys of every bit pattern and k small beside the row
// cost two reads of it, where a read a digit and one to write took three or four. The first
// digit always reads the row. Rows of one tile take a warp each (select_short_rows_kernel)
// or a cluster of one block, so the rows here span two tiles or more. Keys below the listed
// ones come first in the row's taken keys, then the listed ones taken: keys of one image are
// all below or all listed, each in row order, which is all the stable sort after needs. The
// digit counts are one copy: eight, as the whole array's passes keep, measured slower for
// every row shape and key distribution timed, few values included. `ListItems`: a probe may
// time other lists (0: none) against select_row_list_items.
template <class K, class Index, int ListItems = select_row_list_items>
__global__ void __launch_bounds__(select_threads, select_rows_blocks_an_sm<K>)
    select_rows_kernel(const K* in, std::size_t rows, std::size_t cols, std::size_t k,
                       bool descending, K* taken_keys, Index* taken_positions) {
  using image_type = rank_image_type<K>;
  constexpr int image_bits = 8 * int(sizeof(image_type));
  static_assert(select_threads == select_bins, "a thread a digit's count");
  __shared__ unsigned counts[select_bins];
  __shared__ block_sum_storage<select_warps, unsigned long long> sum_storage;
  __shared__ taken_rule<image_type> found;
  __shared__ unsigned long long found_count;  // keys that share the digits found
  __shared__ unsigned long long tile_total;
  constexpr int list_items = ListItems > 0 ? ListItems : 1;
  __shared__ row_candidate_list<K, list_items> list;
  const std::size_t tiles = ceil_div(cols, select_tile_items);

  for (std::size_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const K* keys = in + row * cols;
    K* const row_taken_keys = taken_keys + row * k;
    Index* const row_taken_positions = taken_positions + row * k;
    taken_rule<image_type> rule{image_type(0), image_bits, k};
    unsigned long long sharing = cols;  // keys that share the digits found
    // Every key sharing the digits found is taken.
    const auto settled = [&] { return rule.known_from != image_bits && sharing == rule.needed; };
    // One digit's counts among the keys sharing the digits found, from the row or the list.
    const auto narrow = [&](int shift, const auto& for_each_image) {
      counts[threadIdx.x] = 0;
      __syncthreads();
      for_each_image([&](image_type image) {
        if (rule.known_from == image_bits || rule.equal(image))
          atomicAdd(&counts[unsigned(image >> shift) & (select_bins - 1)], 1u);
      });
      __syncthreads();
      sharing = narrow_to_digit(counts[threadIdx.x], shift, rule, sum_storage, found, found_count);
    };

    int shift = image_bits - select_digit_bits;
    for (; shift >= 0 && !settled() && (rule.known_from == image_bits || sharing > ListItems);
         shift -= select_digit_bits) {
      narrow(shift, [&](const auto& count) {
        for (std::size_t tile = 0; tile < tiles; ++tile) {
          const tile_keys<K> items(keys, cols, tile, descending);
#pragma unroll
          for (int j = 0; j < select_items_a_thread; ++j) {
            if (items.valid(j)) count(items.image(j));
          }
        }
      });
    }
    if (settled() || shift < 0) {
      write_taken_tiles(keys, cols, 0, tiles, descending, rule, 0, 0, row_taken_keys,
                        row_taken_positions, sum_storage, tile_total);
      continue;
    }

    const unsigned listed = unsigned(sharing);
    unsigned long long below_before =
        list_row_candidates(keys, cols, descending, rule, list, row_taken_keys, row_taken_positions,
                            sum_storage, tile_total);
    for (; shift >= 0 && !settled(); shift -= select_digit_bits) {
      narrow(shift, [&](const auto& count) {
        for (unsigned i = threadIdx.x; i < listed; i += select_threads)
          count(rank_image(list.keys[int(i)], descending));
      });
    }
    unsigned long long equal_before = 0;
    for (unsigned tile = 0; tile * unsigned(select_tile_items) < listed; ++tile) {
      write_taken_tile(listed_keys(list, listed, tile, descending), rule, below_before,
                       equal_before, row_taken_keys, row_taken_positions, sum_storage, tile_total);
    }
  }
}

// ---- Batched: a warp a row ---------------------------------------------------------------------

// Rows of one tile (select_tile_items keys or fewer), as many as the SMs or more, take a warp
// each: the row's threshold a digit at a time from the top, as select_rows_kernel finds it,
// with the digit's counts in the warp's own select_bins words of shared memory, added up by
// a warp scan. No step waits on a block barrier, so a block holds select_warps rows in flight
// where select_rows_kernel holds one: top_k_batched of rows of 1,024 keys took 1.7-1.8x less
// time, of rows of 2,048 1.05-1.12x less, and of rows of 4,096 1.8 times as long, one warp's
// loads too few for a row of that length (docs/patterns.md, "Top-k of each row").

// One digit's counts, at `shift`, among the row's keys that share the rule's found digits,
// to the warp's `counts`: every lane of the warp calls it.
template <class K, class Image>
__device__ void count_digit_in_warp(const K* keys, std::size_t cols, bool descending,
                                    const taken_rule<Image>& rule, int shift, unsigned* counts) {
  constexpr int image_bits = 8 * int(sizeof(Image));
  __syncwarp();  // the counts of the digit before read
  for (int digit = lane_id(); digit < select_bins; digit += 32)
    counts[digit] = 0;
  __syncwarp();
  for (std::size_t i = lane_id(); i < cols; i += 32) {
    const Image image = rank_image(load_item(keys + i), descending);
    if (rule.known_from == image_bits || rule.equal(image))
      atomicAdd(&counts[unsigned(image >> shift) & (select_bins - 1)], 1u);
  }
  __syncwarp();
}

// The rule's next digit, at `shift`, from the warp's counts of it, as narrow_to_digit finds
// it for a block: lane l adds up the counts of digits 8l to 8l + 7 (read in an order rotated
// by l / 4, so that the 32 lanes' reads meet 32 banks), a warp scan places them, and the lane
// whose digits hold the needed key hands the digit over. Returns how many keys share the
// digits found. Every lane of the warp calls it.
template <class Image>
__device__ unsigned long long narrow_to_digit_in_warp(const unsigned* counts, int shift,
                                                      taken_rule<Image>& rule) {
  constexpr int digits_a_lane = select_bins / 32;
  static_assert(digits_a_lane == 8, "the rotated reads part 8 digits a lane over 32 banks");
  const unsigned lane = lane_id();
  unsigned mine = 0;
#pragma unroll
  for (int j = 0; j < digits_a_lane; ++j)
    mine += counts[lane * digits_a_lane + ((j + lane / 4) % digits_a_lane)];
  const unsigned through = warp_inclusive_scan(mine, plus{});
  unsigned long long before = through - mine;
  const bool holds = before < rule.needed && rule.needed <= through;
  const int holder = __ffs(int(__ballot_sync(full_warp, holds))) - 1;
  unsigned digit = 0, count = 0;
  if (holds) {
    for (int j = 0; j < digits_a_lane; ++j) {
      count = counts[lane * digits_a_lane + j];
      if (before + count >= rule.needed) {
        digit = lane * digits_a_lane + unsigned(j);
        break;
      }
      before += count;
    }
  }
  digit = __shfl_sync(full_warp, digit, holder);
  count = __shfl_sync(full_warp, count, holder);
  before = __shfl_sync(full_warp, before, holder);
  rule = {Image(rule.threshold | (Image(digit) << shift)), shift, rule.needed - before};
  return count;
}

// Writes the row's taken keys, and their positions, in row order, as write_taken_tile writes
// a tile's: 32 keys a step, each lane's place counted by the warp's ballots. Every lane of
// the warp calls it.
template <class K, class Index>
__device__ void write_taken_row_in_warp(const K* keys, std::size_t cols, bool descending,
                                        const taken_rule<rank_image_type<K>>& rule, K* taken_keys,
                                        Index* taken_positions) {
  const unsigned lanes_before = (1u << lane_id()) - 1u;
  unsigned long long below_before = 0, equal_before = 0;
  for (std::size_t first = 0; first < cols; first += 32) {
    const std::size_t i = first + lane_id();
    const bool valid = i < cols;
    const K key = valid ? load_item(keys + i) : K{};
    const rank_image_type<K> image = rank_image(key, descending);
    const bool below = valid && rule.below(image);
    const bool equal = valid && rule.equal(image);
    const unsigned below_lanes = __ballot_sync(full_warp, below);
    const unsigned equal_lanes = __ballot_sync(full_warp, equal);
    const unsigned long long below_at = below_before + unsigned(__popc(below_lanes & lanes_before));
    const unsigned long long equal_at = equal_before + unsigned(__popc(equal_lanes & lanes_before));
    if (below) {
      const unsigned long long at = below_at + (equal_at < rule.needed ? equal_at : rule.needed);
      taken_keys[at] = key;
      taken_positions[at] = Index(i);
    } else if (equal && equal_at < rule.needed) {
      taken_keys[below_at + equal_at] = key;
      taken_positions[below_at + equal_at] = Index(i);
    }
    below_before += unsigned(__popc(below_lanes));
    equal_before += unsigned(__popc(equal_lanes));
  }
}

// Row r's k taken keys (cols up to select_tile_items) to taken_keys[r * k, (r + 1) * k), with
// their positions in the row, a warp a row.
template <class K, class Index>
__global__ void __launch_bounds__(select_threads)
    select_short_rows_kernel(const K* in, std::size_t rows, std::size_t cols, std::size_t k,
                             bool descending, K* taken_keys, Index* taken_positions) {
  using image_type = rank_image_type<K>;
  constexpr int image_bits = 8 * int(sizeof(image_type));
  __shared__ unsigned counts[select_warps][select_bins];
  const unsigned warp = threadIdx.x / 32;
  const std::size_t warps = std::size_t(gridDim.x) * select_warps;
  for (std::size_t row = std::size_t(blockIdx.x) * select_warps + warp; row < rows; row += warps) {
    const K* keys = in + row * cols;
    taken_rule<image_type> rule{image_type(0), image_bits, k};
    for (int shift = image_bits - select_digit_bits; shift >= 0; shift -= select_digit_bits) {
      count_digit_in_warp(keys, cols, descending, rule, shift, counts[warp]);
      // Called apart: it changes rule.needed, which one expression could read before the call.
      const unsigned long long sharing = narrow_to_digit_in_warp(counts[warp], shift, rule);
      if (sharing == rule.needed) break;  // every key sharing the digits found is taken
    }
    write_taken_row_in_warp(keys, cols, descending, rule, taken_keys + row * k,
                            taken_positions + row * k);
  }
}

// ---- Batched: a cluster a row ----------------------------------------------------------------

// Rows that fit the shared memory of a cluster of up to select_cluster_most_blocks blocks:
// each block holds its run of the row's tiles as rank images, read once, and the blocks add
// up their digit counts through each other's shared memory (distributed shared memory), so
// that every digit after the first reads shared memory, not the row. The cluster's blocks
// all sum the counts and pick the same digit; they then write their taken keys in input
// order (write_taken_tiles over their runs), each told how many the blocks before it take.
// Where `sort_taken`, the taken keys go to the outputs and the cluster's first block sorts
// them there (k at most taken_sorted_shape's tile; up to 32 one warp), so that the call
// needs no second launch and no temporary memory.
constexpr int select_cluster_most_blocks = 8;

template <class K, class Index>
using taken_sorted_shape = one_tile_tiny_shape<K, Index>;

// Up to 32 taken keys, in input order at `keys` and `positions`, sorted there by one warp:
// a key's place is the count of keys whose images come before its own, ties in input order.
// A block's one-tile sort would take a rank and a barrier a digit.
template <class K, class Index>
__device__ void sort_few_taken_in_warp(K* keys, Index* positions, unsigned k, bool descending) {
  const unsigned lane = unsigned(lane_id());
  const bool mine = lane < k;
  K key{};
  Index position{};
  if (mine) {
    key = keys[lane];
    position = positions[lane];
  }
  const rank_image_type<K> image = rank_image(key, descending);
  unsigned place = 0;
  for (unsigned j = 0; j < k; ++j) {
    const rank_image_type<K> other = shuffle_from(image, int(j));
    place += other < image || (other == image && j < lane) ? 1u : 0u;
  }
  __syncwarp();  // every lane's key read before any is moved
  if (mine) {
    keys[place] = key;
    positions[place] = position;
  }
}

template <class K, class Index>
__global__ void __launch_bounds__(select_threads)
    select_rows_cluster_kernel(const K* in, std::size_t rows, std::size_t cols, std::size_t k,
                               bool descending, std::size_t tiles_a_block, K* taken_keys,
                               Index* taken_positions, bool sort_taken) {
  using image_type = rank_image_type<K>;
  constexpr int image_bits = 8 * int(sizeof(image_type));
  extern __shared__ uint4 row_run[];           // this block's run of the row, as rank images
  __shared__ unsigned counts[2][select_bins];  // a digit's, the next digit's
  __shared__ unsigned run_taken[2];            // below the threshold, equal to it
  __shared__ unsigned long long taken_before[2];
  __shared__ block_sum_storage<select_warps, unsigned long long> sum_storage;
  __shared__ taken_rule<image_type> found;
  __shared__ unsigned long long found_count;
  __shared__ unsigned long long tile_total;
#if __CUDA_ARCH__ >= 900
  const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const unsigned blocks = cluster.num_blocks();
  const unsigned rank = cluster.block_rank();
  const auto cluster_sync = [&] { cluster.sync(); };
  const auto in_block = [&](auto* mine, unsigned other) {
    return cluster.map_shared_rank(mine, other);
  };
#else
  const unsigned blocks = 1, rank = 0;
  const auto cluster_sync = [] { __syncthreads(); };
  const auto in_block = [](auto* mine, unsigned) { return mine; };
#endif
  image_type* images = reinterpret_cast<image_type*>(row_run);
  const std::size_t tiles = ceil_div(cols, select_tile_items);
  const std::size_t first_tile = rank * tiles_a_block < tiles ? rank * tiles_a_block : tiles;
  const std::size_t end_tile =
      first_tile + tiles_a_block < tiles ? first_tile + tiles_a_block : tiles;
  const std::size_t first = first_tile * select_tile_items;
  const std::size_t end = end_tile * select_tile_items < cols ? end_tile * select_tile_items : cols;
  const unsigned count = end > first ? unsigned(end - first) : 0;
  const std::size_t clusters = gridDim.x / blocks;

  for (std::size_t row = blockIdx.x / blocks; row < rows; row += clusters) {
    const K* keys = in + row * cols;
    for (unsigned i = threadIdx.x; i < count; i += select_threads)
      images[i] = rank_image(load_item(keys + first + i), descending);
    if (threadIdx.x < 2) run_taken[threadIdx.x] = 0;
    __syncthreads();

    // The threshold, a digit at a time from the top, the counts summed over the cluster.
    // Two sets of counts: a block may clear and fill the next digit's while the others still
    // read this one's.
    taken_rule<image_type> rule{image_type(0), image_bits, k};
    int set = 0;
    for (int shift = image_bits - select_digit_bits; shift >= 0;
         shift -= select_digit_bits, set ^= 1) {
      counts[set][threadIdx.x] = 0;
      __syncthreads();
      for (unsigned i = threadIdx.x; i < count; i += select_threads) {
        if (rule.known_from == image_bits || rule.equal(images[i]))
          atomicAdd(&counts[set][(images[i] >> shift) & (select_bins - 1)], 1u);
      }
      cluster_sync();  // every block's counts complete
      unsigned long long total = 0;
      for (unsigned b = 0; b < blocks; ++b)
        total += in_block(&counts[set][0], b)[threadIdx.x];
      // Called apart: it changes rule.needed, which one expression could read before the call.
      const unsigned long long sharing =
          narrow_to_digit(total, shift, rule, sum_storage, found, found_count);
      if (sharing == rule.needed) break;  // every key sharing the digits found is taken
    }

    // The run's taken keys, in input order after those of the runs before it.
    unsigned below = 0, equal = 0;
    for (unsigned i = threadIdx.x; i < count; i += select_threads) {
      below += rule.below(images[i]);
      equal += rule.equal(images[i]);
    }
    if (below != 0) atomicAdd(&run_taken[0], below);
    if (equal != 0) atomicAdd(&run_taken[1], equal);
    cluster_sync();  // every run's counts complete
    if (threadIdx.x < 2) {
      unsigned long long sum = 0;
      for (unsigned b = 0; b != rank; ++b)
        sum += in_block(&run_taken[0], b)[threadIdx.x];
      taken_before[threadIdx.x] = sum;
    }
    __syncthreads();
    write_taken_tiles(keys, cols, first_tile, end_tile, descending, rule, taken_before[0],
                      taken_before[1], taken_keys + row * k, taken_positions + row * k, sum_storage,
                      tile_total);
    // The counts read by every block before the next row changes them, and every block's
    // taken keys written before the first block sorts them.
    cluster_sync();
    if (sort_taken && rank == 0) {
      using shape = taken_sorted_shape<K, Index>;
      static_assert(shape::threads == select_threads, "the block sorts the taken keys");
      if (k <= 32) {
        if (threadIdx.x < 32)
          sort_few_taken_in_warp(taken_keys + row * k, taken_positions + row * k, unsigned(k),
                                 descending);
      } else {
        // Its run's images are read: the shared memory holds the sort's storage now.
        sort_in_one_tile<shape>(
            taken_keys + row * k, taken_keys + row * k, taken_positions + row * k,
            taken_positions + row * k, unsigned(k), radix_passes::of(0, 8 * int(sizeof(K))),
            descending ? order::descending : order::ascending, 8 * int(sizeof(K)),
            dynamic_shared_storage<tile_storage<shape, K, Index>>());
      }
    }
  }
}

}  // namespace ppat::detail
