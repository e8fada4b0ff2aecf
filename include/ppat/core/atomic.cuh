// atomicAdd for every counter type ppat accepts. CUDA overloads atomicAdd for int,
// unsigned, unsigned long long, float and double only; std::uint64_t is `unsigned long`
// on Linux and std::int64_t `long`, which add identically as unsigned long long bits.
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

}  // namespace ppat::detail
