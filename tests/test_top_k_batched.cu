// Top-k of each row of a matrix of integer keys (the rest of the suite: test_top_k.cu), row
// by row against the host's stable sort of that row, on every path a row's shape takes
// (every_batched_case, top_k_checks.hpp).
#include "top_k_checks.hpp"

namespace {

using namespace top_k_checks;

TEST(top_k_batched, rows_of_integer_keys) {
  PPAT_REQUIRE_GPU();
  every_batched_case<std::uint8_t>("u8");
  every_batched_case<std::int16_t>("i16");
  every_batched_case<std::int32_t>("i32");
  every_batched_case<std::uint64_t>("u64");
}

// Rows fewer than the SMs take a cluster a row, which sorts up to 1,024 taken keys itself (a
// warp up to 32, the first block above): k either side of 32, and more rows than the
// clusters of 8 blocks resident at once (i16 rows of 200,003 keys), so that a cluster sorts
// rows whose outputs of a key or a few share cache lines with rows other clusters wrote.
TEST(top_k_batched, few_rows_sorted_in_their_clusters) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t rows = 100, cols = 200003;
  if (ppat_test::over_item_budget(rows * cols)) return;
  for (bool few : {false, true}) {
    SCOPED_TRACE(few ? "few distinct keys" : "keys of every bit pattern");
    const std::vector<std::int16_t> keys = draw_keys<std::int16_t>(rows * cols, few);
    for (std::size_t k : {std::size_t{1}, std::size_t{17}, std::size_t{33}})
      expect_top_k_batched<std::int16_t>(keys, rows, cols, k, ppat::order::descending);
  }
  const std::vector<float> floats = draw_keys<float>(64 * 1024, false);
  for (ppat::order ord : {ppat::order::descending, ppat::order::ascending}) {
    for (std::size_t k : {std::size_t{8}, std::size_t{32}, std::size_t{1000}, std::size_t{1024}})
      expect_top_k_batched<float>(floats, 64, 1024, k, ord);
  }
}

TEST(top_k_batched, rows_whose_keys_share_their_first_digit) {
  PPAT_REQUIRE_GPU();
  rows_sharing_a_first_digit<std::uint32_t>(
      "u32", [](std::uint32_t key) { return (key & 0x00FFFFFFu) | 0x5A000000u; });
  rows_sharing_a_first_digit<std::int64_t>("i64", [](std::int64_t key) {
    return std::int64_t((std::uint64_t(key) & 0x00FFFFFFFFFFFFFFull) | 0x8000000000000000ull);
  });
}

}  // namespace
