// Histogram: the textbook rungs and ppat::histogram_even beside
// cub::DeviceHistogram::HistogramEven, for the bin counts and distributions where CUB is
// strong (few bins) and where it collapses; RGBA pixels beside CUB's MultiHistogramEven;
// and the weighted histogram CUB lacks.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <cub/device/device_histogram.cuh>
#include <cuda/std/array>

#include <array>

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
void histogram_case(session& s, std::size_t n, const histogram_spec& spec) {
  using counter = std::uint32_t;
  const cudaStream_t stream = s.stream();
  const std::string type = type_name<Sample>();
  const Level lower = Level(spec.lower), upper = Level(spec.upper);
  const int sets = s.rotation_sets(double(n) * sizeof(Sample));
  std::vector<device_array<Sample>> samples(sets);
  for (int k = 0; k < sets; ++k) {
    samples[k] = device_array<Sample>(n);
    fill_uniform(samples[k].data(), n, spec.draw_low, spec.draw_high, 2000 + k);
  }
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
  c.variants.push_back({"ppat::histogram_even",
                        [&](int k) {
                          ppat::histogram_even(samples[k].data(), n, hist.data(), spec.bins, lower,
                                               upper, stream);
                        },
                        matches_cub});
  s.run(c);
}

// RGBA u8 pixels, the first three channels counted into 256 bins each.
void rgba_case(session& s, std::size_t pixels) {
  using counter = std::uint32_t;
  constexpr int channels = 4, active = 3, bins = 256;
  const std::size_t bytes = pixels * channels;
  const cudaStream_t stream = s.stream();
  const int sets = s.rotation_sets(double(bytes));
  std::vector<device_array<std::uint8_t>> samples(sets);
  for (int k = 0; k < sets; ++k) {
    samples[k] = device_array<std::uint8_t>(bytes);
    fill_uniform(samples[k].data(), bytes, 0, 255, 2100 + k);
  }
  device_array<counter> hist(active * bins), expected(active * bins);
  std::array<counter*, active> channel_hist;
  for (int c = 0; c < active; ++c)
    channel_hist[c] = hist.data() + c * bins;
  const std::array<int, active> num_bins{bins, bins, bins}, lower{0, 0, 0}, upper{bins, bins, bins};
  const cuda::std::array<int, active> cub_levels{bins + 1, bins + 1, bins + 1};
  const cuda::std::array<int, active> cub_lower{0, 0, 0}, cub_upper{bins, bins, bins};
  cuda::std::array<counter*, active> cub_hist;
  for (int c = 0; c < active; ++c)
    cub_hist[c] = channel_hist[c];

  const auto cub_histogram = [&](void* temp, std::size_t& temp_bytes, int k) {
    return cub::DeviceHistogram::MultiHistogramEven<channels, active>(
        temp, temp_bytes, samples[k].data(), cub_hist, cub_levels, cub_lower, cub_upper,
        std::int64_t(pixels), stream);
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
  c.label = "RGBA u8, 3 of 4 channels, 256 bins";
  c.type = "u8";
  c.n = bytes;
  c.bytes = double(bytes);
  c.sets = sets;
  c.copy_bytes = c.bytes;
  c.baseline = "cub::DeviceHistogram::MultiHistogramEven";
  c.variants.push_back({c.baseline,
                        [&](int k) {
                          std::size_t size = temp_bytes;
                          check(cub_histogram(temp.data(), size, k), c.baseline.c_str());
                        },
                        nullptr});
  c.variants.push_back(
      {"ppat::multi_histogram_even",
       [&](int k) {
         ppat::multi_histogram_even<channels, active>(samples[k].data(), pixels, channel_hist,
                                                      num_bins, lower, upper, stream);
       },
       [&] { return count_differences(hist.data(), expected.data(), hist.bytes()) == 0; }});
  s.run(c);
}

// f32 samples with f32 weights into 256 double bins: bytes are samples and weights read.
void weighted_case(session& s, std::size_t n) {
  const cudaStream_t stream = s.stream();
  const int sets = s.rotation_sets(double(n) * 2 * sizeof(float));
  std::vector<device_array<float>> samples(sets), weights(sets);
  for (int k = 0; k < sets; ++k) {
    samples[k] = device_array<float>(n);
    weights[k] = device_array<float>(n);
    fill_uniform(samples[k].data(), n, 0, 1, 2200 + k);
    fill_uniform(weights[k].data(), n, 0, 2, 2300 + k);
  }
  device_array<double> hist(256);

  bench_case c;
  c.pattern = "histogram";
  c.label = "f32 weighted by f32, 256 double bins";
  c.type = "f32";
  c.n = n;
  c.bytes = double(n) * 2 * sizeof(float);
  c.sets = sets;
  c.copy_bytes = c.bytes;
  c.variants.push_back({"ppat::histogram_even_weighted",
                        [&](int k) {
                          ppat::histogram_even_weighted(samples[k].data(), weights[k].data(), n,
                                                        hist.data(), 256, 0.0f, 1.0f, stream);
                        },
                        nullptr});
  s.run(c);
}

}  // namespace

void bench_histogram(session& s) {
  if (!s.wants_pattern("histogram")) return;
  const std::vector<std::string> all_types = {"u8", "u16", "i32", "f32"};
  const histogram_spec u8_256{256, 0, 256, 0, 255, "uniform"};
  const histogram_spec i32_1024{1024, 0, 1024, 0, 1023, "uniform"};
  const histogram_spec i32_1024_one_bin{1024, 0, 1024, 517, 517, "all in one bin"};
  const histogram_spec i32_65536{65536, 0, 65536, 0, 65535, "uniform"};
  const histogram_spec i32_2_pow_20{1 << 20, 0, 1 << 20, 0, (1 << 20) - 1, "uniform"};
  const histogram_spec f32_256{256, 0, 1, 0, 1, "uniform"};
  const histogram_spec u16_65536{65536, 0, 65536, 0, 65535, "uniform"};
  for (std::size_t n : s.sizes({16, 18, 20, 22, 24, 26, 28, 30}, {20, 24, 28})) {
    if (s.wants_type("u8", all_types)) {
      histogram_case<std::uint8_t, int>(s, n, u8_256);
      rgba_case(s, n / 4);  // the same bytes as the u8 case
    }
    if (s.wants_type("u16", all_types) && !s.opts().quick) {
      histogram_case<std::uint16_t, int>(s, n, u16_65536);
    }
    if (s.wants_type("i32", all_types)) {
      histogram_case<std::int32_t, int>(s, n, i32_1024);
      histogram_case<std::int32_t, int>(s, n, i32_1024_one_bin);
      histogram_case<std::int32_t, int>(s, n, i32_65536);
      if (!s.opts().quick) histogram_case<std::int32_t, int>(s, n, i32_2_pow_20);
    }
    if (s.wants_type("f32", all_types)) {
      histogram_case<float, float>(s, n, f32_256);
      weighted_case(s, n);
    }
  }
}

}  // namespace ppat_bench
