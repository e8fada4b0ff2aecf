// Shared memory for any trivially copyable T. A plain `__shared__ T tile[N]` is rejected
// for types with a non-trivial default constructor; raw aligned bytes accept every T.
#pragma once

namespace ppat::detail {

template <class T, int N>
struct uninitialized_array {
  alignas(T) unsigned char bytes[sizeof(T) * N];

  __device__ T& operator[](int i) { return reinterpret_cast<T*>(bytes)[i]; }
};

}  // namespace ppat::detail
