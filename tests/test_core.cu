// The building blocks in include/ppat/core (errors, argument checks, the temporary-memory
// pool) and the histograms' binning (include/ppat/histogram/binning.cuh).
#include <ppat/core/arguments.cuh>
#include <ppat/core/error.cuh>
#include <ppat/core/memory.cuh>
#include <ppat/histogram/binning.cuh>

#include <cmath>
#include <cstdint>
#include <limits>

#include "reference.hpp"
#include "support.hpp"

namespace {

TEST(cuda_error, message_names_function_operation_and_code) {
  const ppat::cuda_error error(cudaErrorInvalidValue, "ppat::some_call", "cudaMemsetAsync");
  const std::string message = error.what();
  EXPECT_EQ(error.code(), cudaErrorInvalidValue);
  EXPECT_EQ(message.rfind("ppat::some_call: cudaMemsetAsync failed", 0), 0u) << message;
  EXPECT_NE(message.find("cudaErrorInvalidValue"), std::string::npos) << message;
  const std::runtime_error& base = error;  // catchable as the standard type
  EXPECT_EQ(std::string(base.what()), message);
}

TEST(arguments, overlap_is_exact_at_the_edges) {
  const char* base = reinterpret_cast<const char*>(std::uintptr_t{1} << 20);
  using ppat::detail::ranges_overlap;
  EXPECT_FALSE(ranges_overlap(base, 10, base + 10, 10));
  EXPECT_TRUE(ranges_overlap(base, 11, base + 10, 10));
  EXPECT_TRUE(ranges_overlap(base + 19, 1, base + 10, 10));
  EXPECT_FALSE(ranges_overlap(base, 0, base, 10));
  EXPECT_TRUE(ranges_overlap(base + 3, 1, base, 10));
}

TEST(arguments, element_count_overflow_is_rejected) {
  using ppat::detail::checked_element_count;
  EXPECT_EQ(checked_element_count(3, 5, 8, "f"), 15u);
  EXPECT_EQ(checked_element_count(0, std::numeric_limits<std::size_t>::max(), 8, "f"), 0u);
  EXPECT_THROW(checked_element_count(std::size_t{1} << 32, std::size_t{1} << 32, 1, "f"),
               std::invalid_argument);
  EXPECT_THROW(checked_element_count(std::size_t{1} << 31, std::size_t{1} << 31, 16, "f"),
               std::invalid_argument);
}

// The kernels' binning (host side of the same function) against the reference formula.
template <class Sample, class Level>
void expect_binning_matches_reference(const std::vector<Sample>& samples, int num_bins, Level lower,
                                      Level upper) {
  const ppat::detail::even_binning<Sample, Level> bin_of(num_bins, lower, upper);
  for (const Sample s : samples) {
    const long long expected = ppat_reference::even_bin(s, num_bins, lower, upper);
    EXPECT_EQ(bin_of(s), expected < 0 ? num_bins : expected)  // not counted: bin num_bins
        << "sample " << +s << " bins " << num_bins;
  }
}

TEST(binning, every_i8_and_u8_value) {
  std::vector<std::int8_t> i8;
  std::vector<std::uint8_t> u8;
  for (int v = 0; v < 256; ++v) {
    i8.push_back(std::int8_t(v - 128));
    u8.push_back(std::uint8_t(v));
  }
  for (int bins : {1, 3, 7, 100, 255, 256, 1000}) {
    expect_binning_matches_reference(i8, bins, -100, 101);
    expect_binning_matches_reference(u8, bins, 0, 256);
    expect_binning_matches_reference(u8, bins, 17, 18);
  }
}

TEST(binning, integer_extremes_need_wide_arithmetic) {
  const int lo = std::numeric_limits<int>::min(), hi = std::numeric_limits<int>::max();
  expect_binning_matches_reference(std::vector<int>{lo, lo + 1, -1, 0, 1, hi - 1, hi},
                                   (1 << 20) + 7, lo, hi);
  const std::uint32_t top = std::numeric_limits<std::uint32_t>::max();
  expect_binning_matches_reference(std::vector<std::uint32_t>{0u, 1u, top / 2, top - 1, top},
                                   std::numeric_limits<int>::max(), 0u, top);
  // Samples and levels from different 32-bit domains take 64-bit arithmetic.
  expect_binning_matches_reference(std::vector<std::uint32_t>{0u, 5u, top - 5, top}, 1000, -10,
                                   std::numeric_limits<int>::max());
  expect_binning_matches_reference(std::vector<std::int16_t>{-32768, -100, -1, 0, 32767}, 77, 0u,
                                   top);
  const std::uint64_t top64 = std::numeric_limits<std::uint64_t>::max();
  expect_binning_matches_reference(
      std::vector<std::uint64_t>{0, 1, top64 / 3, top64 - 2, top64 - 1, top64}, 1 << 20,
      std::uint64_t{0}, top64);
  expect_binning_matches_reference(std::vector<std::int64_t>{-5, -4, 0, 1ll << 62}, 999,
                                   std::int64_t{-4}, std::int64_t{1} << 62);
}

// The kernels estimate ((s - lower) * num_bins) / (upper - lower) in double and correct it:
// random ranges and bin counts, with the samples on both sides of every bin edge they cross.
TEST(binning, corrected_estimate_is_the_exact_quotient) {
  PPAT_TRACE_SEED();
  for (int trial = 0; trial < 300; ++trial) {
    const long long lower = ppat_test::random_integers<long long>(1, INT32_MIN, INT32_MAX - 1)[0];
    const long long span = ppat_test::random_integers<long long>(1, 1, INT32_MAX - lower)[0];
    const int bins =
        int(ppat_test::random_integers<long long>(1, 1, trial % 2 ? 5000 : INT32_MAX)[0]);
    const long long upper = lower + span;
    std::vector<int> samples = ppat_test::random_integers<int>(200, lower, upper - 1);
    for (const long long edge : ppat_test::random_integers<long long>(100, 0, bins - 1)) {
      // The first sample of bin `edge`: lower + ceil(edge * span / bins), and the one before.
      const long long first = lower + (long long)((__int128(edge) * span + bins - 1) / bins);
      for (const long long s : {first - 1, first, first + 1}) {
        if (s >= lower && s < upper) samples.push_back(int(s));
      }
    }
    samples.push_back(int(lower));
    samples.push_back(int(upper - 1));
    expect_binning_matches_reference(samples, bins, int(lower), int(upper));
  }
}

// Bins one integer wide: the offset is the bin, whatever the sample type's signedness.
TEST(binning, unit_bins_match_even_bins) {
  PPAT_TRACE_SEED();
  const auto expect_same = [](const auto& samples, int num_bins, int lower) {
    using sample = typename std::decay_t<decltype(samples)>::value_type;
    const ppat::detail::even_binning<sample, int> even(num_bins, lower, lower + num_bins);
    ASSERT_TRUE(even.offset_is_bin());
    const ppat::detail::unit_binning<sample> unit(num_bins, unsigned(lower));
    for (const sample s : samples)
      EXPECT_EQ(unit(s), even(s)) << "sample " << +s << " bins " << num_bins << " from " << lower;
  };
  for (int bins : {1, 7, 256, 1024, 65536}) {
    for (int lower : {-70000, -300, -1, 0, 3, 70000}) {
      expect_same(ppat_test::random_integers<std::uint8_t>(300, 0, 255), bins, lower);
      expect_same(ppat_test::random_integers<std::int16_t>(300, -32768, 32767), bins, lower);
      expect_same(ppat_test::random_integers<int>(300, lower - 1000, lower + bins + 1000), bins,
                  lower);
      expect_same(
          std::vector<int>{INT32_MIN, INT32_MAX, lower - 1, lower, lower + bins - 1, lower + bins},
          bins, lower);
    }
  }
}

TEST(binning, floating_samples) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> samples = {nan,  inf,  -inf,  -0.0f, 0.0f, std::nextafter(1.0f, 0.0f),
                                      1.0f, 0.5f, 0.25f, 0.999f};
  for (int bins : {1, 3, 256, 257, 1 << 20}) {
    expect_binning_matches_reference(samples, bins, 0.0f, 1.0f);
    expect_binning_matches_reference(samples, bins, -0.1, 0.9);
  }
  const ppat::detail::even_binning<float, float> bin_of(1 << 20, 0.0f, 1.0f);
  EXPECT_EQ(bin_of(std::nextafter(1.0f, 0.0f)), (1 << 20) - 1) << "just below upper";
  EXPECT_EQ(bin_of(nan), 1 << 20) << "not counted";
  EXPECT_EQ(bin_of(1.0f), 1 << 20) << "not counted";
}

TEST(temporary_memory, pool_keeps_memory_between_calls) {
  PPAT_REQUIRE_GPU();
  int device = 0;
  PPAT_CUDA_OK(cudaGetDevice(&device));
  const cudaMemPool_t pool = ppat::temporary_memory_pool(device);
  EXPECT_EQ(pool, ppat::temporary_memory_pool(device)) << "one pool per device";
  std::uint64_t threshold = 0;
  PPAT_CUDA_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  std::size_t free_bytes = 0, total_bytes = 0;
  PPAT_CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
  EXPECT_EQ(threshold, ppat::retained_bytes(device));
  EXPECT_EQ(threshold, total_bytes / 8) << "an eighth of the device's memory";

  // 1 GiB, more than a pool keeping 256 MiB would keep: still mapped after a synchronization.
  const std::size_t count = std::size_t{1} << 27;
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    const ppat::detail::call_context call(stream, "test");
    ppat::detail::temporary_buffer<double> buffer(count, call);
    ASSERT_NE(buffer.data(), nullptr);
    PPAT_CUDA_OK(cudaMemsetAsync(buffer.data(), 0, count * sizeof(double), stream));
    buffer.release();
    EXPECT_EQ(buffer.data(), nullptr);
  }
  PPAT_CUDA_OK(cudaStreamSynchronize(stream));
  std::uint64_t reserved = 0;
  PPAT_CUDA_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  EXPECT_GE(reserved, count * sizeof(double)) << "memory returned at synchronization";
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
}

TEST(temporary_memory, zero_elements_allocate_nothing) {
  PPAT_REQUIRE_GPU();
  const ppat::detail::call_context call(0, "test");
  ppat::detail::temporary_buffer<int> buffer(0, call);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_NO_THROW(buffer.release());
}

}  // namespace
