// Warp-level building blocks for any trivially copyable T: shuffles, and scans and
// reductions that combine in a fixed order (left operand first), so that results are the
// same bits on every run and non-commutative operators are respected.
#pragma once

#include <cstring>

#include "partial.cuh"

namespace ppat::detail {

constexpr unsigned full_warp = 0xFFFFFFFFu;

// Shuffles a T of any size as 32-bit words.
template <class T, class Shuffle>
__device__ T shuffle_words(const T& x, Shuffle shuffle) {
  constexpr int words = (sizeof(T) + 3) / 4;
  unsigned in[words] = {};
  unsigned out[words];
  std::memcpy(in, &x, sizeof(T));
#pragma unroll
  for (int w = 0; w < words; ++w)
    out[w] = shuffle(in[w]);
  T y;
  std::memcpy(&y, out, sizeof(T));
  return y;
}

template <class T>
__device__ T shuffle_up(const T& x, int delta) {
  return shuffle_words(x, [=](unsigned w) { return __shfl_up_sync(full_warp, w, delta); });
}
template <class T>
__device__ T shuffle_down(const T& x, int delta) {
  return shuffle_words(x, [=](unsigned w) { return __shfl_down_sync(full_warp, w, delta); });
}
template <class T>
__device__ T shuffle_xor(const T& x, int mask) {
  return shuffle_words(x, [=](unsigned w) { return __shfl_xor_sync(full_warp, w, mask); });
}
template <class T>
__device__ T shuffle_from(const T& x, int lane) {
  return shuffle_words(x, [=](unsigned w) { return __shfl_sync(full_warp, w, lane); });
}

__device__ inline int lane_id() {
  return int(threadIdx.x & 31);
}

// Called by every lane of a warp: a slot of a list whose length is at `length` for each lane
// that wants one, the warp's slots side by side in lane order, claimed with one atomic
// addition. Lanes that want none get 0.
__device__ inline unsigned long long warp_claim_slot(unsigned long long* length, bool wants) {
  const unsigned wanting = __ballot_sync(full_warp, wants);
  if (wanting == 0) return 0;
  const int leader = __ffs(int(wanting)) - 1;
  const int lane = lane_id();
  unsigned long long first = 0;
  if (lane == leader) first = atomicAdd(length, (unsigned long long)__popc(wanting));
  first = __shfl_sync(full_warp, first, leader);
  return wants ? first + unsigned(__popc(wanting & ((1u << lane) - 1u))) : 0;
}

// A warp's additions to a list many warps append to, staged in shared memory (`stage`, Slots
// entries of this warp's own) and written out a few dozen at a time, with one atomic addition
// to the list's length each: an atomic addition a warp's every addition would queue the
// whole grid on one address (docs/patterns.md, "Top-k"). Every lane of the warp calls add()
// together, and flush() once done. Entries past the list's capacity are counted in its length
// but not written: a list that may overflow is one its reader drops when it did.
template <class Entry, int Slots>
struct warp_staged_list {
  static_assert(Slots >= 64, "a flush makes room for at least 32 more");
  Entry* list;
  unsigned long long capacity;
  unsigned long long* length;
  Entry* stage;
  int staged = 0;  // the same on every lane

  __device__ void add(bool wants, const Entry& entry) {
    const unsigned wanting = __ballot_sync(full_warp, wants);
    if (wanting == 0) return;
    if (wants) stage[staged + __popc(wanting & ((1u << lane_id()) - 1u))] = entry;
    staged += __popc(wanting);
    if (staged > Slots - 32) flush();
  }

  __device__ void flush() {
    __syncwarp();  // the stage written
    if (staged == 0) return;
    unsigned long long first = 0;
    if (lane_id() == 0) first = atomicAdd(length, (unsigned long long)staged);
    first = __shfl_sync(full_warp, first, 0);
    for (int i = lane_id(); i < staged; i += 32)
      if (first + i < capacity) list[first + i] = stage[i];
    __syncwarp();  // the stage read
    staged = 0;
  }
};

// Inclusive scan across the warp (Kogge-Stone): lane i gets x_0 op ... op x_i.
template <class T, class Op>
__device__ T warp_inclusive_scan(T x, Op op) {
  const int lane = lane_id();
#pragma unroll
  for (int delta = 1; delta < 32; delta <<= 1) {
    const T left = shuffle_up(x, delta);
    if (lane >= delta) x = op(left, x);
  }
  return x;
}

// Reduction of the lanes' partials, left to right as a fixed pairwise tree; every lane
// gets the result.
template <class T, class Op>
__device__ partial<T> warp_reduce(partial<T> x, Op op) {
  const int lane = lane_id();
#pragma unroll
  for (int delta = 1; delta < 32; delta <<= 1) {
    const partial<T> right{shuffle_down(x.value, delta),
                           __shfl_down_sync(full_warp, x.valid, delta) != 0};
    if ((lane & (2 * delta - 1)) == 0 && lane + delta < 32) x = then(x, right, op);
  }
  return {shuffle_from(x.value, 0), __shfl_sync(full_warp, x.valid, 0) != 0};
}

// Reduction under an operator that commutes (operators.cuh's `commutative`), every lane
// combining with its partner in an xor butterfly: every lane ends with the result, and no
// lane needs a flag for "nothing" (it holds the operator's identity). Partners combine in
// opposite orders, which commuting operators allow; floating-point addition gives the same
// bits either way. Much faster than warp_reduce at the end of a short kernel
// (docs/patterns.md, "Scan", its paragraph on the reduce).
template <class T, class Op>
__device__ T warp_reduce_commutative(T x, Op op) {
#pragma unroll
  for (int mask = 16; mask > 0; mask >>= 1)
    x = op(x, shuffle_xor(x, mask));
  return x;
}

// The OR and the AND of 64 bits over a warp's lanes, a 32-bit half an instruction each.
__device__ inline unsigned long long warp_or_bits(unsigned long long bits) {
  return (static_cast<unsigned long long>(__reduce_or_sync(full_warp, unsigned(bits >> 32)))
          << 32) |
         __reduce_or_sync(full_warp, unsigned(bits));
}
__device__ inline unsigned long long warp_and_bits(unsigned long long bits) {
  return (static_cast<unsigned long long>(__reduce_and_sync(full_warp, unsigned(bits >> 32)))
          << 32) |
         __reduce_and_sync(full_warp, unsigned(bits));
}

}  // namespace ppat::detail
