// Top-k against the first k of a host stable sort: keys of every width, floats with NaNs of
// any payload, infinities and signed zeros, inputs of few distinct values (ties decided by
// position, across tile and block boundaries), every k from 1 to n on sizes from one key to
// more than a block's run, both orders, index types of every width; graph capture; the
// textbook sort-then-take rung; bad arguments. The batched form row by row against the same
// reference, on shapes of a block a row and of rows long enough for the whole GPU each. Outputs are
// poisoned first and checked whole, bitwise.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::first_mismatch;
using ppat_test::key_with_bits;
using ppat_test::on_device;
using ppat_test::poisoned;

// Keys of every bit pattern, or (`few`) from a handful of values: zeros of both signs, the
// extremes, and for floats NaNs of several payloads and infinities.
template <class K>
std::vector<K> draw_keys(std::size_t n, bool few) {
  std::uniform_int_distribution<std::uint64_t> any;
  auto& rng = ppat_test::rng();
  const std::uint64_t sign = std::uint64_t{1} << (8 * sizeof(K) - 1);
  std::vector<std::uint64_t> handful = {0,       sign, ~std::uint64_t{0}, any(rng), any(rng) | sign,
                                        sign - 1};
  if constexpr (std::is_floating_point_v<K>) {
    for (K special : {std::numeric_limits<K>::infinity(), -std::numeric_limits<K>::infinity(),
                      std::numeric_limits<K>::quiet_NaN(), -std::numeric_limits<K>::quiet_NaN()}) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &special, sizeof(K));
      handful.push_back(bits);
    }
    handful.push_back(handful.back() | 5);  // a NaN of another payload
  }
  std::vector<K> keys(n);
  for (auto& key : keys)
    key = key_with_bits<K>(few ? handful[rng() % handful.size()] : any(rng));
  return keys;
}

// Which call takes the k: ppat's, or the textbook rung's.
enum class taker { ppat, sort_then_take };

// `order`: the host's stable sort of the keys in `ord`.
template <class K, class Index, taker Taker = taker::ppat>
void expect_top_k(const std::vector<K>& keys, std::size_t k, ppat::order ord,
                  const std::vector<std::size_t>& order) {
  const std::size_t n = keys.size();
  SCOPED_TRACE("n = " + std::to_string(n) + ", k = " + std::to_string(k) +
               (ord == ppat::order::descending ? ", descending" : ", ascending"));
  const auto in = on_device(keys);
  const auto keys_out = poisoned<K>(k);
  const auto indices_out = poisoned<Index>(k);
  if constexpr (Taker == taker::ppat) {
    ppat::top_k(in->data(), n, k, keys_out->data(), indices_out->data(), ord);
  } else {
    ppat::textbook::sort_then_take_top_k(in->data(), n, k, keys_out->data(), indices_out->data(),
                                         ord);
  }
  PPAT_CUDA_OK(cudaDeviceSynchronize());
  std::vector<K> expected_keys(k);
  std::vector<Index> expected_indices(k);
  for (std::size_t i = 0; i < k; ++i) {
    expected_keys[i] = keys[order[i]];
    expected_indices[i] = Index(order[i]);
  }
  EXPECT_EQ(first_mismatch(indices_out->download(), expected_indices), -1);
  EXPECT_EQ(first_mismatch(keys_out->download(), expected_keys), -1);
  EXPECT_TRUE(keys_out->guards_intact() && indices_out->guards_intact())
      << "written outside an output";
}

constexpr std::size_t sizes[] = {1, 2, 7, 1025, 2049, 8192, 8193, 100003, 1000003};

template <class K, class Index>
void expect_top_k(const std::vector<K>& keys, std::size_t k, ppat::order ord) {
  expect_top_k<K, Index>(
      keys, k, ord,
      ppat_reference::sorted_positions(keys, /*descending=*/ord == ppat::order::descending));
}

// Under the sanitizers (PPAT_TEST_MAX_ITEMS set), whose kernels run ten to a hundred times
// slower, two values of k stand for the rest.
bool sampled_out(std::size_t k, std::size_t n) {
  return std::getenv("PPAT_TEST_MAX_ITEMS") != nullptr && k != 2 && k != n / 2;
}

template <class K, class Index = std::int64_t>
void every_case(const char* type) {
  SCOPED_TRACE(type);
  PPAT_TRACE_SEED();
  for (std::size_t n : sizes) {
    if (ppat_test::over_item_budget(n)) continue;
    for (bool few : {false, true}) {
      SCOPED_TRACE(few ? "few distinct keys" : "keys of every bit pattern");
      const std::vector<K> keys = draw_keys<K>(n, few);
      for (ppat::order ord : {ppat::order::descending, ppat::order::ascending}) {
        const auto order =
            ppat_reference::sorted_positions(keys, /*descending=*/ord == ppat::order::descending);
        for (std::size_t k : {std::size_t{1}, std::size_t{2}, std::size_t{1000}, n / 2, n - 1, n}) {
          if (k == 0 || k > n || sampled_out(k, n)) continue;
          expect_top_k<K, Index>(keys, k, ord, order);
        }
      }
    }
  }
}

TEST(top_k, keys_of_every_width) {
  PPAT_REQUIRE_GPU();
  every_case<std::uint8_t>("u8");
  every_case<std::int16_t>("i16");
  every_case<std::uint32_t>("u32");
  every_case<std::int32_t>("i32");
  every_case<std::int64_t>("i64");
}

TEST(top_k, floating_point_keys) {
  PPAT_REQUIRE_GPU();
  every_case<float>("f32");
  every_case<double>("f64");
  every_case<__half>("f16");
}

// The textbook rung: keys of every bit pattern and of few values (ties), both orders, k from
// 1 to n, on the sort's one-tile, one-launch and onesweep sizes.
template <class K, class Index = std::int64_t>
void sort_then_take_cases(const char* type) {
  SCOPED_TRACE(std::string(type) + ", textbook sort then take");
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{7}, std::size_t{8193}, std::size_t{1000003}}) {
    if (ppat_test::over_item_budget(n)) continue;
    for (bool few : {false, true}) {
      const std::vector<K> keys = draw_keys<K>(n, few);
      for (ppat::order ord : {ppat::order::descending, ppat::order::ascending}) {
        const auto order =
            ppat_reference::sorted_positions(keys, /*descending=*/ord == ppat::order::descending);
        for (std::size_t k : {std::size_t{1}, n / 2, n}) {
          if (sampled_out(k, n)) continue;
          expect_top_k<K, Index, taker::sort_then_take>(keys, k, ord, order);
        }
      }
    }
  }
}

TEST(top_k, textbook_sort_then_take) {
  PPAT_REQUIRE_GPU();
  sort_then_take_cases<float>("f32");
  sort_then_take_cases<std::uint32_t, std::uint32_t>("u32, u32 indices");
  sort_then_take_cases<double>("f64");
  sort_then_take_cases<__half, std::int32_t>("f16, i32 indices");
}

TEST(top_k, index_types) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const auto keys = draw_keys<float>(100003, true);
  expect_top_k<float, std::int32_t>(keys, 777, ppat::order::descending);
  expect_top_k<float, std::uint32_t>(keys, 777, ppat::order::ascending);
  expect_top_k<float, std::uint64_t>(keys, 100003, ppat::order::descending);
  expect_top_k<float, std::int8_t>(draw_keys<float>(128, true), 50, ppat::order::descending);
  expect_top_k<float, std::uint8_t>(draw_keys<float>(256, true), 256, ppat::order::ascending);
}

// Keys whose first digits say little: uniform in [0, 1), half of them sharing the first
// digit, and normal ones, most sharing a few; the keys still in question are listed a digit
// or two later than for keys of every bit pattern. Also keys read from an address that is not
// 16-byte aligned.
TEST(top_k, keys_of_narrow_ranges_and_unaligned_keys) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = ppat_test::over_item_budget(1000003) ? 100003 : 1000003;
  std::uniform_real_distribution<float> uniform;
  std::normal_distribution<float> normal;
  std::vector<float> uniform_keys(n), normal_keys(n);
  for (std::size_t i = 0; i < n; ++i) {
    uniform_keys[i] = uniform(ppat_test::rng());
    normal_keys[i] = normal(ppat_test::rng());
  }
  for (const auto* keys : {&uniform_keys, &normal_keys}) {
    for (ppat::order ord : {ppat::order::descending, ppat::order::ascending}) {
      const auto order =
          ppat_reference::sorted_positions(*keys, /*descending=*/ord == ppat::order::descending);
      for (std::size_t k : {std::size_t{1}, std::size_t{1000}, n / 3})
        expect_top_k<float, std::int64_t>(*keys, k, ord, order);
    }
  }
  // One key more in front, the call given the keys after it.
  std::vector<float> shifted(n + 1);
  std::copy(normal_keys.begin(), normal_keys.end(), shifted.begin() + 1);
  const auto in = on_device(shifted);
  const std::size_t k = 777;
  const auto keys_out = poisoned<float>(k);
  const auto indices_out = poisoned<std::int64_t>(k);
  ppat::top_k(in->data() + 1, n, k, keys_out->data(), indices_out->data());
  const auto order = ppat_reference::sorted_positions(normal_keys, /*descending=*/true);
  std::vector<std::int64_t> expected(order.begin(), order.begin() + std::ptrdiff_t(k));
  EXPECT_EQ(first_mismatch(indices_out->download(), expected), -1);
  EXPECT_TRUE(keys_out->guards_intact() && indices_out->guards_intact());
}

// Inputs long enough for a sample to bound the threshold (sort/radix_select.cuh): keys of
// every bit pattern, where the keys at or below the bound are listed and only the list read
// after; keys of few values, where the sample foretells a list too long and is not used;
// and two inputs that defeat the sample, planted at its positions: the largest keys all
// there (fewer than k listed), and keys the sample does not see all at or below the bound
// (a list that overflows). Both fall back to reading the input, with the same answer.
const std::size_t sampled_test_keys = 4 * (std::size_t{1} << 20) + 7;
const std::size_t sampled_test_ks[] = {1, 1000, 30000};
TEST(top_k, sampled_bound_kept_and_defeated) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = sampled_test_keys;
  if (ppat_test::over_item_budget(n)) return;
  for (bool few : {false, true}) {
    SCOPED_TRACE(few ? "few distinct keys" : "keys of every bit pattern");
    const std::vector<float> keys = draw_keys<float>(n, few);
    for (ppat::order ord : {ppat::order::descending, ppat::order::ascending}) {
      const auto order =
          ppat_reference::sorted_positions(keys, /*descending=*/ord == ppat::order::descending);
      for (std::size_t k : sampled_test_ks)
        expect_top_k<float, std::int64_t>(keys, k, ord, order);
    }
  }
  const std::size_t samples = ppat::detail::select_sample_items;
  std::uniform_int_distribution<std::uint32_t> below_half(0, (1u << 31) - 1);
  std::vector<std::uint32_t> largest_sampled(n);
  for (auto& key : largest_sampled)
    key = below_half(ppat_test::rng());
  for (std::size_t i = 0; i < samples; ++i)
    largest_sampled[ppat::detail::select_sample_position(i, n)] = (1u << 31) + std::uint32_t(i * 7);
  expect_top_k<std::uint32_t, std::int64_t>(largest_sampled, 1000, ppat::order::descending);

  std::uniform_int_distribution<std::uint32_t> near_top(1000000 + 129, 1000000 + 140);
  std::vector<std::uint32_t> unseen_listed(n);
  for (auto& key : unseen_listed)
    key = near_top(ppat_test::rng());
  for (std::size_t i = 0; i < samples; ++i) {
    unseen_listed[ppat::detail::select_sample_position(i, n)] =
        i < 30 ? 1000000 + 100 + std::uint32_t(i) : std::uint32_t(i % 1000);
  }
  expect_top_k<std::uint32_t, std::int64_t>(unseen_listed, 1000, ppat::order::descending);
}

// The sizes the test above takes are ones a sample serves (and 2^20 is not): without this,
// a change to where the sample starts would leave that test passing on the passes alone.
TEST(top_k, sample_serves_the_sampled_test) {
  for (std::size_t k : sampled_test_ks)
    EXPECT_NE(ppat::detail::select_sample_plan::of(sampled_test_keys, k).rank, 0u) << "k = " << k;
  EXPECT_EQ(ppat::detail::select_sample_plan::of(std::size_t{1} << 20, 1000).rank, 0u);
  EXPECT_EQ(ppat::detail::select_sample_plan::of(sampled_test_keys, sampled_test_keys / 4).rank,
            0u);
}

// More than 2^32 keys, so positions take 64 bits: u8 keys below 250 but for 300 of 255 and
// 900 of 254 planted across the whole range (some past 2^32); the 1,000 largest are the 255s
// and then the first 700 of the 254s by position, which the host knows without a sort.
TEST(top_k, huge_u8_above_2_pow_32) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 32) + 4099;
  std::vector<std::uint8_t> keys(n);
  std::minstd_rand cheap(std::uint32_t(ppat_test::run_seed()));
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = std::uint8_t((i * 7 + (cheap() & 1) * 128) % 250);
  std::vector<std::size_t> planted;
  std::uniform_int_distribution<std::size_t> anywhere(0, n - 1);
  while (planted.size() < 1200) {
    const std::size_t at = planted.size() % 4 == 0 ? n - 1 - planted.size() : anywhere(cheap);
    if (keys[at] >= 250) continue;
    keys[at] = planted.size() < 300 ? 255 : 254;
    planted.push_back(at);
  }
  std::vector<std::size_t> largest(planted.begin(), planted.begin() + 300);
  std::vector<std::size_t> next(planted.begin() + 300, planted.end());
  std::sort(largest.begin(), largest.end());
  std::sort(next.begin(), next.end());
  std::vector<std::int64_t> expected(largest.begin(), largest.end());
  expected.insert(expected.end(), next.begin(), next.begin() + 700);
  std::vector<std::uint8_t> expected_keys(1000, 254);
  std::fill(expected_keys.begin(), expected_keys.begin() + 300, std::uint8_t{255});

  const auto in = on_device(keys);
  keys = {};
  const auto keys_out = poisoned<std::uint8_t>(1000);
  const auto indices_out = poisoned<std::int64_t>(1000);
  ppat::top_k(in->data(), n, 1000, keys_out->data(), indices_out->data());
  EXPECT_EQ(first_mismatch(indices_out->download(), expected), -1);
  EXPECT_EQ(first_mismatch(keys_out->download(), expected_keys), -1);
  EXPECT_TRUE(keys_out->guards_intact() && indices_out->guards_intact());
}

TEST(top_k, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 300007, k = 4321;
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto keys = draw_keys<std::uint32_t>(n, false);
  const auto in = on_device(keys);
  const auto keys_out = poisoned<std::uint32_t>(k);
  const auto indices_out = poisoned<std::int64_t>(k);
  ppat_test::capture_and_replay(
      stream,
      [&] {
        ppat::top_k(in->data(), n, k, keys_out->data(), indices_out->data(),
                    ppat::order::descending, stream);
      },
      [&](int) {
        keys = draw_keys<std::uint32_t>(n, true);
        in->upload(keys);
        keys_out->poison();
        indices_out->poison();
      },
      [&](int) {
        const auto order = ppat_reference::sorted_positions(keys, /*descending=*/true);
        std::vector<std::int64_t> expected(order.begin(), order.begin() + std::ptrdiff_t(k));
        EXPECT_EQ(first_mismatch(indices_out->download(), expected), -1);
      });
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
}

// Every row of a rows x cols matrix against the host's stable sort of that row.
template <class K, class Index = std::int64_t>
void expect_top_k_batched(const std::vector<K>& keys, std::size_t rows, std::size_t cols,
                          std::size_t k, ppat::order ord) {
  SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols) + ", k = " + std::to_string(k) +
               (ord == ppat::order::descending ? ", descending" : ", ascending"));
  const auto in = on_device(keys);
  const auto keys_out = poisoned<K>(rows * k);
  const auto indices_out = poisoned<Index>(rows * k);
  ppat::top_k_batched(in->data(), rows, cols, k, keys_out->data(), indices_out->data(), ord);
  PPAT_CUDA_OK(cudaDeviceSynchronize());
  std::vector<K> expected_keys(rows * k);
  std::vector<Index> expected_indices(rows * k);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::vector<K> row(keys.begin() + std::ptrdiff_t(r * cols),
                             keys.begin() + std::ptrdiff_t((r + 1) * cols));
    const auto order =
        ppat_reference::sorted_positions(row, /*descending=*/ord == ppat::order::descending);
    for (std::size_t i = 0; i < k; ++i) {
      expected_keys[r * k + i] = row[order[i]];
      expected_indices[r * k + i] = Index(order[i]);
    }
  }
  EXPECT_EQ(first_mismatch(indices_out->download(), expected_indices), -1);
  EXPECT_EQ(first_mismatch(keys_out->download(), expected_keys), -1);
  EXPECT_TRUE(keys_out->guards_intact() && indices_out->guards_intact())
      << "written outside an output";
}

// Shapes of a block a row holding it (one row, rows of one key, rows across a tile's edge,
// many short rows), of clusters of 2 to 8 blocks a row (by the key's width), of a block a row
// reading it a digit at a time (rows too long for a cluster's shared memory), and of two rows
// long enough to take the whole GPU each.
template <class K>
void every_batched_case(const char* type) {
  SCOPED_TRACE(type);
  PPAT_TRACE_SEED();
  const std::pair<std::size_t, std::size_t> shapes[] = {
      {1, 1},      {3, 1},     {1, 2049},   {5, 2048},   {7, 2049},  {1000, 37},
      {333, 1000}, {3, 40009}, {3, 131073}, {3, 200003}, {2, 300007}};
  for (const auto& [rows, cols] : shapes) {
    if (ppat_test::over_item_budget(rows * cols)) continue;
    for (bool few : {false, true}) {
      SCOPED_TRACE(few ? "few distinct keys" : "keys of every bit pattern");
      const std::vector<K> keys = draw_keys<K>(rows * cols, few);
      for (ppat::order ord : {ppat::order::descending, ppat::order::ascending}) {
        for (std::size_t k : {std::size_t{1}, std::size_t{2}, std::size_t{100}, cols / 2, cols}) {
          if (k == 0 || k > cols || sampled_out(k, cols)) continue;
          expect_top_k_batched<K>(keys, rows, cols, k, ord);
        }
      }
    }
  }
}

TEST(top_k_batched, rows_of_every_key_width) {
  PPAT_REQUIRE_GPU();
  every_batched_case<std::uint8_t>("u8");
  every_batched_case<std::int16_t>("i16");
  every_batched_case<std::int32_t>("i32");
  every_batched_case<std::uint64_t>("u64");
  every_batched_case<float>("f32");
  every_batched_case<double>("f64");
  every_batched_case<__half>("f16");
}

TEST(top_k_batched, index_types) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  expect_top_k_batched<float, std::int32_t>(draw_keys<float>(64 * 5000, true), 64, 5000, 777,
                                            ppat::order::descending);
  expect_top_k_batched<float, std::uint16_t>(draw_keys<float>(10 * 65536, false), 10, 65536, 300,
                                             ppat::order::ascending);
  // Positions in a row of 128 fit an int8 even where positions in the matrix do not.
  expect_top_k_batched<float, std::int8_t>(draw_keys<float>(50 * 128, true), 50, 128, 50,
                                           ppat::order::descending);
}

TEST(top_k_batched, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // A block a row holding it, a cluster of 8 a row, a block a row reading it a digit at a
  // time, then rows that take the whole GPU each.
  for (const auto& shape : {std::pair<std::size_t, std::size_t>{300, 3001},
                            std::pair<std::size_t, std::size_t>{5, 131073},
                            std::pair<std::size_t, std::size_t>{3, 200003},
                            std::pair<std::size_t, std::size_t>{2, 300007}}) {
    const std::size_t rows = shape.first, cols = shape.second;
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
    const std::size_t k = 1234;
    auto keys = draw_keys<std::uint32_t>(rows * cols, false);
    const auto in = on_device(keys);
    const auto keys_out = poisoned<std::uint32_t>(rows * k);
    const auto indices_out = poisoned<std::int64_t>(rows * k);
    ppat_test::capture_and_replay(
        stream,
        [&] {
          ppat::top_k_batched(in->data(), rows, cols, k, keys_out->data(), indices_out->data(),
                              ppat::order::descending, stream);
        },
        [&](int) {
          keys = draw_keys<std::uint32_t>(rows * cols, true);
          in->upload(keys);
          keys_out->poison();
          indices_out->poison();
        },
        [&](int) {
          std::vector<std::int64_t> expected;
          for (std::size_t r = 0; r < rows; ++r) {
            const std::vector<std::uint32_t> row(keys.begin() + std::ptrdiff_t(r * cols),
                                                 keys.begin() + std::ptrdiff_t((r + 1) * cols));
            const auto order = ppat_reference::sorted_positions(row, /*descending=*/true);
            expected.insert(expected.end(), order.begin(), order.begin() + std::ptrdiff_t(k));
          }
          EXPECT_EQ(first_mismatch(indices_out->download(), expected), -1);
        });
  }
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
}

TEST(top_k_arguments, bad_arguments_are_rejected_before_any_launch) {
  PPAT_REQUIRE_GPU();
  const auto in = on_device(draw_keys<float>(300, false));
  const auto keys_out = poisoned<float>(300);
  const auto indices_out = poisoned<std::int64_t>(300);
  const auto expect_rejected = [](auto call, const char* argument) {
    ppat_test::expect_rejected("ppat::top_k", argument, call);
  };
  expect_rejected([&] { ppat::top_k(in->data(), 300, 301, keys_out->data(), indices_out->data()); },
                  "'k'");
  expect_rejected(
      [&] {
        ppat::top_k(in->data(), 300, 5, keys_out->data(),
                    reinterpret_cast<std::int8_t*>(indices_out->data()));
      },
      "indices_out");
  expect_rejected([&] { ppat::top_k(in->data(), 300, 5, (float*)nullptr, indices_out->data()); },
                  "keys_out");
  expect_rejected([&] { ppat::top_k(in->data(), 300, 5, in->data() + 10, indices_out->data()); },
                  "keys_out");
  expect_rejected(
      [&] {
        ppat::top_k(in->data(), 300, 5, keys_out->data(), indices_out->data(), ppat::order(7));
      },
      "ord");
  ppat_test::expect_rejected("sort_then_take_top_k", "'k'", [&] {
    ppat::textbook::sort_then_take_top_k(in->data(), 300, 301, keys_out->data(),
                                         indices_out->data());
  });
  ppat_test::expect_rejected("sort_then_take_top_k", "keys_out", [&] {
    ppat::textbook::sort_then_take_top_k(in->data(), 300, 5, in->data() + 10, indices_out->data());
  });
  ppat_test::expect_no_cuda_error();
  // Nothing to take is no error.
  ppat::top_k(in->data(), 300, 0, keys_out->data(), indices_out->data());
  ppat::top_k((const float*)nullptr, 0, 0, (float*)nullptr, (std::int64_t*)nullptr);
  ppat_test::expect_no_cuda_error();
}

TEST(top_k_arguments, bad_batched_arguments_are_rejected_before_any_launch) {
  PPAT_REQUIRE_GPU();
  const auto in = on_device(draw_keys<float>(300, false));  // 3 x 100
  const auto keys_out = poisoned<float>(300);
  const auto indices_out = poisoned<std::int64_t>(300);
  const auto expect_rejected = [](auto call, const char* argument) {
    ppat_test::expect_rejected("ppat::top_k_batched", argument, call);
  };
  expect_rejected(
      [&] { ppat::top_k_batched(in->data(), 3, 100, 101, keys_out->data(), indices_out->data()); },
      "'k'");
  expect_rejected(
      [&] { ppat::top_k_batched(in->data(), 3, 100, 5, in->data() + 200, indices_out->data()); },
      "keys_out");
  expect_rejected(
      [&] {
        ppat::top_k_batched(in->data(), 1, 300, 5, keys_out->data(),
                            reinterpret_cast<std::int8_t*>(indices_out->data()));
      },
      "indices_out");
  expect_rejected(
      [&] {
        ppat::top_k_batched(in->data(), std::size_t(1) << 40, std::size_t(1) << 40, 5,
                            keys_out->data(), indices_out->data());
      },
      "cols");
  ppat_test::expect_no_cuda_error();
  // Nothing to take is no error; rows of 100 fit an int8's positions.
  ppat::top_k_batched(in->data(), 3, 100, 0, keys_out->data(), indices_out->data());
  ppat::top_k_batched((const float*)nullptr, 0, 100, 5, (float*)nullptr, (std::int64_t*)nullptr);
  ppat::top_k_batched(in->data(), 3, 100, 5, keys_out->data(),
                      reinterpret_cast<std::int8_t*>(indices_out->data()));
  ppat_test::expect_no_cuda_error();
}

}  // namespace
