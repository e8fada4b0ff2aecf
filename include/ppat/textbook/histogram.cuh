// Textbook histograms with even bins (histogram_even's rule, see histogram/binning.cuh).
//
//   1. histogram_even_global_atomics  every sample is one atomicAdd on the counter in
//                                     global memory. Threads that hit the same bin queue at
//                                     the L2: fine for many bins and spread data, a crawl
//                                     when the data piles into a few bins.
//   2. histogram_even_shared_atomics  each block counts into a private histogram in shared
//                                     memory, then adds its non-zero counters to the result:
//                                     contention stays inside the block and global atomics
//                                     drop to one per bin per block. Bins beyond what one
//                                     block's shared memory holds are counted in windows,
//                                     one grid row per window.
//
// Both zero `hist`, then count. Samples outside [lower, upper), and NaN, are not counted.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "../core/atomic.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../histogram/binning.cuh"

namespace ppat::textbook {
namespace detail {

// The kernels, defined below.
template <class Sample, class Counter, class Binning>
__global__ void histogram_global_atomics_kernel(const Sample* samples, std::size_t n, Counter* hist,
                                                Binning bin_of);
template <class Sample, class Counter, class Binning>
__global__ void histogram_shared_atomics_kernel(const Sample* samples, std::size_t n, Counter* hist,
                                                int num_bins, int window_bins, Binning bin_of);

constexpr int histogram_threads = 256;

}  // namespace detail

template <class Sample, class Counter, class Level>
void histogram_even_global_atomics(const Sample* samples, std::size_t n, Counter* hist,
                                   int num_bins, Level lower, Level upper,
                                   cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::textbook::histogram_even_global_atomics";
  ppat::detail::require_histogram_buffers(samples, n, hist, num_bins, function);
  ppat::detail::require_even_levels(lower, upper, function);
  const ppat::detail::call_context call(stream, function);
  const auto bin_of =
      ppat::detail::start_histogram_even(samples, n, hist, num_bins, lower, upper, call);
  if (n == 0) return;
  const auto& limits = call.limits();
  const unsigned blocks = ppat::detail::grid_stride_blocks(n, detail::histogram_threads, limits,
                                                           /*blocks_per_sm=*/8);
  detail::histogram_global_atomics_kernel<<<blocks, detail::histogram_threads, 0, call.stream()>>>(
      samples, n, hist, bin_of);
  ppat::detail::check_launch(function, "histogram_global_atomics_kernel");
}

template <class Sample, class Counter, class Level>
void histogram_even_shared_atomics(const Sample* samples, std::size_t n, Counter* hist,
                                   int num_bins, Level lower, Level upper,
                                   cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::textbook::histogram_even_shared_atomics";
  ppat::detail::require_histogram_buffers(samples, n, hist, num_bins, function);
  ppat::detail::require_even_levels(lower, upper, function);
  const ppat::detail::call_context call(stream, function);
  const auto bin_of =
      ppat::detail::start_histogram_even(samples, n, hist, num_bins, lower, upper, call);
  if (n == 0) return;
  const auto& limits = call.limits();
  const int window_bins =
      std::min<int>(num_bins, int(limits.shared_bytes_per_block_optin / sizeof(Counter)));
  const std::size_t shared_bytes = std::size_t(window_bins) * sizeof(Counter);
  using binning = std::remove_const_t<decltype(bin_of)>;
  constexpr auto kernel = detail::histogram_shared_atomics_kernel<Sample, Counter, binning>;
  ppat::detail::allow_dynamic_shared_bytes<kernel>(call);

  // As many resident blocks per SM as shared memory allows (1 KB a block is the system's).
  const int per_sm = int(limits.shared_bytes_per_sm / (shared_bytes + 1024));
  const unsigned blocks = ppat::detail::grid_stride_blocks(n, detail::histogram_threads, limits,
                                                           std::clamp(per_sm, 1, 8));
  const std::size_t windows = ppat::detail::ceil_div(std::size_t(num_bins), window_bins);
  const dim3 grid(blocks, unsigned(std::min<std::size_t>(windows, 65535)));
  kernel<<<grid, detail::histogram_threads, shared_bytes, call.stream()>>>(
      samples, n, hist, num_bins, window_bins, bin_of);
  ppat::detail::check_launch(function, "histogram_shared_atomics_kernel");
}

namespace detail {

template <class Sample, class Counter, class Binning>
__global__ void histogram_global_atomics_kernel(const Sample* samples, std::size_t n, Counter* hist,
                                                Binning bin_of) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int bin = bin_of(samples[i]);
    if (bin < bin_of.num_bins()) ppat::detail::atomic_add(&hist[bin], Counter(1));
  }
}

// Grid rows take turns at the windows of `window_bins` bins; each block of a row reads its
// grid-stride share of the samples and counts those that fall in the row's window.
template <class Sample, class Counter, class Binning>
__global__ void histogram_shared_atomics_kernel(const Sample* samples, std::size_t n, Counter* hist,
                                                int num_bins, int window_bins, Binning bin_of) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  Counter* local = reinterpret_cast<Counter*>(shared_bytes);
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;

  for (long long first = (long long)blockIdx.y * window_bins; first < num_bins;
       first += (long long)gridDim.y * window_bins) {
    const int bins = int(min((long long)window_bins, num_bins - first));
    for (int b = threadIdx.x; b < bins; b += blockDim.x)
      local[b] = Counter(0);
    __syncthreads();

    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
      // Negative before the window; num_bins (not counted) is past every window.
      const long long in_window = bin_of(samples[i]) - first;
      if (in_window >= 0 && in_window < bins) {
        ppat::detail::atomic_add(&local[in_window], Counter(1));
      }
    }
    __syncthreads();

    for (int b = threadIdx.x; b < bins; b += blockDim.x) {
      if (local[b] != Counter(0)) ppat::detail::atomic_add(&hist[first + b], local[b]);
    }
    __syncthreads();  // the next window reuses `local`
  }
}

}  // namespace detail
}  // namespace ppat::textbook
