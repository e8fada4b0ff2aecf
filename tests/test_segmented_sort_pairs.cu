// Segmented sorts of pairs (the rest of the suite: test_segmented_sort.cu): stability with
// positions as values, each path in its own launch, binning of small inputs, every offset
// type and one offset array.
#include "segmented_sort_checks.hpp"

namespace {

using namespace segmented_sort_checks;

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

}  // namespace
