// Transpose rungs against the host reference: degenerate, skinny, prime and tile-boundary
// shapes, every element size from 1 to 16 bytes, more than 2^28 elements, bad arguments.
#include <ppat/ppat.cuh>

#include <cstdint>
#include <cstring>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::device_buffer;

struct bytes16 {
  std::uint64_t low, high;
};

enum class rung { naive, tiled };
constexpr rung rungs[] = {rung::naive, rung::tiled};
const char* name(rung r) {
  return r == rung::naive ? "naive" : "tiled";
}

template <class T>
void run_transpose(rung r, const T* in, T* out, std::size_t rows, std::size_t cols) {
  if (r == rung::naive)
    ppat::textbook::transpose_naive(in, out, rows, cols);
  else
    ppat::textbook::transpose_tiled(in, out, rows, cols);
}

// Random bytes make random elements of any type.
template <class T>
std::vector<T> random_elements(std::size_t count) {
  const auto bytes = ppat_test::random_integers<std::uint8_t>(count * sizeof(T), 0, 255);
  std::vector<T> values(count);
  if (count > 0) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

template <class T>
void check_transpose(std::size_t rows, std::size_t cols) {
  if (!ppat_test::fits_item_budget(rows * cols)) return;
  const auto in = random_elements<T>(rows * cols);
  const auto expected = ppat_reference::transpose(in, rows, cols);
  device_buffer<T> input(in, /*guard=*/64);
  device_buffer<T> output(in.size(), /*guard=*/64);
  for (rung r : rungs) {
    SCOPED_TRACE(std::string(name(r)) + " " + std::to_string(rows) + " x " + std::to_string(cols) +
                 ", " + std::to_string(sizeof(T)) + "-byte elements");
    output.poison();
    run_transpose(r, input.data(), output.data(), rows, cols);
    ppat_test::expect_no_cuda_error();
    EXPECT_EQ(ppat_test::first_mismatch(output.download(), expected), -1) << "first wrong element";
    EXPECT_TRUE(output.guards_intact()) << "write outside out";
  }
}

struct shape {
  std::size_t rows, cols;
};
const shape shapes[] = {{1, 1},
                        {1, 1000},
                        {1000, 1},
                        {2, 2},
                        {31, 33},
                        {32, 32},
                        {31, 32},
                        {33, 32},
                        {32, 31},
                        {32, 33},
                        {64, 64},
                        {63, 65},
                        {33, 4097},
                        {4097, 33},
                        {65536, 3},
                        {3, 65536},
                        {1023, 1025},
                        // more tile rows than a grid has (65535): the kernels' grid-stride loops
                        {3000000, 1},
                        {3000000, 2}};

template <class T>
void check_all_shapes() {
  for (const shape& s : shapes)
    check_transpose<T>(s.rows, s.cols);
}

TEST(textbook_transpose, one_byte_elements) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_all_shapes<std::uint8_t>();
}
TEST(textbook_transpose, two_byte_elements) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_all_shapes<std::uint16_t>();
}
TEST(textbook_transpose, four_byte_elements) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_all_shapes<float>();
  check_transpose<float>(8191, 8193);
}
TEST(textbook_transpose, eight_byte_elements) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_all_shapes<double>();
}
TEST(textbook_transpose, sixteen_byte_elements) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_all_shapes<bytes16>();
}

// More than 2^28 elements, prime sides.
TEST(textbook_transpose, huge_u8_above_2_pow_28) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_transpose<std::uint8_t>(16411, 16417);
}

TEST(textbook_transpose_arguments, empty_shapes_are_a_no_op) {
  for (rung r : rungs) {
    EXPECT_NO_THROW(run_transpose<float>(r, nullptr, nullptr, 0, 100));
    EXPECT_NO_THROW(run_transpose<float>(r, nullptr, nullptr, 100, 0));
  }
}

TEST(textbook_transpose_arguments, bad_arguments_are_rejected) {
  auto* fake = reinterpret_cast<float*>(std::uintptr_t{1} << 20);  // never dereferenced
  for (rung r : rungs) {
    EXPECT_THROW(run_transpose<float>(r, nullptr, fake + 1000, 10, 10), std::invalid_argument);
    EXPECT_THROW(run_transpose<float>(r, fake, nullptr, 10, 10), std::invalid_argument);
    EXPECT_THROW(run_transpose(r, fake, fake + 99, 10, 10), std::invalid_argument);
    EXPECT_THROW(run_transpose(r, fake, fake, 10, 10), std::invalid_argument);
    EXPECT_THROW(run_transpose(r, fake, fake + 1000, std::size_t{1} << 40, std::size_t{1} << 40),
                 std::invalid_argument);
  }
}

}  // namespace
