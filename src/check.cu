// ppat check: a quick self-test of an install, every primitive once against the host
// reference (tests/reference/reference.hpp, the same references the test suite uses).
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "reference.hpp"

namespace ppat_cli {
namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 generator(std::random_device{}());
  return generator;
}

template <class T>
std::vector<T> random_values(std::size_t n, T low, T high) {
  std::vector<T> values(n);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<long long> pick(low, high);
    for (auto& v : values)
      v = T(pick(rng()));
  } else {
    std::uniform_real_distribution<double> pick(low, high);
    for (auto& v : values)
      v = T(pick(rng()));
  }
  return values;
}

void check_cuda(cudaError_t status) {
  if (status != cudaSuccess) throw std::runtime_error(cudaGetErrorString(status));
}

// Uploads `input`, poisons an output of `output_count` elements, runs `call(in, out)`, and
// compares the whole output bitwise with `expected`.
template <class In, class Out>
bool run_and_compare(const std::vector<In>& input, const std::vector<Out>& expected,
                     const std::function<void(const In*, Out*)>& call) {
  In* in = nullptr;
  Out* out = nullptr;
  check_cuda(cudaMalloc(&in, input.size() * sizeof(In) + 1));
  check_cuda(cudaMalloc(&out, expected.size() * sizeof(Out) + 1));
  check_cuda(cudaMemcpy(in, input.data(), input.size() * sizeof(In), cudaMemcpyHostToDevice));
  check_cuda(cudaMemset(out, 0xFF, expected.size() * sizeof(Out)));
  call(in, out);
  check_cuda(cudaDeviceSynchronize());
  std::vector<Out> actual(expected.size());
  check_cuda(cudaMemcpy(actual.data(), out, actual.size() * sizeof(Out), cudaMemcpyDeviceToHost));
  check_cuda(cudaFree(in));
  check_cuda(cudaFree(out));
  return std::memcmp(actual.data(), expected.data(), actual.size() * sizeof(Out)) == 0;
}

// What a selection writes to an output of `n` items poisoned with 0xFF bytes: the items kept,
// then the poison untouched.
template <class T>
std::vector<T> kept_then_poison(std::vector<T> kept, std::size_t n) {
  T poison;
  std::memset(&poison, 0xFF, sizeof(T));
  kept.resize(n, poison);
  return kept;
}

// Runs `call(count)` with a device count and throws unless it wrote `expected`.
void expect_count(std::size_t expected, const std::function<void(std::size_t*)>& call) {
  std::size_t* count = nullptr;
  check_cuda(cudaMalloc(&count, sizeof(std::size_t)));
  call(count);
  std::size_t got = 0;
  const cudaError_t copied = cudaMemcpy(&got, count, sizeof got, cudaMemcpyDeviceToHost);
  check_cuda(cudaFree(count));
  check_cuda(copied);
  if (got != expected) {
    throw std::runtime_error("count " + std::to_string(got) + ", expected " +
                             std::to_string(expected));
  }
}

struct is_positive {
  __host__ __device__ bool operator()(int x) const { return x > 0; }
};

}  // namespace

int self_check() {
  int failures = 0, total = 0;
  const auto report = [&](const std::string& name, const std::function<bool()>& test) {
    bool passed = false;
    std::string error;
    try {
      passed = test();
    } catch (const std::exception& e) {
      error = std::string(" (") + e.what() + ")";
    }
    failures += !passed;
    ++total;
    std::printf("%s  %s%s\n", passed ? "PASS" : "FAIL", name.c_str(), error.c_str());
  };
  namespace tb = ppat::textbook;
  const std::size_t n = 1000003;
  const auto ints = random_values<int>(n, -1000, 1000);
  const int init = 17;
  const auto inclusive = ppat_reference::inclusive_scan(ints, ppat::plus{});
  const auto exclusive = ppat_reference::exclusive_scan(ints, init, ppat::plus{});
  report("inclusive_scan", [&] {
    return run_and_compare<int, int>(
        ints, inclusive, [&](const int* in, int* out) { ppat::inclusive_scan(in, out, n); });
  });
  report("exclusive_scan", [&] {
    return run_and_compare<int, int>(
        ints, exclusive, [&](const int* in, int* out) { ppat::exclusive_scan(in, out, n, init); });
  });
  // Values in [0, 3] are their own keys: segments are the runs of equal values.
  const auto small = random_values<int>(n, 0, 3);
  report("inclusive_scan_by_key", [&] {
    return run_and_compare<int, int>(
        small, ppat_reference::inclusive_scan_by_key(small, small, ppat::plus{}),
        [&](const int* in, int* out) { ppat::inclusive_scan_by_key(in, in, out, n); });
  });
  report("exclusive_scan_by_key", [&] {
    return run_and_compare<int, int>(
        small, ppat_reference::exclusive_scan_by_key(small, small, init, ppat::plus{}),
        [&](const int* in, int* out) { ppat::exclusive_scan_by_key(in, in, out, n, init); });
  });
  report("reduce", [&] {
    return run_and_compare<int, int>(
        ints, {ppat_reference::reduce(ints, init, ppat::plus{})},
        [&](const int* in, int* out) { ppat::reduce(in, out, n, init); });
  });
  report("textbook::hillis_steele_inclusive_scan", [&] {
    return run_and_compare<int, int>(ints, inclusive, [&](const int* in, int* out) {
      tb::hillis_steele_inclusive_scan(in, out, n);
    });
  });
  report("textbook::hillis_steele_exclusive_scan", [&] {
    return run_and_compare<int, int>(ints, exclusive, [&](const int* in, int* out) {
      tb::hillis_steele_exclusive_scan(in, out, n, init);
    });
  });
  report("textbook::blelloch_inclusive_scan", [&] {
    return run_and_compare<int, int>(
        ints, inclusive, [&](const int* in, int* out) { tb::blelloch_inclusive_scan(in, out, n); });
  });
  report("textbook::blelloch_exclusive_scan", [&] {
    return run_and_compare<int, int>(ints, exclusive, [&](const int* in, int* out) {
      tb::blelloch_exclusive_scan(in, out, n, init);
    });
  });

  const auto positive = ppat_reference::select(ints, [&](std::size_t i) { return ints[i] > 0; });
  report("select_if", [&] {
    return run_and_compare<int, int>(ints, kept_then_poison(positive, n),
                                     [&](const int* in, int* out) {
                                       expect_count(positive.size(), [&](std::size_t* count) {
                                         ppat::select_if(in, out, count, n, is_positive{});
                                       });
                                     });
  });
  report("partition", [&] {
    return run_and_compare<int, int>(ints, ppat_reference::stable_partition(ints, is_positive{}),
                                     [&](const int* in, int* out) {
                                       expect_count(positive.size(), [&](std::size_t* count) {
                                         ppat::partition(in, out, count, n, is_positive{});
                                       });
                                     });
  });
  // The rejected output placed right after the selected items: the stable partition again.
  report("partition_copy", [&] {
    return run_and_compare<int, int>(
        ints, ppat_reference::stable_partition(ints, is_positive{}), [&](const int* in, int* out) {
          expect_count(positive.size(), [&](std::size_t* count) {
            ppat::partition_copy(in, out, out + positive.size(), count, n, is_positive{});
          });
        });
  });
  const auto starts = ppat_reference::run_starts(small);
  const auto heads = ppat_reference::select(small, [&](std::size_t i) { return bool(starts[i]); });
  report("unique", [&] {
    return run_and_compare<int, int>(
        small, kept_then_poison(heads, n), [&](const int* in, int* out) {
          expect_count(heads.size(), [&](std::size_t* count) { ppat::unique(in, out, count, n); });
        });
  });
  // The run-based reductions, with their first output (the runs' keys) checked by unique.
  const auto with_keys_out = [&](const std::function<void(int*)>& call) {
    int* keys_out = nullptr;
    check_cuda(cudaMalloc(&keys_out, n * sizeof(int)));
    try {
      call(keys_out);
    } catch (...) {
      (void)cudaFree(keys_out);
      throw;
    }
    check_cuda(cudaFree(keys_out));
  };
  report("reduce_by_key", [&] {
    return run_and_compare<int, int>(
        small, kept_then_poison(ppat_reference::reduce_by_key(small, small, ppat::plus{}), n),
        [&](const int* in, int* out) {
          with_keys_out([&](int* keys_out) {
            expect_count(heads.size(), [&](std::size_t* count) {
              ppat::reduce_by_key(in, in, keys_out, out, count, n);
            });
          });
        });
  });
  report("run_length_encode", [&] {
    return run_and_compare<int, unsigned>(
        small, kept_then_poison(ppat_reference::run_lengths<int, unsigned>(small), n),
        [&](const int* in, unsigned* out) {
          with_keys_out([&](int* keys_out) {
            expect_count(heads.size(), [&](std::size_t* count) {
              ppat::run_length_encode(in, keys_out, out, count, n);
            });
          });
        });
  });
  report("textbook::scan_then_scatter_select_if", [&] {
    return run_and_compare<int, int>(
        ints, kept_then_poison(positive, n), [&](const int* in, int* out) {
          expect_count(positive.size(), [&](std::size_t* count) {
            tb::scan_then_scatter_select_if(in, out, count, n, is_positive{});
          });
        });
  });

  // Sorts: float keys with NaNs of both signs and zeros of both signs, descending; int keys
  // with their positions as values, which shows stability.
  auto floats = random_values<float>(n, -1000, 1000);
  for (std::size_t i = 0; i < n; i += 97)
    floats[i] = i % 3 == 0 ? -0.0f : i % 3 == 1 ? 0.0f : std::copysign(NAN, i % 2 ? 1.0f : -1.0f);
  const auto descending = ppat_reference::gathered(
      floats, ppat_reference::sorted_positions(floats, /*descending=*/true));
  report("sort_keys", [&] {
    return run_and_compare<float, float>(floats, descending, [&](const float* in, float* out) {
      ppat::sort_keys(in, out, n, ppat::order::descending);
    });
  });
  std::vector<unsigned> positions(n);
  for (std::size_t i = 0; i < n; ++i)
    positions[i] = unsigned(i);
  const auto by_key = ppat_reference::sorted_positions(small, /*descending=*/false);
  const auto sorted_positions = ppat_reference::gathered(positions, by_key);
  const auto with_values_in = [&](const std::function<void(const unsigned*)>& call) {
    unsigned* values = nullptr;
    check_cuda(cudaMalloc(&values, n * sizeof(unsigned)));
    check_cuda(cudaMemcpy(values, positions.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    try {
      call(values);
    } catch (...) {
      (void)cudaFree(values);
      throw;
    }
    check_cuda(cudaFree(values));
  };
  const auto check_pairs =
      [&](const std::function<void(const int*, int*, const unsigned*, unsigned*)>& sort) {
        return run_and_compare<int, unsigned>(
            small, sorted_positions, [&](const int* in, unsigned* out) {
              with_keys_out([&](int* keys_out) {
                with_values_in([&](const unsigned* values) { sort(in, keys_out, values, out); });
              });
            });
      };
  report("sort_pairs", [&] {
    return check_pairs(
        [&](const int* keys_in, int* keys_out, const unsigned* values_in, unsigned* values_out) {
          ppat::sort_pairs(keys_in, keys_out, values_in, values_out, n);
        });
  });
  // Segmented: lengths from 1 key to several tiles of every SM (each path), one offset array.
  std::vector<long long> offsets{0};
  const long long lengths[] = {1, 7, 16, 100, 300, 2500, 9000, 60000};
  for (std::size_t i = 0; offsets.back() < (long long)n; ++i)
    offsets.push_back(std::min((long long)n, offsets.back() + lengths[i % std::size(lengths)]));
  std::vector<unsigned> segment_sorted(n);
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    const std::vector<int> segment(small.begin() + offsets[i], small.begin() + offsets[i + 1]);
    const auto order = ppat_reference::sorted_positions(segment, /*descending=*/false);
    for (std::size_t j = 0; j < order.size(); ++j)
      segment_sorted[std::size_t(offsets[i]) + j] = unsigned(std::size_t(offsets[i]) + order[j]);
  }
  const auto with_offsets = [&](const std::function<void(const long long*)>& call) {
    long long* device_offsets = nullptr;
    check_cuda(cudaMalloc(&device_offsets, offsets.size() * sizeof(long long)));
    check_cuda(cudaMemcpy(device_offsets, offsets.data(), offsets.size() * sizeof(long long),
                          cudaMemcpyHostToDevice));
    try {
      call(device_offsets);
    } catch (...) {
      (void)cudaFree(device_offsets);
      throw;
    }
    check_cuda(cudaFree(device_offsets));
  };
  report("segmented_sort_pairs", [&] {
    return run_and_compare<int, unsigned>(small, segment_sorted, [&](const int* in, unsigned* out) {
      with_keys_out([&](int* keys_out) {
        with_values_in([&](const unsigned* values) {
          with_offsets([&](const long long* device_offsets) {
            ppat::segmented_sort_pairs(in, keys_out, values, out, n, offsets.size() - 1,
                                       device_offsets, device_offsets + 1);
          });
        });
      });
    });
  });
  // The same segments summed (wrapping, as int sums on the device do).
  std::vector<int> segment_sums(offsets.size() - 1);
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    unsigned total = 5;
    for (long long j = offsets[i]; j < offsets[i + 1]; ++j)
      total += unsigned(small[std::size_t(j)]);
    segment_sums[i] = int(total);
  }
  report("segmented_reduce", [&] {
    return run_and_compare<int, int>(small, segment_sums, [&](const int* in, int* out) {
      with_offsets([&](const long long* device_offsets) {
        ppat::segmented_reduce(in, out, offsets.size() - 1, device_offsets, device_offsets + 1, 5);
      });
    });
  });
  // Top-k of each row: the float keys above (NaNs, signed zeros) as 1,000 rows of 1,000.
  const std::size_t top_rows = 1000, top_cols = 1000, k = 37;
  const std::vector<float> top_matrix(floats.begin(), floats.begin() + top_rows * top_cols);
  std::vector<std::int64_t> row_top(top_rows * k);
  for (std::size_t r = 0; r < top_rows; ++r) {
    const std::vector<float> row(top_matrix.begin() + r * top_cols,
                                 top_matrix.begin() + (r + 1) * top_cols);
    const auto order = ppat_reference::sorted_positions(row, /*descending=*/true);
    for (std::size_t j = 0; j < k; ++j)
      row_top[r * k + j] = std::int64_t(order[j]);
  }
  report("top_k_batched", [&] {
    return run_and_compare<float, std::int64_t>(
        top_matrix, row_top, [&](const float* in, std::int64_t* indices) {
          float* keys_out = nullptr;
          check_cuda(cudaMalloc(&keys_out, top_rows * k * sizeof(float)));
          try {
            ppat::top_k_batched(in, top_rows, top_cols, k, keys_out, indices);
          } catch (...) {
            (void)cudaFree(keys_out);
            throw;
          }
          check_cuda(cudaDeviceSynchronize());
          check_cuda(cudaFree(keys_out));
        });
  });
  report("textbook::reduce_then_scan_sort_pairs", [&] {
    return check_pairs(
        [&](const int* keys_in, int* keys_out, const unsigned* values_in, unsigned* values_out) {
          tb::reduce_then_scan_sort_pairs(keys_in, keys_out, values_in, values_out, n);
        });
  });
  report("textbook::binary_split_sort_pairs", [&] {
    return check_pairs(
        [&](const int* keys_in, int* keys_out, const unsigned* values_in, unsigned* values_out) {
          tb::binary_split_sort_pairs(keys_in, keys_out, values_in, values_out, n);
        });
  });

  auto samples = random_values<float>(n, -0.25f, 1.25f);
  samples[0] = std::numeric_limits<float>::quiet_NaN();
  const int bins = 257;
  const auto hist = ppat_reference::histogram_even<std::uint32_t>(samples, bins, 0.0f, 1.0f);
  report("histogram_even", [&] {
    return run_and_compare<float, std::uint32_t>(
        samples, hist, [&](const float* in, std::uint32_t* out) {
          ppat::histogram_even(in, n, out, bins, 0.0f, 1.0f);
        });
  });
  // Levels 0, 1, 3, 6, ...: uneven bins over the integers.
  std::vector<int> levels(bins + 1);
  for (int b = 0; b <= bins; ++b)
    levels[b] = b * (b + 1) / 2;
  const auto small_ints = random_values<int>(n, -5, levels.back() + 5);
  report("histogram_range", [&] {
    int* device_levels = nullptr;
    check_cuda(cudaMalloc(&device_levels, levels.size() * sizeof(int)));
    check_cuda(cudaMemcpy(device_levels, levels.data(), levels.size() * sizeof(int),
                          cudaMemcpyHostToDevice));
    const bool passed = run_and_compare<int, std::uint32_t>(
        small_ints, ppat_reference::histogram_range<std::uint32_t>(small_ints, levels),
        [&](const int* in, std::uint32_t* out) {
          ppat::histogram_range(in, n, out, bins, static_cast<const int*>(device_levels));
        });
    check_cuda(cudaFree(device_levels));
    return passed;
  });
  // Pairs of samples, the second channel counted into 1000 bins over [-1000, 1000).
  report("multi_histogram_even", [&] {
    return run_and_compare<int, std::uint32_t>(
        ints, ppat_reference::channel_histogram_even<std::uint32_t>(ints, 2, 1, 1000, -1000, 1000),
        [&](const int* in, std::uint32_t* out) {
          ppat::multi_histogram_even<2, 1>(in + 1, n / 2, std::array<std::uint32_t*, 1>{out},
                                           std::array<int, 1>{1000}, std::array<int, 1>{-1000},
                                           std::array<int, 1>{1000});
        });
  });
  // Each sample weighted by itself; the float sums are checked within rounding.
  report("histogram_even_weighted", [&] {
    const auto expected =
        ppat_reference::histogram_even_weighted(samples, samples, bins, 0.0f, 1.0f);
    float* in = nullptr;
    double* out = nullptr;
    check_cuda(cudaMalloc(&in, n * sizeof(float)));
    check_cuda(cudaMalloc(&out, bins * sizeof(double)));
    check_cuda(cudaMemcpy(in, samples.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    ppat::histogram_even_weighted(in, in, n, out, bins, 0.0f, 1.0f);
    std::vector<double> actual(bins);
    check_cuda(cudaMemcpy(actual.data(), out, bins * sizeof(double), cudaMemcpyDeviceToHost));
    check_cuda(cudaFree(in));
    check_cuda(cudaFree(out));
    for (int b = 0; b < bins; ++b) {
      if (!(std::fabs(actual[b] - double(expected[b])) <= 1e-9 * double(expected[b]))) return false;
    }
    return true;
  });
  report("textbook::histogram_even_global_atomics", [&] {
    return run_and_compare<float, std::uint32_t>(
        samples, hist, [&](const float* in, std::uint32_t* out) {
          tb::histogram_even_global_atomics(in, n, out, bins, 0.0f, 1.0f);
        });
  });
  report("textbook::histogram_even_shared_atomics", [&] {
    return run_and_compare<float, std::uint32_t>(
        samples, hist, [&](const float* in, std::uint32_t* out) {
          tb::histogram_even_shared_atomics(in, n, out, bins, 0.0f, 1.0f);
        });
  });

  const std::size_t rows = 1023, cols = 1029;
  const auto matrix = random_values<int>(rows * cols, -1000000, 1000000);
  const auto transposed = ppat_reference::transpose(matrix, rows, cols);
  report("transpose", [&] {
    return run_and_compare<int, int>(
        matrix, transposed, [&](const int* in, int* out) { ppat::transpose(in, out, rows, cols); });
  });
  // Two matrices of rows/3 x cols, each transposed.
  const std::size_t third = rows / 3;
  std::vector<int> batched_expected;
  for (std::size_t m = 0; m < 2; ++m) {
    const std::vector<int> one(matrix.begin() + m * third * cols,
                               matrix.begin() + (m + 1) * third * cols);
    const auto t = ppat_reference::transpose(one, third, cols);
    batched_expected.insert(batched_expected.end(), t.begin(), t.end());
  }
  report("transpose_batched", [&] {
    return run_and_compare<int, int>(matrix, batched_expected, [&](const int* in, int* out) {
      ppat::transpose_batched(in, out, 2, third, cols);
    });
  });
  const std::vector<std::size_t> shape = {11, 31, 3, 1000};
  const std::vector<int> axes = {3, 1, 0, 2};
  report("permute", [&] {
    return run_and_compare<int, int>(
        std::vector<int>(matrix.begin(), matrix.begin() + 11 * 31 * 3 * 1000),
        ppat_reference::permute(
            std::vector<int>(matrix.begin(), matrix.begin() + 11 * 31 * 3 * 1000), shape, axes),
        [&](const int* in, int* out) { ppat::permute(in, out, shape, axes); });
  });
  // In place: the square's copy is transposed where it lies.
  const std::size_t side = 1021;
  const std::vector<int> square(matrix.begin(), matrix.begin() + side * side);
  report("transpose_inplace", [&] {
    return run_and_compare<int, int>(
        square, ppat_reference::transpose(square, side, side), [&](const int* in, int* out) {
          check_cuda(cudaMemcpy(out, in, side * side * sizeof(int), cudaMemcpyDeviceToDevice));
          ppat::transpose_inplace(out, side);
        });
  });
  report("textbook::transpose_naive", [&] {
    return run_and_compare<int, int>(matrix, transposed, [&](const int* in, int* out) {
      tb::transpose_naive(in, out, rows, cols);
    });
  });
  report("textbook::transpose_tiled", [&] {
    return run_and_compare<int, int>(matrix, transposed, [&](const int* in, int* out) {
      tb::transpose_tiled(in, out, rows, cols);
    });
  });

  std::printf("%s: %d of %d failed\n", failures == 0 ? "all passed" : "FAILED", failures, total);
  return failures == 0 ? 0 : 1;
}

}  // namespace ppat_cli
