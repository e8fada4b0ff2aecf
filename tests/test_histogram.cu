// Histogram rungs against the host reference: sample and counter types, bin counts from 1
// to 2^20, uniform, single-bin, skewed and out-of-range data, NaN and infinities, guard
// words around `hist`, and bad arguments.
#include <ppat/ppat.cuh>

#include <cmath>
#include <cstdint>
#include <limits>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::device_buffer;

enum class rung { global_atomics, shared_atomics };
constexpr rung rungs[] = {rung::global_atomics, rung::shared_atomics};
const char* name(rung r) {
  return r == rung::global_atomics ? "global_atomics" : "shared_atomics";
}

template <class Sample, class Counter, class Level>
void run_histogram(rung r, const Sample* samples, std::size_t n, Counter* hist, int num_bins,
                   Level lower, Level upper) {
  if (r == rung::global_atomics) {
    ppat::textbook::histogram_even_global_atomics(samples, n, hist, num_bins, lower, upper);
  } else {
    ppat::textbook::histogram_even_shared_atomics(samples, n, hist, num_bins, lower, upper);
  }
}

// Counts `samples` with every rung and checks every bin, and the guard words around `hist`.
template <class Counter, class Sample, class Level>
void check_histogram(const std::vector<Sample>& samples, int num_bins, Level lower, Level upper,
                     const std::string& what) {
  if (!ppat_test::fits_item_budget(samples.size())) return;
  const auto expected = ppat_reference::histogram_even<Counter>(samples, num_bins, lower, upper);
  device_buffer<Sample> input(samples);
  for (rung r : rungs) {
    SCOPED_TRACE(std::string(name(r)) + " " + what + " n=" + std::to_string(samples.size()) +
                 " bins=" + std::to_string(num_bins));
    device_buffer<Counter> hist(num_bins, /*guard=*/256);
    hist.poison();
    run_histogram(r, input.data(), samples.size(), hist.data(), num_bins, lower, upper);
    ppat_test::expect_no_cuda_error();
    EXPECT_EQ(ppat_test::first_mismatch(hist.download(), expected), -1) << "first wrong bin";
    EXPECT_TRUE(hist.guards_intact()) << "write outside hist";
  }
}

// Samples drawn in [low, high]: with a range wider than [lower, upper), some fall outside.
template <class Sample>
std::vector<Sample> uniform(std::size_t n, long long low, long long high) {
  return ppat_test::random_integers<Sample>(n, low, high);
}

const std::size_t sizes[] = {1, 255, 256, 257, 4096, 65537, 1000003};

TEST(textbook_histogram, u8_256_bins_every_size) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : sizes) {
    check_histogram<std::uint32_t>(uniform<std::uint8_t>(n, 0, 255), 256, 0, 256, "u8 full");
  }
}

TEST(textbook_histogram, small_types_and_negative_samples) {
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

TEST(textbook_histogram, i32_and_u32_bin_counts) {
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

TEST(textbook_histogram, skewed_single_bin_and_out_of_range) {
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
TEST(textbook_histogram, floating_samples_with_nan_and_infinities) {
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

TEST(textbook_histogram, empty_input_zeroes_hist) {
  PPAT_REQUIRE_GPU();
  check_histogram<std::uint32_t>(std::vector<int>{}, 300, 0, 300, "empty");
}

// More than 2^28 samples.
TEST(textbook_histogram, huge_u8_above_2_pow_28) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 28) + 4099;
  check_histogram<std::uint32_t>(uniform<std::uint8_t>(n, 0, 255), 256, 0, 256, "u8 full");
}

// A CUDA failure surfaces as ppat::cuda_error naming the ppat function, and leaves no
// error pending. A host pointer for `hist` makes cudaMemsetAsync fail before any launch.
TEST(textbook_histogram, cuda_failure_names_the_function) {
  PPAT_REQUIRE_GPU();
  device_buffer<int> samples(std::vector<int>(16, 1));
  std::vector<std::uint32_t> host_hist(8);
  try {
    ppat::textbook::histogram_even_global_atomics(samples.data(), 16, host_hist.data(), 8, 0, 8);
    FAIL() << "no exception";
  } catch (const ppat::cuda_error& e) {
    EXPECT_NE(e.code(), cudaSuccess);
    EXPECT_NE(std::string(e.what()).find("ppat::textbook::histogram_even_global_atomics"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(textbook_histogram_arguments, bad_arguments_are_rejected) {
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

}  // namespace
