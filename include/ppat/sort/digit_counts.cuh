// Every pass's digit counts from one read of the keys: the block steps that the onesweep's
// counting kernel (over the whole input) and the one-launch sort (over each block's tile)
// both run. A block counts in shared memory, then adds its counts to the totals in global
// memory.
#pragma once

#include <cstddef>

#include "plan.cuh"
#include "radix_key.cuh"

namespace ppat::detail {

// Passes a key of type K can take: 8-bit digits.
template <class K>
constexpr int most_passes = int(sizeof(K));

template <class K>
using pass_digit_counts = unsigned[most_passes<K>][radix];

// Adds the digit of every pass that each of the keys [first, end) takes to `counts` (the
// calling thread's copy of the block's counters): each thread holds `KeysPerThread` keys in
// flight, those at first + j x Threads + its index, then counts them.
template <int Threads, int KeysPerThread, class K>
__device__ __forceinline__ void count_pass_digits(const K* keys, std::size_t first, std::size_t end,
                                                  const radix_digit<K> (&digits)[most_passes<K>],
                                                  int passes, pass_digit_counts<K>& counts) {
  K held[KeysPerThread];
#pragma unroll
  for (int j = 0; j < KeysPerThread; ++j) {
    const std::size_t i = first + std::size_t(j) * Threads + threadIdx.x;
    if (i < end) held[j] = keys[i];
  }
#pragma unroll
  for (int j = 0; j < KeysPerThread; ++j) {
    if (first + std::size_t(j) * Threads + threadIdx.x >= end) continue;
#pragma unroll
    for (int p = 0; p < most_passes<K>; ++p)
      if (p < passes) atomicAdd(&counts[p][digits[p](held[j])], 1u);
  }
}

// Adds the block's counts, summed over its `Copies` copies, to `totals` ([pass][digit]); a
// barrier must come between the last count_pass_digits and this.
template <int Threads, int Copies, int MostPasses, class Total>
__device__ void add_digit_totals(const unsigned (&counts)[Copies][MostPasses][radix], int passes,
                                 Total* totals) {
  for (int i = int(threadIdx.x); i < passes * radix; i += Threads) {
    unsigned total = 0;
#pragma unroll
    for (int c = 0; c < Copies; ++c)
      total += (&counts[c][0][0])[i];
    if (total != 0) atomicAdd(&totals[i], Total(total));
  }
}

// The digits of every pass, for count_pass_digits.
template <class K>
__device__ void digits_of_passes(const radix_passes& passes, order ord, int end_bit,
                                 radix_digit<K> (&digits)[most_passes<K>]) {
#pragma unroll
  for (int p = 0; p < most_passes<K>; ++p)
    if (p < passes.count) digits[p] = passes.digit<K>(p, ord, end_bit);
}

}  // namespace ppat::detail
