// Moving VEC items of T as one 16-byte access when they make exactly 16 bytes, between
// global memory, registers and shared memory. Callers pass VEC > 1 only for 16-byte
// aligned addresses; a single 16-byte item is moved whole only when its type guarantees
// that alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda_pipeline.h>

namespace ppat::detail {

// VEC items that fill one 16-byte access, or 1 when T does not divide 16 bytes.
template <class T>
constexpr int items_per_vector = (16 % sizeof(T) == 0 && sizeof(T) <= 16) ? int(16 / sizeof(T)) : 1;

template <class T, int VEC>
constexpr bool one_access = sizeof(T) * VEC == 16 && (VEC > 1 || alignof(T) >= 16);

template <class T, int VEC>
__device__ void load_items(const T* from, T (&items)[VEC]) {
  if constexpr (one_access<T, VEC>) {
    const uint4 raw = *reinterpret_cast<const uint4*>(from);
    std::memcpy(items, &raw, 16);
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j)
      items[j] = from[j];
  }
}

template <class T, int VEC>
__device__ void store_items(T* to, const T (&items)[VEC]) {
  if constexpr (one_access<T, VEC>) {
    uint4 raw;
    std::memcpy(&raw, items, 16);
    *reinterpret_cast<uint4*>(to) = raw;
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j)
      to[j] = items[j];
  }
}

// Copies VEC items to shared memory: asynchronously, holding no registers, when they make
// one 16-byte access; through registers otherwise. wait_for_staging() completes the copies.
template <int VEC, class T>
__device__ void stage_items(const T* from, T* to_shared) {
  if constexpr (one_access<T, VEC>) {
    __pipeline_memcpy_async(to_shared, from, 16);
  } else {
    T items[VEC];
    load_items(from, items);
    store_items(to_shared, items);
  }
}

// Waits for this thread's asynchronous copies: after it, the thread sees what they wrote.
__device__ inline void wait_for_staging() {
  __pipeline_commit();
  __pipeline_wait_prior(0);
}

// WORDS 32-bit words (a multiple of 4) read as WORDS / 4 16-byte accesses from a 16-byte
// aligned address. Items stay packed in the words until item_in_words() takes one out: an
// array of small items would spread over a register each.
template <int WORDS>
__device__ void load_words(const void* from, unsigned (&words)[WORDS]) {
  static_assert(WORDS % 4 == 0, "whole 16-byte accesses");
#pragma unroll
  for (int v = 0; v < WORDS / 4; ++v) {
    const uint4 raw = reinterpret_cast<const uint4*>(from)[v];
    words[4 * v] = raw.x;
    words[4 * v + 1] = raw.y;
    words[4 * v + 2] = raw.z;
    words[4 * v + 3] = raw.w;
  }
}

// Item `j` of the T items packed in `words` (j a compile-time constant after unrolling).
template <class T, int WORDS>
__device__ T item_in_words(const unsigned (&words)[WORDS], int j) {
  T item;
  if constexpr (sizeof(T) >= 4) {
    std::memcpy(&item, &words[j * int(sizeof(T)) / 4], sizeof(T));
  } else {
    using bits = std::conditional_t<sizeof(T) == 1, std::uint8_t, std::uint16_t>;
    const bits low = bits(words[j * int(sizeof(T)) / 4] >> (8 * (j * int(sizeof(T)) % 4)));
    std::memcpy(&item, &low, sizeof(T));
  }
  return item;
}

inline bool aligned_to(const void* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % bytes == 0;
}

}  // namespace ppat::detail
