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
__device__ T shuffle_from(const T& x, int lane) {
  return shuffle_words(x, [=](unsigned w) { return __shfl_sync(full_warp, w, lane); });
}

__device__ inline int lane_id() {
  return int(threadIdx.x & 31);
}

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

}  // namespace ppat::detail
