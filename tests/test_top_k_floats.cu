// Top-k of floating-point keys (the rest of the suite: test_top_k.cu): floats with NaNs of any
// payload, infinities and signed zeros, keys of narrow ranges (uniform in [0, 1), normal)
// and unaligned, inputs long enough for the sampled bound, kept and defeated; the textbook
// sort-then-take rung.
#include <random>

#include "top_k_checks.hpp"

namespace {

using namespace top_k_checks;

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

}  // namespace
