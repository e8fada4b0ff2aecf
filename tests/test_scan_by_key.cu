// The production scans by key against the host reference: segments of length 1, random
// lengths, one segment, keys that repeat out of order; several key and value types and
// operators (one non-commutative), in place, init values, streams, graph capture, bad input.
#include <ppat/ppat.cuh>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::affine;
using ppat_test::device_buffer;

enum class kind { inclusive, exclusive };
constexpr kind kinds[] = {kind::inclusive, kind::exclusive};
const char* name(kind k) {
  return k == kind::inclusive ? "inclusive" : "exclusive";
}

// Keys whose runs have lengths drawn uniformly from [1, 2 * mean - 1]; consecutive runs get
// different keys, drawn from `distinct` values, so earlier keys come back out of order.
template <class K>
std::vector<K> run_keys(std::size_t n, std::size_t mean, long long distinct) {
  std::uniform_int_distribution<std::size_t> length(1, 2 * mean - 1);
  std::uniform_int_distribution<long long> pick(0, distinct - 1);
  std::vector<K> keys(n);
  K key = K(pick(ppat_test::rng()));
  for (std::size_t i = 0; i < n;) {
    const std::size_t run = std::min(length(ppat_test::rng()), n - i);
    for (std::size_t j = 0; j < run; ++j)
      keys[i + j] = key;
    i += run;
    K next = key;
    while (distinct > 1 && next == key)
      next = K(pick(ppat_test::rng()));
    key = next;
  }
  return keys;
}

template <class K, class T, class Op>
void check_by_key(kind k, const std::vector<K>& keys, const std::vector<T>& in, T init, Op op,
                  bool in_place = false) {
  if (ppat_test::over_item_budget(in.size())) return;
  SCOPED_TRACE(std::string(name(k)) + " n=" + std::to_string(in.size()) +
               (in_place ? " in place" : ""));
  device_buffer<K> key_buffer(keys, /*guard=*/64);
  device_buffer<T> input(in, /*guard=*/64);
  device_buffer<T> separate(in_place ? 0 : in.size(), /*guard=*/64);
  device_buffer<T>& output = in_place ? input : separate;
  if (!in_place) output.poison();
  if (k == kind::inclusive) {
    ppat::inclusive_scan_by_key(key_buffer.data(), input.data(), output.data(), in.size(), op);
  } else {
    ppat::exclusive_scan_by_key(key_buffer.data(), input.data(), output.data(), in.size(), init,
                                op);
  }
  ppat_test::expect_no_cuda_error();
  const std::vector<T> expected = k == kind::inclusive
                                      ? ppat_reference::inclusive_scan_by_key(keys, in, op)
                                      : ppat_reference::exclusive_scan_by_key(keys, in, init, op);
  EXPECT_EQ(ppat_test::first_mismatch(output.download(), expected), -1) << "first wrong element";
  EXPECT_TRUE(key_buffer.guards_intact() && input.guards_intact() && output.guards_intact())
      << "write outside a buffer";
}

// Tile boundaries for 4-byte values (8192 items; 6144 for 8-byte ones) and look-back windows
// of 32 tiles (262144 items), primes, and 2^20 + 3.
const std::size_t sizes[] = {1,      2,      31,     32,      33,     4095,  4096,
                             4097,   6145,   8191,   8192,    8193,   65521, 131071,
                             131073, 262143, 262145, 1048579, 4194305};

TEST(scan_by_key, segment_lengths_from_one_to_one_segment) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : sizes) {
    const auto in = ppat_test::random_integers<int>(n, -1000, 1000);
    for (std::size_t mean : {std::size_t{1}, std::size_t{30}, std::size_t{1000}, n}) {
      SCOPED_TRACE("mean segment " + std::to_string(mean));
      const auto keys = run_keys<int>(n, mean, mean == 1 ? 1000000 : 5);
      for (kind k : kinds)
        check_by_key(k, keys, in, 17, ppat::plus{});
    }
    // Every key different: segments of exactly one item.
    std::vector<int> distinct(n);
    for (std::size_t i = 0; i < n; ++i)
      distinct[i] = int(i);
    for (kind k : kinds)
      check_by_key(k, distinct, in, -3, ppat::plus{});
    // One segment: a plain scan.
    const std::vector<int> same(n, 42);
    for (kind k : kinds)
      check_by_key(k, same, in, 5, ppat::plus{});
  }
}

TEST(scan_by_key, key_and_value_types_and_operators) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{33}, std::size_t{65521}, std::size_t{1048579}}) {
    const auto byte_keys = run_keys<std::uint8_t>(n, 50, 3);
    const auto wide_keys = run_keys<std::int64_t>(n, 700, 1ll << 40);
    const auto int_keys = run_keys<int>(n, 1000, 7);
    for (kind k : kinds) {
      check_by_key<std::uint8_t, std::uint8_t>(
          k, byte_keys, ppat_test::random_integers<std::uint8_t>(n, 0, 255), 9, ppat::plus{});
      check_by_key<std::int64_t, std::uint32_t>(
          k, wide_keys, ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll), 77u,
          ppat::maximum{});
      check_by_key<int, std::int64_t>(
          k, int_keys, ppat_test::random_integers<std::int64_t>(n, -(1ll << 40), 1ll << 40),
          std::int64_t{1} << 50, ppat::minimum{});
      check_by_key<int, float>(k, int_keys, ppat_test::exact_fractions<float>(n, 1024, 1.0 / 8),
                               0.5f, ppat::plus{});
      check_by_key<std::uint8_t, double>(k, byte_keys,
                                         ppat_test::exact_fractions<double>(n, 1 << 20, 1.0 / 1024),
                                         -0.25, ppat::plus{});
      check_by_key<int, affine>(k, int_keys, ppat_test::random_affine_maps(n), affine{3u, 5u, 0u},
                                ppat_test::then{});
    }
  }
}

TEST(scan_by_key, in_place) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{1}, std::size_t{4097}, std::size_t{1048579}}) {
    const auto keys = run_keys<int>(n, 100, 4);
    const auto in = ppat_test::random_integers<int>(n, -1000, 1000);
    for (kind k : kinds)
      check_by_key(k, keys, in, 11, ppat::plus{}, /*in_place=*/true);
  }
}

// Buffers that are not 16-byte aligned take the element-wise path; results are the same.
TEST(scan_by_key, unaligned_buffers) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 100003;
  const auto keys = run_keys<int>(n + 1, 300, 6);
  const auto in = ppat_test::random_integers<int>(n + 1, -1000, 1000);
  device_buffer<int> key_buffer(keys), input(in), output(n + 1);
  const std::vector<int> shifted_keys(keys.begin() + 1, keys.end());
  const std::vector<int> shifted_in(in.begin() + 1, in.end());
  for (kind k : kinds) {
    output.poison();
    if (k == kind::inclusive) {
      ppat::inclusive_scan_by_key(key_buffer.data() + 1, input.data() + 1, output.data(), n);
    } else {
      ppat::exclusive_scan_by_key(key_buffer.data() + 1, input.data() + 1, output.data(), n, 2);
    }
    ppat_test::expect_no_cuda_error();
    auto got = output.download();
    got.pop_back();
    const auto expected =
        k == kind::inclusive
            ? ppat_reference::inclusive_scan_by_key(shifted_keys, shifted_in, ppat::plus{})
            : ppat_reference::exclusive_scan_by_key(shifted_keys, shifted_in, 2, ppat::plus{});
    EXPECT_EQ(ppat_test::first_mismatch(got, expected), -1) << name(k);
  }
}

TEST(scan_by_key, float_results_are_deterministic) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 20000003;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  std::uniform_real_distribution<float> pick(-1.0f, 1.0f);
  std::vector<float> in(n);
  for (auto& v : in)
    v = pick(ppat_test::rng());
  // Long segments, so that many tiles combine into one.
  const auto keys = run_keys<int>(n, 3000000, 4);
  device_buffer<int> key_buffer(keys);
  device_buffer<float> input(in), first(n), second(n);
  for (kind k : kinds) {
    for (device_buffer<float>* out : {&first, &second}) {
      out->poison();
      if (k == kind::inclusive) {
        ppat::inclusive_scan_by_key(key_buffer.data(), input.data(), out->data(), n);
      } else {
        ppat::exclusive_scan_by_key(key_buffer.data(), input.data(), out->data(), n, 0.5f);
      }
    }
    ppat_test::expect_no_cuda_error();
    EXPECT_EQ(ppat_test::first_mismatch(first.download(), second.download()), -1) << name(k);
  }
}

// The same keys and float values from buffers of any alignment give the same bits.
TEST(scan_by_key, float_bits_do_not_depend_on_alignment) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = ppat_test::fits_item_budget(2000003) ? 2000003 : 100003;
  const auto keys = run_keys<int>(n, 100000, 5);
  const auto values = ppat_test::spread_floats<float>(n);
  constexpr std::size_t most = 3;  // items short of the next 16 bytes
  device_buffer<int> key_buffer(n + most);
  device_buffer<float> input(n + most), output(n + most);
  for (kind k : kinds) {
    ppat_test::expect_same_bits_wherever(
        std::vector<std::size_t>{0, 1, most},
        [&](std::size_t shift) {
          key_buffer.upload(ppat_test::placed_at(keys, shift, most));
          input.upload(ppat_test::placed_at(values, shift, most));
          output.poison();
          if (k == kind::inclusive) {
            ppat::inclusive_scan_by_key(key_buffer.data() + shift, input.data() + shift,
                                        output.data() + shift, n);
          } else {
            ppat::exclusive_scan_by_key(key_buffer.data() + shift, input.data() + shift,
                                        output.data() + shift, n, 0.5f);
          }
          ppat_test::expect_no_cuda_error();
          const auto all = output.download();
          return std::vector<float>(all.begin() + shift, all.begin() + shift + n);
        },
        [&](std::size_t shift) {
          return std::string(name(k)) + ", buffers " + std::to_string(shift) +
                 " items off 16 bytes";
        });
  }
}

// More than 2^28 items: tens of thousands of tiles, their look-backs under full load.
TEST(scan_by_key, huge_above_2_pow_28) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 28) + 12347;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  const auto keys = run_keys<std::uint8_t>(n, 5000, 3);
  const auto in = ppat_test::random_integers<int>(n, -100, 100);
  check_by_key(kind::inclusive, keys, in, 0, ppat::plus{});
  check_by_key(kind::exclusive, keys, in, 9, ppat::plus{}, /*in_place=*/true);
}

TEST(scan_by_key, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 300007;
  const auto keys = run_keys<int>(n, 1000, 9);
  auto in = ppat_test::random_integers<int>(n, -1000, 1000);
  device_buffer<int> key_buffer(keys), input(in), output(n);
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ppat_test::capture_and_replay(
      stream,
      [&] {
        ppat::exclusive_scan_by_key(key_buffer.data(), input.data(), output.data(), n, 3,
                                    ppat::plus{}, stream);
      },
      [&](int) {
        in = ppat_test::random_integers<int>(n, -1000, 1000);
        input.upload(in);
        output.poison();
      },
      [&](int) {
        EXPECT_EQ(
            ppat_test::first_mismatch(output.download(), ppat_reference::exclusive_scan_by_key(
                                                             keys, in, 3, ppat::plus{})),
            -1);
      });
  ppat::release_stream_memory(stream);
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
}

// Argument checks come before any CUDA call, so these run without a GPU.
TEST(scan_by_key_arguments, bad_buffers_are_rejected) {
  int* fake = reinterpret_cast<int*>(std::uintptr_t{1} << 20);  // never dereferenced
  const auto inclusive = [](const int* keys, const int* in, int* out, std::size_t n) {
    ppat::inclusive_scan_by_key(keys, in, out, n);
  };
  const auto exclusive = [](const int* keys, const int* in, int* out, std::size_t n) {
    ppat::exclusive_scan_by_key(keys, in, out, n);
  };
  EXPECT_NO_THROW(inclusive(nullptr, nullptr, nullptr, 0));
  EXPECT_NO_THROW(exclusive(nullptr, nullptr, nullptr, 0));
  EXPECT_THROW(inclusive(nullptr, fake, fake + 100, 10), std::invalid_argument);
  EXPECT_THROW(exclusive(fake, nullptr, fake + 100, 10), std::invalid_argument);
  EXPECT_THROW(inclusive(fake, fake + 100, nullptr, 10), std::invalid_argument);
  // Keys overwritten by the output, and partly overlapping values.
  EXPECT_THROW(inclusive(fake, fake + 100, fake + 5, 10), std::invalid_argument);
  EXPECT_THROW(exclusive(fake + 100, fake, fake + 1, 10), std::invalid_argument);
  try {
    exclusive(nullptr, fake, fake + 100, 10);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ppat::exclusive_scan_by_key"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'keys'"), std::string::npos) << e.what();
  }
}

}  // namespace
