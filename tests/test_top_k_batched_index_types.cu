// Top-k of each row into indices of other widths, which need hold only a row's positions (the
// rest of the suite: test_top_k.cu); graph capture on every path a row's shape takes.
#include "top_k_checks.hpp"

namespace {

using namespace top_k_checks;

TEST(top_k_batched, index_types) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  expect_top_k_batched<float, std::int32_t>(draw_keys<float>(64 * 5000, true), 64, 5000, 777,
                                            ppat::order::descending);
  expect_top_k_batched<float, std::uint16_t>(draw_keys<float>(10 * 65536, false), 10, 65536, 300,
                                             ppat::order::ascending);
  // Positions in a row of 128 fit an int8 even where positions in the matrix do not.
  expect_top_k_batched<float, std::int8_t>(draw_keys<float>(50 * 128, true), 50, 128, 50,
                                           ppat::order::descending);
}

TEST(top_k_batched, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // A block a row holding it, a cluster of 8 a row, a block a row reading it a digit at a
  // time, then rows that take the whole GPU each.
  for (const auto& shape : {std::pair<std::size_t, std::size_t>{300, 3001},
                            std::pair<std::size_t, std::size_t>{5, 131073},
                            std::pair<std::size_t, std::size_t>{3, 200003},
                            std::pair<std::size_t, std::size_t>{2, 300007}}) {
    const std::size_t rows = shape.first, cols = shape.second;
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
    const std::size_t k = 1234;
    auto keys = draw_keys<std::uint32_t>(rows * cols, false);
    const auto in = on_device(keys);
    const auto keys_out = poisoned<std::uint32_t>(rows * k);
    const auto indices_out = poisoned<std::int64_t>(rows * k);
    ppat_test::capture_and_replay(
        stream,
        [&] {
          ppat::top_k_batched(in->data(), rows, cols, k, keys_out->data(), indices_out->data(),
                              ppat::order::descending, stream);
        },
        [&](int) {
          keys = draw_keys<std::uint32_t>(rows * cols, true);
          in->upload(keys);
          keys_out->poison();
          indices_out->poison();
        },
        [&](int) {
          std::vector<std::int64_t> expected;
          for (std::size_t r = 0; r < rows; ++r) {
            const std::vector<std::uint32_t> row(keys.begin() + std::ptrdiff_t(r * cols),
                                                 keys.begin() + std::ptrdiff_t((r + 1) * cols));
            const auto order = ppat_reference::sorted_positions(row, /*descending=*/true);
            expected.insert(expected.end(), order.begin(), order.begin() + std::ptrdiff_t(k));
          }
          EXPECT_EQ(first_mismatch(indices_out->download(), expected), -1);
        });
  }
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
}

}  // namespace
