// The production scans and the textbook rungs against the host reference: every size class, several
// types and operators (one of them non-commutative), in place, init values, streams, graph capture,
// bad input. Suites: `scan_rungs` runs every rung (the production scan and both textbook
// ones) through the same checks; `scan` holds what only the production scan promises.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::device_buffer;

using ppat_test::affine;
using ppat_test::exact_fractions;
using then = ppat_test::then;

enum class rung { single_pass, hillis_steele, blelloch };
enum class kind { inclusive, exclusive };

template <class T, class Op>
void run_scan(rung r, kind k, const T* in, T* out, std::size_t n, T init, Op op,
              cudaStream_t stream = 0) {
  namespace tb = ppat::textbook;
  if (r == rung::single_pass) {
    if (k == kind::inclusive)
      ppat::inclusive_scan(in, out, n, op, stream);
    else
      ppat::exclusive_scan(in, out, n, init, op, stream);
  } else if (r == rung::hillis_steele) {
    if (k == kind::inclusive)
      tb::hillis_steele_inclusive_scan(in, out, n, op, stream);
    else
      tb::hillis_steele_exclusive_scan(in, out, n, init, op, stream);
  } else {
    if (k == kind::inclusive)
      tb::blelloch_inclusive_scan(in, out, n, op, stream);
    else
      tb::blelloch_exclusive_scan(in, out, n, init, op, stream);
  }
}

const char* name(rung r) {
  switch (r) {
    case rung::single_pass:
      return "single_pass";
    case rung::hillis_steele:
      return "hillis_steele";
    case rung::blelloch:
      return "blelloch";
  }
  return "?";
}
const char* name(kind k) {
  return k == kind::inclusive ? "inclusive" : "exclusive";
}

template <class T, class Op>
std::vector<T> reference(kind k, const std::vector<T>& in, T init, Op op) {
  return k == kind::inclusive ? ppat_reference::inclusive_scan(in, op)
                              : ppat_reference::exclusive_scan(in, init, op);
}

// Runs one scan on `in` and checks every output element against the host reference.
template <class T, class Op>
void check_scan(rung r, kind k, const std::vector<T>& in, T init, Op op, bool in_place = false) {
  if (ppat_test::over_item_budget(in.size())) return;
  SCOPED_TRACE(std::string(name(r)) + " " + name(k) + " n=" + std::to_string(in.size()) +
               (in_place ? " in place" : ""));
  device_buffer<T> input(in, /*guard=*/64);
  device_buffer<T> separate(in_place ? 0 : in.size(), /*guard=*/64);
  device_buffer<T>& output = in_place ? input : separate;
  if (!in_place) output.poison();
  run_scan(r, k, input.data(), output.data(), in.size(), init, op);
  ppat_test::expect_no_cuda_error();
  const std::vector<T> expected = reference(k, in, init, op);
  const long long bad = ppat_test::first_mismatch(output.download(), expected);
  EXPECT_EQ(bad, -1) << "first wrong element";
  EXPECT_TRUE(input.guards_intact() && output.guards_intact()) << "write outside the buffer";
}

constexpr rung rungs[] = {rung::single_pass, rung::hillis_steele, rung::blelloch};
constexpr kind kinds[] = {kind::inclusive, kind::exclusive};

// Tile boundaries of the textbook rungs (1024 items, at the first and second level of tile
// totals) and of the single-pass scan (8192 i32 items; look-back windows of 32 tiles, and
// the 128 tiles a waiting warp keeps), primes, and sizes just around them.
const std::size_t boundary_sizes[] = {1,
                                      2,
                                      31,
                                      32,
                                      33,
                                      511,
                                      512,
                                      513,
                                      1023,
                                      1024,
                                      1025,
                                      2047,
                                      2048,
                                      2049,
                                      65537,
                                      1000003,
                                      1048575,
                                      1048576,
                                      1048577,
                                      1048579,
                                      2097152,
                                      2097153,
                                      3 * 1048576 + 17,
                                      8191,
                                      8192,
                                      8193,
                                      262143,
                                      262145,
                                      8388607,
                                      8388608,
                                      8388609,
                                      2 * 8388608 + 8193};
const std::size_t type_sizes[] = {1, 33, 1024, 1025, 65521, 1048579};

TEST(scan_rungs, i32_plus_at_every_boundary) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : boundary_sizes) {
    const auto in = ppat_test::random_integers<int>(n, -1000, 1000);
    const int init = ppat_test::random_integers<int>(1, -50, 50)[0];
    for (rung r : rungs) {
      for (kind k : kinds)
        check_scan(r, k, in, init, ppat::plus{});
    }
  }
}

// 1- and 2-byte items travel packed, 16 and 8 to a vector, and their partial last tile
// moves whole vectors up to n (type_sizes end mid-vector and mid-tile).
TEST(scan_rungs, u8_and_i16_plus_wrap_like_the_host) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : type_sizes) {
    const auto bytes = ppat_test::random_integers<std::uint8_t>(n, 0, 255);
    const auto shorts = ppat_test::random_integers<std::int16_t>(n, -32768, 32767);
    for (rung r : rungs) {
      for (kind k : kinds) {
        check_scan<std::uint8_t>(r, k, bytes, 7, ppat::plus{});
        check_scan<std::int16_t>(r, k, shorts, -9, ppat::plus{});
      }
    }
  }
}

TEST(scan_rungs, i32_minimum_and_u32_maximum) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : type_sizes) {
    const auto signed_in = ppat_test::random_integers<int>(n, -1000000, 1000000);
    const auto unsigned_in = ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll);
    for (rung r : rungs) {
      for (kind k : kinds) {
        check_scan(r, k, signed_in, 0, ppat::minimum{});
        check_scan<std::uint32_t>(r, k, unsigned_in, 12345u, ppat::maximum{});
      }
    }
  }
}

TEST(scan_rungs, i64_plus) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : type_sizes) {
    const auto in = ppat_test::random_integers<std::int64_t>(n, -(1ll << 40), 1ll << 40);
    for (rung r : rungs) {
      for (kind k : kinds)
        check_scan<std::int64_t>(r, k, in, -3, ppat::plus{});
    }
  }
}

TEST(scan_rungs, f32_and_f64_plus_exactly) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : type_sizes) {
    const auto floats = exact_fractions<float>(n, 1024, 1.0 / 8);
    const auto doubles = exact_fractions<double>(n, 1 << 20, 1.0 / 1024);
    for (rung r : rungs) {
      for (kind k : kinds) {
        check_scan(r, k, floats, 0.5f, ppat::plus{});
        check_scan(r, k, doubles, -0.25, ppat::plus{});
      }
    }
  }
}

TEST(scan_rungs, non_commutative_12_byte_struct) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : type_sizes) {
    const auto a = ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll);
    const auto b = ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll);
    std::vector<affine> in(n);
    for (std::size_t i = 0; i < n; ++i)
      in[i] = {a[i] | 1u, b[i], 1u};
    for (rung r : rungs) {
      for (kind k : kinds)
        check_scan(r, k, in, affine{3u, 5u, 0u}, then{});
    }
  }
}

TEST(scan_rungs, in_place) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{1}, std::size_t{1025}, std::size_t{1000003}}) {
    const auto in = ppat_test::random_integers<int>(n, -1000, 1000);
    for (rung r : rungs) {
      for (kind k : kinds)
        check_scan(r, k, in, 11, ppat::plus{}, /*in_place=*/true);
    }
  }
}

// Thousands of tiles, so look-backs walk many windows, for every tile shape: 16 items a
// vector (u8, 24576-item tiles), 8 (i16, 12288), 2 (i64, 4096), and the unvectorized 12-byte
// struct (2048).
TEST(scan, crosses_many_lookback_groups) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 5000003;
  const auto bytes = ppat_test::random_integers<std::uint8_t>(70000007, 0, 255);
  const auto shorts = ppat_test::random_integers<std::int16_t>(n, -32768, 32767);
  const auto wide = ppat_test::random_integers<std::int64_t>(n, -(1ll << 40), 1ll << 40);
  const auto a = ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll);
  std::vector<affine> maps(n);
  for (std::size_t i = 0; i < n; ++i)
    maps[i] = {a[i] | 1u, a[n - 1 - i], 1u};
  for (kind k : kinds) {
    check_scan<std::uint8_t>(rung::single_pass, k, bytes, 1, ppat::plus{});
    check_scan<std::int16_t>(rung::single_pass, k, shorts, -1, ppat::plus{});
    check_scan<std::int64_t>(rung::single_pass, k, wide, 5, ppat::plus{});
    check_scan(rung::single_pass, k, maps, affine{7u, 1u, 0u}, then{});
  }
}

// 1- and 2-byte items take 4-row tiles while 6-row ones would not fill the GPU once: sizes
// around the switch, which depends on the device's SM count, and around 4-row tiles.
TEST(scan, u8_and_i16_on_both_sides_of_the_small_input_shape) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  int device = 0, sm_count = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const auto sizes_for = [&](auto item) {
    using T = decltype(item);
    constexpr int vec = 16 / sizeof(T);
    using ppat::detail::scan_tile_of;
    const std::size_t small_tile =
        scan_tile_of<ppat::detail::scan_small_input_tuning, T, vec>::tile_items;
    const std::size_t last_small = std::size_t(std::max(sm_count - 1, 1)) *
                                   scan_tile_of<ppat::detail::scan_tuning<T>, T, vec>::tile_items;
    return std::vector<std::size_t>{small_tile - 1, small_tile + 1, 3 * small_tile + 17,
                                    last_small - 7, last_small,     last_small + 1,
                                    last_small + 9};
  };
  for (std::size_t n : sizes_for(std::uint8_t{})) {
    const auto in = ppat_test::random_integers<std::uint8_t>(n, 0, 255);
    for (kind k : kinds)
      check_scan<std::uint8_t>(rung::single_pass, k, in, 3, ppat::plus{});
  }
  for (std::size_t n : sizes_for(std::int16_t{})) {
    const auto in = ppat_test::random_integers<std::int16_t>(n, -32768, 32767);
    for (kind k : kinds)
      check_scan<std::int16_t>(rung::single_pass, k, in, -5, ppat::plus{});
  }
}

// 2x2 matrices of 32-bit wraparound integers under multiplication: 16 bytes, too large to
// travel with a look-back flag in one word, so they take the flag-then-value path.
struct matrix2 {
  std::uint32_t a, b, c, d;
};
struct multiply {
  __host__ __device__ matrix2 operator()(const matrix2& x, const matrix2& y) const {
    return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c,
            x.c * y.b + x.d * y.d};
  }
};

TEST(scan, sixteen_byte_non_commutative_items) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{33}, std::size_t{2049}, std::size_t{3000017}}) {
    const auto v = ppat_test::random_integers<std::uint32_t>(4 * n, 0, 0xFFFFFFFFll);
    std::vector<matrix2> in(n);
    for (std::size_t i = 0; i < n; ++i)
      in[i] = {v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]};
    for (kind k : kinds)
      check_scan(rung::single_pass, k, in, matrix2{1u, 2u, 3u, 4u}, multiply{});
  }
  // And at addresses 4 bytes past 16-byte alignment, all that alignof(matrix2) promises.
  const std::size_t n = 100003;
  const auto v = ppat_test::random_integers<std::uint32_t>(4 * n + 1, 0, 0xFFFFFFFFll);
  device_buffer<std::uint32_t> input(v), output(4 * n + 1);
  const auto* in = reinterpret_cast<const matrix2*>(input.data() + 1);
  auto* out = reinterpret_cast<matrix2*>(output.data() + 1);
  std::vector<matrix2> host(n);
  std::memcpy(host.data(), v.data() + 1, n * sizeof(matrix2));
  for (kind k : kinds) {
    output.poison();
    run_scan(rung::single_pass, k, in, out, n, matrix2{1u, 0u, 0u, 1u}, multiply{});
    ppat_test::expect_no_cuda_error();
    const auto all = output.download();
    std::vector<matrix2> got(n);
    std::memcpy(got.data(), all.data() + 1, n * sizeof(matrix2));
    EXPECT_EQ(
        ppat_test::first_mismatch(got, reference(k, host, matrix2{1u, 0u, 0u, 1u}, multiply{})), -1)
        << name(k) << " unaligned";
  }
}

// Items too large to keep four look-back windows in shared memory: 48 bytes keep two, 136
// bytes one (a warp waiting past it polls its window until an inclusive prefix appears).
// An affine map composes non-commutatively; the extra words add up.
template <int ExtraWords>
struct heavy_map {
  std::uint32_t a, b;
  std::uint32_t extra[ExtraWords];
};
struct compose_heavy {
  template <int ExtraWords>
  __host__ __device__ heavy_map<ExtraWords> operator()(const heavy_map<ExtraWords>& f,
                                                       const heavy_map<ExtraWords>& g) const {
    heavy_map<ExtraWords> h{g.a * f.a, g.a * f.b + g.b, {}};
    for (int w = 0; w < ExtraWords; ++w)
      h.extra[w] = f.extra[w] + g.extra[w];
    return h;
  }
};

template <int ExtraWords>
void check_heavy_items(std::size_t n) {
  const auto v = ppat_test::random_integers<std::uint32_t>((2 + ExtraWords) * n, 0, 0xFFFFFFFFll);
  std::vector<heavy_map<ExtraWords>> in(n);
  for (std::size_t i = 0; i < n; ++i)
    std::memcpy(&in[i], &v[(2 + ExtraWords) * i], sizeof(heavy_map<ExtraWords>));
  heavy_map<ExtraWords> init{3u, 5u, {}};
  for (int w = 0; w < ExtraWords; ++w)
    init.extra[w] = 7u * w;
  // Called directly, not through run_scan: the textbook rungs hold 1024 items in shared
  // memory, which items this large overflow.
  device_buffer<heavy_map<ExtraWords>> input(in, /*guard=*/64), output(n, /*guard=*/64);
  for (kind k : kinds) {
    SCOPED_TRACE(std::string(name(k)) + " " + std::to_string(sizeof(init)) +
                 "-byte items, n=" + std::to_string(n));
    output.poison();
    if (k == kind::inclusive)
      ppat::inclusive_scan(input.data(), output.data(), n, compose_heavy{});
    else
      ppat::exclusive_scan(input.data(), output.data(), n, init, compose_heavy{});
    ppat_test::expect_no_cuda_error();
    EXPECT_EQ(ppat_test::first_mismatch(output.download(), reference(k, in, init, compose_heavy{})),
              -1);
    EXPECT_TRUE(input.guards_intact() && output.guards_intact()) << "write outside the buffer";
  }
}

TEST(scan, large_items_keep_fewer_lookback_windows) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  static_assert(sizeof(heavy_map<10>) == 48 && sizeof(heavy_map<32>) == 136);
  for (std::size_t n : {std::size_t{1}, std::size_t{257}, std::size_t{500009}}) {
    check_heavy_items<10>(n);
    check_heavy_items<32>(n);
  }
}

// Scans and reductions reuse the memory ppat keeps with a stream, call after call, with
// flags of 8- and 16-byte words: sizes that grow and shrink, two streams at once, and a
// stream whose memory was released.
TEST(scan, stream_memory_is_reused_across_calls) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  cudaStream_t streams[2];
  for (cudaStream_t& stream : streams)
    PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const affine init{3u, 5u, 0u};
  int call = 0;
  for (std::size_t n : {std::size_t{3000017}, std::size_t{1000}, std::size_t{5000011},
                        std::size_t{70001}, std::size_t{1}}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const cudaStream_t first = streams[call % 2], second = streams[(call + 1) % 2];
    ++call;
    const auto numbers = ppat_test::random_integers<int>(n, -1000, 1000);
    const auto maps = ppat_test::random_affine_maps(n);
    device_buffer<int> numbers_in(numbers), numbers_out(n), sum(1);
    device_buffer<affine> maps_in(maps), maps_out(n);
    numbers_out.poison();
    maps_out.poison();
    sum.poison();
    ppat::inclusive_scan(numbers_in.data(), numbers_out.data(), n, ppat::plus{}, first);
    ppat::exclusive_scan(maps_in.data(), maps_out.data(), n, init, then{}, second);
    ppat::reduce(numbers_in.data(), sum.data(), n, 11, ppat::plus{}, first);
    for (cudaStream_t stream : streams)
      PPAT_CUDA_OK(cudaStreamSynchronize(stream));
    ppat_test::expect_no_cuda_error();
    EXPECT_EQ(ppat_test::first_mismatch(numbers_out.download(),
                                        ppat_reference::inclusive_scan(numbers, ppat::plus{})),
              -1);
    EXPECT_EQ(ppat_test::first_mismatch(maps_out.download(),
                                        ppat_reference::exclusive_scan(maps, init, then{})),
              -1);
    EXPECT_EQ(sum.download()[0], ppat_reference::reduce(numbers, 11, ppat::plus{}));
  }
  for (cudaStream_t stream : streams) {
    ppat::release_stream_memory(stream);
    PPAT_CUDA_OK(cudaStreamDestroy(stream));
  }
  ppat::release_stream_memory();
  check_scan(rung::single_pass, kind::inclusive,
             ppat_test::random_integers<int>(1000003, -1000, 1000), 0, ppat::plus{});
}

// Buffers off 16-byte boundaries: the loads go item by item, and results of up to 4 bytes
// leave a warp row at a time as whole vectors (store_warp_row, core/staged_run.cuh), 8-byte
// ones item by item. Every placement of `in` and `out` gives the exact results, and nothing
// around `out` is written.
template <class T>
void expect_exact_wherever_the_buffers_lie(std::size_t n, long long low, long long high) {
  if (ppat_test::over_item_budget(n)) return;
  SCOPED_TRACE(std::to_string(sizeof(T)) + "-byte items, n=" + std::to_string(n));
  constexpr std::size_t most = 16 / sizeof(T) - 1;  // items short of the next 16 bytes
  const auto in = ppat_test::random_integers<T>(n, low, high);
  device_buffer<T> input(n + most), output(n + most, /*guard=*/64);
  for (std::size_t in_shift : {std::size_t{0}, std::size_t{1}, most}) {
    input.upload(ppat_test::placed_at(in, in_shift, most));
    for (std::size_t out_shift = 0; out_shift <= most; ++out_shift) {
      for (kind k : kinds) {
        output.poison();
        run_scan(rung::single_pass, k, input.data() + in_shift, output.data() + out_shift, n,
                 T(3), ppat::plus{});
        ppat_test::expect_no_cuda_error();
        const auto all = output.download();
        const auto first = all.begin() + std::ptrdiff_t(out_shift);
        const std::vector<T> got(first, first + std::ptrdiff_t(n));
        const auto poisoned = [](T x) {
          unsigned char bytes[sizeof(T)];
          std::memcpy(bytes, &x, sizeof(T));
          return std::all_of(bytes, bytes + sizeof(T),
                             [](unsigned char b) { return b == ppat_test::poison_byte; });
        };
        const std::string where = std::string(name(k)) + ", in " + std::to_string(in_shift) +
                                  " and out " + std::to_string(out_shift) +
                                  " items off 16 bytes";
        EXPECT_EQ(ppat_test::first_mismatch(got, reference(k, in, T(3), ppat::plus{})), -1)
            << where;
        EXPECT_TRUE(std::all_of(all.begin(), first, poisoned) &&
                    std::all_of(first + std::ptrdiff_t(n), all.end(), poisoned) &&
                    output.guards_intact())
            << where << ": written outside out";
      }
    }
  }
}

TEST(scan, unaligned_buffers) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{70001}, std::size_t{1000003}}) {
    expect_exact_wherever_the_buffers_lie<std::int32_t>(n, -1000, 1000);
    expect_exact_wherever_the_buffers_lie<std::uint16_t>(n, 0, 0xFFFF);
    expect_exact_wherever_the_buffers_lie<std::uint8_t>(n, 0, 0xFF);
    expect_exact_wherever_the_buffers_lie<std::int64_t>(n, -1000000000000ll, 1000000000000ll);
  }
}

// Float results are the same bits on every run: the look-back combines in a fixed order.
TEST(scan, float_results_are_deterministic) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 30000001;
  std::uniform_real_distribution<float> pick(-1.0f, 1.0f);
  std::vector<float> in(n);
  for (auto& v : in)
    v = pick(ppat_test::rng());
  device_buffer<float> input(in), first(n), second(n);
  for (kind k : kinds) {
    first.poison();
    second.poison();
    run_scan(rung::single_pass, k, input.data(), first.data(), n, 0.5f, ppat::plus{});
    run_scan(rung::single_pass, k, input.data(), second.data(), n, 0.5f, ppat::plus{});
    ppat_test::expect_no_cuda_error();
    const auto a = first.download();
    EXPECT_EQ(ppat_test::first_mismatch(a, second.download()), -1) << name(k);
    // And close to the double-precision reference: a sum of n terms of size <= 1.
    double running = k == kind::exclusive ? 0.5 : 0.0;
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (k == kind::inclusive) running += in[i];
      worst = std::max(worst, std::abs(double(a[i]) - running));
      if (k == kind::exclusive) running += in[i];
    }
    EXPECT_LT(worst, 1.0) << name(k);
  }
}

// The same float values from buffers of any alignment give the same bits: the tile shape
// and every combination's order depend on n alone, not on which accesses the buffers allow.
template <class T>
void expect_same_bits_at_every_alignment(std::size_t n) {
  if (ppat_test::over_item_budget(n)) return;
  SCOPED_TRACE(std::string(sizeof(T) == 4 ? "f32" : "f64") + " n=" + std::to_string(n));
  const auto values = ppat_test::spread_floats<T>(n);
  constexpr std::size_t most = 16 / sizeof(T) - 1;  // items short of the next 16 bytes
  device_buffer<T> input(n + most), output(n + most);
  struct shifts {
    std::size_t in, out;
  };
  const std::vector<shifts> placements = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {most, 0}, {most, 1}};
  for (kind k : kinds) {
    ppat_test::expect_same_bits_wherever(
        placements,
        [&](shifts at) {
          input.upload(ppat_test::placed_at(values, at.in, most));
          output.poison();
          run_scan(rung::single_pass, k, input.data() + at.in, output.data() + at.out, n, T(0.25),
                   ppat::plus{});
          ppat_test::expect_no_cuda_error();
          const auto all = output.download();
          return std::vector<T>(all.begin() + at.out, all.begin() + at.out + n);
        },
        [&](shifts at) {
          return std::string(name(k)) + ", in " + std::to_string(at.in) + " and out " +
                 std::to_string(at.out) + " items off 16 bytes";
        });
  }
}

TEST(scan, float_bits_do_not_depend_on_alignment) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{5003}, std::size_t{100003}, std::size_t{3000017}}) {
    expect_same_bits_at_every_alignment<float>(n);
    expect_same_bits_at_every_alignment<double>(n);
  }
}

// More than 2^28 items: three levels of tile totals.
TEST(scan_rungs, huge_i32_above_2_pow_28) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 28) + 12347;
  const auto in = ppat_test::random_integers<int>(n, -100, 100);
  check_scan(rung::single_pass, kind::inclusive, in, 0, ppat::plus{});
  check_scan(rung::single_pass, kind::exclusive, in, 9, ppat::plus{}, /*in_place=*/true);
  check_scan(rung::hillis_steele, kind::inclusive, in, 0, ppat::plus{});
  check_scan(rung::blelloch, kind::exclusive, in, 9, ppat::plus{}, /*in_place=*/true);
}

// More than 2^32 items: 64-bit indexing everywhere, in place to fit 4 GiB once.
TEST(scan, huge_u8_above_2_pow_32) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 32) + 4099;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  const auto in = ppat_test::random_integers<std::uint8_t>(n, 0, 255);
  device_buffer<std::uint8_t> data(in, /*guard=*/256);
  ppat::inclusive_scan(data.data(), data.data(), n);
  ppat_test::expect_no_cuda_error();
  auto expected = ppat_reference::inclusive_scan(in, ppat::plus{});
  EXPECT_EQ(ppat_test::first_mismatch(data.download(), expected), -1) << "inclusive";
  ppat::exclusive_scan(data.data(), data.data(), n, std::uint8_t{7});
  ppat_test::expect_no_cuda_error();
  expected = ppat_reference::exclusive_scan(expected, std::uint8_t{7}, ppat::plus{});
  EXPECT_EQ(ppat_test::first_mismatch(data.download(), expected), -1) << "exclusive";
  EXPECT_TRUE(data.guards_intact());
}

TEST(scan_rungs, runs_on_a_non_default_stream) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 200007;
  const auto in = ppat_test::random_integers<int>(n, -1000, 1000);
  device_buffer<int> input(in), output(n);
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (rung r : rungs) {
    output.poison();
    run_scan(r, kind::exclusive, input.data(), output.data(), n, 4, ppat::plus{}, stream);
    PPAT_CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_EQ(ppat_test::first_mismatch(output.download(),
                                        ppat_reference::exclusive_scan(in, 4, ppat::plus{})),
              -1)
        << name(r);
  }
  ppat::release_stream_memory(stream);
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
}

// Temporary memory and every launch must be capturable; the graph then replays the scan.
TEST(scan_rungs, captures_into_a_cuda_graph) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 2 * 1048576 + 5;  // three levels: the deepest recursion
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  auto in = ppat_test::random_integers<int>(n, -1000, 1000);
  device_buffer<int> input(in), output(n);
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (rung r : rungs) {
    SCOPED_TRACE(name(r));
    ppat_test::capture_and_replay(
        stream,
        [&] {
          run_scan(r, kind::inclusive, input.data(), output.data(), n, 0, ppat::plus{}, stream);
        },
        [&](int) {
          in = ppat_test::random_integers<int>(n, -1000, 1000);
          input.upload(in);
          output.poison();
        },
        [&](int) {
          EXPECT_EQ(ppat_test::first_mismatch(output.download(),
                                              ppat_reference::inclusive_scan(in, ppat::plus{})),
                    -1);
        });
  }
  ppat::release_stream_memory(stream);
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
}

// Argument checks come before any CUDA call, so these run without a GPU.
TEST(scan_rungs_arguments, empty_input_is_a_no_op) {
  for (rung r : rungs) {
    for (kind k : kinds) {
      EXPECT_NO_THROW(run_scan<int>(r, k, nullptr, nullptr, 0, 0, ppat::plus{}));
    }
  }
}

TEST(scan_rungs_arguments, null_and_overlapping_buffers_are_rejected) {
  int* fake = reinterpret_cast<int*>(std::uintptr_t{1} << 20);  // never dereferenced
  for (rung r : rungs) {
    for (kind k : kinds) {
      EXPECT_THROW(run_scan<int>(r, k, nullptr, fake, 10, 0, ppat::plus{}), std::invalid_argument);
      EXPECT_THROW(run_scan<int>(r, k, fake, nullptr, 10, 0, ppat::plus{}), std::invalid_argument);
      EXPECT_THROW(run_scan<int>(r, k, fake, fake + 1, 10, 0, ppat::plus{}), std::invalid_argument);
      EXPECT_THROW(run_scan<int>(r, k, fake + 9, fake, 10, 0, ppat::plus{}), std::invalid_argument);
    }
  }
}

TEST(scan_rungs_arguments, message_names_function_and_argument) {
  try {
    ppat::textbook::blelloch_exclusive_scan<int>(nullptr, nullptr, 5);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ppat::textbook::blelloch_exclusive_scan"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'in'"), std::string::npos) << e.what();
  }
}

}  // namespace
