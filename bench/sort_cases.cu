// Radix sort beside CUB's DeviceRadixSort: keys of every width, pairs, a 16-bit range of a
// 32-bit key, int64 keys below 2^24 (positions, whose high bytes never vary: passes ppat
// skips), and the textbook rungs on u32 keys; segmented sorts beside CUB's
// DeviceSegmentedSort, segments of one length given by offsets and as rows of a matrix, with
// the bitonic rung; top-k beside a full sort, with the sort-then-take rung. Bytes that must
// move: the keys (and values) read once and written once; a sort makes several passes, so the
// percentage of copy says how close the whole sort comes to one pass at copy speed.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "type_names.hpp"

namespace ppat_bench {
namespace {

// Integer keys over their whole range, or below 2^key_bits; floats drawn from [-1e9, 1e9]
// (no NaNs, whose order CUB does not promise).
template <class K>
void fill_keys(K* keys, std::size_t n, int key_bits, std::uint64_t seed) {
  if constexpr (std::is_integral_v<K>) {
    if (key_bits == 0) {
      fill_random_bits(keys, n, seed);
    } else {
      fill_uniform(keys, n, 0, double((std::uint64_t{1} << key_bits) - 1), seed);
    }
  } else {
    fill_uniform(keys, n, -1e9, 1e9, seed);
  }
}

// CUB's two-phase call as one: the size query once, the temporary storage kept for the case.
class cub_sort {
 public:
  using signature = cudaError_t(void*, std::size_t&, int);
  explicit cub_sort(std::function<signature> call) : call_(std::move(call)) {
    check(call_(nullptr, bytes_, 0), "CUB size query");
    storage_ = device_array<unsigned char>(bytes_);
  }
  void operator()(int set) {
    std::size_t bytes = bytes_;
    check(call_(storage_.data(), bytes, set), "CUB call");
  }

 private:
  std::function<signature> call_;
  std::size_t bytes_ = 0;
  device_array<unsigned char> storage_;
};

struct sort_spec {
  int begin_bit = 0;
  int end_bit = 0;  // 0: the whole key
  bool descending = false;
  bool textbook = false;
  int key_bits = 0;  // integer keys below 2^key_bits; 0: every bit pattern
};

// Keys of type K (with values of type V unless V is void) on rotating sets; CUB sorts set 0
// into buffers of its own, and ppat's set 0 output is compared with it bitwise.
template <class K, class V>
void sort_case(session& s, std::size_t n, const sort_spec& spec) {
  constexpr bool pairs = !std::is_void_v<V>;
  using value = std::conditional_t<pairs, V, char>;
  const cudaStream_t stream = s.stream();
  const int end_bit = spec.end_bit == 0 ? int(8 * sizeof(K)) : spec.end_bit;
  const double bytes_per_key = 2.0 * (sizeof(K) + (pairs ? sizeof(value) : 0));
  const int sets = s.rotation_sets(bytes_per_key * n);
  std::vector<device_array<K>> keys_in(sets), keys_out(sets);
  std::vector<device_array<value>> values_in(pairs ? sets : 0), values_out(pairs ? sets : 0);
  for (int k = 0; k < sets; ++k) {
    keys_in[k] = device_array<K>(n);
    keys_out[k] = device_array<K>(n);
    fill_keys(keys_in[k].data(), n, spec.key_bits, 9000 + k);
    if constexpr (pairs) {
      values_in[k] = device_array<value>(n);
      values_out[k] = device_array<value>(n);
      fill_uniform(values_in[k].data(), n, 0, 1e6, 9100 + k);
    }
  }
  device_array<K> cub_keys(n);
  device_array<value> cub_values(pairs ? n : 0);
  const auto keys_to = [&](int k) { return k == 0 ? cub_keys.data() : keys_out[k].data(); };
  const auto values_to = [&](int k) { return k == 0 ? cub_values.data() : values_out[k].data(); };
  const int items = int(n);
  cub_sort cub([&](void* temp, std::size_t& bytes, int k) {
    if constexpr (pairs) {
      return spec.descending ? cub::DeviceRadixSort::SortPairsDescending(
                                   temp, bytes, keys_in[k].data(), keys_to(k), values_in[k].data(),
                                   values_to(k), items, spec.begin_bit, end_bit, stream)
                             : cub::DeviceRadixSort::SortPairs(
                                   temp, bytes, keys_in[k].data(), keys_to(k), values_in[k].data(),
                                   values_to(k), items, spec.begin_bit, end_bit, stream);
    } else {
      return spec.descending
                 ? cub::DeviceRadixSort::SortKeysDescending(temp, bytes, keys_in[k].data(),
                                                            keys_to(k), items, spec.begin_bit,
                                                            end_bit, stream)
                 : cub::DeviceRadixSort::SortKeys(temp, bytes, keys_in[k].data(), keys_to(k), items,
                                                  spec.begin_bit, end_bit, stream);
    }
  });
  const ppat::order ord = spec.descending ? ppat::order::descending : ppat::order::ascending;
  const auto matches_cub = [&] {
    if (count_differences(keys_out[0].data(), cub_keys.data(), n * sizeof(K)) != 0) return false;
    if constexpr (pairs) {
      return count_differences(values_out[0].data(), cub_values.data(), n * sizeof(value)) == 0;
    } else {
      return true;
    }
  };

  const std::string type = type_name<K>();
  bench_case c;
  c.pattern = "sort";
  c.label = "keys " + type;
  if constexpr (pairs) c.label = "pairs " + type + " / " + type_name<value>();
  if (spec.descending) c.label += ", descending";
  if (spec.end_bit != 0)
    c.label += ", bits " + std::to_string(spec.begin_bit) + "-" + std::to_string(end_bit);
  if (spec.key_bits != 0) c.label += ", below 2^" + std::to_string(spec.key_bits);
  c.type = type;
  c.n = n;
  c.bytes = bytes_per_key * n;
  c.keys_per_second = true;
  c.sets = sets;
  c.copy_bytes = c.bytes / 2;  // read, then written: as many bytes as one pass moves
  c.baseline = pairs ? "cub::DeviceRadixSort::SortPairs" : "cub::DeviceRadixSort::SortKeys";
  c.variants.push_back({c.baseline, std::ref(cub), nullptr});
  c.variants.push_back({pairs ? "ppat::sort_pairs" : "ppat::sort_keys",
                        [&](int k) {
                          if constexpr (pairs) {
                            ppat::sort_pairs(keys_in[k].data(), keys_out[k].data(),
                                             values_in[k].data(), values_out[k].data(), n, ord,
                                             spec.begin_bit, end_bit, stream);
                          } else {
                            ppat::sort_keys(keys_in[k].data(), keys_out[k].data(), n, ord,
                                            spec.begin_bit, end_bit, stream);
                          }
                        },
                        matches_cub});
  if (spec.textbook) {
    c.variants.push_back({"textbook::reduce_then_scan_sort_keys",
                          [&](int k) {
                            ppat::textbook::reduce_then_scan_sort_keys(
                                keys_in[k].data(), keys_out[k].data(), n, ord, spec.begin_bit,
                                end_bit, stream);
                          },
                          matches_cub});
    c.variants.push_back({"textbook::binary_split_sort_keys",
                          [&](int k) {
                            ppat::textbook::binary_split_sort_keys(keys_in[k].data(),
                                                                   keys_out[k].data(), n, ord,
                                                                   spec.begin_bit, end_bit, stream);
                          },
                          matches_cub});
  }
  s.run(c);
}

// u32/u32 pairs in segments of `length` keys (n rounded down to whole segments), stable,
// ascending: CUB's StableSortPairs and ppat's segmented_sort_pairs from one offset array,
// and ppat's sort_pairs_batched on the same keys as rows; with `textbook`, the bitonic rung.
void segmented_sort_case(session& s, std::size_t n, std::size_t length, bool textbook) {
  using key = std::uint32_t;
  const cudaStream_t stream = s.stream();
  const std::size_t segments = n / length;
  n = segments * length;
  const double bytes_per_key = 2.0 * (sizeof(key) + sizeof(key));
  const int sets = s.rotation_sets(bytes_per_key * n);
  std::vector<device_array<key>> keys_in(sets), keys_out(sets), values_in(sets), values_out(sets);
  for (int k = 0; k < sets; ++k) {
    keys_in[k] = device_array<key>(n);
    keys_out[k] = device_array<key>(n);
    values_in[k] = device_array<key>(n);
    values_out[k] = device_array<key>(n);
    fill_keys(keys_in[k].data(), n, 0, 9200 + k);
    fill_uniform(values_in[k].data(), n, 0, 1e6, 9300 + k);
  }
  const device_array<int> offsets = fixed_length_offsets(segments, length);
  device_array<key> cub_keys(n), cub_values(n);
  const auto keys_to = [&](int k) { return k == 0 ? cub_keys.data() : keys_out[k].data(); };
  const auto values_to = [&](int k) { return k == 0 ? cub_values.data() : values_out[k].data(); };
  cub_sort cub([&](void* temp, std::size_t& bytes, int k) {
    return cub::DeviceSegmentedSort::StableSortPairs(
        temp, bytes, keys_in[k].data(), keys_to(k), values_in[k].data(), values_to(k), int(n),
        int(segments), offsets.data(), offsets.data() + 1, stream);
  });
  const auto matches_cub = [&] {
    return count_differences(keys_out[0].data(), cub_keys.data(), n * sizeof(key)) == 0 &&
           count_differences(values_out[0].data(), cub_values.data(), n * sizeof(key)) == 0;
  };

  bench_case c;
  c.pattern = "sort";
  c.label = "segmented pairs u32 / u32, segments of " + std::to_string(length);
  c.type = "u32";
  c.n = n;
  c.bytes = bytes_per_key * n;
  c.keys_per_second = true;
  c.sets = sets;
  c.copy_bytes = c.bytes / 2;
  c.baseline = "cub::DeviceSegmentedSort::StableSortPairs";
  c.variants.push_back({c.baseline, std::ref(cub), nullptr});
  c.variants.push_back({"ppat::segmented_sort_pairs",
                        [&](int k) {
                          ppat::segmented_sort_pairs(keys_in[k].data(), keys_out[k].data(),
                                                     values_in[k].data(), values_out[k].data(), n,
                                                     segments, offsets.data(), offsets.data() + 1,
                                                     ppat::order::ascending, stream);
                        },
                        matches_cub});
  c.variants.push_back({"ppat::sort_pairs_batched",
                        [&](int k) {
                          ppat::sort_pairs_batched(keys_in[k].data(), keys_out[k].data(),
                                                   values_in[k].data(), values_out[k].data(),
                                                   segments, length, ppat::order::ascending,
                                                   stream);
                        },
                        matches_cub});
  if (textbook) {
    c.variants.push_back({"textbook::bitonic_segmented_sort_pairs",
                          [&](int k) {
                            ppat::textbook::bitonic_segmented_sort_pairs(
                                keys_in[k].data(), keys_out[k].data(), values_in[k].data(),
                                values_out[k].data(), n, segments, offsets.data(),
                                offsets.data() + 1, ppat::order::ascending, stream);
                          },
                          matches_cub});
  }
  s.run(c);
}

// The k largest of n f32 keys with their positions: ppat's top_k against what CUB offers,
// a full SortPairsDescending of (key, position) whose first k are the answer (the positions
// made once, outside the timing); with `textbook`, the sort-then-take rung, which makes its
// positions in the call. Bytes that must move: the keys read once.
void top_k_case(session& s, std::size_t n, std::size_t k, bool textbook) {
  using key = float;
  const cudaStream_t stream = s.stream();
  const int sets = s.rotation_sets(double(n) * sizeof(key));
  std::vector<device_array<key>> keys_in(sets);
  for (int set = 0; set < sets; ++set) {
    keys_in[set] = device_array<key>(n);
    fill_keys(keys_in[set].data(), n, 0, 9400 + set);
  }
  device_array<std::int64_t> positions(n), sorted_positions(n);
  device_array<key> sorted_keys(n), keys_out(k);
  device_array<std::int64_t> indices_out(k);
  std::vector<std::int64_t> host_positions(n);
  for (std::size_t i = 0; i < n; ++i)
    host_positions[i] = std::int64_t(i);
  copy_to_device(positions.data(), host_positions.data(), n * sizeof(std::int64_t));
  cub_sort cub([&](void* temp, std::size_t& bytes, int set) {
    return cub::DeviceRadixSort::SortPairsDescending(temp, bytes, keys_in[set].data(),
                                                     sorted_keys.data(), positions.data(),
                                                     sorted_positions.data(), n, 0, 32, stream);
  });
  // The answer for set 0, kept apart: timing CUB on the other sets overwrites its output.
  cub(0);
  device_array<std::int64_t> expected(k);
  check(cudaMemcpyAsync(expected.data(), sorted_positions.data(), k * sizeof(std::int64_t),
                        cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cub::DeviceRadixSort::SortPairsDescending");
  const auto matches_cub = [&] {
    return count_differences(indices_out.data(), expected.data(), k * sizeof(std::int64_t)) == 0;
  };

  bench_case c;
  c.pattern = "sort";
  c.label = "top-k f32, k = " + std::to_string(k);
  c.type = "f32";
  c.n = n;
  c.bytes = double(n) * sizeof(key);
  c.keys_per_second = true;
  c.sets = sets;
  c.copy_bytes = c.bytes / 2;
  c.baseline = "cub::DeviceRadixSort::SortPairsDescending, first k";
  c.variants.push_back({c.baseline, std::ref(cub), nullptr});
  c.variants.push_back({"ppat::top_k",
                        [&](int set) {
                          ppat::top_k(keys_in[set].data(), n, k, keys_out.data(),
                                      indices_out.data(), ppat::order::descending, stream);
                        },
                        matches_cub});
  if (textbook) {
    c.variants.push_back({"textbook::sort_then_take_top_k",
                          [&](int set) {
                            ppat::textbook::sort_then_take_top_k(
                                keys_in[set].data(), n, k, keys_out.data(), indices_out.data(),
                                ppat::order::descending, stream);
                          },
                          matches_cub});
  }
  s.run(c);
}

// The k largest of each row of a rows x cols f32 matrix with their positions in the row:
// ppat's top_k_batched against what CUB offers, a stable segmented sort of every row's
// (key, position) descending, whose first k a row are the answer. Bytes that must move: the
// keys read once.
void top_k_batched_case(session& s, std::size_t n, std::size_t cols, std::size_t k) {
  using key = float;
  const cudaStream_t stream = s.stream();
  const std::size_t rows = n / cols;
  n = rows * cols;
  const int sets = s.rotation_sets(double(n) * sizeof(key));
  std::vector<device_array<key>> keys_in(sets);
  for (int set = 0; set < sets; ++set) {
    keys_in[set] = device_array<key>(n);
    fill_keys(keys_in[set].data(), n, 0, 9500 + set);
  }
  device_array<std::int64_t> positions(n), sorted_positions(n);
  device_array<key> sorted_keys(n), keys_out(rows * k);
  device_array<std::int64_t> indices_out(rows * k);
  std::vector<std::int64_t> host_positions(n);
  for (std::size_t i = 0; i < n; ++i)
    host_positions[i] = std::int64_t(i % cols);
  copy_to_device(positions.data(), host_positions.data(), n * sizeof(std::int64_t));
  const device_array<int> offsets = fixed_length_offsets(rows, cols);
  cub_sort cub([&](void* temp, std::size_t& bytes, int set) {
    return cub::DeviceSegmentedSort::StableSortPairsDescending(
        temp, bytes, keys_in[set].data(), sorted_keys.data(), positions.data(),
        sorted_positions.data(), int(n), int(rows), offsets.data(), offsets.data() + 1, stream);
  });
  // The answer for set 0, each row's first k kept apart before CUB is timed on other sets.
  cub(0);
  device_array<std::int64_t> expected(rows * k);
  check(cudaMemcpy2DAsync(expected.data(), k * sizeof(std::int64_t), sorted_positions.data(),
                          cols * sizeof(std::int64_t), k * sizeof(std::int64_t), rows,
                          cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpy2DAsync");
  check(cudaStreamSynchronize(stream), "cub::DeviceSegmentedSort::StableSortPairsDescending");
  const auto matches_cub = [&] {
    return count_differences(indices_out.data(), expected.data(),
                             rows * k * sizeof(std::int64_t)) == 0;
  };

  bench_case c;
  c.pattern = "sort";
  c.label = "top-k of each row f32, " + std::to_string(rows) + " x " + std::to_string(cols) +
            ", k = " + std::to_string(k);
  c.type = "f32";
  c.n = n;
  c.bytes = double(n) * sizeof(key);
  c.keys_per_second = true;
  c.sets = sets;
  c.copy_bytes = c.bytes / 2;
  c.baseline = "cub::DeviceSegmentedSort::StableSortPairsDescending, first k";
  c.variants.push_back({c.baseline, std::ref(cub), nullptr});
  c.variants.push_back({"ppat::top_k_batched",
                        [&](int set) {
                          ppat::top_k_batched(keys_in[set].data(), rows, cols, k, keys_out.data(),
                                              indices_out.data(), ppat::order::descending, stream);
                        },
                        matches_cub});
  s.run(c);
}

}  // namespace

void bench_sort(session& s) {
  if (!s.wants_pattern("sort")) return;
  const std::vector<std::string> default_types =
      s.opts().quick ? std::vector<std::string>{"u32"}
                     : std::vector<std::string>{"u32", "f32", "u64", "f64", "u8", "u16"};
  for (std::size_t n : s.sizes({16, 18, 20, 22, 24, 26, 28, 30}, {16, 20, 24, 28})) {
    // The textbook rungs make 32 and 8 passes of three kernels: up to 2^24 keys.
    if (s.wants_type("u32", default_types)) {
      sort_case<std::uint32_t, void>(s, n, {0, 0, false, n <= (std::size_t{1} << 24)});
      sort_case<std::uint32_t, void>(s, n, {0, 0, true, false});
      sort_case<std::uint32_t, void>(s, n, {0, 16, false, false});
      sort_case<std::uint32_t, std::uint32_t>(s, n, {});
    }
    if (s.wants_type("f32", default_types)) sort_case<float, void>(s, n, {});
    if (s.wants_type("u64", default_types)) {
      sort_case<std::uint64_t, void>(s, n, {});
      sort_case<std::uint64_t, std::uint32_t>(s, n, {});
      sort_case<std::int64_t, void>(s, n, {0, 0, false, false, 24});
    }
    if (s.wants_type("f64", default_types)) sort_case<double, void>(s, n, {});
    if (s.wants_type("u8", default_types)) sort_case<std::uint8_t, void>(s, n, {});
    if (s.wants_type("u16", default_types)) sort_case<std::uint16_t, void>(s, n, {});
    if (s.wants_type("i32", default_types)) sort_case<std::int32_t, void>(s, n, {});
    if (s.wants_type("i64", default_types)) sort_case<std::int64_t, void>(s, n, {});
    // The bitonic rung makes about log2(length)^2 / 2 steps over every key: up to 2^24 keys.
    if (s.wants_type("u32", default_types)) {
      for (std::size_t length : {16, 100, 1000, 10000}) {
        if (length <= n && n < (std::size_t{1} << 31))
          segmented_sort_case(s, n, length, n <= (std::size_t{1} << 24));
      }
    }
    // Top-k in every run, quick ones too, unless the types asked for leave f32 out; the
    // sort-then-take rung up to 2^28 keys (its sort's buffers beside CUB's).
    if (s.wants_type("f32", std::vector<std::string>{"f32"})) {
      for (std::size_t k : {16, 1000})
        if (k <= n && n < (std::size_t{1} << 31)) top_k_case(s, n, k, n <= (std::size_t{1} << 28));
      // Rows of logits: a vocabulary of 32,768 or 131,072, the sampler's k; and short rows,
      // a router's or a neighbour search's scores (a warp a row where they are as many as
      // the SMs, a cluster a row at 2^16).
      for (const auto& [cols, k] : {std::pair<std::size_t, std::size_t>{32768, 50},
                                    std::pair<std::size_t, std::size_t>{131072, 1000},
                                    std::pair<std::size_t, std::size_t>{1024, 8}})
        if (cols <= n && n < (std::size_t{1} << 31)) top_k_batched_case(s, n, cols, k);
    }
  }
}

}  // namespace ppat_bench
