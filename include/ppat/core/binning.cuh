// The bin of a sample under histogram_even's rule, shared by every histogram kernel.
//
// Bin b covers [lower + b*w, lower + (b+1)*w) with w = (upper - lower) / num_bins.
// Integer samples with integer levels are binned exactly: ((s - lower) * num_bins) /
// (upper - lower) in an unsigned type wide enough that the product cannot overflow (64 bits
// for 32-bit operands, 128 bits once either is 64-bit). Anything else is binned in double,
// clamped so that a sample just below `upper` lands in the last bin despite rounding.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include "arguments.cuh"
#include "error.cuh"

namespace ppat::detail {

template <class Sample, class Level>
class even_binning {
  static constexpr bool exact = std::is_integral_v<Sample> && std::is_integral_v<Level>;
  static constexpr bool needs_128_bits = exact && (sizeof(Sample) == 8 || sizeof(Level) == 8);
  using signed_wide = std::conditional_t<needs_128_bits, __int128, long long>;
  using unsigned_wide = std::conditional_t<needs_128_bits, unsigned __int128, unsigned long long>;
  using arithmetic = std::conditional_t<exact, signed_wide, double>;

 public:
  // The caller has checked num_bins > 0 and lower < upper.
  even_binning(int num_bins, Level lower, Level upper)
      : num_bins_(num_bins), lower_(arithmetic(lower)), upper_(arithmetic(upper)) {}

  // The sample's bin, or -1 when it is outside [lower, upper) or NaN.
  __host__ __device__ int operator()(Sample sample) const {
    const arithmetic s = arithmetic(sample);
    if (!(s >= lower_ && s < upper_)) return -1;
    if constexpr (exact) {
      const auto offset = unsigned_wide(s - lower_);
      const auto range = unsigned_wide(upper_ - lower_);
      return int(offset * unsigned_wide(num_bins_) / range);
    } else {
      const int bin = int((s - lower_) * num_bins_ / (upper_ - lower_));
      return bin < num_bins_ ? bin : num_bins_ - 1;
    }
  }

 private:
  int num_bins_;
  arithmetic lower_;
  arithmetic upper_;
};

// The start of every histogram_even: checks the arguments, zeroes `hist` on `stream`, and
// returns the binning they describe.
template <class Sample, class Counter, class Level>
even_binning<Sample, Level> start_histogram_even(const Sample* samples, std::size_t n,
                                                 Counter* hist, int num_bins, Level lower,
                                                 Level upper, cudaStream_t stream,
                                                 const char* function) {
  require(num_bins > 0, function, "num_bins", "must be positive");
  require(lower < upper, function, "upper", "must be greater than 'lower' (and neither NaN)");
  require_buffer(samples, n, function, "samples");
  require_buffer(hist, std::size_t(num_bins), function, "hist");
  require_disjoint(samples, n, hist, std::size_t(num_bins), function, "samples", "hist");
  check_cuda(cudaMemsetAsync(hist, 0, sizeof(Counter) * std::size_t(num_bins), stream), function,
             "cudaMemsetAsync");
  return even_binning<Sample, Level>(num_bins, lower, upper);
}

}  // namespace ppat::detail
