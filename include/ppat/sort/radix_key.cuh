// Radix keys: every key type ppat sorts, seen as the unsigned integer whose order is the
// key's order (its image), and the digits of that image a sort pass reads.
//
// Unsigned integers are their own image; signed ones flip the sign bit, and so give their key
// back from it (`invertible`). Floating point flips
// every bit of a negative number and only the sign bit of a positive one, so that
// -inf < negatives < -0.0 < +0.0 < positives < +inf, and maps every NaN (either sign, any
// payload) to the all-ones image, above +inf: NaNs form one class, which a stable sort keeps
// in input order. That image cannot be inverted for NaNs, so a sort moves the keys
// themselves and takes each pass's digit from the key it holds, never from a stored image
// (a sort that knows its keys hold no NaN may take them back, `number`).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ppat::detail {

template <int Bytes>
using unsigned_of_size = std::conditional_t<
    Bytes == 1, std::uint8_t,
    std::conditional_t<Bytes == 2, std::uint16_t,
                       std::conditional_t<Bytes == 4, std::uint32_t, std::uint64_t>>>;

template <class K>
__host__ __device__ unsigned_of_size<sizeof(K)> bits_of(const K& key) {
  unsigned_of_size<sizeof(K)> bits;
  std::memcpy(&bits, &key, sizeof(K));
  return bits;
}

// Floating-point images, for keys with `ExponentBits` of exponent below the sign.
template <class K, int ExponentBits>
struct float_radix_key {
  using image_type = unsigned_of_size<sizeof(K)>;
  static constexpr bool supported = true;
  static constexpr bool invertible = false;
  static constexpr int bits = 8 * sizeof(K);
  static constexpr image_type sign = image_type(image_type(1) << (bits - 1));
  static constexpr image_type infinity =
      image_type(image_type((image_type(1) << ExponentBits) - 1) << (bits - 1 - ExponentBits));

  __host__ __device__ static image_type image(const K& key) {
    const image_type b = bits_of(key);
    if (image_type(b & image_type(~sign)) > infinity) return image_type(~image_type(0));
    return (b & sign) != 0 ? image_type(~b) : image_type(b | sign);
  }
  __host__ __device__ static bool is_nan(const K& key) {
    return image_type(bits_of(key) & image_type(~sign)) > infinity;
  }
  // The number whose image this is (a NaN's image stands for every NaN, so it has none).
  __host__ __device__ static K number(image_type image) {
    const image_type b =
        (image & sign) != 0 ? image_type(image & image_type(~sign)) : image_type(~image);
    K key;
    std::memcpy(&key, &b, sizeof(K));
    return key;
  }
};

template <class K, class = void>
struct radix_key {
  static constexpr bool supported = false;
};

template <class K>
struct radix_key<K, std::enable_if_t<std::is_integral_v<K> && !std::is_same_v<K, bool>>> {
  using image_type = unsigned_of_size<sizeof(K)>;
  static constexpr bool supported = true;
  static constexpr bool invertible = true;
  static constexpr image_type sign_flip =
      std::is_signed_v<K> ? image_type(image_type(1) << (8 * sizeof(K) - 1)) : image_type(0);

  __host__ __device__ static image_type image(const K& key) {
    return image_type(bits_of(key) ^ sign_flip);
  }
  __host__ __device__ static K key(image_type image) {
    const image_type b = image_type(image ^ sign_flip);
    K key;
    std::memcpy(&key, &b, sizeof(K));
    return key;
  }
};

template <>
struct radix_key<float> : float_radix_key<float, 8> {};
template <>
struct radix_key<double> : float_radix_key<double, 11> {};
template <>
struct radix_key<__half> : float_radix_key<__half, 5> {};
template <>
struct radix_key<__nv_bfloat16> : float_radix_key<__nv_bfloat16, 8> {};

// One pass's digit: `width` bits of the image from `shift` on, complemented for a
// descending sort (which is then an ascending sort of the complemented images).
template <class K>
struct radix_digit {
  using image_type = typename radix_key<K>::image_type;
  image_type flip;  // all ones for descending, 0 for ascending
  int shift;
  unsigned mask;  // 2^width - 1

  __host__ __device__ unsigned operator()(const K& key) const { return of_image(image_of(key)); }
  // The two halves, for a caller that takes several passes' digits from one key: the image
  // as this order ranks it (every pass of a sort has the same), then this pass's bits of it.
  __host__ __device__ image_type image_of(const K& key) const {
    return image_type(radix_key<K>::image(key) ^ flip);
  }
  __host__ __device__ unsigned of_image(image_type image) const {
    return unsigned(image >> shift) & mask;
  }
};

}  // namespace ppat::detail
