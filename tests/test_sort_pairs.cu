// Sorted pairs (the rest of the suite: test_sort.cu): every key type with index values, which
// show stability, in every spread; and 1-, 8- and 16-byte values, two 8-byte words among them.
#include "sort_checks.hpp"

namespace {

using namespace sort_checks;

TEST(sort, pairs_are_stable_for_every_key_type) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  pairs_of_type<std::uint8_t>("u8");
  pairs_of_type<std::int16_t>("i16");
  pairs_of_type<std::uint32_t>("u32");
  pairs_of_type<std::int32_t>("i32");
  pairs_of_type<std::uint64_t>("u64");
  pairs_of_type<std::int64_t>("i64");
  pairs_of_type<float>("f32");
  pairs_of_type<double>("f64");
  pairs_of_type<__half>("f16");
  pairs_of_type<__nv_bfloat16>("bf16");
}

template <class K, class V>
void pairs_with_values(const char* type) {
  for (ppat::order ord : orders) {
    for (spread s : {spread::uniform_bits, spread::few_distinct}) {
      // 299993 pairs with 16-byte values are more 1024-key tiles than an H200 holds at
      // once: the onesweep kernels, within the sanitizers' budget.
      for (std::size_t n : {std::size_t{1}, std::size_t{1025}, std::size_t{2049}, std::size_t{4097},
                            std::size_t{8192}, std::size_t{8193}, std::size_t{299993},
                            large_sizes[1], large_sizes[3]}) {
        if (ppat_test::over_item_budget(n) || sampled_out(n, s)) continue;
        expect_pairs_sorted(draw_keys<K>(n, s), draw_values<V>(n), ord, case_name(type, ord, s, n));
      }
    }
  }
}

TEST(sort, pairs_with_1_8_and_16_byte_values) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  pairs_with_values<std::uint32_t, std::uint8_t>("u32 / u8");
  pairs_with_values<std::uint32_t, std::uint64_t>("u32 / u64");
  pairs_with_values<std::uint32_t, wide>("u32 / 16-byte struct");
  pairs_with_values<double, wide>("f64 / 16-byte struct");
  pairs_with_values<std::uint64_t, wide>("u64 / 16-byte struct");
  pairs_with_values<std::uint64_t, two_words>("u64 / two 8-byte words");
  pairs_with_values<std::int64_t, two_words>("i64 / two 8-byte words");
  pairs_with_values<double, two_words>("f64 / two 8-byte words");
  pairs_with_values<std::uint8_t, wide>("u8 / 16-byte struct");
  pairs_with_values<std::int64_t, std::uint64_t>("i64 / u64");
}

}  // namespace
