// Production histograms: private counters in shared memory, sized at run time.
//
//   ppat::histogram_even(samples, n, hist, num_bins, lower, upper, stream)
//   ppat::histogram_range(samples, n, hist, num_bins, levels, stream)
//   ppat::multi_histogram_even<Channels, Active>(pixels, num_pixels, hist, num_bins, lower,
//                                                upper, stream)
//   ppat::histogram_even_weighted(samples, weights, n, hist, num_bins, lower, upper, stream)
//
// Each call zeroes `hist`, then counts into it; a call that one block counts in shared
// memory writes `hist` once instead, in one launch. Every channel's bins, plus one slot per
// channel for the samples it does not count, decide where a block keeps its counters:
//   shared   32-bit counters (or the weighted counter type) fit one block's shared memory:
//            the block counts into R copies of the histogram (R a power of two up to 32, as
//            many as fit), lane l into copy l % R. A slot's copies sit side by side, so with
//            32 copies the lanes of a warp touch 32 different banks whatever the samples.
//   packed   16-bit counts fit (up to 116222 bins on an H200): two to a 32-bit word. The
//            addition that wraps a half around settles the carry in `hist` at once.
//   global   more bins than that: atomics on `hist` itself, in the L2. A warp whose samples
//            all fall in one bin adds them with one atomic.
// Thread-block clusters were measured here too and left out: atomics on another block's
// shared memory ran no faster than the L2's beyond two blocks, and two blocks of 32-bit
// counters hold fewer bins than one block of packed ones (docs/patterns.md).
//
// Samples are read in chunks of whole pixels that make whole 16-byte vectors. Pixels before
// the first 16-byte aligned one, and after the last whole chunk, are read one at a time.
// A launch gives no block more than 2^31 samples, so 32-bit shared counters never wrap, and
// 64-bit counters in `hist` count past 2^32.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/arguments.cuh"
#include "core/atomic.cuh"
#include "core/device.cuh"
#include "core/error.cuh"
#include "core/launch.cuh"
#include "core/vector_io.cuh"
#include "core/warp.cuh"
#include "histogram/binning.cuh"

namespace ppat {
namespace detail {

struct unweighted {};  // the weight type of a plain count: every sample adds one

template <int Channels, int Active, class Sample, class Weight, class Binning, class Counter>
void count_pixels(const Sample* pixels, const Weight* weights, std::size_t num_pixels,
                  const std::array<Counter*, Active>& hist,
                  const std::array<Binning, Active>& binning, const call_context& call);
template <int Channels, int Active, class Sample, class Weight, class Counter, class Level>
void count_even(const Sample* pixels, const Weight* weights, std::size_t num_pixels,
                const std::array<Counter*, Active>& hist, const std::array<int, Active>& num_bins,
                const std::array<Level, Active>& lower, const std::array<Level, Active>& upper,
                const call_context& call);

}  // namespace detail

template <class Sample, class Counter, class Level>
void histogram_even(const Sample* samples, std::size_t n, Counter* hist, int num_bins, Level lower,
                    Level upper, cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::histogram_even";
  detail::require_histogram_buffers(samples, n, hist, num_bins, function);
  detail::require_even_levels(lower, upper, function);
  const detail::call_context call(stream, function);
  detail::require_histogram_readable(samples, n, hist, num_bins, call);
  detail::count_even<1, 1>(samples, static_cast<const detail::unweighted*>(nullptr), n,
                           std::array<Counter*, 1>{hist}, std::array<int, 1>{num_bins},
                           std::array<Level, 1>{lower}, std::array<Level, 1>{upper}, call);
}

template <class Sample, class Counter, class Level>
void histogram_range(const Sample* samples, std::size_t n, Counter* hist, int num_bins,
                     const Level* levels, cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::histogram_range";
  detail::require_histogram_buffers(samples, n, hist, num_bins, function);
  const std::size_t num_levels = std::size_t(num_bins) + 1;
  detail::require_buffer(levels, num_levels, function, "levels");
  detail::require_disjoint(levels, num_levels, hist, std::size_t(num_bins), function, "levels",
                           "hist");
  const detail::call_context call(stream, function);
  detail::require_histogram_readable(samples, n, hist, num_bins, call);
  detail::require_device_readable(levels, num_levels, call, "levels");
  using binning = detail::range_binning<Sample, Level>;
  detail::count_pixels<1, 1>(samples, static_cast<const detail::unweighted*>(nullptr), n,
                             std::array<Counter*, 1>{hist},
                             std::array<binning, 1>{binning(num_bins, levels)}, call);
}

// Pixels of `Channels` interleaved samples; the first `ActiveChannels` channels are counted,
// each into its own histogram with its own bins.
template <int Channels, int ActiveChannels, class Sample, class Counter, class Level>
void multi_histogram_even(const Sample* pixels, std::size_t num_pixels,
                          std::array<Counter*, ActiveChannels> hist,
                          std::array<int, ActiveChannels> num_bins,
                          std::array<Level, ActiveChannels> lower,
                          std::array<Level, ActiveChannels> upper, cudaStream_t stream = 0) {
  static_assert(1 <= ActiveChannels && ActiveChannels <= Channels,
                "between 1 and Channels channels are counted");
  constexpr const char* function = "ppat::multi_histogram_even";
  const std::size_t samples =
      detail::checked_element_count(num_pixels, Channels, sizeof(Sample), function);
  for (int c = 0; c < ActiveChannels; ++c) {
    detail::require_histogram_buffers(pixels, samples, hist[c], num_bins[c], function);
    detail::require_even_levels(lower[c], upper[c], function);
    for (int d = 0; d < c; ++d) {
      detail::require_disjoint(hist[d], std::size_t(num_bins[d]), hist[c], std::size_t(num_bins[c]),
                               function, "hist", "hist");
    }
  }
  const detail::call_context call(stream, function);
  detail::require_device_readable(pixels, samples, call, "pixels");
  for (int c = 0; c < ActiveChannels; ++c)
    detail::require_device_readable(hist[c], std::size_t(num_bins[c]), call, "hist");
  detail::count_even<Channels, ActiveChannels>(pixels,
                                               static_cast<const detail::unweighted*>(nullptr),
                                               num_pixels, hist, num_bins, lower, upper, call);
}

// Each sample adds its weight to its bin. Weights and counters are float or double. The
// additions meet in atomics, so the last bits of a bin may differ from run to run.
template <class Sample, class Weight, class Counter, class Level>
void histogram_even_weighted(const Sample* samples, const Weight* weights, std::size_t n,
                             Counter* hist, int num_bins, Level lower, Level upper,
                             cudaStream_t stream = 0) {
  static_assert(std::is_floating_point_v<Weight> && std::is_floating_point_v<Counter>,
                "weights and weighted counters are float or double");
  constexpr const char* function = "ppat::histogram_even_weighted";
  detail::require_histogram_buffers(samples, n, hist, num_bins, function);
  detail::require_buffer(weights, n, function, "weights");
  detail::require_disjoint(weights, n, hist, std::size_t(num_bins), function, "weights", "hist");
  detail::require_even_levels(lower, upper, function);
  const detail::call_context call(stream, function);
  detail::require_histogram_readable(samples, n, hist, num_bins, call);
  detail::require_device_readable(weights, n, call, "weights");
  detail::count_even<1, 1>(samples, weights, n, std::array<Counter*, 1>{hist},
                           std::array<int, 1>{num_bins}, std::array<Level, 1>{lower},
                           std::array<Level, 1>{upper}, call);
}

namespace detail {

enum class histogram_tier { shared, packed, global };

// 1024 threads, so that one block an SM shares its copies of the histogram between the most
// threads, with 64 bytes of samples a thread in flight (docs/patterns.md, "Histogram",
// production step 1 and the steps after it). Other block sizes were not measured.
using histogram_tuning = tuning<1024, 64, 0>;
constexpr int max_copies_log2 = 5;  // 32 copies: one per lane

// The fewest whole pixels that make whole 16-byte vectors of samples, and of weights.
template <int Channels, class Sample, class Weight>
constexpr int chunk_items() {
  for (int k = Channels;; k += Channels) {
    const bool whole_samples = k * sizeof(Sample) % 16 == 0;
    const bool whole_weights = std::is_same_v<Weight, unweighted> || k * sizeof(Weight) % 16 == 0;
    if (whole_samples && whole_weights) return k;
  }
}

// Everything a histogram kernel needs, passed by value.
template <int Channels, int Active, class Sample, class Weight, class Binning, class Counter>
struct histogram_job {
  static constexpr int channels = Channels;
  static constexpr int active = Active;
  static constexpr bool weighted = !std::is_same_v<Weight, unweighted>;
  static constexpr int chunk = chunk_items<Channels, Sample, Weight>();
  static constexpr int chunks_per_step =
      std::max(1, int(histogram_tuning::bytes_per_thread / (chunk * sizeof(Sample))));
  using sample_type = Sample;
  using weight_type = Weight;
  using counter_type = Counter;
  using shared_counter = std::conditional_t<weighted, Counter, unsigned>;

  const Sample* pixels;
  const Weight* weights;
  std::size_t num_pixels;
  std::size_t head_pixels;  // read one at a time; then `chunks` chunks; then the rest
  std::size_t chunks;
  Binning binning[Active];
  Counter* hist[Active];
  // The counters of all channels in one row: channel c's bins from first_slot[c], then one
  // slot where the shared tier adds the samples it does not count, so that every sample
  // takes the same path.
  int first_slot[Active];
  int total_slots;
  int copies_log2;     // shared, packed: copies of the histogram in a block
  bool writes_totals;  // one block counts every pixel: it writes `hist`, no one clears it
};

template <histogram_tier Tier, class Job>
__global__ void histogram_kernel(const Job job);
template <class Job>
__device__ void add_packed(const Job& job, unsigned my_copy, unsigned copy_stride, int channel,
                           int bin, int slot);

template <histogram_tier Tier, class Job>
void launch_histogram(Job job, std::size_t shared_bytes, const call_context& call);
template <class Job>
void clear_histograms(const Job& job, const call_context& call);

// The first pixel from which samples (and weights) can be read as 16-byte vectors, or
// num_pixels when none can.
template <int Channels, class Sample, class Weight>
std::size_t first_aligned_pixel(const Sample* pixels, const Weight* weights,
                                std::size_t num_pixels) {
  // Pixel starts repeat their offset modulo 16 bytes within 16 pixels.
  for (std::size_t p = 0; p <= 16 && p < num_pixels; ++p) {
    const bool weights_aligned = std::is_same_v<Weight, unweighted> || aligned_to(weights + p, 16);
    if (aligned_to(pixels + p * Channels, 16) && weights_aligned) return p;
  }
  return num_pixels;
}

// Even bins: one integer wide on every channel takes unit_binning, whose bin is the offset;
// any others take even_binning.
template <int Channels, int Active, class Sample, class Weight, class Counter, class Level>
void count_even(const Sample* pixels, const Weight* weights, std::size_t num_pixels,
                const std::array<Counter*, Active>& hist, const std::array<int, Active>& num_bins,
                const std::array<Level, Active>& lower, const std::array<Level, Active>& upper,
                const call_context& call) {
  using binning = even_binning<Sample, Level>;
  std::array<binning, Active> even;
  bool unit = true;
  for (int c = 0; c < Active; ++c) {
    even[c] = binning(num_bins[c], lower[c], upper[c]);
    unit = unit && even[c].offset_is_bin();
  }
  if constexpr (binning::narrow) {
    if (unit) {
      std::array<unit_binning<Sample>, Active> offsets;
      for (int c = 0; c < Active; ++c)
        offsets[c] = unit_binning<Sample>(num_bins[c], unsigned(lower[c]));
      count_pixels<Channels, Active>(pixels, weights, num_pixels, hist, offsets, call);
      return;
    }
  }
  count_pixels<Channels, Active>(pixels, weights, num_pixels, hist, even, call);
}

template <int Channels, int Active, class Sample, class Weight, class Binning, class Counter>
void count_pixels(const Sample* pixels, const Weight* weights, std::size_t num_pixels,
                  const std::array<Counter*, Active>& hist,
                  const std::array<Binning, Active>& binning, const call_context& call) {
  using job_type = histogram_job<Channels, Active, Sample, Weight, Binning, Counter>;
  using shared_counter = typename job_type::shared_counter;
  long long total_slots = 0;
  job_type job{};
  for (int c = 0; c < Active; ++c) {
    job.binning[c] = binning[c];
    job.hist[c] = hist[c];
    job.first_slot[c] = int(std::min<long long>(total_slots, INT32_MAX));
    total_slots += binning[c].num_bins() + 1;
  }
  if (num_pixels == 0) {
    clear_histograms(job, call);
    return;
  }
  job.pixels = pixels;
  job.weights = weights;
  job.num_pixels = num_pixels;
  job.total_slots = int(std::min<long long>(total_slots, INT32_MAX));

  const long long block_bytes = call.limits().shared_bytes_per_block_optin;
  const long long counter_bytes = sizeof(shared_counter);
  if (total_slots * counter_bytes <= block_bytes) {
    int copies_log2 = 0;
    while (copies_log2 < max_copies_log2 &&
           (total_slots << (copies_log2 + 1)) * counter_bytes <= block_bytes)
      ++copies_log2;
    job.copies_log2 = copies_log2;
    const std::size_t bytes = std::size_t(total_slots << copies_log2) * counter_bytes;
    launch_histogram<histogram_tier::shared>(job, bytes, call);
    return;
  }
  if constexpr (!job_type::weighted) {
    const long long packed_words = (total_slots + 1) / 2;
    if (packed_words * 4 <= block_bytes) {
      job.copies_log2 = 0;
      launch_histogram<histogram_tier::packed>(job, std::size_t(packed_words) * 4, call);
      return;
    }
  }
  launch_histogram<histogram_tier::global>(job, 0, call);
}

// Launches as many blocks as fit on the GPU at once, each reading a block-strided share of
// the chunks. Launches split the pixels so that no block counts more than 2^31 samples into
// its 32-bit counters. Where one block counts every pixel in shared memory, it writes each
// bin of `hist` once and nothing clears `hist` first: a small call is one launch
// (docs/patterns.md, "Histogram").
template <histogram_tier Tier, class Job>
void launch_histogram(Job job, std::size_t shared_bytes, const call_context& call) {
  constexpr int threads = histogram_tuning::threads;
  constexpr auto kernel = histogram_kernel<Tier, Job>;
  allow_dynamic_shared_bytes<kernel>(call);
  const std::size_t resident = std::max<std::size_t>(
      resident_blocks<kernel>(threads, shared_bytes, call), call.limits().sm_count);
  const std::size_t launch_pixels =
      Tier == histogram_tier::global
          ? SIZE_MAX
          : resident * ((std::size_t(1) << 31) / Job::channels) / 16 * 16;

  constexpr int chunk = Job::chunk;
  constexpr int step_chunks = threads * Job::chunks_per_step;
  const auto* pixels = job.pixels;
  const auto* weights = job.weights;
  const std::size_t num_pixels = job.num_pixels;
  // Places `job` on one launch's pixels, from pixel `first`; returns the blocks they take.
  const auto place = [&](std::size_t first) -> std::size_t {
    job.num_pixels = std::min(launch_pixels, num_pixels - first);
    job.pixels = pixels + first * Job::channels;
    if constexpr (Job::weighted) job.weights = weights + first;
    job.head_pixels = first_aligned_pixel<Job::channels>(job.pixels, job.weights, job.num_pixels);
    job.chunks = (job.num_pixels - job.head_pixels) * Job::channels / chunk;
    const std::size_t loose_pixels = job.num_pixels - job.chunks * chunk / Job::channels;
    const std::size_t wanted = std::max(
        {ceil_div(job.chunks, step_chunks), ceil_div(loose_pixels, threads), std::size_t(1)});
    return std::min(wanted, resident);
  };
  job.writes_totals =
      Tier == histogram_tier::shared && num_pixels <= launch_pixels && place(0) == 1;
  if (!job.writes_totals) clear_histograms(job, call);
  for (std::size_t first = 0; first < num_pixels; first += launch_pixels) {
    const unsigned blocks = unsigned(place(first));
    kernel<<<blocks, threads, shared_bytes, call.stream()>>>(job);
    check_launch(call.function(), "histogram_kernel");
  }
}

// Zeroes every channel's counters before blocks add into them.
template <class Job>
void clear_histograms(const Job& job, const call_context& call) {
  using Counter = typename Job::counter_type;
  for (int c = 0; c < Job::active; ++c) {
    call.check(
        cudaMemsetAsync(job.hist[c], 0, sizeof(Counter) * std::size_t(job.binning[c].num_bins()),
                        call.stream()),
        "cudaMemsetAsync");
  }
}

// Adds this block's counters (all its copies) to `hist`.
template <histogram_tier Tier, class Job>
__device__ __forceinline__ void add_block_counts(const Job& job,
                                                 const typename Job::shared_counter* counters,
                                                 const unsigned* words) {
  using Counter = typename Job::counter_type;
  const int copies = 1 << job.copies_log2;
  using total = std::conditional_t<Job::weighted, Counter, unsigned long long>;
#pragma unroll
  for (int c = 0; c < Job::active; ++c) {
    for (int b = threadIdx.x; b < job.binning[c].num_bins(); b += blockDim.x) {
      const int slot = job.first_slot[c] + b;
      total sum = 0;
      // Starting at a different copy in each lane keeps the lanes on different banks.
      for (int r = 0; r < copies; ++r) {
        const int copy = (r + slot) & (copies - 1);
        if constexpr (Tier == histogram_tier::shared) {
          sum += counters[(slot << job.copies_log2) + copy];
        } else {
          sum += (words[((slot >> 1) << job.copies_log2) + copy] >> (16 * (slot & 1))) & 0xFFFF;
        }
      }
      if (job.writes_totals) {
        job.hist[c][b] = Counter(sum);
      } else if (sum != total(0)) {
        atomic_add(job.hist[c] + b, Counter(sum));
      }
    }
  }
}

template <histogram_tier Tier, class Job>
__global__ void __launch_bounds__(histogram_tuning::threads, histogram_tuning::min_blocks_per_sm)
    histogram_kernel(const Job job) {
  using Sample = typename Job::sample_type;
  using Weight = typename Job::weight_type;
  using Counter = typename Job::counter_type;
  using shared_counter = typename Job::shared_counter;
  constexpr int channels = Job::channels;
  constexpr int chunk = Job::chunk;
  constexpr int steps = Job::chunks_per_step;
  constexpr bool in_block = Tier == histogram_tier::shared || Tier == histogram_tier::packed;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto* counters = reinterpret_cast<shared_counter*>(shared_bytes);
  auto* words = reinterpret_cast<unsigned*>(shared_bytes);
  const int lane = lane_id();
  const int copies = 1 << job.copies_log2;
  // Words of shared memory this block counts in.
  const int block_words = Tier == histogram_tier::shared ? job.total_slots << job.copies_log2
                          : Tier == histogram_tier::packed
                              ? ((job.total_slots + 1) / 2) << job.copies_log2
                              : 0;

  for (int i = threadIdx.x; i < block_words; i += blockDim.x)
    counters[i] = shared_counter(0);
  if constexpr (in_block) __syncthreads();

  // Channel c's slot for `bin` among all channels' slots (bin num_bins: not counted).
  const auto slot_of = [&](int channel, int bin) {
    return Job::active == 1 ? bin : job.first_slot[channel] + bin;
  };
  // A slot's copies sit side by side, `copies` counters (or packed words) apart.
  const unsigned my_copy =
      unsigned(__cvta_generic_to_shared(counters)) + (lane & (copies - 1)) * sizeof(shared_counter);
  const unsigned copy_stride = copies * sizeof(shared_counter);
  // Where each channel's first slot of this lane's copy is: one multiply-add a sample.
  unsigned channel_copy[Job::active];
#pragma unroll
  for (int c = 0; c < Job::active; ++c)
    channel_copy[c] = my_copy + unsigned(slot_of(c, 0)) * copy_stride;
  const auto add = [&](int channel, int bin, shared_counter amount) {
    const bool counted = bin < job.binning[channel].num_bins();
    if constexpr (Tier == histogram_tier::shared) {
      shared_add(channel_copy[channel] + unsigned(bin) * copy_stride, amount);
    } else if constexpr (Tier == histogram_tier::packed) {
      if (counted) add_packed(job, my_copy, copy_stride, channel, bin, slot_of(channel, bin));
    } else {
      if (counted) atomic_add(job.hist[channel] + bin, Counter(amount));
    }
  };
  // Where counters are contended (global), every thread of the block calls this the same
  // number of times, so that a warp whose samples all fall in one bin can add them at once.
  // Counters in the block skip the samples past the end: in a small call, a block's threads
  // adding them all to one slot took longer than the samples (docs/patterns.md).
  const auto count = [&](int channel, Sample sample, shared_counter amount, bool valid) {
    const int bin = valid ? job.binning[channel](sample) : job.binning[channel].num_bins();
    if constexpr (!in_block && !Job::weighted) {
      if (__all_sync(full_warp, bin == __shfl_sync(full_warp, bin, 0))) {
        if (lane == 0) add(channel, bin, 32);
        return;
      }
    }
    add(channel, bin, amount);
  };

  // The chunks: `steps` per thread at a time, each step's loads issued before any counting.
  // Only a block's last step can run past the end; the others skip every bounds check.
  const std::size_t grid_threads = std::size_t(gridDim.x) * blockDim.x;
  const Sample* body = job.pixels + job.head_pixels * channels;
  const Weight* body_weights = Job::weighted ? job.weights + job.head_pixels : nullptr;
  constexpr int sample_words = chunk * int(sizeof(Sample)) / 4;
  constexpr int weight_words = Job::weighted ? chunk * int(sizeof(Weight)) / 4 : 4;
  const auto count_step = [&](std::size_t base, auto whole_step) {
    constexpr bool whole = decltype(whole_step)::value;
    unsigned samples[steps][sample_words];
    [[maybe_unused]] unsigned weights[steps][weight_words];
    bool valid[steps];
#pragma unroll
    for (int s = 0; s < steps; ++s) {
      const std::size_t c = base + std::size_t(s) * blockDim.x + threadIdx.x;
      valid[s] = whole || c < job.chunks;
      if (valid[s]) {
        load_words(body + c * chunk, samples[s]);
        if constexpr (Job::weighted) load_words(body_weights + c * chunk, weights[s]);
      }
    }
#pragma unroll
    for (int s = 0; s < steps; ++s) {
      if (in_block && !valid[s]) continue;
#pragma unroll
      for (int j = 0; j < chunk; ++j) {
        if (j % channels >= Job::active) continue;
        shared_counter amount = 1;
        if constexpr (Job::weighted) amount = shared_counter(item_in_words<Weight>(weights[s], j));
        count(j % channels, item_in_words<Sample>(samples[s], j), amount, valid[s]);
      }
    }
  };
  for (std::size_t base = std::size_t(blockIdx.x) * blockDim.x * steps; base < job.chunks;
       base += grid_threads * steps) {
    if (base + std::size_t(steps) * blockDim.x <= job.chunks) {
      count_step(base, std::true_type{});
    } else {
      count_step(base, std::false_type{});
    }
  }

  // The pixels read one at a time: those before the chunks, then those after.
  const std::size_t chunk_pixels = job.chunks * (chunk / channels);
  const std::size_t loose_pixels = job.num_pixels - chunk_pixels;
  for (std::size_t base = std::size_t(blockIdx.x) * blockDim.x; base < loose_pixels;
       base += grid_threads) {
    const std::size_t i = base + threadIdx.x;
    const bool valid = i < loose_pixels;
    if (in_block && !valid) break;  // the later rounds are past the end too
    const std::size_t pixel = i < job.head_pixels ? i : i + chunk_pixels;
#pragma unroll
    for (int c = 0; c < Job::active; ++c) {
      shared_counter amount = 1;
      if constexpr (Job::weighted) amount = valid ? shared_counter(job.weights[pixel]) : 0;
      count(c, valid ? job.pixels[pixel * channels + c] : Sample{}, amount, valid);
    }
  }

  if constexpr (in_block) {
    __syncthreads();
    add_block_counts<Tier>(job, counters, words);
  }
}

// Counts one sample in a packed tier: 16-bit counters, the even slot in the low half of a
// word and the odd slot in the high half. The word before the addition says whether this
// addition wrapped a half around: a low half that wraps carries one into the high half, a
// high half that wraps loses 65536. Exactly one addition sees each wrap, and it settles it
// in `hist` at once, so the halves plus `hist` always make the true counts.
template <class Job>
__device__ void add_packed(const Job& job, unsigned my_copy, unsigned copy_stride, int channel,
                           int bin, int slot) {
  using Counter = typename Job::counter_type;
  const bool high = slot & 1;
  const unsigned old =
      shared_fetch_add(my_copy + unsigned(slot >> 1) * copy_stride, high ? 0x10000u : 1u);
  const bool low_wraps = !high && (old & 0xFFFF) == 0xFFFF;
  const bool high_wraps = (old >> 16) == 0xFFFF && (high || low_wraps);
  if (low_wraps || high_wraps) {
    Counter* counts = job.hist[channel];
    const int num_bins = job.binning[channel].num_bins();
    if (low_wraps) atomic_add(counts + bin, Counter(65536));
    // The high half is the next bin, or the channel's not-counted slot, whose count is
    // never read.
    const int high_bin = high ? bin : bin + 1;
    if (high_bin < num_bins) {
      if (low_wraps) atomic_add(counts + high_bin, Counter(-1));  // the carry it received
      if (high_wraps) atomic_add(counts + high_bin, Counter(65536));
    }
  }
}

}  // namespace detail
}  // namespace ppat
