// Moving VEC items of T as one 16-byte access when they make exactly 16 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ppat::detail {

// VEC items that fill one 16-byte access, or 1 when T does not divide 16 bytes.
template <class T>
constexpr int items_per_vector = (16 % sizeof(T) == 0 && sizeof(T) <= 16) ? int(16 / sizeof(T)) : 1;

template <class T, int VEC>
__device__ void load_items(const T* from, T (&items)[VEC]) {
  if constexpr (sizeof(T) * VEC == 16) {
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
  if constexpr (sizeof(T) * VEC == 16) {
    uint4 raw;
    std::memcpy(&raw, items, 16);
    *reinterpret_cast<uint4*>(to) = raw;
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j)
      to[j] = items[j];
  }
}

inline bool aligned_to(const void* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % bytes == 0;
}

}  // namespace ppat::detail
