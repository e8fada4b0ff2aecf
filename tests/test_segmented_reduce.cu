// Segmented and batched reductions against a host fold of each segment: layouts from many
// tiny segments to one that covers the input, lengths on every path's edges, segments out
// of order with gaps, offset pairs that are no range (read as empty), one offset array for
// both ends, every offset type; integers (exact, wrapping), a non-commutative operator
// (which shows any misordering on every path), doubles of exact fractions, floats whose bits
// must depend only on a segment's items; the long-segment paths with their lists made tiny
// (parts folded on one block, segments left off the list); rows of a matrix; graph capture;
// a segment of more than 2^32 items; bad arguments. Outputs are poisoned first and checked
// whole.
#include <ppat/ppat.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "segment_layouts.hpp"
#include "support.hpp"

namespace {

using ppat_test::affine;
using ppat_test::device_buffer;
using ppat_test::first_mismatch;
using ppat_test::layout;
using ppat_test::layouts;
using ppat_test::on_device;
using ppat_test::poisoned;
using ppat_test::segments;

template <class T>
using paths = ppat::detail::segment_reduce_paths<T>;

// Lengths next to each path's limit for items of type T.
template <class T>
std::vector<std::size_t> edge_lengths() {
  using p = paths<T>;
  const auto parts = [](std::size_t count) { return count * p::part_items_least; };
  std::vector<std::size_t> lengths{0, 1, 2, 7};
  for (std::size_t edge :
       {p::thread_items, p::stage_items, p::warp_items, parts(1), parts(2), parts(3) + 5}) {
    for (std::size_t length : {edge - 1, edge, edge + 1})
      lengths.push_back(length);
  }
  return lengths;
}

template <class T>
segments draw_segments(std::size_t n, layout l) {
  auto& rng = ppat_test::rng();
  const std::vector<std::size_t> edges = edge_lengths<T>();
  const std::size_t longest = 3 * paths<T>::part_items_least + 100;
  const auto next_length = [&]() -> std::size_t {
    switch (l) {
      case layout::tiny:
        return rng() % 41;
      case layout::edges:
        return edges[rng() % edges.size()];
      default: {
        const unsigned kind = unsigned(rng() % 8);
        if (kind == 0) return rng() % 2;
        if (kind <= 3) return rng() % 700;
        if (kind <= 5) return rng() % 5000;
        return rng() % longest;
      }
    }
  };
  return ppat_test::lay_out(n, l, next_length, /*ends_past_n=*/false);
}

// init, then each item of segment i, left to right: what the call must write for it. A pair
// that is no range is an empty segment.
template <class T, class Op>
std::vector<T> host_fold(const std::vector<T>& items, const segments& s, T init, Op op) {
  std::vector<T> folded(s.begins.size());
  for (std::size_t i = 0; i < folded.size(); ++i) {
    T total = init;
    if (s.begins[i] >= 0 && s.ends[i] > s.begins[i]) {
      for (long long j = s.begins[i]; j < s.ends[i]; ++j)
        total = op(total, items[std::size_t(j)]);
    }
    folded[i] = total;
  }
  return folded;
}

template <class Offset>
std::vector<Offset> offsets_as(const std::vector<long long>& offsets) {
  std::vector<Offset> converted(offsets.size());
  for (std::size_t i = 0; i < offsets.size(); ++i)
    converted[i] = Offset(offsets[i]);
  return converted;
}

// segmented_reduce on the device, its result downloaded; `limits` reaches the long-segment
// paths a small input does not.
template <class T, class Offset, class Op>
std::vector<T> device_fold(const device_buffer<T>& items, const segments& s, T init, Op op,
                           const ppat::detail::long_segment_limits* limits = nullptr) {
  const auto begins = on_device(offsets_as<Offset>(s.begins));
  const auto ends = on_device(offsets_as<Offset>(s.ends));
  const auto out = poisoned<T>(s.begins.size());
  if (limits == nullptr) {
    ppat::segmented_reduce(items.data(), out->data(), s.begins.size(), begins->data(), ends->data(),
                           init, op);
  } else {
    const ppat::detail::call_context call(0, "ppat::segmented_reduce");
    ppat::detail::reduce_segments(items.data(), out->data(),
                                  ppat::detail::offset_segments<Offset>{
                                      begins->data(), ends->data(), SIZE_MAX, s.begins.size()},
                                  init, op, call, *limits);
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(out->guards_intact());
  return out->download();
}

// n items, or fewer under the sanitizers: enough for segments of several parts.
std::size_t items_for(std::size_t n) {
  return ppat_test::fits_item_budget(n) ? n : 250000;
}

template <class T>
std::vector<T> draw_integers(std::size_t n) {
  return ppat_test::random_integers<T>(n, std::is_signed_v<T> ? -100000 : 0, 1000000);
}

template <class T, class Offset, class Op>
void check_layouts(std::size_t n, T init, Op op, const std::vector<T>& items) {
  const auto on = on_device(items);
  for (layout l : layouts) {
    SCOPED_TRACE(std::string("layout ") + name(l));
    const segments s = draw_segments<T>(n, l);
    const std::vector<T> got = device_fold<T, Offset>(*on, s, init, op);
    EXPECT_EQ(first_mismatch(got, host_fold(items, s, init, op)), -1);
  }
}

TEST(segmented_reduce, integers_on_every_layout_and_offset_type) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = items_for(600000);
  {
    SCOPED_TRACE("u32 plus, int offsets");
    check_layouts<std::uint32_t, int>(n, 77u, ppat::plus{}, draw_integers<std::uint32_t>(n));
  }
  {
    SCOPED_TRACE("i64 plus, unsigned long long offsets");
    check_layouts<std::int64_t, unsigned long long>(n, -5ll, ppat::plus{},
                                                    draw_integers<std::int64_t>(n));
  }
  {
    SCOPED_TRACE("i32 maximum, unsigned offsets");
    check_layouts<std::int32_t, unsigned>(n, -2000000, ppat::maximum{},
                                          draw_integers<std::int32_t>(n));
  }
  {
    SCOPED_TRACE("u8 plus (wrapping), long long offsets");
    check_layouts<std::uint8_t, long long>(n, std::uint8_t(3), ppat::plus{},
                                           draw_integers<std::uint8_t>(n));
  }
  {
    SCOPED_TRACE("i16 minimum, int offsets");
    check_layouts<std::int16_t, int>(n, std::int16_t(30000), ppat::minimum{},
                                     ppat_test::random_integers<std::int16_t>(n, -30000, 30000));
  }
}

TEST(segmented_reduce, non_commutative_operator_keeps_the_order) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = items_for(500000);
  const std::vector<affine> maps = ppat_test::random_affine_maps(n);
  check_layouts<affine, long long>(n, affine{3u, 11u, 0u}, ppat_test::then{}, maps);
}

TEST(segmented_reduce, one_offset_array_for_both_ends) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = items_for(300000);
  const auto items = draw_integers<std::uint32_t>(n);
  const auto on = on_device(items);
  const segments s = draw_segments<std::uint32_t>(n, layout::mixed);
  std::vector<long long> offsets = s.begins;
  offsets.push_back(s.ends.back());
  const auto both = on_device(offsets);
  const auto out = poisoned<std::uint32_t>(s.begins.size());
  ppat::segmented_reduce(on->data(), out->data(), s.begins.size(), both->data(), both->data() + 1,
                         9u);
  PPAT_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(first_mismatch(out->download(), host_fold(items, s, 9u, ppat::plus{})), -1);
  EXPECT_TRUE(out->guards_intact());
}

// Given the items' extent, a segment that reaches past it reads as empty: the call reads
// nothing beyond the n items (the sanitizers would see it).
TEST(segmented_reduce, segments_past_n_read_as_empty_where_n_is_given) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = items_for(400000);
  const auto items = draw_integers<std::uint32_t>(n);
  const auto on = on_device(items);
  auto& random = ppat_test::rng();
  const segments s = ppat_test::lay_out(
      n, layout::not_ranges, [&] { return random() % 3000; }, /*ends_past_n=*/true);
  segments within = s;
  for (std::size_t i = 0; i < within.ends.size(); ++i) {
    if (within.ends[i] > (long long)n) within.ends[i] = within.begins[i];
  }
  const auto begins = on_device(s.begins);
  const auto ends = on_device(s.ends);
  const auto out = poisoned<std::uint32_t>(s.begins.size());
  ppat::segmented_reduce(on->data(), n, out->data(), s.begins.size(), begins->data(), ends->data(),
                         5u);
  PPAT_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(first_mismatch(out->download(), host_fold(items, within, 5u, ppat::plus{})), -1);
  EXPECT_TRUE(out->guards_intact());
}

// Doubles of exact fractions: every partial sum is exact, so any order gives the host's sum.
TEST(segmented_reduce, doubles_of_exact_fractions) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = items_for(700000);
  const auto items = ppat_test::exact_fractions<double>(n, 4000, 1.0 / 64);
  check_layouts<double, long long>(n, 0.5, ppat::plus{}, items);
}

// A segment's float result depends only on its items: the same segment placed anywhere (any
// alignment, any neighbours) and run again gives the same bits, within the rounding a
// correct sum can have.
TEST(segmented_reduce, float_bits_depend_only_on_the_segment) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = items_for(400000);
  const auto items = ppat_test::spread_floats<float>(n);
  const segments s = draw_segments<float>(n, layout::edges);
  const auto on = on_device(items);
  const std::vector<float> first = device_fold<float, int>(*on, s, 1.0f, ppat::plus{});
  for (std::size_t i = 0; i < first.size(); ++i) {
    double exact = 1.0, magnitude = 1.0;
    for (long long j = s.begins[i]; j < s.ends[i]; ++j) {
      exact += items[std::size_t(j)];
      magnitude += std::abs(items[std::size_t(j)]);
    }
    ASSERT_LE(std::abs(first[i] - exact), 1e-5 * magnitude) << "segment " << i;
  }
  for (std::size_t shift : {1, 2, 3, 7}) {
    SCOPED_TRACE("moved " + std::to_string(shift) + " items on");
    const auto moved = on_device(ppat_test::placed_at(items, shift, 8));
    segments shifted = s;
    for (auto& b : shifted.begins)
      b += (long long)shift;
    for (auto& e : shifted.ends)
      e += (long long)shift;
    EXPECT_EQ(first_mismatch(device_fold<float, int>(*moved, shifted, 1.0f, ppat::plus{}), first),
              -1);
  }
}

// The long-segment paths a small input does not reach: part slots run out (segments folded
// whole on one block), or the list does (every long segment looked at again).
TEST(segmented_reduce, long_segments_when_the_lists_run_out) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = items_for(900000);
  const auto items = draw_integers<std::uint32_t>(n);
  const auto maps = ppat_test::random_affine_maps(n);
  const auto on_items = on_device(items);
  const auto on_maps = on_device(maps);
  const ppat::detail::long_segment_limits limits[] = {{0, 0}, {3, 0}, {3, 5}, {100, 7}, {2, 64}};
  for (const auto& limit : limits) {
    SCOPED_TRACE("at most " + std::to_string(limit.listed) + " listed, " +
                 std::to_string(limit.slots) + " slots");
    for (layout l : {layout::mixed, layout::edges, layout::shuffled_gaps}) {
      SCOPED_TRACE(std::string("layout ") + name(l));
      const segments s = draw_segments<std::uint32_t>(n, l);
      EXPECT_EQ(first_mismatch(
                    device_fold<std::uint32_t, long long>(*on_items, s, 4u, ppat::plus{}, &limit),
                    host_fold(items, s, 4u, ppat::plus{})),
                -1);
      const segments m = draw_segments<affine>(n, l);
      EXPECT_EQ(first_mismatch(device_fold<affine, long long>(*on_maps, m, affine{5u, 1u, 0u},
                                                              ppat_test::then{}, &limit),
                               host_fold(maps, m, affine{5u, 1u, 0u}, ppat_test::then{})),
                -1);
    }
  }
}

// segmented_reduce's one-launch path on the device (its limits lowered; with
// `segments_a_block`, as few blocks as give each block that many segments), its result
// downloaded.
template <class T, class Op>
std::vector<T> one_launch_fold(const device_buffer<T>& items, const segments& s, T init, Op op,
                               ppat::detail::few_segment_limits limits,
                               std::size_t segments_a_block) {
  const auto begins = on_device(offsets_as<long long>(s.begins));
  const auto ends = on_device(offsets_as<long long>(s.ends));
  const auto out = poisoned<T>(s.begins.size());
  if (segments_a_block != 0)
    limits.blocks = (s.begins.size() + segments_a_block - 1) / segments_a_block;
  const ppat::detail::call_context call(0, "ppat::segmented_reduce");
  EXPECT_TRUE(ppat::detail::reduce_few_segments(
      items.data(), out->data(),
      ppat::detail::offset_segments<long long>{begins->data(), ends->data(), SIZE_MAX,
                                               s.begins.size()},
      init, op, call, limits));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(out->guards_intact());
  return out->download();
}

// Segments up to a few times the blocks the GPU holds at once take one launch, a block a
// segment with helper blocks for the parts of long ones, or blocks of several segments that
// help each other: exact against the host (a non-commutative operator too), and float bits
// the same as the two-kernel path's, with every helper, with none or one (a segment's own
// block folds its parts), with part slots for none or few of the spread segments (those
// folded whole by their own block), and with 2, 3 and 8 segments a block.
TEST(segmented_reduce, few_segments_in_one_launch) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 250000;  // about 40 segments of the mixed layouts
  const auto items = draw_integers<std::uint32_t>(n);
  const auto maps = ppat_test::random_affine_maps(n);
  const auto floats = ppat_test::spread_floats<float>(n);
  const auto bytes = draw_integers<std::uint8_t>(n);  // folded on paths of their own
  const auto on_items = on_device(items);
  const auto on_maps = on_device(maps);
  const auto on_floats = on_device(floats);
  const auto on_bytes = on_device(bytes);
  const ppat::detail::long_segment_limits two_kernels{};
  struct limit_case {
    ppat::detail::few_segment_limits limits;
    std::size_t segments_a_block;  // 0: a block a segment
  };
  const ppat::detail::few_segment_limits every_slot{};
  const limit_case cases[] = {{every_slot, 0},
                              {{every_slot.slots, 0}, 0},
                              {{every_slot.slots, 1}, 0},
                              {{0, 3}, 0},
                              {{5, 2}, 0},
                              {{20, SIZE_MAX}, 0},
                              {every_slot, 2},
                              {{7, SIZE_MAX}, 3},
                              {every_slot, 8},
                              {{0, SIZE_MAX}, 8}};
  for (const auto& c : cases) {
    SCOPED_TRACE("at most " + std::to_string(c.limits.slots) + " slots, " +
                 std::to_string(c.limits.helpers) + " helpers, " +
                 std::to_string(c.segments_a_block) + " segments a block");
    for (layout l :
         {layout::mixed, layout::edges, layout::one, layout::shuffled_gaps, layout::not_ranges}) {
      SCOPED_TRACE(std::string("layout ") + name(l));
      const segments s = draw_segments<std::uint32_t>(n, l);
      EXPECT_EQ(first_mismatch(
                    one_launch_fold(*on_items, s, 4u, ppat::plus{}, c.limits, c.segments_a_block),
                    host_fold(items, s, 4u, ppat::plus{})),
                -1);
      const segments m = draw_segments<affine>(n, l);
      EXPECT_EQ(first_mismatch(one_launch_fold(*on_maps, m, affine{5u, 1u, 0u}, ppat_test::then{},
                                               c.limits, c.segments_a_block),
                               host_fold(maps, m, affine{5u, 1u, 0u}, ppat_test::then{})),
                -1);
      const segments f = draw_segments<float>(n, l);
      EXPECT_EQ(
          first_mismatch(
              one_launch_fold(*on_floats, f, 0.5f, ppat::plus{}, c.limits, c.segments_a_block),
              device_fold<float, long long>(*on_floats, f, 0.5f, ppat::plus{}, &two_kernels)),
          -1);
      const segments b = draw_segments<std::uint8_t>(n, l);
      EXPECT_EQ(first_mismatch(one_launch_fold(*on_bytes, b, std::uint8_t(9), ppat::plus{},
                                               c.limits, c.segments_a_block),
                               host_fold(bytes, b, std::uint8_t(9), ppat::plus{})),
                -1);
    }
  }
}

template <class T, class Op>
void check_rows(std::size_t rows, std::size_t cols, T init, Op op, const std::vector<T>& items) {
  SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
  const auto on = on_device(items);
  const auto out = poisoned<T>(rows);
  ppat::reduce_batched(on->data(), out->data(), rows, cols, init, op);
  PPAT_CUDA_OK(cudaDeviceSynchronize());
  segments s;
  for (std::size_t r = 0; r < rows; ++r) {
    s.begins.push_back((long long)(r * cols));
    s.ends.push_back((long long)((r + 1) * cols));
  }
  EXPECT_EQ(first_mismatch(out->download(), host_fold(items, s, init, op)), -1);
  EXPECT_TRUE(out->guards_intact());
}

TEST(reduce_batched, rows_on_every_path) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  using p = paths<std::uint32_t>;
  const std::size_t widths[] = {0,
                                1,
                                5,
                                p::thread_items,
                                p::thread_items + 1,
                                p::stage_items + 1,
                                p::warp_items,
                                p::warp_items + 1,
                                p::part_items_least + 1,
                                5 * p::part_items_least + 3};
  for (std::size_t cols : widths) {
    for (std::size_t rows : {1, 3, 700}) {
      const std::size_t n = rows * cols;
      if (ppat_test::over_item_budget(n)) continue;
      check_rows<std::uint32_t>(rows, cols, 8u, ppat::plus{}, draw_integers<std::uint32_t>(n));
      check_rows<affine>(rows, cols, affine{3u, 2u, 0u}, ppat_test::then{},
                         ppat_test::random_affine_maps(n));
    }
  }
}

// A row's float bits are those of the same items as a segment by offsets.
TEST(reduce_batched, float_rows_match_segments_bit_for_bit) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t cols : {std::size_t{20}, std::size_t{300}, paths<float>::warp_items + 9,
                           3 * paths<float>::part_items_least + 17}) {
    SCOPED_TRACE(std::to_string(cols) + " columns");
    const std::size_t rows = 37;
    if (ppat_test::over_item_budget(rows * cols)) continue;
    const auto items = ppat_test::spread_floats<float>(rows * cols);
    const auto on = on_device(items);
    const auto out = poisoned<float>(rows);
    ppat::reduce_batched(on->data(), out->data(), rows, cols, -2.0f);
    PPAT_CUDA_OK(cudaDeviceSynchronize());
    segments s;
    for (std::size_t r = 0; r < rows; ++r) {
      s.begins.push_back((long long)(r * cols));
      s.ends.push_back((long long)((r + 1) * cols));
    }
    EXPECT_EQ(first_mismatch(out->download(), device_fold<float, int>(*on, s, -2.0f, ppat::plus{})),
              -1);
  }
}

TEST(segmented_reduce, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = items_for(300000);
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const segments s = draw_segments<std::uint32_t>(n, layout::mixed);
  const auto begins = on_device(s.begins);
  const auto ends = on_device(s.ends);
  auto items = draw_integers<std::uint32_t>(n);
  const auto on = on_device(items);
  const auto out = poisoned<std::uint32_t>(s.begins.size());
  const auto rows_out = poisoned<std::uint32_t>(100);
  ppat_test::capture_and_replay(
      stream,
      [&] {
        ppat::segmented_reduce(on->data(), out->data(), s.begins.size(), begins->data(),
                               ends->data(), 6u, ppat::plus{}, stream);
        ppat::reduce_batched(on->data(), rows_out->data(), 100, 3000, 1u, ppat::plus{}, stream);
      },
      [&](int) {
        items = draw_integers<std::uint32_t>(n);
        on->upload(items);
        out->poison();
        rows_out->poison();
      },
      [&](int) {
        EXPECT_EQ(first_mismatch(out->download(), host_fold(items, s, 6u, ppat::plus{})), -1);
        segments rows;
        for (long long r = 0; r < 100; ++r) {
          rows.begins.push_back(r * 3000);
          rows.ends.push_back((r + 1) * 3000);
        }
        EXPECT_EQ(first_mismatch(rows_out->download(), host_fold(items, rows, 1u, ppat::plus{})),
                  -1);
      });
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
}

// A segment of more than 2^32 items (bytes, whose sums wrap), between two short ones, with
// 64-bit offsets.
TEST(segmented_reduce, huge_segment_above_2_pow_32_items) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t(1) << 32) + 70001;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  std::vector<std::uint8_t> items(n);
  std::uint32_t state = 12345;
  for (auto& x : items) {
    state = state * 1664525u + 1013904223u;
    x = std::uint8_t(state >> 24);
  }
  const auto on = std::make_unique<device_buffer<std::uint8_t>>(items);
  const segments s{{0, 5, (long long)n - 3}, {5, (long long)n - 3, (long long)n}};
  const auto begins = on_device(s.begins);
  const auto ends = on_device(s.ends);
  const auto out8 = poisoned<std::uint8_t>(3);
  ppat::segmented_reduce(on->data(), out8->data(), 3, begins->data(), ends->data(),
                         std::uint8_t(1));
  PPAT_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(first_mismatch(out8->download(), host_fold(items, s, std::uint8_t(1), ppat::plus{})),
            -1);
}

// 2^28 items in segments of one length, by offsets and as rows: every warp's lanes each
// hold a segment (32 a warp), and a long segment's block folds dozens one after another.
TEST(segmented_reduce, huge_many_segments_of_one_length) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = std::size_t(1) << 28;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  const auto items = ppat_test::random_integers<std::int32_t>(n, -100, 100);
  const auto on = std::make_unique<device_buffer<std::int32_t>>(items);
  for (std::size_t length : {std::size_t{1000}, std::size_t{10000}}) {
    SCOPED_TRACE("segments of " + std::to_string(length));
    const std::size_t count = n / length;
    segments s;
    for (std::size_t i = 0; i < count; ++i) {
      s.begins.push_back((long long)(i * length));
      s.ends.push_back((long long)((i + 1) * length));
    }
    const std::vector<std::int32_t> expected = host_fold(items, s, 0, ppat::plus{});
    EXPECT_EQ(first_mismatch(device_fold<std::int32_t, int>(*on, s, 0, ppat::plus{}), expected),
              -1);
    const auto rows_out = poisoned<std::int32_t>(count);
    ppat::reduce_batched(on->data(), rows_out->data(), count, length, 0);
    PPAT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(first_mismatch(rows_out->download(), expected), -1);
  }
}

TEST(segmented_reduce_arguments, bad_arguments_are_rejected_before_any_launch) {
  PPAT_REQUIRE_GPU();
  const auto items = on_device(draw_integers<std::uint32_t>(100));
  const auto offsets = on_device(std::vector<int>{0, 10, 20, 30});
  const auto out = poisoned<std::uint32_t>(3);
  const auto expect_rejected = [](auto call, const char* argument) {
    ppat_test::expect_rejected("ppat::", argument, call);
  };
  expect_rejected(
      [&] {
        ppat::segmented_reduce(items->data(), (std::uint32_t*)nullptr, 3, offsets->data(),
                               offsets->data() + 1, 0u);
      },
      "out");
  expect_rejected(
      [&] {
        ppat::segmented_reduce((const std::uint32_t*)nullptr, out->data(), 3, offsets->data(),
                               offsets->data() + 1, 0u);
      },
      "in");
  expect_rejected(
      [&] {
        ppat::segmented_reduce(items->data(), out->data(), 3, (const int*)nullptr,
                               offsets->data() + 1, 0u);
      },
      "begin_offsets");
  expect_rejected(
      [&] {
        ppat::segmented_reduce(items->data(), reinterpret_cast<std::uint32_t*>(offsets->data()), 3,
                               offsets->data(), offsets->data() + 1, 0u);
      },
      "offsets");
  expect_rejected(
      [&] {
        ppat::reduce_batched(items->data(), out->data(), std::size_t(1) << 40, std::size_t(1) << 40,
                             0u);
      },
      "cols");
  expect_rejected([&] { ppat::reduce_batched(items->data(), items->data() + 5, 10, 10, 0u); },
                  "out");
  // Given n, `in` is known: null with items to read, or under `out`.
  expect_rejected(
      [&] {
        ppat::segmented_reduce((const std::uint32_t*)nullptr, 100, out->data(), 3, offsets->data(),
                               offsets->data() + 1, 0u);
      },
      "in");
  expect_rejected(
      [&] {
        ppat::segmented_reduce(items->data(), 100, items->data() + 50, 3, offsets->data(),
                               offsets->data() + 1, 0u);
      },
      "out");
  ppat_test::expect_no_cuda_error();
  // Nothing to do is no error.
  ppat::segmented_reduce(items->data(), out->data(), 0, offsets->data(), offsets->data() + 1, 0u);
  ppat::reduce_batched(items->data(), out->data(), 0, 10, 0u);
  ppat_test::expect_no_cuda_error();
  // No items: every segment reaches past them and gets init.
  ppat::segmented_reduce((const std::uint32_t*)nullptr, 0, out->data(), 3, offsets->data(),
                         offsets->data() + 1, 41u);
  PPAT_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(first_mismatch(out->download(), std::vector<std::uint32_t>{41u, 41u, 41u}), -1);
}

}  // namespace
