// Segmented and batched sorts against a host stable sort of each segment: segment layouts
// from many tiny segments to one that covers the input, lengths on every path's edges (one
// block of each size, chains of tiles), segments listed out of order with gaps between them
// that must stay untouched, offsets that are no range (read as empty), one offset array
// for both ends; every offset type; keys of every width, floats with NaNs and signed zeros,
// both orders; pairs with positions as values (which show stability) and 16-byte values; in
// place; rows of a matrix; graph capture; a segment longer than a look-back chain; more than
// 2^32 items in a segment; the textbook bitonic sort; bad arguments. Outputs are poisoned first and
// checked whole, bitwise: items outside every segment must keep the poison.
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

namespace {

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

constexpr ppat::order orders[] = {ppat::order::ascending, ppat::order::descending};
constexpr std::size_t sizes[] = {1, 2, 41, 1025, 4096, 8193, 70001, 1000003};

// Under the sanitizers (PPAT_TEST_MAX_ITEMS set), whose kernels run ten to a hundred times
// slower, three cases stand for the rest: segments on every path's edges, in an input small
// enough to be sorted a block a segment without binning and in one that is binned, and mixed
// lengths with segments longer than a block sorts.
bool sampled_out(std::size_t n, layout l) {
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

TEST(segmented_sort, keys_of_every_width) {
  PPAT_REQUIRE_GPU();
  every_layout<std::uint8_t>("u8");
  every_layout<std::int16_t>("i16");
  every_layout<std::uint32_t>("u32");
  every_layout<std::int64_t>("i64");
}

TEST(segmented_sort, floating_point_keys) {
  PPAT_REQUIRE_GPU();
  every_layout<float>("f32");
  every_layout<double>("f64");
  every_layout<__half>("f16");
}

TEST(segmented_sort, pairs_are_stable) {
  PPAT_REQUIRE_GPU();
  every_layout<std::uint32_t, std::uint32_t>("u32/u32");
  every_layout<std::int32_t, std::uint32_t>("i32/u32");
  every_layout<float, std::uint32_t>("f32/u32");
  every_layout<std::uint8_t, std::uint64_t>("u8/u64");
  every_layout<std::uint64_t, wide>("u64/16-byte");
  every_layout<std::int64_t, two_words>("i64/two 8-byte words");
}

// Up to ppat::detail::few_launches_items keys (every size above), the short bins share one
// launch and the chains' steps one cooperative launch; above it, each path and step is a
// launch of its own.
TEST(segmented_sort, each_path_its_own_launch_above_the_few_launches_size) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = ppat::detail::few_launches_items + 3;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  for (ppat::order ord : orders)
    expect_segments_sorted<std::uint32_t, std::uint32_t, long long>(n, layout::mixed, ord);
  expect_segments_sorted<float, std::uint32_t, int>(n, layout::edges, ppat::order::descending);
  expect_segments_sorted<std::uint64_t, std::uint32_t, int>(n, layout::edges,
                                                            ppat::order::ascending);
  expect_segments_sorted<double, std::uint64_t, long long>(n, layout::edges,
                                                           ppat::order::descending);
  expect_segments_sorted<std::uint64_t, char, long long>(n, layout::shuffled_gaps,
                                                         ppat::order::ascending);
}

// An input that fits one of the short launch's blocks is sorted a block a segment, without
// binning, where its segments are at most ppat::detail::most_segments_a_block_each (every
// small size above); more segments than that (here most of them empty, which only offsets
// can give) are binned.
TEST(segmented_sort, small_input_in_more_segments_than_blocks_take_is_binned) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 1500;
  segments s;
  for (std::size_t at = 0; s.begins.size() <= ppat::detail::most_segments_a_block_each;) {
    const std::size_t length = std::min(n - at, std::size_t(ppat_test::rng()() % 3));
    s.begins.push_back((long long)at);
    s.ends.push_back((long long)(at + length));
    at += length;
  }
  for (ppat::order ord : orders)
    expect_segments_sorted<std::uint32_t, std::uint32_t, long long>(n, s, ord);
}

TEST(segmented_sort, every_offset_type_and_one_offset_array) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{3}, std::size_t{70001}}) {
    for (ppat::order ord : orders) {
      expect_segments_sorted<std::uint32_t, std::uint32_t, int>(n, layout::mixed, ord);
      expect_segments_sorted<std::uint32_t, std::uint32_t, unsigned>(n, layout::edges, ord);
      expect_segments_sorted<std::uint32_t, std::uint32_t, std::uint64_t>(n, layout::mixed, ord);
      expect_segments_sorted<std::uint32_t, std::uint32_t, int>(n, layout::mixed, ord, true);
      expect_segments_sorted<float, char, std::int64_t>(n, layout::edges, ord, true);
    }
  }
}

// The textbook rung: segments in shared memory (up to 2048 keys) and in global memory, every
// layout, keys of 2, 4 and 8 bytes, pairs; one offset array.
template <class K, class V = char>
void bitonic_every_layout(const char* type) {
  SCOPED_TRACE(std::string(type) + ", textbook bitonic sort");
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{1}, std::size_t{41}, std::size_t{4096}, std::size_t{70001}}) {
    if (ppat_test::over_item_budget(n)) continue;
    for (layout l : layouts) {
      if (sampled_out(n, l)) continue;
      for (ppat::order ord : orders)
        expect_segments_sorted<K, V, long long, sorter::bitonic>(n, l, ord);
    }
  }
  expect_segments_sorted<K, V, int, sorter::bitonic>(5000, layout::edges, ppat::order::ascending,
                                                     true);
}

TEST(segmented_sort, textbook_bitonic_sort) {
  PPAT_REQUIRE_GPU();
  bitonic_every_layout<std::uint32_t>("u32");
  bitonic_every_layout<__half>("f16");
  bitonic_every_layout<double>("f64");
  bitonic_every_layout<float, std::uint32_t>("f32/u32");
  bitonic_every_layout<std::int64_t, wide>("i64/16-byte");
}

// Pairs and keys alone sorted in place: every segment read before any of it is written. Integer
// keys come back from their images in the merge groups, float keys by their positions.
template <class K>
void expect_sorted_in_place(std::size_t n, layout l) {
  SCOPED_TRACE(std::string(name(l)) + ", n = " + std::to_string(n));
  const auto keys = draw_keys<K>(n);
  const auto values = draw_values<std::uint32_t>(n);
  const segments s = draw_segments<K, std::uint32_t>(n, l);
  auto keys_data = on_device(keys);
  auto keys_alone = on_device(keys);
  auto values_data = on_device(values);
  auto begins = on_device(s.begins);
  auto ends = on_device(s.ends);
  ppat::segmented_sort_pairs(keys_data->data(), keys_data->data(), values_data->data(),
                             values_data->data(), n, s.begins.size(), begins->data(), ends->data(),
                             ppat::order::descending);
  ppat::segmented_sort_keys(keys_alone->data(), keys_alone->data(), n, s.begins.size(),
                            begins->data(), ends->data(), ppat::order::descending);
  ppat_test::expect_no_cuda_error();
  auto from = segmented_positions(keys, s, ppat::order::descending);
  for (std::size_t i = 0; i < n; ++i)
    if (from[i] < 0) from[i] = (long long)i;  // items outside every segment stay
  EXPECT_EQ(ppat_test::first_mismatch(keys_data->download(), expected_output(keys, from)), -1);
  EXPECT_EQ(ppat_test::first_mismatch(keys_alone->download(), expected_output(keys, from)), -1);
  EXPECT_EQ(ppat_test::first_mismatch(values_data->download(), expected_output(values, from)), -1);
  EXPECT_TRUE(keys_data->guards_intact() && keys_alone->guards_intact() &&
              values_data->guards_intact());
}

TEST(segmented_sort, in_place) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{5000}, std::size_t{300007}}) {
    if (ppat_test::over_item_budget(n)) continue;
    for (layout l : {layout::mixed, layout::edges, layout::shuffled_gaps, layout::one}) {
      expect_sorted_in_place<float>(n, l);
      expect_sorted_in_place<std::int32_t>(n, l);
    }
  }
}

// Rows of a rows x cols matrix: every path a row length takes, the row sort's own launch
// and the binned one.
template <class K, class V>
void rows_sorted(std::size_t rows, std::size_t cols, ppat::order ord, const std::vector<K>& keys) {
  SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
  const std::size_t n = rows * cols;
  const auto values = draw_values<V>(n);
  segments s;
  for (std::size_t r = 0; r < rows; ++r) {
    s.begins.push_back((long long)(r * cols));
    s.ends.push_back((long long)((r + 1) * cols));
  }
  auto keys_in = on_device(keys);
  auto keys_out = poisoned<K>(n);
  auto values_in = on_device(values);
  auto values_out = poisoned<V>(n);
  ppat::sort_pairs_batched(keys_in->data(), keys_out->data(), values_in->data(), values_out->data(),
                           rows, cols, ord);
  auto keys_only = poisoned<K>(n);
  ppat::sort_keys_batched(keys_in->data(), keys_only->data(), rows, cols, ord);
  ppat_test::expect_no_cuda_error();
  const auto from = segmented_positions(keys, s, ord);
  EXPECT_EQ(ppat_test::first_mismatch(keys_out->download(), expected_output(keys, from)), -1);
  EXPECT_EQ(ppat_test::first_mismatch(keys_only->download(), expected_output(keys, from)), -1);
  EXPECT_EQ(ppat_test::first_mismatch(values_out->download(), expected_output(values, from)), -1);
  EXPECT_TRUE(keys_out->guards_intact() && values_out->guards_intact() &&
              keys_only->guards_intact());
}

template <class K, class V>
void rows_sorted(std::size_t rows, std::size_t cols, ppat::order ord) {
  rows_sorted<K, V>(rows, cols, ord, draw_keys<K>(rows * cols));
}

TEST(segmented_sort, rows_of_a_matrix) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::pair<std::size_t, std::size_t> shapes[] = {
      {1, 1},    {7, 1},    {5, 2},    {77, 8},   {50, 13},   {40, 16},  {30, 31},   {20, 64},
      {10, 100}, {9, 128},  {7, 255},  {5, 256},  {4, 3000},  {300, 33}, {64, 1024}, {9, 1025},
      {3, 4097}, {2, 8193}, {5, 8192}, {1, 9000}, {3, 70001}, {0, 100},  {100, 0},   {1000, 257}};
  for (const auto& [rows, cols] : shapes) {
    for (ppat::order ord : orders) {
      rows_sorted<std::uint32_t, std::uint32_t>(rows, cols, ord);
      rows_sorted<double, std::uint32_t>(rows, cols, ord);
    }
  }
  rows_sorted<std::uint8_t, wide>(40, 6000, ppat::order::ascending);
  // The merge sorts' groups (33 to 256 keys) with the largest values they stage.
  for (std::size_t cols : {40, 100, 250})
    rows_sorted<std::uint8_t, wide>(300, cols, ppat::order::descending);
  // More rows of 33 to 128 keys than wide groups sort at once: they take the narrow ones.
  for (std::size_t cols : {50, 100, 104, 105, 120}) {
    for (ppat::order ord : orders)
      rows_sorted<std::uint32_t, std::uint32_t>(20000, cols, ord);
  }
}

// Keys whose high bytes never vary (int64 positions, small counts) or only one byte of which
// does: a block sorting a segment skips the passes in which one digit holds all its keys.
TEST(segmented_sort, rows_whose_keys_share_digits) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::pair<std::size_t, std::size_t> shapes[] = {{300, 33}, {64, 1024}, {9, 1025}, {3, 4097},
                                                        {5, 8192}, {2, 8193},  {3, 70001}};
  auto& rng = ppat_test::rng();
  for (const auto& [rows, cols] : shapes) {
    const std::size_t n = rows * cols;
    std::vector<std::int64_t> positions(n);
    std::uniform_int_distribution<std::int64_t> below(0, (1 << 16) - 1);
    for (auto& k : positions)
      k = below(rng);
    std::vector<std::uint32_t> second_byte(n);
    const std::uint32_t shared = std::uint32_t(rng());
    for (auto& k : second_byte)
      k = (shared & 0xFFFF00FFu) | (std::uint32_t(rng()) & 0xFF00u);
    for (ppat::order ord : orders) {
      rows_sorted<std::int64_t, std::uint32_t>(rows, cols, ord, positions);
      rows_sorted<std::uint32_t, std::uint32_t>(rows, cols, ord, second_byte);
    }
  }
}

// Rows longer than a block sorts, so many that each block of the chains' digit counting
// moves on from one chain to the next several times (2^24 keys, about six tiles a block).
// The bench's cell of 2^28 u32/u32 pairs in rows of 10,000 came out wrong in the device check
// of 698d3c69a134cbb9: a block's faster warps could add the next chain's digits before its
// slower ones had cleared the counts, which a barrier now orders. A race: three calls give it
// more chances than one.
TEST(segmented_sort, rows_of_many_chains_a_counting_block) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t rows = 1678, cols = 10000;
  PPAT_SKIP_OVER_ITEM_BUDGET(rows * cols);
  for (int call = 0; call < 3; ++call)
    rows_sorted<std::uint32_t, std::uint32_t>(rows, cols, ppat::order::ascending);
}

TEST(segmented_sort, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 200003;
  const auto keys = draw_keys<std::uint32_t>(n);
  const segments s = draw_segments<std::uint32_t, char>(n, layout::shuffled_gaps);
  auto keys_in = on_device(keys);
  auto keys_out = poisoned<std::uint32_t>(n);
  auto begins = on_device(s.begins);
  auto ends = on_device(s.ends);
  const auto expected = expected_output(keys, segmented_positions(keys, s, ppat::order::ascending));
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ppat_test::capture_and_replay(
      stream,
      [&] {
        ppat::segmented_sort_keys(keys_in->data(), keys_out->data(), n, s.begins.size(),
                                  begins->data(), ends->data(), ppat::order::ascending, stream);
      },
      [&](int) { keys_out->poison(); },
      [&](int) { EXPECT_EQ(ppat_test::first_mismatch(keys_out->download(), expected), -1); });
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
}

// A segment longer than a look-back chain counts (2^29 keys) is sorted as several chains;
// checked on the host in one pass: keys in order, each value (the key's position) increasing
// among equal keys and naming an input key equal to the output key.
TEST(segmented_sort, huge_segment_of_several_chains) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 29) + 70001;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  const auto keys = ppat_test::random_integers<std::uint8_t>(n, 0, 255);
  const std::vector<long long> begins = {5, 0}, ends = {(long long)n - 3, 5};
  device_buffer<std::uint8_t> keys_in(n), keys_out(n);
  device_buffer<std::uint32_t> values_in(n), values_out(n);
  keys_in.upload(keys);
  std::vector<std::uint32_t> positions(n);
  std::iota(positions.begin(), positions.end(), 0u);
  values_in.upload(positions);
  keys_out.poison();
  values_out.poison();
  auto begin_offsets = on_device(begins);
  auto end_offsets = on_device(ends);
  ppat::segmented_sort_pairs(keys_in.data(), keys_out.data(), values_in.data(), values_out.data(),
                             n, 2, begin_offsets->data(), end_offsets->data());
  ppat_test::expect_no_cuda_error();
  const auto got_keys = keys_out.download();
  const auto got_values = values_out.download();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool last_item = i == n - 1 || i == n - 2 || i == n - 3;
    if (last_item) {
      wrong += got_values[i] != std::uint32_t(ppat_test::poison_byte) * 0x01010101u;
      continue;
    }
    const bool first_of_segment = i == 0 || i == 5;
    if (got_values[i] >= n) {  // not a position: a wrong answer, not a read past the keys
      ++wrong;
      continue;
    }
    wrong += got_keys[i] != keys[got_values[i]];
    if (!first_of_segment) {
      wrong += got_keys[i] < got_keys[i - 1] ||
               (got_keys[i] == got_keys[i - 1] && got_values[i] <= got_values[i - 1]);
    }
    wrong += (i < 5) != (got_values[i] < 5);
  }
  EXPECT_EQ(wrong, 0u);
}

// More than 2^32 items, one segment of more than 2^32 keys among a short one, a tiny one and
// an empty one, listed out of order, and a gap after them that must keep the poison. u8 keys
// alone, in [0, 250): the giant segment is checked by its counts of each key, in order.
TEST(segmented_sort, huge_u8_segment_above_2_pow_32) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 32) + 4099;
  const std::size_t giant_end = (std::size_t{1} << 32) + 3000, short_end = giant_end + 100;
  const std::vector<long long> begins = {5, (long long)giant_end, 0, (long long)n - 7};
  const std::vector<long long> ends = {(long long)giant_end, (long long)short_end, 5,
                                       (long long)n - 7};
  std::vector<std::uint8_t> keys(n);
  std::minstd_rand cheap(std::uint32_t(ppat_test::run_seed()));
  std::size_t giant_counts[256] = {};
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = std::uint8_t((i * 7 + (cheap() & 1) * 128) % 250);
    if (i >= 5 && i < giant_end) ++giant_counts[keys[i]];
  }
  std::vector<std::uint8_t> tiny(keys.begin(), keys.begin() + 5);
  std::vector<std::uint8_t> short_one(keys.begin() + std::ptrdiff_t(giant_end),
                                      keys.begin() + std::ptrdiff_t(short_end));
  std::sort(tiny.begin(), tiny.end());
  std::sort(short_one.begin(), short_one.end());

  const auto in = on_device(keys);
  keys = {};
  const auto out = poisoned<std::uint8_t>(n);
  auto begin_offsets = on_device(begins);
  auto end_offsets = on_device(ends);
  ppat::segmented_sort_keys(in->data(), out->data(), n, begins.size(), begin_offsets->data(),
                            end_offsets->data());
  ppat_test::expect_no_cuda_error();
  const auto got = out->download();
  EXPECT_TRUE(std::equal(tiny.begin(), tiny.end(), got.begin()));
  std::size_t at = 5, first_wrong = n;
  for (int key = 0; key < 256 && first_wrong == n; ++key) {
    for (std::size_t c = 0; c < giant_counts[key]; ++c, ++at) {
      if (got[at] != key) {
        first_wrong = at;
        break;
      }
    }
  }
  EXPECT_EQ(first_wrong, n) << "the giant segment's first wrong key";
  EXPECT_TRUE(
      std::equal(short_one.begin(), short_one.end(), got.begin() + std::ptrdiff_t(giant_end)));
  EXPECT_TRUE(std::all_of(got.begin() + std::ptrdiff_t(short_end), got.end(), [](std::uint8_t key) {
    return key == ppat_test::poison_byte;
  })) << "items outside every segment were written";
  EXPECT_TRUE(out->guards_intact());
}

TEST(segmented_sort_arguments, bad_arguments_are_rejected) {
  int* none = nullptr;
  int buffer[64] = {};
  long long offsets[4] = {0, 2, 2, 4};
  const auto rejects = [](auto call, const char* argument) {
    ppat_test::expect_rejected("sort_", argument, call);
  };
  const long long* no_offsets = nullptr;
  rejects([&] { ppat::segmented_sort_keys(none, buffer, 4, 2, offsets, offsets + 1); }, "'in'");
  rejects([&] { ppat::segmented_sort_keys(buffer, buffer + 2, 4, 2, offsets, offsets + 1); },
          "'out'");
  rejects([&] { ppat::segmented_sort_keys(buffer, buffer + 8, 4, 2, no_offsets, offsets + 1); },
          "begin_offsets");
  rejects([&] { ppat::segmented_sort_keys(buffer, buffer + 8, 4, 2, offsets, no_offsets); },
          "end_offsets");
  rejects(
      [&] {
        auto* overlapping = reinterpret_cast<long long*>(buffer + 8);
        ppat::segmented_sort_keys(buffer, buffer + 8, 4, 2, overlapping, offsets + 1);
      },
      "begin_offsets");
  rejects(
      [&] {
        auto* overlapping = reinterpret_cast<long long*>(buffer + 24);
        ppat::segmented_sort_pairs(buffer, buffer + 8, buffer + 16, buffer + 24, 4, 2, offsets,
                                   overlapping);
      },
      "end_offsets");
  rejects(
      [&] {
        ppat::segmented_sort_pairs(buffer, buffer + 8, buffer + 16, buffer + 2, 4, 2, offsets,
                                   offsets + 1);
      },
      "values_out");
  rejects(
      [&] {
        ppat::segmented_sort_keys(buffer, buffer + 8, 4, 2, offsets, offsets + 1,
                                  static_cast<ppat::order>(3));
      },
      "ord");
  rejects([&] { ppat::sort_keys_batched(buffer, buffer + 1, 2, 2); }, "'out'");
  rejects([&] { ppat::sort_pairs_batched(buffer, buffer + 8, none, buffer + 24, 2, 2); },
          "values_in");
  rejects(
      [&] {
        ppat::sort_keys_batched(buffer, buffer + 8, std::size_t{1} << 40, std::size_t{1} << 40);
      },
      "cols");
  // The textbook rung sorts into outputs of their own.
  rejects(
      [&] {
        ppat::textbook::bitonic_segmented_sort_keys(buffer, buffer, 4, 2, offsets, offsets + 1);
      },
      "'out'");
  rejects(
      [&] {
        ppat::textbook::bitonic_segmented_sort_pairs(buffer, buffer + 8, buffer + 16, buffer + 16,
                                                     4, 2, offsets, offsets + 1);
      },
      "values_out");
  rejects(
      [&] {
        ppat::textbook::bitonic_segmented_sort_keys(buffer, buffer + 8, 4, 2, no_offsets,
                                                    offsets + 1);
      },
      "begin_offsets");
}

TEST(segmented_sort, nothing_to_sort_launches_nothing) {
  int* none = nullptr;
  const long long* no_offsets = nullptr;
  ppat::segmented_sort_keys(none, none, 0, 0, no_offsets, no_offsets);
  ppat::sort_keys_batched(none, none, 0, 5);
  ppat::sort_keys_batched(none, none, 5, 0);
  SUCCEED();
}

}  // namespace
