// Moving VEC items of T between memory and registers: as one 16-byte access when they make
// exactly 16 bytes and the caller says the address is 16-byte aligned (`Aligned`), item by
// item otherwise. A single 16-byte item is moved whole only when its type guarantees that
// alignment. Kernels keep the same VEC items a thread either way, so that an unaligned
// buffer changes how items are read, never how they are combined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ppat::detail {

// VEC items that fill one 16-byte access, or 1 when T does not divide 16 bytes.
template <class T>
constexpr int items_per_vector = (16 % sizeof(T) == 0 && sizeof(T) <= 16) ? int(16 / sizeof(T)) : 1;

template <class T, int VEC>
constexpr bool one_access = sizeof(T) * VEC == 16 && (VEC > 1 || alignof(T) >= 16);

// One item, read as whole words of its alignment through the cached-load intrinsic (an
// ordinary coherent load, ld.global.ca). With plain item loads in its place the scan kernels
// spilled 130 to 350 bytes a thread (ptxas -v); with these, none.
template <class T>
__device__ T load_item(const T* from) {
  using word = std::conditional_t<
      alignof(T) >= 8, unsigned long long,
      std::conditional_t<alignof(T) == 4, unsigned,
                         std::conditional_t<alignof(T) == 2, unsigned short, unsigned char>>>;
  word words[sizeof(T) / sizeof(word)];
#pragma unroll
  for (std::size_t w = 0; w < sizeof(T) / sizeof(word); ++w)
    words[w] = __ldca(reinterpret_cast<const word*>(from) + w);
  T item;
  std::memcpy(&item, words, sizeof(T));
  return item;
}

template <bool Aligned, class T, int VEC>
__device__ void load_items(const T* from, T (&items)[VEC]) {
  if constexpr (Aligned && one_access<T, VEC>) {
    const uint4 raw = *reinterpret_cast<const uint4*>(from);
    std::memcpy(items, &raw, 16);
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j)
      items[j] = load_item(from + j);
  }
}

template <bool Aligned, class T, int VEC>
__device__ void store_items(T* to, const T (&items)[VEC]) {
  if constexpr (Aligned && one_access<T, VEC>) {
    uint4 raw;
    std::memcpy(&raw, items, 16);
    *reinterpret_cast<uint4*>(to) = raw;
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j)
      to[j] = items[j];
  }
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

// VEC items kept in registers. 1- and 2-byte items that fill whole 16-byte accesses stay
// packed in 32-bit words, since an array of them would take a register each.
template <class T, int VEC>
constexpr bool packs_in_words = sizeof(T) < 4 && sizeof(T) * VEC % 16 == 0;
// Whether register_items<T, VEC>::load<true> reads whole 16-byte accesses, which need a
// 16-byte aligned address: one vector, or the packed words of several.
template <class T, int VEC>
constexpr bool loads_16_byte_accesses = one_access<T, VEC> || packs_in_words<T, VEC>;

template <class T, int VEC, bool Packed = packs_in_words<T, VEC>>
struct register_items {
  T items[VEC];

  template <bool Aligned>
  __device__ void load(const T* from) {
    load_items<Aligned>(from, items);
  }
  __device__ void assign(const T (&from)[VEC]) {
#pragma unroll
    for (int j = 0; j < VEC; ++j)
      items[j] = from[j];
  }
  __device__ T operator[](int j) const {
    return items[j];
  }
};

template <class T, int VEC>
struct register_items<T, VEC, true> {
  unsigned words[sizeof(T) * VEC / 4];

  template <bool Aligned>
  __device__ void load(const T* from) {
    if constexpr (Aligned) {
      load_words(from, words);
    } else {
      T items[VEC];
      load_items<false>(from, items);
      assign(items);
    }
  }
  __device__ void assign(const T (&from)[VEC]) { std::memcpy(words, from, sizeof(words)); }
  __device__ T operator[](int j) const { return item_in_words<T>(words, j); }
};

inline bool aligned_to(const void* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % bytes == 0;
}

}  // namespace ppat::detail
