// Top-k against the first k of a host stable sort: keys of every width, floats with NaNs of
// any payload, infinities and signed zeros, inputs of few distinct values (ties decided by
// position, across tile and block boundaries), every k from 1 to n on sizes from one key to
// more than a block's run, both orders, index types of every width; graph capture; the
// textbook sort-then-take rung; bad arguments. The batched form row by row against the same
// reference, on shapes of a block a row and of rows long enough for the whole GPU each.
// Outputs are poisoned first and checked whole, bitwise. One test program in six files
// compiled side by side, each holding about as many of the kernels' instantiations: the
// floats' cases in test_top_k_floats.cu, the index types' in _index_types.cu, the rows' in
// _batched.cu, _batched_floats.cu and _batched_index_types.cu, the checks they share in
// top_k_checks.hpp.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "top_k_checks.hpp"

namespace {

using namespace top_k_checks;

TEST(top_k, keys_of_every_width) {
  PPAT_REQUIRE_GPU();
  every_case<std::uint8_t>("u8");
  every_case<std::int16_t>("i16");
  every_case<std::uint32_t>("u32");
  every_case<std::int32_t>("i32");
  every_case<std::int64_t>("i64");
}

// More than 2^32 keys, so positions take 64 bits: u8 keys below 250 but for 300 of 255 and
// 900 of 254 planted across the whole range (some past 2^32); the 1,000 largest are the 255s
// and then the first 700 of the 254s by position, which the host knows without a sort.
TEST(top_k, huge_u8_above_2_pow_32) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 32) + 4099;
  std::vector<std::uint8_t> keys(n);
  std::minstd_rand cheap(std::uint32_t(ppat_test::run_seed()));
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = std::uint8_t((i * 7 + (cheap() & 1) * 128) % 250);
  std::vector<std::size_t> planted;
  std::uniform_int_distribution<std::size_t> anywhere(0, n - 1);
  while (planted.size() < 1200) {
    const std::size_t at = planted.size() % 4 == 0 ? n - 1 - planted.size() : anywhere(cheap);
    if (keys[at] >= 250) continue;
    keys[at] = planted.size() < 300 ? 255 : 254;
    planted.push_back(at);
  }
  std::vector<std::size_t> largest(planted.begin(), planted.begin() + 300);
  std::vector<std::size_t> next(planted.begin() + 300, planted.end());
  std::sort(largest.begin(), largest.end());
  std::sort(next.begin(), next.end());
  std::vector<std::int64_t> expected(largest.begin(), largest.end());
  expected.insert(expected.end(), next.begin(), next.begin() + 700);
  std::vector<std::uint8_t> expected_keys(1000, 254);
  std::fill(expected_keys.begin(), expected_keys.begin() + 300, std::uint8_t{255});

  const auto in = on_device(keys);
  keys = {};
  const auto keys_out = poisoned<std::uint8_t>(1000);
  const auto indices_out = poisoned<std::int64_t>(1000);
  ppat::top_k(in->data(), n, 1000, keys_out->data(), indices_out->data());
  EXPECT_EQ(first_mismatch(indices_out->download(), expected), -1);
  EXPECT_EQ(first_mismatch(keys_out->download(), expected_keys), -1);
  EXPECT_TRUE(keys_out->guards_intact() && indices_out->guards_intact());
}

TEST(top_k, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 300007, k = 4321;
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto keys = draw_keys<std::uint32_t>(n, false);
  const auto in = on_device(keys);
  const auto keys_out = poisoned<std::uint32_t>(k);
  const auto indices_out = poisoned<std::int64_t>(k);
  ppat_test::capture_and_replay(
      stream,
      [&] {
        ppat::top_k(in->data(), n, k, keys_out->data(), indices_out->data(),
                    ppat::order::descending, stream);
      },
      [&](int) {
        keys = draw_keys<std::uint32_t>(n, true);
        in->upload(keys);
        keys_out->poison();
        indices_out->poison();
      },
      [&](int) {
        const auto order = ppat_reference::sorted_positions(keys, /*descending=*/true);
        std::vector<std::int64_t> expected(order.begin(), order.begin() + std::ptrdiff_t(k));
        EXPECT_EQ(first_mismatch(indices_out->download(), expected), -1);
      });
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
}

TEST(top_k_arguments, bad_arguments_are_rejected_before_any_launch) {
  PPAT_REQUIRE_GPU();
  const auto in = on_device(draw_keys<float>(300, false));
  const auto keys_out = poisoned<float>(300);
  const auto indices_out = poisoned<std::int64_t>(300);
  const auto expect_rejected = [](auto call, const char* argument) {
    ppat_test::expect_rejected("ppat::top_k", argument, call);
  };
  expect_rejected([&] { ppat::top_k(in->data(), 300, 301, keys_out->data(), indices_out->data()); },
                  "'k'");
  expect_rejected(
      [&] {
        ppat::top_k(in->data(), 300, 5, keys_out->data(),
                    reinterpret_cast<std::int8_t*>(indices_out->data()));
      },
      "indices_out");
  expect_rejected([&] { ppat::top_k(in->data(), 300, 5, (float*)nullptr, indices_out->data()); },
                  "keys_out");
  expect_rejected([&] { ppat::top_k(in->data(), 300, 5, in->data() + 10, indices_out->data()); },
                  "keys_out");
  expect_rejected(
      [&] {
        ppat::top_k(in->data(), 300, 5, keys_out->data(), indices_out->data(), ppat::order(7));
      },
      "ord");
  ppat_test::expect_rejected("sort_then_take_top_k", "'k'", [&] {
    ppat::textbook::sort_then_take_top_k(in->data(), 300, 301, keys_out->data(),
                                         indices_out->data());
  });
  ppat_test::expect_rejected("sort_then_take_top_k", "keys_out", [&] {
    ppat::textbook::sort_then_take_top_k(in->data(), 300, 5, in->data() + 10, indices_out->data());
  });
  ppat_test::expect_no_cuda_error();
  // Nothing to take is no error.
  ppat::top_k(in->data(), 300, 0, keys_out->data(), indices_out->data());
  ppat::top_k((const float*)nullptr, 0, 0, (float*)nullptr, (std::int64_t*)nullptr);
  ppat_test::expect_no_cuda_error();
}

}  // namespace
