// The bin of a sample, shared by every histogram kernel: even bins (histogram_even) and
// bins bounded by a sorted array of levels (histogram_range). A binning maps a sample to its
// bin in [0, num_bins), or to num_bins when the sample is not counted (outside the range,
// or NaN): kernels that keep a counter there for such samples need no branch.
//
// Even bins: bin b covers [lower + b*w, lower + (b+1)*w) with w = (upper - lower) / num_bins.
// Integer samples with integer levels are binned exactly: ((s - lower) * num_bins) /
// (upper - lower). A kernel cannot afford that 64-bit (or 128-bit) division per sample, so
// the quotient is estimated in double, where it is off by at most one, and corrected with
// two exact multiplications; when the range equals num_bins the offset is the bin.
// Anything else is binned in double as (s - lower) * (num_bins / (upper - lower)), the
// scale computed once, clamped so that a sample just below `upper` lands in the last bin
// despite rounding.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include "../core/arguments.cuh"
#include "../core/error.cuh"

namespace ppat::detail {

template <class Sample, class Level>
class even_binning {
  static constexpr bool exact = std::is_integral_v<Sample> && std::is_integral_v<Level>;
  static constexpr bool needs_128_bits = exact && (sizeof(Sample) == 8 || sizeof(Level) == 8);
  template <class T>
  static constexpr bool fits_int32 = std::is_signed_v<T> || sizeof(T) < 4;

 public:
  // Samples and levels that all lie in one 32-bit domain, int32 or uint32: there,
  // (s - lower) modulo 2^32 is below the range exactly when lower <= s < upper, so one
  // 32-bit subtraction and one comparison do the range check.
  static constexpr bool narrow = exact && sizeof(Sample) <= 4 && sizeof(Level) <= 4 &&
                                 ((fits_int32<Sample> && fits_int32<Level>) ||
                                  (std::is_unsigned_v<Sample> && std::is_unsigned_v<Level>));

 private:
  using signed_wide = std::conditional_t<needs_128_bits, __int128, long long>;
  using unsigned_wide = std::conditional_t<needs_128_bits, unsigned __int128, unsigned long long>;
  using arithmetic = std::conditional_t<exact, signed_wide, double>;
  using offset_type = std::conditional_t<narrow, unsigned, unsigned_wide>;

 public:
  even_binning() = default;
  // The caller has checked num_bins > 0 and lower < upper.
  even_binning(int num_bins, Level lower, Level upper)
      : num_bins_(num_bins), lower_(arithmetic(lower)), upper_(arithmetic(upper)) {
    if constexpr (exact) {
      range_ = offset_type(upper_ - lower_);
      offset_is_bin_ = range_ == offset_type(num_bins);
      scale_ = double(num_bins) / double(range_);
    } else {
      scale_ = double(num_bins) / (upper_ - lower_);
    }
  }

  // The sample's bin, or num_bins when it is outside [lower, upper) or NaN.
  __host__ __device__ int operator()(Sample sample) const {
    if constexpr (narrow) {
      const unsigned offset = unsigned(sample) - unsigned(lower_);
      if (offset >= range_) return num_bins_;
      return offset_is_bin_ ? int(offset) : bin_of_offset(offset);
    } else if constexpr (exact) {
      const arithmetic s = arithmetic(sample);
      if (!(s >= lower_ && s < upper_)) return num_bins_;
      const auto offset = unsigned_wide(s - lower_);
      return offset_is_bin_ ? int(offset) : bin_of_offset(offset);
    } else {
      const arithmetic s = arithmetic(sample);
      if (!(s >= lower_ && s < upper_)) return num_bins_;
      const int bin = int((s - lower_) * scale_);
      return bin < num_bins_ ? bin : num_bins_ - 1;
    }
  }

  // True when upper - lower == num_bins: the bin is s - lower.
  bool offset_is_bin() const { return offset_is_bin_; }
  __host__ __device__ int num_bins() const { return num_bins_; }

 private:
  // (offset * num_bins) / range without dividing: the estimate in double is off from the
  // quotient by less than quotient * 2^-51 < 1, so its floor is one off at most, either way,
  // and two exact products tell which.
  __host__ __device__ int bin_of_offset(offset_type offset) const {
    int bin = int(double(offset) * scale_);
    bin = bin < num_bins_ ? bin : num_bins_ - 1;
    const unsigned_wide product = unsigned_wide(offset) * unsigned_wide(num_bins_);
    const unsigned_wide bin_start = unsigned_wide(bin) * unsigned_wide(range_);
    if (bin_start > product) return bin - 1;
    if (bin_start + unsigned_wide(range_) <= product) return bin + 1;
    return bin;
  }

  int num_bins_ = 0;
  arithmetic lower_{};
  arithmetic upper_{};
  double scale_ = 0;
  std::conditional_t<exact, offset_type, char> range_{};
  bool offset_is_bin_ = false;
};

// Even bins one integer wide (upper - lower == num_bins) over a 32-bit domain: the bin is
// the offset s - lower, and an offset past the last bin (below lower, it wraps around to a
// large unsigned value) is the not-counted slot. One subtraction and one minimum.
template <class Sample>
class unit_binning {
 public:
  unit_binning() = default;
  unit_binning(int num_bins, unsigned lower) : num_bins_(unsigned(num_bins)), lower_(lower) {}

  __host__ __device__ int operator()(Sample sample) const {
    const unsigned offset = unsigned(sample) - lower_;
    return int(offset < num_bins_ ? offset : num_bins_);
  }

  __host__ __device__ int num_bins() const { return int(num_bins_); }

 private:
  unsigned num_bins_ = 0;
  unsigned lower_ = 0;
};

// Bins bounded by `levels` (num_bins + 1 of them, ascending, in device memory): bin b holds
// levels[b] <= s < levels[b + 1]. Compared in the type both convert to without loss where
// one exists (a signed 64-bit or 128-bit integer, else double). Levels that are not
// ascending give meaningless counts but never a bin outside [0, num_bins].
template <class Sample, class Level>
class range_binning {
  static constexpr bool exact = std::is_integral_v<Sample> && std::is_integral_v<Level>;
  static constexpr bool needs_128_bits = exact && (sizeof(Sample) == 8 || sizeof(Level) == 8);
  using arithmetic =
      std::conditional_t<exact, std::conditional_t<needs_128_bits, __int128, long long>, double>;

 public:
  range_binning() = default;
  range_binning(int num_bins, const Level* levels) : num_bins_(num_bins), levels_(levels) {}

  __device__ int operator()(Sample sample) const {
    const arithmetic s = arithmetic(sample);
    if (!(s >= level(0) && s < level(num_bins_))) return num_bins_;
    // The last level <= s, by bisection over [0, num_bins).
    int low = 0, count = num_bins_;
    while (count > 1) {
      const int half = count / 2;
      if (level(low + half) <= s) {
        low += half;
        count -= half;
      } else {
        count = half;
      }
    }
    return low;
  }

  __host__ __device__ int num_bins() const { return num_bins_; }

 private:
  __device__ arithmetic level(int b) const { return arithmetic(__ldg(levels_ + b)); }

  int num_bins_ = 0;
  const Level* levels_ = nullptr;
};

// The checks every histogram makes before it launches anything.
template <class Sample, class Counter>
void require_histogram_buffers(const Sample* samples, std::size_t n, const Counter* hist,
                               int num_bins, const char* function) {
  require(num_bins > 0, function, "num_bins", "must be positive");
  require_buffer(samples, n, function, "samples");
  require_buffer(hist, std::size_t(num_bins), function, "hist");
  require_disjoint(samples, n, hist, std::size_t(num_bins), function, "samples", "hist");
}

template <class Sample, class Counter>
void require_histogram_readable(const Sample* samples, std::size_t n, const Counter* hist,
                                int num_bins, const call_context& call) {
  require_device_readable(samples, n, call, "samples");
  require_device_readable(hist, std::size_t(num_bins), call, "hist");
}

template <class Level>
void require_even_levels(Level lower, Level upper, const char* function) {
  require(lower < upper, function, "upper", "must be greater than 'lower' (and neither NaN)");
}

// The start of every textbook histogram_even, once require_histogram_buffers and
// require_even_levels have passed: checks that the device reads the buffers, zeroes `hist`
// on the call's stream, and returns the binning the arguments describe.
template <class Sample, class Counter, class Level>
even_binning<Sample, Level> start_histogram_even(const Sample* samples, std::size_t n,
                                                 Counter* hist, int num_bins, Level lower,
                                                 Level upper, const call_context& call) {
  require_histogram_readable(samples, n, hist, num_bins, call);
  call.check(cudaMemsetAsync(hist, 0, sizeof(Counter) * std::size_t(num_bins), call.stream()),
             "cudaMemsetAsync");
  return even_binning<Sample, Level>(num_bins, lower, upper);
}

}  // namespace ppat::detail
