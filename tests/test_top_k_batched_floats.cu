// Top-k of each row of a matrix of floating-point keys (the rest of the suite:
// test_top_k.cu): floats with NaNs of any payload, infinities and signed zeros, on every shape
// of test_top_k_batched.cu; bad arguments.
#include "top_k_checks.hpp"

namespace {

using namespace top_k_checks;

TEST(top_k_batched, rows_of_floating_point_keys) {
  PPAT_REQUIRE_GPU();
  every_batched_case<float>("f32");
  every_batched_case<double>("f64");
  every_batched_case<__half>("f16");
}

// Floats of one sign and exponent, in [1, 2): their images share the first digit and a bit.
TEST(top_k_batched, rows_of_floats_sharing_their_exponent) {
  PPAT_REQUIRE_GPU();
  rows_sharing_a_first_digit<float>("f32", [](float key) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &key, sizeof(bits));
    bits = (bits & 0x007FFFFFu) | 0x3F800000u;
    std::memcpy(&key, &bits, sizeof(bits));
    return key;
  });
}

TEST(top_k_arguments, bad_batched_arguments_are_rejected_before_any_launch) {
  PPAT_REQUIRE_GPU();
  const auto in = on_device(draw_keys<float>(300, false));  // 3 x 100
  const auto keys_out = poisoned<float>(300);
  const auto indices_out = poisoned<std::int64_t>(300);
  const auto expect_rejected = [](auto call, const char* argument) {
    ppat_test::expect_rejected("ppat::top_k_batched", argument, call);
  };
  expect_rejected(
      [&] { ppat::top_k_batched(in->data(), 3, 100, 101, keys_out->data(), indices_out->data()); },
      "'k'");
  expect_rejected(
      [&] { ppat::top_k_batched(in->data(), 3, 100, 5, in->data() + 200, indices_out->data()); },
      "keys_out");
  expect_rejected(
      [&] {
        ppat::top_k_batched(in->data(), 1, 300, 5, keys_out->data(),
                            reinterpret_cast<std::int8_t*>(indices_out->data()));
      },
      "indices_out");
  expect_rejected(
      [&] {
        ppat::top_k_batched(in->data(), std::size_t(1) << 40, std::size_t(1) << 40, 5,
                            keys_out->data(), indices_out->data());
      },
      "cols");
  ppat_test::expect_no_cuda_error();
  // Nothing to take is no error; rows of 100 fit an int8's positions.
  ppat::top_k_batched(in->data(), 3, 100, 0, keys_out->data(), indices_out->data());
  ppat::top_k_batched((const float*)nullptr, 0, 100, 5, (float*)nullptr, (std::int64_t*)nullptr);
  ppat::top_k_batched(in->data(), 3, 100, 5, keys_out->data(),
                      reinterpret_cast<std::int8_t*>(indices_out->data()));
  ppat_test::expect_no_cuda_error();
}

}  // namespace
