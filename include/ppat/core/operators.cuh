// The named operators of the API. Transparent: one object serves every T, as long as the
// operands have the same type (the algorithms only ever combine two values of T).
#pragma once

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

}  // namespace ppat
