// Atomic additions. atomic_add: atomicAdd for every counter type ppat accepts (CUDA
// overloads atomicAdd for int, unsigned, unsigned long long, float and double only;
// std::uint64_t is `unsigned long` on Linux and std::int64_t `long`, which add identically
// as unsigned long long bits). shared_add and shared_fetch_add: additions to shared memory
// at a 32-bit shared-window address, which a kernel computes once per thread and offsets,
// where a generic pointer would be converted again at every addition.
#pragma once

#include <type_traits>

namespace ppat::detail {

template <class Counter>
__device__ void atomic_add(Counter* address, Counter value) {
  if constexpr (std::is_integral_v<Counter> && sizeof(Counter) == 8) {
    atomicAdd(reinterpret_cast<unsigned long long*>(address),
              static_cast<unsigned long long>(value));
  } else {
    static_assert(std::is_same_v<Counter, int> || std::is_same_v<Counter, unsigned> ||
                      std::is_same_v<Counter, float> || std::is_same_v<Counter, double>,
                  "counters are 32-bit or 64-bit integers, float or double");
    atomicAdd(address, value);
  }
}

template <class Counter>
__device__ void shared_add(unsigned address, Counter value) {
  if constexpr (std::is_same_v<Counter, unsigned>) {
    asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(address), "r"(value) : "memory");
  } else if constexpr (std::is_same_v<Counter, float>) {
    asm volatile("red.shared.add.f32 [%0], %1;" ::"r"(address), "f"(value) : "memory");
  } else {
    static_assert(std::is_same_v<Counter, double>, "shared counters are unsigned, float or double");
    asm volatile("red.shared.add.f64 [%0], %1;" ::"r"(address), "d"(value) : "memory");
  }
}

// The value before the addition.
__device__ inline unsigned shared_fetch_add(unsigned address, unsigned value) {
  unsigned old;
  asm volatile("atom.shared.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "r"(address), "r"(value)
               : "memory");
  return old;
}

}  // namespace ppat::detail
