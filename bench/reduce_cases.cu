// Reduce: the production reduce and the textbook ladder beside cub::DeviceReduce::Sum, and
// the segmented reduce beside cub::DeviceSegmentedReduce::Sum. Bytes that must move are the
// input, read once (and for segments, their offsets read and their results written).
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>

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

// One thread a segment, adding its items in order: what the segmented cells are checked
// against, rather than the peer being timed.
__global__ void segment_sums_kernel(const std::int32_t* in, const int* offsets,
                                    std::size_t segments, std::int32_t* sums) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < segments;
       i += stride) {
    std::uint32_t total = 0;
    for (int j = offsets[i]; j < offsets[i + 1]; ++j)
      total += std::uint32_t(in[j]);
    sums[i] = std::int32_t(total);
  }
}

// i32 sums of segments of `length` items (n rounded down to whole segments), from one
// offset array: CUB's DeviceSegmentedReduce::Sum, ppat's segmented_reduce, and ppat's
// reduce_batched on the same items as rows.
void segmented_reduce_case(session& s, std::size_t n, std::size_t length) {
  using item = std::int32_t;
  const cudaStream_t stream = s.stream();
  const std::size_t segments = n / length;
  n = segments * length;
  const double bytes = double(n) * sizeof(item) + double(segments) * (sizeof(int) + sizeof(item));
  const int sets = s.rotation_sets(bytes);
  std::vector<device_array<item>> in(sets);
  for (int k = 0; k < sets; ++k) {
    in[k] = device_array<item>(n);
    fill_uniform(in[k].data(), n, -100, 100, 5100 + k);
  }
  const device_array<int> offsets = fixed_length_offsets(segments, length);
  device_array<item> out(segments), expected(segments);
  segment_sums_kernel<<<1024, 256, 0, stream>>>(in[0].data(), offsets.data(), segments,
                                                expected.data());
  check(cudaGetLastError(), "segment_sums_kernel");
  check(cudaStreamSynchronize(stream), "segment_sums_kernel");
  std::size_t temp_bytes = 0;
  check(cub::DeviceSegmentedReduce::Sum(nullptr, temp_bytes, in[0].data(), out.data(),
                                        std::int64_t(segments), offsets.data(), offsets.data() + 1,
                                        stream),
        "cub::DeviceSegmentedReduce::Sum (size query)");
  device_array<unsigned char> temp(temp_bytes + 1);
  const auto matches_reference = [&] {
    return count_differences(out.data(), expected.data(), segments * sizeof(item)) == 0;
  };

  bench_case c;
  c.pattern = "reduce";
  c.label = "segmented sum i32, segments of " + std::to_string(length);
  c.type = "i32";
  c.n = n;
  c.bytes = bytes;
  c.sets = sets;
  c.copy_bytes = bytes / 2;
  c.baseline = "cub::DeviceSegmentedReduce::Sum";
  c.variants.push_back({c.baseline,
                        [&](int k) {
                          std::size_t b = temp_bytes;
                          check(cub::DeviceSegmentedReduce::Sum(temp.data(), b, in[k].data(),
                                                                out.data(), std::int64_t(segments),
                                                                offsets.data(), offsets.data() + 1,
                                                                stream),
                                c.baseline.c_str());
                        },
                        nullptr});
  c.variants.push_back({"ppat::segmented_reduce",
                        [&](int k) {
                          ppat::segmented_reduce(in[k].data(), out.data(), segments, offsets.data(),
                                                 offsets.data() + 1, item{}, ppat::plus{}, stream);
                        },
                        matches_reference});
  c.variants.push_back({"ppat::reduce_batched",
                        [&](int k) {
                          ppat::reduce_batched(in[k].data(), out.data(), segments, length, item{},
                                               ppat::plus{}, stream);
                        },
                        matches_reference});
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
    if (s.wants_type("i32", default_types)) {
      for (std::size_t length : {4, 16, 100, 1000, 10000, 1000000})
        if (length <= n && n < (std::size_t{1} << 31)) segmented_reduce_case(s, n, length);
    }
  }
}

}  // namespace ppat_bench
