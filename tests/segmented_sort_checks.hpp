// The checks the segmented sort's suites share (test_segmented_sort.cu, _pairs.cu, _rows.cu,
// compiled as one test program in three files so that the build spreads over the cores):
// keys, values and segment layouts drawn on the host, the host's stable sort of each segment,
// and one call checked whole, every output item and guard.
#pragma once

#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "reference.hpp"
#include "segment_layouts.hpp"
#include "support.hpp"

namespace segmented_sort_checks {

using ppat_test::device_buffer;
using ppat_test::key_with_bits;
using ppat_test::layout;
using ppat_test::layouts;
using ppat_test::on_device;
using ppat_test::poisoned;
using ppat_test::segments;

using ppat_test::two_words;
using ppat_test::wide;

// Keys of every bit pattern, a quarter of them from a handful of values so that segments
// hold runs of equal keys (and, for floats, NaNs, infinities and signed zeros among them).
template <class K>
std::vector<K> draw_keys(std::size_t n) {
  std::uniform_int_distribution<std::uint64_t> any;
  auto& rng = ppat_test::rng();
  const std::uint64_t sign = std::uint64_t{1} << (8 * sizeof(K) - 1);
  const std::uint64_t few[] = {0, sign, ~std::uint64_t{0}, any(rng), any(rng) | sign};
  std::uniform_int_distribution<int> pick(0, 19);
  std::vector<K> keys(n);
  for (auto& k : keys) {
    const int p = pick(rng);
    k = key_with_bits<K>(p < 5 ? few[p] : any(rng));
  }
  return keys;
}

template <class V>
std::vector<V> draw_values(std::size_t n) {
  std::vector<V> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<V, wide>) {
      values[i] = {std::uint32_t(i), std::uint32_t(ppat_test::rng()()), ~std::uint32_t(i), 7u};
    } else if constexpr (std::is_same_v<V, two_words>) {
      values[i] = {std::uint64_t(ppat_test::rng()()), std::uint64_t(i)};
    } else {
      values[i] = V(i);  // positions: they show stability
    }
  }
  return values;
}

// Edge lengths: about the groups' and blocks' capacities (one short, at, one past: each short
// bin's, 104 keys included); and for the chains' tiles of K and V (those of a small call's one
// cooperative launch and those of launches of their own), the first whole number of them past the
// largest block, one short and one past.
template <class K, class V>
segments draw_segments(std::size_t n, layout l) {
  auto& rng = ppat_test::rng();
  std::vector<std::size_t> edge_lengths = {
      2,    3,    8,    9,    16,   17,   32,   33,   64,   65,    128,   129,   256,  257,
      1023, 1024, 1025, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 40961};
  using values = std::conditional_t<std::is_same_v<V, char>, ppat::detail::no_values, V>;
  for (unsigned capacity : ppat::detail::segment_paths<K, values>::bin_capacity)
    edge_lengths.insert(edge_lengths.end(), {capacity - 1, capacity, capacity + 1});
  const std::size_t largest_block =
      ppat::detail::short_bin_capacity<K, values, ppat::detail::short_bins - 1>;
  for (bool in_one_launch : {true, false}) {
    const std::size_t tile = ppat::detail::chain_tile_items<K, values>(in_one_launch);
    const std::size_t whole = (largest_block / tile + 1) * tile;
    edge_lengths.insert(edge_lengths.end(), {whole - 1, whole, whole + 1});
  }
  const auto next_length = [&]() -> std::size_t {
    switch (l) {
      case layout::tiny:
        return rng() % 41;
      case layout::edges:
        return edge_lengths[rng() % edge_lengths.size()];
      default: {
        const unsigned kind = unsigned(rng() % 8);
        if (kind == 0) return rng() % 2;
        if (kind <= 3) return rng() % 1100;
        if (kind <= 5) return rng() % 9000;
        return rng() % 60000;
      }
    }
  };
  return ppat_test::lay_out(n, l, next_length, /*ends_past_n=*/true);
}

// Where each output item comes from, -1 for items outside every segment: each segment that
// is a range of [0, n], sorted stably on its own.
template <class K>
std::vector<long long> segmented_positions(const std::vector<K>& keys, const segments& s,
                                           ppat::order ord) {
  const long long n = (long long)keys.size();
  std::vector<long long> from(keys.size(), -1);
  for (std::size_t i = 0; i < s.begins.size(); ++i) {
    const long long b = s.begins[i], e = s.ends[i];
    if (b < 0 || e <= b || e > n) continue;
    const std::vector<K> segment(keys.begin() + b, keys.begin() + e);
    const auto order = ppat_reference::sorted_positions(segment, ord == ppat::order::descending);
    for (std::size_t j = 0; j < order.size(); ++j)
      from[std::size_t(b) + j] = b + (long long)order[j];
  }
  return from;
}

template <class T>
std::vector<T> expected_output(const std::vector<T>& in, const std::vector<long long>& from) {
  std::vector<T> out(in.size());
  std::memset(static_cast<void*>(out.data()), ppat_test::poison_byte, out.size() * sizeof(T));
  for (std::size_t i = 0; i < in.size(); ++i)
    if (from[i] >= 0) out[i] = in[std::size_t(from[i])];
  return out;
}

// Which call sorts: ppat's, or the textbook rung's.
enum class sorter { ppat, bitonic };

// Sorts keys (and values, unless V is char) in segments s with offsets of type Offset,
// one offset array where `one_array` (the segments then cover [0, n) in order), and checks
// every output item and guard, and that the inputs come back unchanged.
template <class K, class V, class Offset, sorter Sorter = sorter::ppat>
void expect_segments_sorted(std::size_t n, const segments& s, ppat::order ord,
                            bool one_array = false) {
  constexpr bool with_values = !std::is_same_v<V, char>;
  SCOPED_TRACE("n = " + std::to_string(n) + ", " + std::to_string(s.begins.size()) + " segments, " +
               (ord == ppat::order::ascending ? "ascending" : "descending") +
               (one_array ? ", one offset array" : ""));
  const auto keys = draw_keys<K>(n);
  const auto values = with_values ? draw_values<V>(n) : std::vector<V>{};
  std::vector<Offset> begins(s.begins.begin(), s.begins.end());
  std::vector<Offset> ends(s.ends.begin(), s.ends.end());
  if (one_array) begins.push_back(Offset(n));
  auto keys_in = on_device(keys);
  auto keys_out = poisoned<K>(n);
  auto values_in = on_device(values);
  auto values_out = poisoned<V>(values.size());
  auto begin_offsets = on_device(begins);
  auto end_offsets = on_device(ends);
  const Offset* end_data = one_array ? begin_offsets->data() + 1 : end_offsets->data();
  if constexpr (with_values && Sorter == sorter::ppat) {
    ppat::segmented_sort_pairs(keys_in->data(), keys_out->data(), values_in->data(),
                               values_out->data(), n, s.begins.size(), begin_offsets->data(),
                               end_data, ord);
  } else if constexpr (Sorter == sorter::ppat) {
    ppat::segmented_sort_keys(keys_in->data(), keys_out->data(), n, s.begins.size(),
                              begin_offsets->data(), end_data, ord);
  } else if constexpr (with_values) {
    ppat::textbook::bitonic_segmented_sort_pairs(
        keys_in->data(), keys_out->data(), values_in->data(), values_out->data(), n,
        s.begins.size(), begin_offsets->data(), end_data, ord);
  } else {
    ppat::textbook::bitonic_segmented_sort_keys(keys_in->data(), keys_out->data(), n,
                                                s.begins.size(), begin_offsets->data(), end_data,
                                                ord);
  }
  ppat_test::expect_no_cuda_error();
  segments checked = s;
  if (one_array) checked.ends.assign(begins.begin() + 1, begins.end());
  const auto from = segmented_positions(keys, checked, ord);
  EXPECT_EQ(ppat_test::first_mismatch(keys_out->download(), expected_output(keys, from)), -1)
      << "first key out of place";
  if constexpr (with_values) {
    EXPECT_EQ(ppat_test::first_mismatch(values_out->download(), expected_output(values, from)), -1)
        << "first value out of place";
  }
  EXPECT_EQ(ppat_test::first_mismatch(keys_in->download(), keys), -1) << "keys_in modified";
  EXPECT_EQ(ppat_test::first_mismatch(values_in->download(), values), -1) << "values_in modified";
  EXPECT_TRUE(keys_in->guards_intact() && keys_out->guards_intact() && values_in->guards_intact() &&
              values_out->guards_intact())
      << "written outside a buffer";
}

template <class K, class V, class Offset, sorter Sorter = sorter::ppat>
void expect_segments_sorted(std::size_t n, layout l, ppat::order ord, bool one_array = false) {
  SCOPED_TRACE(name(l));
  expect_segments_sorted<K, V, Offset, Sorter>(n, draw_segments<K, V>(n, l), ord, one_array);
}

inline constexpr ppat::order orders[] = {ppat::order::ascending, ppat::order::descending};
inline constexpr std::size_t sizes[] = {1, 2, 41, 1025, 4096, 8193, 70001, 1000003};

// Under the sanitizers (PPAT_TEST_MAX_ITEMS set), whose kernels run ten to a hundred times
// slower, three cases stand for the rest: segments on every path's edges, in an input small
// enough to be sorted a block a segment without binning and in one that is binned, and mixed
// lengths with segments longer than a block sorts.
inline bool sampled_out(std::size_t n, layout l) {
  return std::getenv("PPAT_TEST_MAX_ITEMS") != nullptr &&
         !((n == 1025 && l == layout::edges) || (n == 8193 && l == layout::edges) ||
           (n == 70001 && l == layout::mixed));
}

template <class K, class V = char>
void every_layout(const char* type) {
  SCOPED_TRACE(type);
  PPAT_TRACE_SEED();
  for (std::size_t n : sizes) {
    if (ppat_test::over_item_budget(n)) continue;
    for (layout l : layouts) {
      if (sampled_out(n, l)) continue;
      for (ppat::order ord : orders)
        expect_segments_sorted<K, V, long long>(n, l, ord);
    }
  }
}

}  // namespace segmented_sort_checks
