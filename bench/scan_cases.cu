// Scan: the production scan and the textbook rungs beside cub::DeviceScan, sums of 1-, 2-,
// 4- and 8-byte types; the scan by key beside CUB's.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <cub/device/device_scan.cuh>

#include "harness.hpp"
#include "type_names.hpp"

namespace ppat_bench {
namespace {

template <class T>
void scan_case(session& s, std::size_t n, bool exclusive) {
  const cudaStream_t stream = s.stream();
  const std::string type = type_name<T>();
  const int sets = s.rotation_sets(2.0 * n * sizeof(T));
  std::vector<device_array<T>> in(sets), out(sets);
  for (int k = 0; k < sets; ++k) {
    in[k] = device_array<T>(n);
    out[k] = device_array<T>(n);
    const double range = std::is_integral_v<T> ? 100 : 1;
    fill_uniform(in[k].data(), n, -range, range, 1000 + k);
  }

  // CUB's two-phase call: temporary storage sized and allocated once, outside the timing.
  const auto cub_scan = [&](void* temp, std::size_t& temp_bytes, int k) {
    return exclusive ? cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in[k].data(), out[k].data(),
                                                     n, stream)
                     : cub::DeviceScan::InclusiveSum(temp, temp_bytes, in[k].data(), out[k].data(),
                                                     n, stream);
  };
  std::size_t temp_bytes = 0;
  check(cub_scan(nullptr, temp_bytes, 0), "cub::DeviceScan (size query)");
  device_array<unsigned char> temp(temp_bytes);
  device_array<T> expected(n);
  check(cub_scan(temp.data(), temp_bytes, 0), "cub::DeviceScan");
  check(cudaMemcpyAsync(expected.data(), out[0].data(), n * sizeof(T), cudaMemcpyDeviceToDevice,
                        stream),
        "cudaMemcpyAsync");

  bench_case c;
  c.pattern = "scan";
  c.label = std::string(exclusive ? "exclusive " : "inclusive ") + type;
  c.type = type;
  c.n = n;
  c.bytes = 2.0 * n * sizeof(T);
  c.sets = sets;
  c.copy_bytes = double(n) * sizeof(T);
  c.baseline = exclusive ? "cub::DeviceScan::ExclusiveSum" : "cub::DeviceScan::InclusiveSum";

  // Float sums differ with the combination order, so only integer outputs are compared.
  std::function<bool()> matches_cub;
  if constexpr (std::is_integral_v<T>) {
    matches_cub = [&] {
      return count_differences(out[0].data(), expected.data(), c.bytes / 2) == 0;
    };
  }
  c.variants.push_back({c.baseline,
                        [&](int k) {
                          std::size_t bytes = temp_bytes;
                          check(cub_scan(temp.data(), bytes, k), c.baseline.c_str());
                        },
                        nullptr});
  namespace tb = ppat::textbook;
  if (exclusive) {
    c.variants.push_back({"ppat::exclusive_scan",
                          [&](int k) {
                            ppat::exclusive_scan(in[k].data(), out[k].data(), n, T{}, ppat::plus{},
                                                 stream);
                          },
                          matches_cub});
    c.variants.push_back({"textbook::hillis_steele_exclusive_scan",
                          [&](int k) {
                            tb::hillis_steele_exclusive_scan(in[k].data(), out[k].data(), n, T{},
                                                             ppat::plus{}, stream);
                          },
                          matches_cub});
    c.variants.push_back({"textbook::blelloch_exclusive_scan",
                          [&](int k) {
                            tb::blelloch_exclusive_scan(in[k].data(), out[k].data(), n, T{},
                                                        ppat::plus{}, stream);
                          },
                          matches_cub});
  } else {
    c.variants.push_back(
        {"ppat::inclusive_scan",
         [&](int k) { ppat::inclusive_scan(in[k].data(), out[k].data(), n, ppat::plus{}, stream); },
         matches_cub});
    // Both buffers one item past a 16-byte boundary: item-sized accesses, the same tiles.
    c.variants.push_back({"ppat::inclusive_scan, buffers one item off 16 B",
                          [&](int k) {
                            ppat::inclusive_scan(in[k].data() + 1, out[k].data() + 1, n - 1,
                                                 ppat::plus{}, stream);
                          },
                          nullptr});
    c.variants.push_back({"textbook::hillis_steele_inclusive_scan",
                          [&](int k) {
                            tb::hillis_steele_inclusive_scan(in[k].data(), out[k].data(), n,
                                                             ppat::plus{}, stream);
                          },
                          matches_cub});
    c.variants.push_back({"textbook::blelloch_inclusive_scan",
                          [&](int k) {
                            tb::blelloch_inclusive_scan(in[k].data(), out[k].data(), n,
                                                        ppat::plus{}, stream);
                          },
                          matches_cub});
  }
  s.run(c);
}

// i32 keys in runs of 1000, f32 values: 12 bytes an item.
void scan_by_key_case(session& s, std::size_t n, bool exclusive) {
  using K = std::int32_t;
  using T = float;
  const cudaStream_t stream = s.stream();
  const int sets = s.rotation_sets(double(n) * (sizeof(K) + 2 * sizeof(T)));
  std::vector<device_array<K>> keys(sets);
  std::vector<device_array<T>> in(sets), out(sets);
  for (int k = 0; k < sets; ++k) {
    keys[k] = device_array<K>(n);
    in[k] = device_array<T>(n);
    out[k] = device_array<T>(n);
    fill_runs(keys[k].data(), n, 1000, 2000 + k);
    fill_uniform(in[k].data(), n, -1.0, 1.0, 3000 + k);
  }
  const auto cub_scan = [&](void* temp, std::size_t& temp_bytes, int k) {
    return exclusive ? cub::DeviceScan::ExclusiveSumByKey(temp, temp_bytes, keys[k].data(),
                                                          in[k].data(), out[k].data(), n,
                                                          cuda::std::equal_to<>{}, stream)
                     : cub::DeviceScan::InclusiveSumByKey(temp, temp_bytes, keys[k].data(),
                                                          in[k].data(), out[k].data(), n,
                                                          cuda::std::equal_to<>{}, stream);
  };
  std::size_t temp_bytes = 0;
  check(cub_scan(nullptr, temp_bytes, 0), "cub::DeviceScan (size query)");
  device_array<unsigned char> temp(temp_bytes);

  bench_case c;
  c.pattern = "scan";
  c.label = std::string(exclusive ? "exclusive " : "inclusive ") + "by key i32/f32";
  c.type = "f32";
  c.n = n;
  c.bytes = double(n) * (sizeof(K) + 2 * sizeof(T));
  c.sets = sets;
  c.copy_bytes = double(n) * sizeof(T);
  c.baseline =
      exclusive ? "cub::DeviceScan::ExclusiveSumByKey" : "cub::DeviceScan::InclusiveSumByKey";
  c.variants.push_back({c.baseline,
                        [&](int k) {
                          std::size_t bytes = temp_bytes;
                          check(cub_scan(temp.data(), bytes, k), c.baseline.c_str());
                        },
                        nullptr});
  c.variants.push_back({exclusive ? "ppat::exclusive_scan_by_key" : "ppat::inclusive_scan_by_key",
                        [&](int k) {
                          if (exclusive) {
                            ppat::exclusive_scan_by_key(keys[k].data(), in[k].data(), out[k].data(),
                                                        n, T{}, ppat::plus{}, stream);
                          } else {
                            ppat::inclusive_scan_by_key(keys[k].data(), in[k].data(), out[k].data(),
                                                        n, ppat::plus{}, stream);
                          }
                        },
                        nullptr});
  s.run(c);
}

}  // namespace

void bench_scan(session& s) {
  if (!s.wants_pattern("scan")) return;
  const std::vector<std::string> default_types =
      s.opts().quick ? std::vector<std::string>{"i32"}
                     : std::vector<std::string>{"i32", "f32", "i64", "f64", "u8", "i16"};
  for (bool exclusive : {false, true}) {
    for (std::size_t n : s.sizes({16, 18, 20, 22, 24, 26, 28, 30}, {16, 20, 24, 28})) {
      if (s.wants_type("i32", default_types)) scan_case<std::int32_t>(s, n, exclusive);
      if (s.wants_type("f32", default_types)) scan_case<float>(s, n, exclusive);
      if (s.wants_type("i64", default_types)) scan_case<std::int64_t>(s, n, exclusive);
      if (s.wants_type("f64", default_types)) scan_case<double>(s, n, exclusive);
      if (s.wants_type("u8", default_types)) scan_case<std::uint8_t>(s, n, exclusive);
      if (s.wants_type("i16", default_types)) scan_case<std::int16_t>(s, n, exclusive);
      if (s.wants_type("u32", default_types)) scan_case<std::uint32_t>(s, n, exclusive);
      if (s.wants_type("u64", default_types)) scan_case<std::uint64_t>(s, n, exclusive);
      if (s.wants_type("u16", default_types)) scan_case<std::uint16_t>(s, n, exclusive);
      // i32 keys, f32 values.
      if (s.wants_type("i32", default_types)) scan_by_key_case(s, n, exclusive);
    }
  }
}

}  // namespace ppat_bench
