// Host reference implementations of every pattern, written from the definitions in
// API.md and sharing no code with the kernels they check. `ppat check` uses them too.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

namespace ppat_reference {

template <class T, class Op>
std::vector<T> inclusive_scan(const std::vector<T>& in, Op op) {
  std::vector<T> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i)
    out[i] = i == 0 ? in[0] : op(out[i - 1], in[i]);
  return out;
}

template <class T, class Op>
std::vector<T> exclusive_scan(const std::vector<T>& in, T init, Op op) {
  std::vector<T> out(in.size());
  T running = init;
  for (std::size_t i = 0; i < in.size(); ++i) {
    out[i] = running;
    running = op(running, in[i]);
  }
  return out;
}

// A segment is a maximal run of equal consecutive keys; each is scanned on its own.
template <class K, class T, class Op>
std::vector<T> inclusive_scan_by_key(const std::vector<K>& keys, const std::vector<T>& in, Op op) {
  std::vector<T> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const bool starts = i == 0 || !(keys[i] == keys[i - 1]);
    out[i] = starts ? in[i] : op(out[i - 1], in[i]);
  }
  return out;
}

template <class K, class T, class Op>
std::vector<T> exclusive_scan_by_key(const std::vector<K>& keys, const std::vector<T>& in, T init,
                                     Op op) {
  std::vector<T> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const bool starts = i == 0 || !(keys[i] == keys[i - 1]);
    out[i] = starts ? init : op(out[i - 1], in[i - 1]);
  }
  return out;
}

template <class T, class Op>
T reduce(const std::vector<T>& in, T init, Op op) {
  T result = init;
  for (const T& x : in)
    result = op(result, x);
  return result;
}

// histogram_even's rule: bin = ((s - lower) * num_bins) / (upper - lower) for lower <= s <
// upper, computed exactly (128-bit integers) for integer samples and levels; otherwise in
// double as (s - lower) * scale with scale = num_bins / (upper - lower), clamped to the last
// bin. -1 for a sample that is not counted.
template <class Sample, class Level>
long long even_bin(Sample s, int num_bins, Level lower, Level upper) {
  if constexpr (std::is_integral_v<Sample> && std::is_integral_v<Level>) {
    const __int128 value = s, low = lower, high = upper;
    if (value < low || value >= high) return -1;
    return (long long)((value - low) * num_bins / (high - low));
  } else {
    const double value = double(s), low = double(lower), high = double(upper);
    if (!(value >= low && value < high)) return -1;
    const double scale = double(num_bins) / (high - low);
    const auto bin = (long long)((value - low) * scale);
    return bin < num_bins ? bin : num_bins - 1;
  }
}

template <class Counter, class Sample, class Level>
std::vector<Counter> histogram_even(const std::vector<Sample>& samples, int num_bins, Level lower,
                                    Level upper) {
  std::vector<Counter> hist(num_bins, Counter(0));
  for (const Sample s : samples) {
    const long long bin = even_bin(s, num_bins, lower, upper);
    if (bin >= 0) hist[bin] += Counter(1);
  }
  return hist;
}

// Every `channels`-th sample from `first`, counted into its own even bins.
template <class Counter, class Sample, class Level>
std::vector<Counter> channel_histogram_even(const std::vector<Sample>& pixels, int channels,
                                            int first, int num_bins, Level lower, Level upper) {
  std::vector<Counter> hist(num_bins, Counter(0));
  for (std::size_t i = first; i < pixels.size(); i += channels) {
    const long long bin = even_bin(pixels[i], num_bins, lower, upper);
    if (bin >= 0) hist[bin] += Counter(1);
  }
  return hist;
}

// Each sample adds its weight; summed in long double, so the sum of any order the kernel
// takes is within a few rounding steps of it.
template <class Sample, class Weight, class Level>
std::vector<long double> histogram_even_weighted(const std::vector<Sample>& samples,
                                                 const std::vector<Weight>& weights, int num_bins,
                                                 Level lower, Level upper) {
  std::vector<long double> hist(num_bins, 0.0L);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const long long bin = even_bin(samples[i], num_bins, lower, upper);
    if (bin >= 0) hist[bin] += weights[i];
  }
  return hist;
}

// Bin b holds levels[b] <= s < levels[b + 1], found with std::partition_point (the kernels
// bisect by hand).
template <class Counter, class Sample, class Level>
std::vector<Counter> histogram_range(const std::vector<Sample>& samples,
                                     const std::vector<Level>& levels) {
  const int num_bins = int(levels.size()) - 1;
  std::vector<Counter> hist(num_bins, Counter(0));
  for (const Sample s : samples) {
    const auto not_above = [&](const Level& level) {
      if constexpr (std::is_integral_v<Sample> && std::is_integral_v<Level>) {
        return __int128(level) <= __int128(s);
      } else {
        return double(level) <= double(s);
      }
    };
    if (!not_above(levels.front()) || not_above(levels.back())) continue;  // outside, or NaN
    const auto above = std::partition_point(levels.begin(), levels.end(), not_above);
    hist[std::size_t(above - levels.begin()) - 1] += Counter(1);
  }
  return hist;
}

// in: rows x cols row-major; result: cols x rows row-major.
template <class T>
std::vector<T> transpose(const std::vector<T>& in, std::size_t rows, std::size_t cols) {
  std::vector<T> out(in.size());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c)
      out[c * rows + r] = in[r * cols + c];
  }
  return out;
}

// NumPy's transpose(in, axes) of a row-major array: out.shape[i] = shape[axes[i]].
template <class T>
std::vector<T> permute(const std::vector<T>& in, const std::vector<std::size_t>& shape,
                       const std::vector<int>& axes) {
  const std::size_t rank = shape.size();
  std::vector<std::size_t> in_stride(rank, 1);
  for (std::size_t d = rank; d-- > 1;)
    in_stride[d - 1] = in_stride[d] * shape[d];
  std::vector<T> out(in.size());
  std::vector<std::size_t> index(rank, 0);  // of the output element, in output axes
  for (std::size_t o = 0; o < out.size(); ++o) {
    std::size_t from = 0;
    for (std::size_t i = 0; i < rank; ++i)
      from += index[i] * in_stride[axes[i]];
    out[o] = in[from];
    for (std::size_t i = rank; i-- > 0;) {  // next output index, last axis fastest
      if (++index[i] < shape[axes[i]]) break;
      index[i] = 0;
    }
  }
  return out;
}

// Stream compaction: the items `keep` accepts, in input order.
template <class T, class Keep>
std::vector<T> select(const std::vector<T>& in, Keep keep) {
  std::vector<T> out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (keep(i)) out.push_back(in[i]);
  }
  return out;
}

// std::stable_partition: the accepted items, then the rejected ones, each in input order.
template <class T, class Pred>
std::vector<T> stable_partition(const std::vector<T>& in, Pred pred) {
  std::vector<T> out = select(in, [&](std::size_t i) { return bool(pred(in[i])); });
  const std::vector<T> rejected = select(in, [&](std::size_t i) { return !bool(pred(in[i])); });
  out.insert(out.end(), rejected.begin(), rejected.end());
  return out;
}

// Where runs of equal consecutive keys (==) start: the positions std::unique keeps.
template <class K>
std::vector<bool> run_starts(const std::vector<K>& keys) {
  std::vector<bool> starts(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    starts[i] = i == 0 || !(keys[i] == keys[i - 1]);
  return starts;
}

// Each run's values folded left to right.
template <class K, class V, class Op>
std::vector<V> reduce_by_key(const std::vector<K>& keys, const std::vector<V>& values, Op op) {
  const std::vector<bool> starts = run_starts(keys);
  std::vector<V> out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (starts[i]) {
      out.push_back(values[i]);
    } else {
      out.back() = op(out.back(), values[i]);
    }
  }
  return out;
}

template <class K, class Count>
std::vector<Count> run_lengths(const std::vector<K>& keys) {
  const std::vector<bool> starts = run_starts(keys);
  std::vector<Count> out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (starts[i]) {
      out.push_back(Count(1));
    } else {
      ++out.back();
    }
  }
  return out;
}

// ---- Sort ----

template <class K>
constexpr bool is_float_key =
    std::is_floating_point_v<K> || std::is_same_v<K, __half> || std::is_same_v<K, __nv_bfloat16>;

template <class K>
double as_double(const K& key) {
  if constexpr (std::is_same_v<K, __half>) {
    return double(__half2float(key));
  } else if constexpr (std::is_same_v<K, __nv_bfloat16>) {
    return double(__bfloat162float(key));
  } else {
    return double(key);
  }
}

// The order the API promises, written independently of the library's images: numbers by
// value with -0.0 before +0.0, every NaN after +inf and equal to every other NaN.
template <class K>
bool key_less(const K& a, const K& b) {
  if constexpr (is_float_key<K>) {
    const double x = as_double(a), y = as_double(b);
    const bool x_nan = std::isnan(x), y_nan = std::isnan(y);
    if (x_nan || y_nan) return !x_nan && y_nan;
    if (x != y) return x < y;
    return std::signbit(x) && !std::signbit(y);
  } else {
    return a < b;
  }
}

// The key's order-preserving unsigned image, as the API defines it: unsigned integers are
// their own; signed ones flip the sign bit; floating point flips every bit of a negative
// number and the sign bit of a positive one, and every NaN is all ones.
template <class K>
std::uint64_t order_image(const K& key) {
  constexpr int bits = 8 * int(sizeof(K));
  const std::uint64_t all = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
  std::uint64_t b = 0;
  std::memcpy(&b, &key, sizeof(K));
  if constexpr (is_float_key<K>) {
    if (std::isnan(as_double(key))) return all;
    return (b & sign) != 0 ? ~b & all : b | sign;
  } else if constexpr (std::is_signed_v<K>) {
    return b ^ sign;
  } else {
    return b;
  }
}

// Bits [begin_bit, end_bit) of a key's image.
template <class K>
std::uint64_t key_bits(const K& key, int begin_bit, int end_bit) {
  const std::uint64_t mask = end_bit - begin_bit >= 64
                                 ? ~std::uint64_t{0}
                                 : (std::uint64_t{1} << (end_bit - begin_bit)) - 1;
  return (order_image(key) >> begin_bit) & mask;
}

// The input positions in sorted order: a stable sort, ascending or descending, by the whole
// key or by a range of its image's bits.
template <class K>
std::vector<std::size_t> sorted_positions(const std::vector<K>& keys, bool descending,
                                          int begin_bit = 0, int end_bit = 8 * sizeof(K)) {
  std::vector<std::size_t> positions(keys.size());
  std::iota(positions.begin(), positions.end(), std::size_t{0});
  const bool whole = begin_bit == 0 && end_bit == int(8 * sizeof(K));
  const auto less = [&](std::size_t i, std::size_t j) {
    if (whole) return key_less(keys[i], keys[j]);
    return key_bits(keys[i], begin_bit, end_bit) < key_bits(keys[j], begin_bit, end_bit);
  };
  if (!descending) {
    std::stable_sort(positions.begin(), positions.end(), less);
  } else {
    std::stable_sort(positions.begin(), positions.end(),
                     [&](std::size_t i, std::size_t j) { return less(j, i); });
  }
  return positions;
}

template <class T>
std::vector<T> gathered(const std::vector<T>& from, const std::vector<std::size_t>& positions) {
  std::vector<T> to(positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i)
    to[i] = from[positions[i]];
  return to;
}

}  // namespace ppat_reference
