// The checks the top-k suite's files share (test_top_k*.cu: one test program in six files, so
// that the build spreads over the cores): keys drawn on the host, and one call checked whole
// against the first k of the host's stable sort, of the array or of each row.
#pragma once

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

namespace top_k_checks {

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

inline constexpr std::size_t sizes[] = {1, 2, 7, 1025, 2049, 8192, 8193, 100003, 1000003};

template <class K, class Index>
void expect_top_k(const std::vector<K>& keys, std::size_t k, ppat::order ord) {
  expect_top_k<K, Index>(
      keys, k, ord,
      ppat_reference::sorted_positions(keys, /*descending=*/ord == ppat::order::descending));
}

// Under the sanitizers (PPAT_TEST_MAX_ITEMS set), whose kernels run ten to a hundred times
// slower, two values of k stand for the rest.
inline bool sampled_out(std::size_t k, std::size_t n) {
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

// Shapes of a block a row holding it (one row, rows of one key, rows across a tile's edge),
// of clusters of 2 to 8 blocks a row (by the key's width), of a warp a row (as many rows of
// one tile as the GPU has SMs or more: 1,000 x 37, 333 x 1,000, and 12,007 x 40, more rows
// than the warps that fit the GPU at once), of a block a row reading it a digit at a time
// (rows of two tiles, 140 x 2,100, listed once their keys in question fit the list), and of
// two rows long enough to take the whole GPU each.
template <class K>
void every_batched_case(const char* type) {
  SCOPED_TRACE(type);
  PPAT_TRACE_SEED();
  const std::pair<std::size_t, std::size_t> shapes[] = {
      {1, 1},      {3, 1},      {1, 2049},  {5, 2048},   {7, 2049},   {1000, 37}, {333, 1000},
      {12007, 40}, {140, 2100}, {3, 40009}, {3, 131073}, {3, 200003}, {2, 300007}};
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

// Rows whose keys share their first digit and differ below it, as many rows as the GPU has
// SMs or more: the first digit narrows nothing, so the second decides which keys a row of a
// block lists in shared memory (rows of 2,100 keys are longer than that list), and which a
// row of a warp counts next (rows of 1,000). `share_first_digit` makes a drawn key's first
// digit the same as every other's.
template <class K, class ShareFirstDigit>
void rows_sharing_a_first_digit(const char* type, ShareFirstDigit share_first_digit) {
  SCOPED_TRACE(type);
  PPAT_TRACE_SEED();
  const std::pair<std::size_t, std::size_t> shapes[] = {{140, 2100}, {333, 1000}};
  for (const auto& [rows, cols] : shapes) {
    std::vector<K> keys = draw_keys<K>(rows * cols, false);
    for (auto& key : keys)
      key = share_first_digit(key);
    for (ppat::order ord : {ppat::order::descending, ppat::order::ascending}) {
      for (std::size_t k : {std::size_t{1}, std::size_t{50}, std::size_t{500}, cols - 1, cols})
        expect_top_k_batched<K>(keys, rows, cols, k, ord);
    }
  }
}

}  // namespace top_k_checks
