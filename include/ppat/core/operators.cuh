// The named operators of the API. Transparent: one object serves every T, as long as the
// operands have the same type (the algorithms only ever combine two values of T).
#pragma once

#include <type_traits>

namespace ppat {

struct plus {
  template <class T>
  __host__ __device__ constexpr T operator()(const T& a, const T& b) const {
    return a + b;
  }
};

struct minimum {
  template <class T>
  __host__ __device__ constexpr T operator()(const T& a, const T& b) const {
    return b < a ? b : a;
  }
};

struct maximum {
  template <class T>
  __host__ __device__ constexpr T operator()(const T& a, const T& b) const {
    return a < b ? b : a;
  }
};

namespace detail {

// Operators whose operands ppat may swap without changing the result. (Floating-point
// minimum and maximum are left out: with a NaN, the order decides which operand wins.)
template <class T, class Op>
constexpr bool commutative = std::is_arithmetic_v<T> &&
                             (std::is_same_v<Op, plus> ||
                              (std::is_integral_v<T> &&
                               (std::is_same_v<Op, minimum> || std::is_same_v<Op, maximum>)));

}  // namespace detail
}  // namespace ppat
