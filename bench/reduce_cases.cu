// Reduce: the production reduce and the textbook ladder beside cub::DeviceReduce::Sum.
// Bytes that must move are the input, read once.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <cub/device/device_reduce.cuh>

#include "harness.hpp"
#include "type_names.hpp"

namespace ppat_bench {
namespace {

template <class T>
void reduce_case(session& s, std::size_t n) {
  const cudaStream_t stream = s.stream();
  const std::string type = type_name<T>();
  const int sets = s.rotation_sets(double(n) * sizeof(T));
  std::vector<device_array<T>> in(sets);
  for (int k = 0; k < sets; ++k) {
    in[k] = device_array<T>(n);
    const double range = std::is_integral_v<T> ? 100 : 1;
    fill_uniform(in[k].data(), n, -range, range, 5000 + k);
  }
  device_array<T> result(1), expected(1);

  std::size_t temp_bytes = 0;
  check(cub::DeviceReduce::Sum(nullptr, temp_bytes, in[0].data(), result.data(), n, stream),
        "cub::DeviceReduce::Sum (size query)");
  device_array<unsigned char> temp(temp_bytes);
  check(cub::DeviceReduce::Sum(temp.data(), temp_bytes, in[0].data(), expected.data(), n, stream),
        "cub::DeviceReduce::Sum");

  bench_case c;
  c.pattern = "reduce";
  c.label = "sum " + type;
  c.type = type;
  c.n = n;
  c.bytes = double(n) * sizeof(T);
  c.sets = sets;
  // The copy reads and writes half the bytes, so that it moves as many as the reduce reads.
  c.copy_bytes = double(n / 2) * sizeof(T);
  c.baseline = "cub::DeviceReduce::Sum";
  std::function<bool()> matches_cub;
  if constexpr (std::is_integral_v<T>) {
    matches_cub = [&] { return count_differences(result.data(), expected.data(), sizeof(T)) == 0; };
  }
  c.variants.push_back(
      {c.baseline,
       [&](int k) {
         std::size_t bytes = temp_bytes;
         check(cub::DeviceReduce::Sum(temp.data(), bytes, in[k].data(), result.data(), n, stream),
               c.baseline.c_str());
       },
       nullptr});
  c.variants.push_back(
      {"ppat::reduce",
       [&](int k) { ppat::reduce(in[k].data(), result.data(), n, T{}, ppat::plus{}, stream); },
       matches_cub});
  // The textbook ladder, each rung one step from the last (include/ppat/textbook/reduce.cuh).
  // Integer sums are exact whatever the order, so they must match CUB's bits.
  namespace tb = ppat::textbook;
  const auto rung = [&](const char* name, auto reduce) {
    c.variants.push_back(
        {name, [&, reduce](int k) { reduce(in[k].data(), result.data(), n); }, matches_cub});
  };
  rung("textbook::interleaved_reduce", [&](const T* a, T* b, std::size_t m) {
    tb::interleaved_reduce(a, b, m, T{}, ppat::plus{}, stream);
  });
  rung("textbook::sequential_reduce", [&](const T* a, T* b, std::size_t m) {
    tb::sequential_reduce(a, b, m, T{}, ppat::plus{}, stream);
  });
  rung("textbook::first_add_reduce", [&](const T* a, T* b, std::size_t m) {
    tb::first_add_reduce(a, b, m, T{}, ppat::plus{}, stream);
  });
  rung("textbook::warp_shuffle_reduce", [&](const T* a, T* b, std::size_t m) {
    tb::warp_shuffle_reduce(a, b, m, T{}, ppat::plus{}, stream);
  });
  rung("textbook::vector_reduce", [&](const T* a, T* b, std::size_t m) {
    tb::vector_reduce(a, b, m, T{}, ppat::plus{}, stream);
  });
  // The input one item past a 16-byte boundary: item-sized accesses, the same tiles.
  c.variants.push_back({"ppat::reduce, input one item off 16 B",
                        [&](int k) {
                          ppat::reduce(in[k].data() + 1, result.data(), n - 1, T{}, ppat::plus{},
                                       stream);
                        },
                        nullptr});
  s.run(c);
}

}  // namespace

void bench_reduce(session& s) {
  if (!s.wants_pattern("reduce")) return;
  const std::vector<std::string> default_types =
      s.opts().quick ? std::vector<std::string>{"i32"}
                     : std::vector<std::string>{"i32", "f32", "i64", "f64"};
  for (std::size_t n : s.sizes({16, 18, 20, 22, 24, 26, 28, 30}, {16, 20, 24, 28})) {
    if (s.wants_type("i32", default_types)) reduce_case<std::int32_t>(s, n);
    if (s.wants_type("f32", default_types)) reduce_case<float>(s, n);
    if (s.wants_type("i64", default_types)) reduce_case<std::int64_t>(s, n);
    if (s.wants_type("f64", default_types)) reduce_case<double>(s, n);
    if (s.wants_type("u32", default_types)) reduce_case<std::uint32_t>(s, n);
    if (s.wants_type("u64", default_types)) reduce_case<std::uint64_t>(s, n);
    if (s.wants_type("u8", default_types)) reduce_case<std::uint8_t>(s, n);
    if (s.wants_type("u16", default_types)) reduce_case<std::uint16_t>(s, n);
    if (s.wants_type("i16", default_types)) reduce_case<std::int16_t>(s, n);
  }
}

}  // namespace ppat_bench
