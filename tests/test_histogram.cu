// Histograms against the host reference: every rung of histogram_even (textbook and
// production) on sample and counter types, bin counts from 1 to 2^20, uniform, single-bin,
// skewed and out-of-range data, NaN and infinities, guard words around `hist`; then the
// production kernel's own cases: each way it holds counters (shared copies, packed 16-bit,
// global), unaligned and odd-sized inputs, more than 2^32 samples, histogram_range,
// multi_histogram_even, histogram_even_weighted, streams and graph capture, bad arguments.
// Suites: `histogram_even_rungs` runs every rung through the same checks; `histogram_even`
// holds what only the production kernel promises.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::device_buffer;

enum class rung { global_atomics, shared_atomics, production };
constexpr rung rungs[] = {rung::global_atomics, rung::shared_atomics, rung::production};
const char* name(rung r) {
  return r == rung::global_atomics   ? "global_atomics"
         : r == rung::shared_atomics ? "shared_atomics"
                                     : "production";
}

template <class Sample, class Counter, class Level>
void run_histogram(rung r, const Sample* samples, std::size_t n, Counter* hist, int num_bins,
                   Level lower, Level upper) {
  if (r == rung::global_atomics) {
    ppat::textbook::histogram_even_global_atomics(samples, n, hist, num_bins, lower, upper);
  } else if (r == rung::shared_atomics) {
    ppat::textbook::histogram_even_shared_atomics(samples, n, hist, num_bins, lower, upper);
  } else {
    ppat::histogram_even(samples, n, hist, num_bins, lower, upper);
  }
}

// Checks every bin of `hist` against `expected`, and the guard words around it.
template <class Counter>
void expect_histogram(const device_buffer<Counter>& hist, const std::vector<Counter>& expected) {
  ppat_test::expect_no_cuda_error();
  EXPECT_EQ(ppat_test::first_mismatch(hist.download(), expected), -1) << "first wrong bin";
  EXPECT_TRUE(hist.guards_intact()) << "write outside hist";
}

constexpr std::size_t hist_guard = 256;

// Counts `samples` with the given rungs (all by default).
template <class Counter, class Sample, class Level>
void check_histogram(const std::vector<Sample>& samples, int num_bins, Level lower, Level upper,
                     const std::string& what,
                     const std::vector<rung>& which = {std::begin(rungs), std::end(rungs)}) {
  if (ppat_test::over_item_budget(samples.size())) return;
  const auto expected = ppat_reference::histogram_even<Counter>(samples, num_bins, lower, upper);
  device_buffer<Sample> input(samples);
  for (rung r : which) {
    SCOPED_TRACE(std::string(name(r)) + " " + what + " n=" + std::to_string(samples.size()) +
                 " bins=" + std::to_string(num_bins));
    device_buffer<Counter> hist(num_bins, hist_guard);
    hist.poison();
    run_histogram(r, input.data(), samples.size(), hist.data(), num_bins, lower, upper);
    expect_histogram(hist, expected);
  }
}

// Samples drawn in [low, high]: with a range wider than [lower, upper), some fall outside.
template <class Sample>
std::vector<Sample> uniform(std::size_t n, long long low, long long high) {
  return ppat_test::random_integers<Sample>(n, low, high);
}

const std::size_t sizes[] = {1, 255, 256, 257, 4096, 65537, 1000003};

TEST(histogram_even_rungs, u8_256_bins_every_size) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : sizes) {
    check_histogram<std::uint32_t>(uniform<std::uint8_t>(n, 0, 255), 256, 0, 256, "u8 full");
  }
}

TEST(histogram_even_rungs, small_types_and_negative_samples) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 100003;
  check_histogram<int>(uniform<std::int8_t>(n, -128, 127), 7, -100, 100, "i8 7 bins");
  check_histogram<std::uint32_t>(uniform<std::int16_t>(n, -32768, 32767), 255, -1000, 30000,
                                 "i16 255 bins");
  check_histogram<unsigned long long>(uniform<std::uint16_t>(n, 0, 65535), 65536, 0, 65536,
                                      "u16 65536 bins");
  check_histogram<std::uint32_t>(uniform<std::uint8_t>(n, 0, 255), 257, 3, 250,
                                 "u8 more bins than values");
}

TEST(histogram_even_rungs, i32_and_u32_bin_counts) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 200003;
  for (int bins : {1, 7, 255, 256, 257, 1024, 65536, 1 << 20}) {
    check_histogram<std::uint32_t>(uniform<int>(n, -5000, 3 * bins + 5000), bins, -3, 3 * bins,
                                   "i32 uniform");
  }
  check_histogram<int>(uniform<std::uint32_t>(n, 0, 0xFFFFFFFFll), 1000, 0u, 0xFFFFFFFFu,
                       "u32 full range");
  check_histogram<std::uint64_t>(
      uniform<int>(n, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()), 4099,
      std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), "i32 extreme levels");
}

TEST(histogram_even_rungs, skewed_single_bin_and_out_of_range) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 200000;
  check_histogram<std::uint32_t>(std::vector<int>(n, 517), 1024, 0, 1024, "all in one bin");
  check_histogram<std::uint32_t>(uniform<int>(n, 1024, 100000), 1024, 0, 1024, "all above");
  check_histogram<std::uint32_t>(uniform<int>(n, -100000, -1), 1024, 0, 1024, "all below");
  // Zipf-like: bin k drawn with weight 1/(k+1).
  std::vector<double> weights(1024);
  for (int k = 0; k < 1024; ++k)
    weights[k] = 1.0 / (k + 1);
  std::discrete_distribution<int> zipf(weights.begin(), weights.end());
  std::vector<int> skewed(n);
  for (auto& s : skewed)
    s = zipf(ppat_test::rng());
  check_histogram<std::uint32_t>(skewed, 1024, 0, 1024, "zipf");
}

// Floating samples: bins computed in double; NaN and infinities never counted; a sample
// just below `upper` lands in the last bin.
TEST(histogram_even_rungs, floating_samples_with_nan_and_infinities) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 200003;
  std::uniform_real_distribution<double> pick(-0.5, 1.5);
  std::vector<float> floats(n);
  std::vector<double> doubles(n);
  for (std::size_t i = 0; i < n; ++i) {
    floats[i] = float(pick(ppat_test::rng()));
    doubles[i] = pick(ppat_test::rng());
  }
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::nextafter(1.0f, 0.0f),
                            0.0f,
                            1.0f};
  for (std::size_t i = 0; i < n; i += 97) {
    floats[i] = specials[(i / 97) % 6];
    doubles[i] = double(specials[(i / 97) % 6]);
  }
  for (int bins : {1, 256, 257}) {
    check_histogram<std::uint32_t>(floats, bins, 0.0f, 1.0f, "f32");
    check_histogram<unsigned long long>(doubles, bins, 0.0, 1.0, "f64");
  }
  check_histogram<int>(floats, 255, -0.25, 1.25, "f32 with double levels");
}

TEST(histogram_even_rungs, empty_input_zeroes_hist) {
  PPAT_REQUIRE_GPU();
  check_histogram<std::uint32_t>(std::vector<int>{}, 300, 0, 300, "empty");
}

// More than 2^28 samples.
TEST(histogram_even_rungs, huge_u8_above_2_pow_28) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 28) + 4099;
  check_histogram<std::uint32_t>(uniform<std::uint8_t>(n, 0, 255), 256, 0, 256, "u8 full");
}

// A CUDA failure surfaces as ppat::cuda_error naming the ppat function, and leaves no
// error pending. The legacy default stream cannot be used while a blocking stream of its
// device is being captured: the call's first question about the stream fails.
TEST(histogram_even_rungs, cuda_failure_names_the_function) {
  PPAT_REQUIRE_GPU();
  device_buffer<int> samples(std::vector<int>(16, 1));
  device_buffer<std::uint32_t> hist(8);
  cudaStream_t blocking;
  PPAT_CUDA_OK(cudaStreamCreate(&blocking));
  for (rung r : rungs) {
    const std::string function = r == rung::production
                                     ? std::string("ppat::histogram_even")
                                     : std::string("ppat::textbook::histogram_even_") + name(r);
    PPAT_CUDA_OK(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal));
    try {
      run_histogram(r, samples.data(), 16, hist.data(), 8, 0, 8);
      ADD_FAILURE() << "no exception from " << function;
    } catch (const ppat::cuda_error& e) {
      EXPECT_EQ(e.code(), cudaErrorStreamCaptureImplicit) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(function + ":", 0), 0u) << e.what();
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    cudaGraph_t graph = nullptr;
    PPAT_CUDA_OK(cudaStreamEndCapture(blocking, &graph));
    PPAT_CUDA_OK(cudaGraphDestroy(graph));
  }
  PPAT_CUDA_OK(cudaStreamDestroy(blocking));
  ppat_test::expect_no_cuda_error();
}

TEST(histogram_even_rungs_arguments, bad_arguments_are_rejected) {
  int* fake = reinterpret_cast<int*>(std::uintptr_t{1} << 20);  // never dereferenced
  auto* counts = reinterpret_cast<std::uint32_t*>(std::uintptr_t{1} << 30);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (rung r : rungs) {
    EXPECT_THROW(run_histogram(r, fake, 10, counts, 0, 0, 10), std::invalid_argument);
    EXPECT_THROW(run_histogram(r, fake, 10, counts, -4, 0, 10), std::invalid_argument);
    EXPECT_THROW(run_histogram(r, fake, 10, counts, 4, 10, 10), std::invalid_argument);
    EXPECT_THROW(run_histogram(r, fake, 10, counts, 4, 11, 10), std::invalid_argument);
    EXPECT_THROW(run_histogram(r, fake, 10, counts, 4, nan, 1.0f), std::invalid_argument);
    EXPECT_THROW(run_histogram(r, fake, 10, counts, 4, 0.0f, nan), std::invalid_argument);
    EXPECT_THROW(run_histogram<int>(r, nullptr, 10, counts, 4, 0, 10), std::invalid_argument);
    EXPECT_THROW((run_histogram<int, std::uint32_t>(r, fake, 10, nullptr, 4, 0, 10)),
                 std::invalid_argument);
    EXPECT_THROW(run_histogram(r, fake, 10, reinterpret_cast<std::uint32_t*>(fake + 5), 4, 0, 10),
                 std::invalid_argument);
  }
}

// ---- The production kernel's own cases ----

const std::vector<rung> production_only = {rung::production};

// Samples spread over [0, bins): uniform, all in one bin, and Zipf-like (bin k with weight
// 1 / (k + 1)), with some outside on both sides.
std::vector<int> spread_over(int bins, std::size_t n, const std::string& distribution) {
  if (distribution == "one bin") return std::vector<int>(n, bins / 3);
  if (distribution == "uniform") return uniform<int>(n, -100, bins + 100);
  std::vector<double> weights(std::min(bins, 1 << 16));
  for (std::size_t k = 0; k < weights.size(); ++k)
    weights[k] = 1.0 / double(k + 1);
  std::discrete_distribution<int> zipf(weights.begin(), weights.end());
  std::vector<int> samples(n);
  for (auto& s : samples)
    s = zipf(ppat_test::rng()) * (bins / int(weights.size()));
  return samples;
}

// Bin counts on both sides of each change in how counters are held on an H200 (232448 bytes
// of shared memory a block; one slot per bin and one for samples not counted): 32 copies of
// 32-bit counters up to 1815 bins, fewer copies up to 58111, 16-bit counters up to 116222,
// global atomics above.
TEST(histogram_even, every_way_of_holding_counters) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 300007;
  for (int bins : {1815, 1816, 4096, 58111, 58112, 65536, 116222, 116223, 262144}) {
    for (const char* distribution : {"uniform", "one bin", "zipf"}) {
      const auto samples = spread_over(bins, n, distribution);
      check_histogram<std::uint32_t>(samples, bins, 0, bins, distribution, production_only);
    }
  }
  // Ranges that are not the bin count take the corrected estimate of the quotient.
  check_histogram<int>(uniform<int>(n, -70000, 70000), 58113, -65536, 65537, "i32 odd range",
                       production_only);
  check_histogram<unsigned long long>(uniform<int>(n, -70000, 70000), 300001, -65536, 65537,
                                      "i32 odd range, global", production_only);
}

// A call that one block counts writes every bin itself, where nothing cleared `hist`: bins no
// sample falls in must read zero through the poison. Sizes on both sides of one block (1024
// threads, 64 bytes each: 65536 u8 samples, 16384 i32), from an aligned pointer and one
// sample on.
TEST(histogram_even, one_block_calls_write_every_bin) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n :
       {std::size_t{1}, std::size_t{1000}, std::size_t{65536}, std::size_t{65553}}) {
    check_histogram<std::uint32_t>(uniform<std::uint8_t>(n, 0, 20), 256, 0, 256, "u8 low bins",
                                   production_only);
    check_histogram<unsigned long long>(uniform<std::uint8_t>(n + 1, 200, 255), 256, 0, 256,
                                        "u8 high bins", production_only);
  }
  for (std::size_t n : {std::size_t{16384}, std::size_t{16388}})
    check_histogram<int>(uniform<int>(n, -5, 300), 1024, 0, 1024, "i32 low bins", production_only);
}

// 16-bit counters wrap many times: two hot bins sharing one 32-bit word (the low half's
// carries land in a high half that wraps too), a hot bin alone in a high half, and a hot
// last bin whose high half is the not-counted slot; the rest spread thin.
TEST(histogram_even, packed_counters_wrap) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = std::size_t{1} << 26;
  if (ppat_test::over_item_budget(n)) return;
  const int bins = 60001;  // odd: the last bin is a low half
  const auto picks = uniform<int>(n, 0, 9);
  auto samples = uniform<int>(n, -5, bins + 5);
  const int hot[] = {1000, 1001, 4321, bins - 1};
  for (std::size_t i = 0; i < n; ++i) {
    if (picks[i] < 8) samples[i] = hot[picks[i] / 2];
  }
  check_histogram<std::uint32_t>(samples, bins, 0, bins, "hot bins", production_only);
  check_histogram<unsigned long long>(samples, bins, 0, bins, "hot bins", production_only);
}

// Every count from 1 to 40 and a large prime, each from every offset within 16 bytes of
// alignment: pixels before the first aligned one, whole chunks, and pixels after them.
template <class Sample, class Counter>
void check_sizes_and_offsets(int bins, long long low, long long high) {
  const int offsets = 16 / int(sizeof(Sample));
  std::vector<std::size_t> counts;
  for (std::size_t n = 1; n <= 40; ++n)
    counts.push_back(n);
  counts.push_back(1000003);
  for (std::size_t n : counts) {
    if (ppat_test::over_item_budget(n)) continue;
    const auto samples = uniform<Sample>(n + offsets, low, high);
    device_buffer<Sample> input(samples);
    for (int offset = 0; offset < offsets; ++offset) {
      SCOPED_TRACE("n=" + std::to_string(n) + " offset=" + std::to_string(offset));
      const std::vector<Sample> window(samples.begin() + offset, samples.begin() + offset + n);
      const auto expected = ppat_reference::histogram_even<Counter>(window, bins, 3, 250);
      device_buffer<Counter> hist(bins, hist_guard);
      hist.poison();
      ppat::histogram_even(input.data() + offset, n, hist.data(), bins, 3, 250);
      expect_histogram(hist, expected);
    }
  }
}

TEST(histogram_even, every_size_and_alignment) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_sizes_and_offsets<std::uint8_t, std::uint32_t>(256, 0, 255);
  check_sizes_and_offsets<std::int16_t, int>(100, -10, 300);
  check_sizes_and_offsets<int, unsigned long long>(7, 0, 260);
  check_sizes_and_offsets<double, std::uint32_t>(1000, -1, 260);
}

// More than 2^32 samples into 64-bit counters; the reference counts byte values first.
TEST(histogram_even, huge_u8_above_2_pow_32_with_64_bit_counters) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 32) + 4099;
  if (ppat_test::over_item_budget(n)) return;
  std::vector<std::uint8_t> samples(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t bits = ppat_test::rng()();
    std::memcpy(samples.data() + i, &bits, std::min<std::size_t>(8, n - i));
  }
  std::vector<std::uint64_t> per_value(256, 0);
  for (const std::uint8_t s : samples)
    ++per_value[s];
  const int bins = 255;  // not the range: every sample takes the corrected estimate
  std::vector<std::uint64_t> expected(bins, 0);
  for (int v = 0; v < 256; ++v) {
    const long long bin = ppat_reference::even_bin(std::uint8_t(v), bins, 0, 256);
    if (bin >= 0) expected[bin] += per_value[v];
  }
  device_buffer<std::uint8_t> input(samples);
  device_buffer<std::uint64_t> hist(bins, hist_guard);
  hist.poison();
  ppat::histogram_even(input.data(), n, hist.data(), bins, 0, 256);
  expect_histogram(hist, expected);
}

// Strictly ascending levels with random gaps, starting at `first`.
template <class Level>
std::vector<Level> random_levels(int bins, Level first, long long max_gap) {
  const auto gaps = ppat_test::random_integers<long long>(bins, 1, max_gap);
  std::vector<Level> levels(bins + 1);
  levels[0] = first;
  for (int b = 0; b < bins; ++b)
    levels[b + 1] = Level(levels[b] + Level(gaps[b]));
  return levels;
}

template <class Counter, class Sample, class Level>
void check_range(const std::vector<Sample>& samples, const std::vector<Level>& levels,
                 const std::string& what) {
  if (ppat_test::over_item_budget(samples.size())) return;
  const int bins = int(levels.size()) - 1;
  SCOPED_TRACE(what + " bins=" + std::to_string(bins));
  device_buffer<Sample> input(samples);
  device_buffer<Level> device_levels(levels);
  device_buffer<Counter> hist(bins, hist_guard);
  hist.poison();
  ppat::histogram_range(input.data(), samples.size(), hist.data(), bins, device_levels.data());
  expect_histogram(hist, ppat_reference::histogram_range<Counter>(samples, levels));
}

TEST(histogram_range, uneven_levels) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 200003;
  for (int bins : {1, 7, 300, 4096, 65536, 300000}) {
    const auto levels = random_levels<int>(bins, -1000, 20);
    const auto samples = uniform<int>(n, -1100, levels.back() + 100);
    check_range<std::uint32_t>(samples, levels, "i32");
  }
  check_range<unsigned long long>(uniform<std::uint8_t>(n, 0, 255), random_levels<int>(40, 2, 6),
                                  "u8 samples, i32 levels");
  // Floats: NaN and infinities are never counted; the levels themselves are.
  auto levels = random_levels<float>(1000, -3.0f, 5);
  for (auto& level : levels)
    level /= 4;
  std::uniform_real_distribution<float> pick(-1.0f, levels.back() + 1.0f);
  std::vector<float> samples(n);
  for (std::size_t i = 0; i < n; ++i)
    samples[i] = i % 5 == 0 ? levels[i % levels.size()] : pick(ppat_test::rng());
  samples[1] = std::numeric_limits<float>::quiet_NaN();
  samples[2] = std::numeric_limits<float>::infinity();
  samples[3] = -std::numeric_limits<float>::infinity();
  samples[4] = levels.back();
  check_range<int>(samples, levels, "f32");
}

// Interleaved pixels of `Channels` samples, the first `Active` counted, each channel into
// its own bins; from a pixel-aligned pointer, one pixel on, and one byte on (no pixel is
// 16-byte aligned then when Channels * sizeof(Sample) is even).
template <int Channels, int Active, class Sample, class Counter, class Level>
void check_multi(std::size_t num_pixels, long long low, long long high,
                 const std::array<int, Active>& bins, const std::array<Level, Active>& lower,
                 const std::array<Level, Active>& upper, const std::string& what) {
  if (ppat_test::over_item_budget(num_pixels * Channels)) return;
  const auto pixels = uniform<Sample>((num_pixels + 1) * Channels + 1, low, high);
  device_buffer<Sample> input(pixels);
  for (std::size_t offset : {std::size_t{0}, std::size_t{Channels}, std::size_t{1}}) {
    SCOPED_TRACE(what + " pixels=" + std::to_string(num_pixels) +
                 " offset=" + std::to_string(offset) + " samples");
    const std::vector<Sample> window(pixels.begin() + offset,
                                     pixels.begin() + offset + num_pixels * Channels);
    std::vector<std::unique_ptr<device_buffer<Counter>>> hist;
    std::array<Counter*, Active> hist_pointers;
    for (int c = 0; c < Active; ++c) {
      hist.push_back(std::make_unique<device_buffer<Counter>>(bins[c], hist_guard));
      hist[c]->poison();
      hist_pointers[c] = hist[c]->data();
    }
    ppat::multi_histogram_even<Channels, Active>(input.data() + offset, num_pixels, hist_pointers,
                                                 bins, lower, upper);
    for (int c = 0; c < Active; ++c) {
      SCOPED_TRACE("channel " + std::to_string(c));
      expect_histogram(*hist[c], ppat_reference::channel_histogram_even<Counter>(
                                     window, Channels, c, bins[c], lower[c], upper[c]));
    }
  }
}

TEST(multi_histogram_even, channels) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  // 16384 pixels of 4 u8 samples (and of 3) are one block's; 16401 two; 4097 of 4 f32, two.
  for (std::size_t pixels : {std::size_t{1}, std::size_t{37}, std::size_t{4097}, std::size_t{16384},
                             std::size_t{16401}, std::size_t{1000003}}) {
    check_multi<4, 3, std::uint8_t, std::uint32_t, int>(pixels, 0, 255, {256, 7, 100}, {0, 10, 0},
                                                        {256, 200, 256}, "RGBA u8");
    check_multi<3, 3, std::uint8_t, int, int>(pixels, 0, 255, {256, 256, 16}, {0, 0, 0},
                                              {256, 256, 256}, "RGB u8");
    check_multi<4, 4, float, unsigned long long, float>(pixels, -2, 3, {1, 256, 1000, 3},
                                                        {0.0f, -1.0f, 0.5f, -2.0f},
                                                        {1.0f, 2.0f, 2.5f, 3.0f}, "RGBA f32");
    // 80000 bins in all: packed counters, one channel's slots after the other's (the first
    // channel's not-counted slot shares a word with the second's first bin); then more bins
    // than a block holds.
    check_multi<2, 2, int, std::uint32_t, int>(pixels, -10, 80010, {40000, 40000}, {0, 0},
                                               {40000, 80000}, "i32 pairs");
    check_multi<2, 2, std::uint16_t, std::uint32_t, int>(pixels, 0, 65535, {1 << 18, 70000}, {0, 0},
                                                         {65536, 70000}, "u16 pairs");
  }
}

// Weights that are multiples of 1/4 below 4 give sums that every order of addition forms
// exactly (in float up to 2^22 of them), so the counts compare bit for bit.
template <class Weight>
std::vector<Weight> quarter_weights(std::size_t n) {
  const auto quarters = ppat_test::random_integers<int>(n, 0, 15);
  std::vector<Weight> weights(n);
  for (std::size_t i = 0; i < n; ++i)
    weights[i] = Weight(quarters[i]) / 4;
  return weights;
}

template <class Counter, class Sample, class Weight, class Level>
void check_weighted(const std::vector<Sample>& samples, const std::vector<Weight>& weights,
                    std::size_t weight_offset, int bins, Level lower, Level upper, double tolerance,
                    const std::string& what) {
  if (ppat_test::over_item_budget(samples.size())) return;
  SCOPED_TRACE(what + " n=" + std::to_string(samples.size()) + " bins=" + std::to_string(bins) +
               " weight offset=" + std::to_string(weight_offset));
  std::vector<Weight> shifted(weight_offset, Weight(0));
  shifted.insert(shifted.end(), weights.begin(), weights.end());
  device_buffer<Sample> input(samples);
  device_buffer<Weight> input_weights(shifted);
  device_buffer<Counter> hist(bins, hist_guard);
  hist.poison();
  ppat::histogram_even_weighted(input.data(), input_weights.data() + weight_offset, samples.size(),
                                hist.data(), bins, lower, upper);
  ppat_test::expect_no_cuda_error();
  const auto expected =
      ppat_reference::histogram_even_weighted(samples, weights, bins, lower, upper);
  std::vector<long double> magnitude(bins, 0.0L);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const long long bin = ppat_reference::even_bin(samples[i], bins, lower, upper);
    if (bin >= 0) magnitude[bin] += std::fabs(weights[i]);
  }
  const auto actual = hist.download();
  long long first_wrong = -1;
  for (int b = 0; b < bins && first_wrong < 0; ++b) {
    const long double error = std::fabs((long double)actual[b] - expected[b]);
    if (!(error <= tolerance * magnitude[b])) first_wrong = b;  // NaN from the poison fails
  }
  EXPECT_EQ(first_wrong, -1) << "first wrong bin";
  EXPECT_TRUE(hist.guards_intact()) << "write outside hist";
}

TEST(histogram_even_weighted, exact_and_rounded_sums) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  // One block's calls (up to 65536 u8 samples) write every bin, those no sample reaches too.
  for (std::size_t n : {std::size_t{1}, std::size_t{999}, std::size_t{65536}, std::size_t{65553}}) {
    check_weighted<double>(uniform<std::uint8_t>(n, 0, 99), quarter_weights<float>(n), 1, 256, 0,
                           256, 0.0, "u8 low bins, float weights, double counters");
  }
  const std::size_t n = 1000003;
  const auto bytes = uniform<std::uint8_t>(n, 0, 255);
  for (std::size_t offset : {0, 1}) {  // weights 16-byte aligned with the samples, or not
    for (int bins : {1, 256, 4096, 100000, 300000}) {
      check_weighted<double>(bytes, quarter_weights<float>(n), offset, bins, 0, 256, 0.0,
                             "u8, float weights, double counters");
    }
    check_weighted<float>(bytes, quarter_weights<float>(n), offset, 255, 0, 256, 0.0,
                          "u8, float weights, float counters");
  }
  // Any real weights: a bin is within a few float roundings of its exact sum, while a
  // missing or doubled weight (about 1/4 of a bin's magnitude per thousand samples) is not.
  std::uniform_real_distribution<double> pick(-1.0, 1.0);
  std::vector<double> real_weights(n);
  for (auto& w : real_weights)
    w = pick(ppat_test::rng());
  std::vector<float> floats(n);
  for (auto& f : floats)
    f = float(pick(ppat_test::rng()));
  floats[7] = std::numeric_limits<float>::quiet_NaN();
  check_weighted<double>(floats, real_weights, 0, 1000, -1.0f, 1.0f, 1e-12, "f32, double weights");
  check_weighted<float>(floats, real_weights, 1, 256, -1.0f, 1.0f, 1e-5, "f32, double weights");
}

// On a non-default stream, and captured into a graph that is launched twice: the second
// launch zeroes `hist` again before counting.
TEST(histogram_even, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 500009;
  const auto samples = spread_over(65536, n, "zipf");
  const auto expected = ppat_reference::histogram_even<std::uint32_t>(samples, 65536, 0, 65536);
  device_buffer<int> input(samples);
  device_buffer<std::uint32_t> hist(65536, hist_guard);
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  hist.poison();
  ppat::histogram_even(input.data(), n, hist.data(), 65536, 0, 65536, stream);
  PPAT_CUDA_OK(cudaStreamSynchronize(stream));
  expect_histogram(hist, expected);

  ppat_test::capture_and_replay(
      stream, [&] { ppat::histogram_even(input.data(), n, hist.data(), 65536, 0, 65536, stream); },
      [&](int) { hist.poison(); }, [&](int) { expect_histogram(hist, expected); },
      cudaStreamCaptureModeThreadLocal);
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
}

TEST(histogram_arguments, range_multi_and_weighted_reject_bad_arguments) {
  int* fake = reinterpret_cast<int*>(std::uintptr_t{1} << 20);  // never dereferenced
  auto* counts = reinterpret_cast<std::uint32_t*>(std::uintptr_t{1} << 30);
  auto* levels = reinterpret_cast<int*>(std::uintptr_t{1} << 34);
  auto* sums = reinterpret_cast<double*>(std::uintptr_t{1} << 36);
  auto* weights = reinterpret_cast<float*>(std::uintptr_t{1} << 38);
  using std::invalid_argument;
  EXPECT_THROW(ppat::histogram_range(fake, 10, counts, 0, levels), invalid_argument);
  EXPECT_THROW(ppat::histogram_range(fake, 10, counts, 4, static_cast<const int*>(nullptr)),
               invalid_argument);
  EXPECT_THROW(ppat::histogram_range(fake, 10, counts, 4, reinterpret_cast<int*>(counts) + 2),
               invalid_argument);
  EXPECT_THROW((ppat::histogram_range<int, std::uint32_t>(nullptr, 10, counts, 4, levels)),
               invalid_argument);

  using pair = std::array<int, 2>;
  const std::array<std::uint32_t*, 2> two{counts, counts + 1000};
  const pair eight{8, 8}, zero{0, 0};
  EXPECT_THROW((ppat::multi_histogram_even<4, 2>(fake, 10, two, pair{8, 0}, zero, eight)),
               invalid_argument);
  EXPECT_THROW((ppat::multi_histogram_even<4, 2>(fake, 10, two, eight, pair{0, 9}, eight)),
               invalid_argument);
  const std::array<std::uint32_t*, 2> overlapping{counts, counts + 4};
  EXPECT_THROW((ppat::multi_histogram_even<4, 2>(fake, 10, overlapping, eight, zero, eight)),
               invalid_argument);
  const std::array<std::uint32_t*, 2> missing{counts, nullptr};
  EXPECT_THROW((ppat::multi_histogram_even<4, 2>(fake, 10, missing, eight, zero, eight)),
               invalid_argument);
  EXPECT_THROW(
      (ppat::multi_histogram_even<4, 2>(fake, std::size_t{1} << 62, two, eight, zero, eight)),
      invalid_argument);

  EXPECT_THROW(ppat::histogram_even_weighted(fake, static_cast<float*>(nullptr), 10, sums, 4, 0, 8),
               invalid_argument);
  EXPECT_THROW(ppat::histogram_even_weighted(fake, weights, 10, sums, 4, 8, 8), invalid_argument);
  EXPECT_THROW(
      ppat::histogram_even_weighted(fake, reinterpret_cast<float*>(sums), 10, sums, 4, 0, 8),
      invalid_argument);
  EXPECT_THROW(ppat::histogram_even_weighted(fake, weights, 10, sums, -1, 0, 8), invalid_argument);
}

}  // namespace
