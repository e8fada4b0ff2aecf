// Every pass's digit counts from one read of the keys: the block steps that the onesweep's
// counting kernel (over the whole input) and the one-launch sort (over each block's tile)
// both run. A block counts in shared memory, then adds its counts to the totals in global
// memory. As they count, those two also watch whether the keys are sorted already: then no
// pass need sort them (plan_pass_roles).
#pragma once

#include <cstddef>

#include "../core/atomic.cuh"
#include "../core/warp.cuh"
#include "plan.cuh"
#include "radix_key.cuh"

namespace ppat::detail {

// Passes a key of type K can take: 8-bit digits.
template <class K>
constexpr int most_passes = int(sizeof(K));

template <class K>
using pass_digit_counts = unsigned[most_passes<K>][radix];

// Whether the keys run in the sort's order: each key's image at least the one before it's.
// count_pass_digits shows it every key it counts, a warp's keys consecutive: lane l's key
// follows lane l - 1's, and a warp's first key is compared with the one before it in memory,
// read again. `in_order` starts false for a sort of a bit range, whose order a whole image
// does not show (a mask of the sorted bits cost the counting kernel, at 32 registers,
// spilled ones).
template <class K>
struct order_watch {
  using image_type = typename radix_key<K>::image_type;
  bool in_order;

  // Every lane of the warp calls it: key i (where `valid`), of image `image`.
  __device__ __forceinline__ void see(const K* keys, std::size_t i, bool valid, image_type image,
                                      const radix_digit<K>& digit) {
    const image_type lane_before = shuffle_up(image, 1);
    if (!valid || i == 0) return;
    const image_type before = lane_id() == 0 ? digit.image_of(keys[i - 1]) : lane_before;
    if (before > image) in_order = false;
  }
};

// What a count that watches no order shows the keys to: it never finds them in order (a
// segmented sort's chains).
struct no_order_watch {
  static constexpr bool in_order = false;
  template <class... Seen>
  __device__ __forceinline__ void see(const Seen&...) {}
};

// Adds the digit of every pass that each of the keys [first, end) takes to `counts` (the
// block's counters, every row zeroed, as digits_of_passes gives them), and shows each key to
// `watch`: each thread holds `KeysPerThread` keys in flight, those at first + j x Threads + its
// index, then counts them, taking each key's image once for all passes.
template <int Threads, int KeysPerThread, class K, class Watch>
__device__ __forceinline__ void count_pass_digits(const K* keys, std::size_t first, std::size_t end,
                                                  const radix_digit<K> (&digits)[most_passes<K>],
                                                  pass_digit_counts<K>& counts, Watch& watch) {
  K held[KeysPerThread];
#pragma unroll
  for (int j = 0; j < KeysPerThread; ++j) {
    const std::size_t i = first + std::size_t(j) * Threads + threadIdx.x;
    if (i < end) held[j] = keys[i];
  }
#pragma unroll
  for (int j = 0; j < KeysPerThread; ++j) {
    const std::size_t i = first + std::size_t(j) * Threads + threadIdx.x;
    const bool valid = i < end;
    const auto image = valid ? digits[0].image_of(held[j]) : typename radix_digit<K>::image_type{};
    watch.see(keys, i, valid, image, digits[0]);
    if (!valid) continue;
#pragma unroll
    for (int p = 0; p < most_passes<K>; ++p)
      atomicAdd(&counts[p][digits[p].of_image(image)], 1u);
  }
}

// Adds the block's counts to `totals` ([pass][digit]); a barrier must come between the last
// count_pass_digits and this.
template <int Threads, int MostPasses, class Total>
__device__ void add_digit_totals(const unsigned (&counts)[MostPasses][radix], int passes,
                                 Total* totals) {
  for (int i = int(threadIdx.x); i < passes * radix; i += Threads) {
    const unsigned total = (&counts[0][0])[i];
    if (total != 0) atomicAdd(&totals[i], Total(total));
  }
}

// A grid's totals in copies ([copy][pass][digit]): block b adds its counts to copy b %
// digit_total_copies, and a digit's total is the sum of its copies. A grid's blocks finish
// counting together, and with one copy their additions, a thousand a block, queued on the few
// lines of L2 that held it (docs/patterns.md, "Radix sort").
constexpr int digit_total_copies = 4;

template <class Total>
__device__ Total* block_total_copy(Total* totals, int passes) {
  return totals + std::size_t(blockIdx.x % digit_total_copies) * passes * radix;
}

// Digit d's total in pass `pass`, once every block has added its counts.
template <class Total>
__device__ Total digit_total(const Total* totals, int passes, int pass, unsigned d) {
  Total total = 0;
#pragma unroll
  for (int c = 0; c < digit_total_copies; ++c)
    total += load_published(&totals[(std::size_t(c) * passes + pass) * radix + d]);
  return total;
}

// The digits of every pass, for count_pass_digits; past the last pass, digits that are always
// 0, so that the counting adds every key to every row of counts without a branch a row
// (those rows' counts are never read).
template <class K>
__device__ void digits_of_passes(const radix_passes& passes, order ord, int end_bit,
                                 radix_digit<K> (&digits)[most_passes<K>]) {
#pragma unroll
  for (int p = 0; p < most_passes<K>; ++p) {
    digits[p] = passes.digit<K>(p < passes.count ? p : 0, ord, end_bit);
    if (p >= passes.count) digits[p].mask = 0;
  }
}

}  // namespace ppat::detail
