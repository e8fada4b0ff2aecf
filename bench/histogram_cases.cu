// Histogram: the textbook rungs beside cub::DeviceHistogram::HistogramEven, for the bin
// counts and distributions where CUB is strong (few bins) and where it collapses.
#include <ppat/ppat.cuh>

#include <cub/device/device_histogram.cuh>

#include "harness.hpp"
#include "type_names.hpp"

namespace ppat_bench {
namespace {

struct histogram_spec {
  int bins;
  double lower, upper;         // the levels
  double draw_low, draw_high;  // the samples' range: equal for "all in one bin"
  std::string distribution;
};

template <class Sample, class Level>
void histogram_case(session& s, int log2_n, const histogram_spec& spec) {
  using counter = std::uint32_t;
  const std::size_t n = std::size_t{1} << log2_n;
  const cudaStream_t stream = s.stream();
  const std::string type = type_name<Sample>();
  const Level lower = Level(spec.lower), upper = Level(spec.upper);
  const int sets = s.rotation_sets(double(n) * sizeof(Sample));
  std::vector<device_array<Sample>> samples(sets);
  for (int k = 0; k < sets; ++k) {
    samples[k] = device_array<Sample>(n);
    fill_uniform(samples[k].data(), n, spec.draw_low, spec.draw_high, 2000 + k);
  }
  device_array<Sample> copy_target(n);
  device_array<counter> hist(spec.bins), expected(spec.bins);

  const auto cub_histogram = [&](void* temp, std::size_t& temp_bytes, int k) {
    return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, samples[k].data(), hist.data(),
                                               spec.bins + 1, lower, upper, n, stream);
  };
  std::size_t temp_bytes = 0;
  check(cub_histogram(nullptr, temp_bytes, 0), "cub::DeviceHistogram (size query)");
  device_array<unsigned char> temp(temp_bytes);
  check(cub_histogram(temp.data(), temp_bytes, 0), "cub::DeviceHistogram");
  check(
      cudaMemcpyAsync(expected.data(), hist.data(), hist.bytes(), cudaMemcpyDeviceToDevice, stream),
      "cudaMemcpyAsync");

  bench_case c;
  c.pattern = "histogram";
  c.label = type + " " + std::to_string(spec.bins) + " bins " + spec.distribution;
  c.type = type;
  c.n = n;
  c.bytes = double(n) * sizeof(Sample);  // the counters are a rounding error beside it
  c.sets = sets;
  c.copy = [&](int k) {
    check(cudaMemcpyAsync(copy_target.data(), samples[k].data(), samples[k].bytes(),
                          cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyAsync");
  };
  c.copy_bytes = c.bytes;
  c.baseline = "cub::DeviceHistogram::HistogramEven";
  const auto matches_cub = [&] {
    return count_differences(hist.data(), expected.data(), hist.bytes()) == 0;
  };
  c.variants.push_back({c.baseline,
                        [&](int k) {
                          std::size_t bytes = temp_bytes;
                          check(cub_histogram(temp.data(), bytes, k), c.baseline.c_str());
                        },
                        nullptr});
  c.variants.push_back({"textbook::histogram_even_global_atomics",
                        [&](int k) {
                          ppat::textbook::histogram_even_global_atomics(
                              samples[k].data(), n, hist.data(), spec.bins, lower, upper, stream);
                        },
                        matches_cub});
  c.variants.push_back({"textbook::histogram_even_shared_atomics",
                        [&](int k) {
                          ppat::textbook::histogram_even_shared_atomics(
                              samples[k].data(), n, hist.data(), spec.bins, lower, upper, stream);
                        },
                        matches_cub});
  s.run(c);
}

}  // namespace

void bench_histogram(session& s) {
  if (!s.wants_pattern("histogram")) return;
  const std::vector<std::string> all_types = {"u8", "i32", "f32"};
  const histogram_spec u8_256{256, 0, 256, 0, 255, "uniform"};
  const histogram_spec i32_1024{1024, 0, 1024, 0, 1023, "uniform"};
  const histogram_spec i32_1024_one_bin{1024, 0, 1024, 517, 517, "all in one bin"};
  const histogram_spec i32_65536{65536, 0, 65536, 0, 65535, "uniform"};
  const histogram_spec i32_2_pow_20{1 << 20, 0, 1 << 20, 0, (1 << 20) - 1, "uniform"};
  const histogram_spec f32_256{256, 0, 1, 0, 1, "uniform"};
  for (int log2_n : s.log2_sizes({16, 18, 20, 22, 24, 26, 28, 30}, {20, 24, 28})) {
    if (s.wants_type("u8", all_types)) histogram_case<std::uint8_t, int>(s, log2_n, u8_256);
    if (s.wants_type("i32", all_types)) {
      histogram_case<std::int32_t, int>(s, log2_n, i32_1024);
      histogram_case<std::int32_t, int>(s, log2_n, i32_1024_one_bin);
      histogram_case<std::int32_t, int>(s, log2_n, i32_65536);
      if (!s.opts().quick) histogram_case<std::int32_t, int>(s, log2_n, i32_2_pow_20);
    }
    if (s.wants_type("f32", all_types)) histogram_case<float, float>(s, log2_n, f32_256);
  }
}

}  // namespace ppat_bench
