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

TEST(top_k_batched, rows_whose_keys_share_their_first_digit) {
  PPAT_REQUIRE_GPU();
  rows_sharing_a_first_digit<std::uint32_t>(
      "u32", [](std::uint32_t key) { return (key & 0x00FFFFFFu) | 0x5A000000u; });
  rows_sharing_a_first_digit<std::int64_t>("i64", [](std::int64_t key) {
    return std::int64_t((std::uint64_t(key) & 0x00FFFFFFFFFFFFFFull) | 0x8000000000000000ull);
  });
}

}  // namespace
