// The named operators of the API. Transparent: one object serves every T, as long as the
// operands have the same type (the algorithms only ever combine two values of T).
#pragma once

#include <limits>
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

// The value those operators leave any operand unchanged with, so that their reductions need
// no flag for "nothing yet". Floating-point sums take -0.0: -0.0 + x is x for every x, where
// +0.0 + -0.0 would give +0.0.
template <class T, class Op>
constexpr T identity_of = [] {
  static_assert(commutative<T, Op>, "an identity only for the operators ppat knows commute");
  if constexpr (std::is_same_v<Op, plus>)
    return std::is_floating_point_v<T> ? T(-0.0) : T{};
  else if constexpr (std::is_same_v<Op, minimum>)
    return std::numeric_limits<T>::max();
  else
    return std::numeric_limits<T>::lowest();
}();

}  // namespace detail
}  // namespace ppat
