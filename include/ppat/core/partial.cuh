// A value that may be absent: the combination of nothing. Scans combine prefixes that may
// be empty (nothing precedes the first item) without needing an identity element, so the
// operator can be any associative one.
#pragma once

namespace ppat::detail {

template <class T>
struct partial {
  T value;
  bool valid;
};

// `a` then `b`, in that order: absent operands drop out.
template <class T, class Op>
__device__ partial<T> then(const partial<T>& a, const partial<T>& b, Op op) {
  if (!a.valid) return b;
  if (!b.valid) return a;
  return {op(a.value, b.value), true};
}

// `prefix` then `x`.
template <class T, class Op>
__device__ T after(const partial<T>& prefix, const T& x, Op op) {
  return prefix.valid ? op(prefix.value, x) : x;
}

}  // namespace ppat::detail
