// Top-k into indices of every width (the rest of the suite: test_top_k.cu), of 1 to 8 bytes,
// signed and unsigned, each holding n - 1.
#include "top_k_checks.hpp"

namespace {

using namespace top_k_checks;

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

}  // namespace
