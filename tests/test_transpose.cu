// Transposes against the host reference: every rung (textbook and production) on
// degenerate, skinny, prime and tile-boundary shapes, every element size from 1 to 16
// bytes, more than 2^28 elements; then the production calls' own cases: leading
// dimensions (the padding of `out` untouched), unaligned matrices, batches, in place, and
// permutes of rank 1 to 8; bad arguments; and, without a GPU, the host-side plan of a
// permute. Suites: `transpose_rungs` runs every rung through the same checks; `transpose`
// holds what only the production calls promise.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::device_buffer;

struct bytes16 {
  std::uint64_t low, high;
};

enum class rung { naive, tiled, production };
constexpr rung rungs[] = {rung::naive, rung::tiled, rung::production};
const char* name(rung r) {
  return r == rung::naive ? "naive" : r == rung::tiled ? "tiled" : "production";
}

template <class T>
void run_transpose(rung r, const T* in, T* out, std::size_t rows, std::size_t cols) {
  if (r == rung::naive)
    ppat::textbook::transpose_naive(in, out, rows, cols);
  else if (r == rung::tiled)
    ppat::textbook::transpose_tiled(in, out, rows, cols);
  else
    ppat::transpose(in, out, rows, cols);
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
  if (ppat_test::over_item_budget(rows * cols)) return;
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
                        // Skinny: a short side under a tile, odd, even, one under the tile,
                        // and whole 16-byte chunks (tiles); long sides off the span.
                        {2, 100003},
                        {100003, 2},
                        {63, 70001},
                        {70001, 63},
                        {127, 5001},
                        {5001, 127},
                        {32, 4097},
                        {4097, 32},
                        // Short sides of 8 and 16 bytes' multiples (8- and 16-byte elements
                        // one a thread): 8 x 16 bytes, the most they take.
                        {8, 30011},
                        {30011, 8},
                        // 4- and 8-byte elements in large tiles (enough of them to fill the
                        // GPU), cut on both sides.
                        {2049, 4097},
                        // Aligned rows with at least 16 tiles on both sides for every
                        // element size: tiles numbered along the output rows first.
                        {2048, 2064},
                        // more tile rows than a grid has (65535): the kernels' grid-stride loops
                        {3000000, 1},
                        {3000000, 2}};

template <class T>
void check_all_shapes() {
  for (const shape& s : shapes)
    check_transpose<T>(s.rows, s.cols);
}

TEST(transpose_rungs, one_byte_elements) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_all_shapes<std::uint8_t>();
}
TEST(transpose_rungs, two_byte_elements) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_all_shapes<std::uint16_t>();
}
TEST(transpose_rungs, four_byte_elements) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_all_shapes<float>();
  check_transpose<float>(8191, 8193);
}
TEST(transpose_rungs, eight_byte_elements) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_all_shapes<double>();
}
TEST(transpose_rungs, sixteen_byte_elements) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_all_shapes<bytes16>();
}

// More than 2^28 elements, prime sides.
TEST(transpose_rungs, huge_u8_above_2_pow_28) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_transpose<std::uint8_t>(16411, 16417);
}

TEST(transpose_rungs_arguments, empty_shapes_are_a_no_op) {
  for (rung r : rungs) {
    EXPECT_NO_THROW(run_transpose<float>(r, nullptr, nullptr, 0, 100));
    EXPECT_NO_THROW(run_transpose<float>(r, nullptr, nullptr, 100, 0));
  }
}

TEST(transpose_rungs_arguments, bad_arguments_are_rejected) {
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

// ---- The production calls' own cases ----

template <class T>
std::string describe(const std::string& what) {
  return what + ", " + std::to_string(sizeof(T)) + "-byte elements";
}

// Leading dimensions with padding: `out` starts poisoned, its padding must stay so. Also
// from pointers one element past 16-byte alignment, element by element.
template <class T>
void check_leading_dimensions(std::size_t rows, std::size_t cols, std::size_t pad_in,
                              std::size_t pad_out, std::size_t offset) {
  const std::size_t ld_in = cols + pad_in, ld_out = rows + pad_out;
  SCOPED_TRACE(describe<T>(std::to_string(rows) + " x " + std::to_string(cols) + " ld_in " +
                           std::to_string(ld_in) + " ld_out " + std::to_string(ld_out) +
                           " offset " + std::to_string(offset)));
  const auto in = random_elements<T>(rows * ld_in + offset);
  std::vector<T> dense(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    std::memcpy(&dense[r * cols], &in[offset + r * ld_in], cols * sizeof(T));
  const auto transposed = ppat_reference::transpose(dense, rows, cols);
  device_buffer<T> input(in, /*guard=*/64);
  device_buffer<T> output(cols * ld_out + offset, /*guard=*/64);
  output.poison();
  ppat::transpose(input.data() + offset, ld_in, output.data() + offset, ld_out, rows, cols);
  ppat_test::expect_no_cuda_error();
  const auto actual = output.download();
  long long wrong = -1;
  for (std::size_t i = 0; i < actual.size() && wrong < 0; ++i) {
    const bool inside = i >= offset && (i - offset) % ld_out < rows && (i - offset) / ld_out < cols;
    const std::size_t c = (i - offset) / ld_out, r = (i - offset) % ld_out;
    std::vector<unsigned char> poison(sizeof(T), ppat_test::poison_byte);
    const bool right = inside ? std::memcmp(&actual[i], &transposed[c * rows + r], sizeof(T)) == 0
                              : std::memcmp(&actual[i], poison.data(), sizeof(T)) == 0;
    if (!right) wrong = (long long)i;
  }
  EXPECT_EQ(wrong, -1) << "first wrong element of out (data or padding)";
  EXPECT_TRUE(output.guards_intact()) << "write outside out";
}

template <class T>
void check_leading_dimensions_all() {
  check_leading_dimensions<T>(31, 33, 5, 3, 0);
  check_leading_dimensions<T>(200, 300, 16, 32, 0);  // aligned rows: 16-byte accesses
  check_leading_dimensions<T>(200, 300, 16, 32, 1);  // one element off: element by element
  // One column of unit stride or one row into a column of unit stride (a copy), off 16-byte
  // boundaries too; and the same shapes with strides, which are not a copy.
  check_leading_dimensions<T>(129, 1, 0, 7, 0);
  check_leading_dimensions<T>(1, 129, 7, 0, 0);
  check_leading_dimensions<T>(4099, 1, 0, 0, 3);
  check_leading_dimensions<T>(1, 4099, 0, 0, 1);
  check_leading_dimensions<T>(129, 1, 2, 0, 1);
  check_leading_dimensions<T>(1, 129, 7, 3, 0);
  // Odd leading dimensions: each row off 16-byte boundaries by its own amount.
  check_leading_dimensions<T>(300, 257, 1, 2, 0);
  check_leading_dimensions<T>(257, 300, 3, 5, 3);
  // The same in large tiles of 4- and 8-byte elements.
  check_leading_dimensions<T>(2049, 2049, 3, 1, 0);
  // Short rows of 8- and 16-byte elements one a thread: the flat side tight, the pieces
  // strided.
  check_leading_dimensions<T>(4, 999, 5, 0, 0);
  check_leading_dimensions<T>(999, 2, 0, 7, 0);
}

// Rows off 16-byte boundaries are read as the 16-byte windows they overlap, which reach
// past a row's ends; never past the input's: here it ends its allocation (no guard), on
// an odd leading dimension, so that compute-sanitizer sees any read beyond it.
template <class T>
void check_input_at_allocation_end(std::size_t rows, std::size_t cols, std::size_t ld_in) {
  SCOPED_TRACE(describe<T>(std::to_string(rows) + " x " + std::to_string(cols) + " ld_in " +
                           std::to_string(ld_in) + ", input ending its allocation"));
  const std::size_t span = (rows - 1) * ld_in + cols;
  const auto in = random_elements<T>(span);
  std::vector<T> dense(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    std::memcpy(&dense[r * cols], &in[r * ld_in], cols * sizeof(T));
  device_buffer<T> input(in);
  device_buffer<T> output(rows * cols, /*guard=*/64);
  output.poison();
  ppat::transpose(input.data(), ld_in, output.data(), rows, rows, cols);
  ppat_test::expect_no_cuda_error();
  EXPECT_EQ(
      ppat_test::first_mismatch(output.download(), ppat_reference::transpose(dense, rows, cols)),
      -1)
      << "first wrong element";
  EXPECT_TRUE(output.guards_intact()) << "write outside out";
}

TEST(transpose, input_ending_its_allocation) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_input_at_allocation_end<std::uint8_t>(300, 257, 263);
  check_input_at_allocation_end<std::uint16_t>(129, 65, 67);
  check_input_at_allocation_end<float>(129, 65, 67);
  check_input_at_allocation_end<double>(33, 31, 33);
  // Word columns read rows off 4-byte boundaries as the aligned words they overlap.
  check_input_at_allocation_end<std::uint8_t>(5, 1003, 1005);
  check_input_at_allocation_end<std::uint16_t>(3, 1001, 1003);
}

// Elements whose addresses are not multiples of their size (pairs of floats, 4 bytes off
// 8-byte alignment) cannot be gathered into 16-byte windows: they move one by one.
struct float_pair {
  float x, y;
};

TEST(transpose, elements_off_their_size) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (const shape s : {shape{37, 45}, shape{200, 300}, shape{3, 5000}, shape{5000, 3}}) {
    SCOPED_TRACE(std::to_string(s.rows) + " x " + std::to_string(s.cols) + " float pairs");
    const std::size_t count = s.rows * s.cols;
    const auto in = random_elements<float_pair>(count);
    std::vector<float> in_floats(2 * count + 1);
    std::memcpy(&in_floats[1], in.data(), count * sizeof(float_pair));
    device_buffer<float> input(in_floats, /*guard=*/64);
    device_buffer<float> output(2 * count + 1, /*guard=*/64);
    output.poison();
    ppat::transpose(reinterpret_cast<const float_pair*>(input.data() + 1),
                    reinterpret_cast<float_pair*>(output.data() + 1), s.rows, s.cols);
    ppat_test::expect_no_cuda_error();
    const auto out_floats = output.download();
    std::vector<float_pair> actual(count);
    std::memcpy(actual.data(), &out_floats[1], count * sizeof(float_pair));
    EXPECT_EQ(ppat_test::first_mismatch(actual, ppat_reference::transpose(in, s.rows, s.cols)), -1)
        << "first wrong element";
    EXPECT_TRUE(output.guards_intact()) << "write outside out";
  }
}

TEST(transpose, leading_dimensions_and_alignment) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_leading_dimensions_all<std::uint8_t>();
  check_leading_dimensions_all<std::uint16_t>();
  check_leading_dimensions_all<float>();
  check_leading_dimensions_all<double>();
  check_leading_dimensions_all<bytes16>();
}

// Word columns: short sides of 2 to 8 elements (1 and 2 bytes; 4 and 8 of 4 bytes), flat on
// either side. Long sides that end in a partial word through leading dimensions (the
// elements after the last whole word one by one); rows read off 4-byte boundaries (an odd
// leading dimension, funnel-shifted words).
template <class T>
void check_word_columns() {
  for (std::size_t k = 2; k <= 8; ++k) {
    check_transpose<T>(k, 4124);
    check_transpose<T>(4124, k);
    check_leading_dimensions<T>(k, 1001, 3, 0, 0);
    check_leading_dimensions<T>(1001, k, 0, 3, 0);
    check_leading_dimensions<T>(k, 1001, 0, 0, 0);
    check_transpose<T>(k, 30011);
  }
}

TEST(transpose, word_columns) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_word_columns<std::uint8_t>();
  check_word_columns<std::uint16_t>();
  check_word_columns<float>();
}

template <class T>
void check_batched(std::size_t batch, std::size_t rows, std::size_t cols) {
  if (ppat_test::over_item_budget(batch * rows * cols)) return;
  SCOPED_TRACE(describe<T>(std::to_string(batch) + " x (" + std::to_string(rows) + " x " +
                           std::to_string(cols) + ")"));
  const auto in = random_elements<T>(batch * rows * cols);
  std::vector<T> expected;
  for (std::size_t m = 0; m < batch; ++m) {
    const std::vector<T> matrix(in.begin() + m * rows * cols, in.begin() + (m + 1) * rows * cols);
    const auto t = ppat_reference::transpose(matrix, rows, cols);
    expected.insert(expected.end(), t.begin(), t.end());
  }
  device_buffer<T> input(in, /*guard=*/64);
  device_buffer<T> output(in.size(), /*guard=*/64);
  output.poison();
  ppat::transpose_batched(input.data(), output.data(), batch, rows, cols);
  ppat_test::expect_no_cuda_error();
  EXPECT_EQ(ppat_test::first_mismatch(output.download(), expected), -1) << "first wrong element";
  EXPECT_TRUE(output.guards_intact()) << "write outside out";
}

template <class T>
void check_batched_all() {
  check_batched<T>(3, 31, 33);
  check_batched<T>(5, 64, 64);
  check_batched<T>(2, 1, 1000);
  check_batched<T>(7, 129, 3);   // skinny planes, the short side flat in `in`
  check_batched<T>(3, 5, 1000);  // and in `out`
  check_batched<T>(1000, 16, 16);
  check_batched<T>(1000, 8, 24);  // short rows of 8- and 16-byte elements over a batch
  check_batched<T>(50, 8, 1028);  // word columns over a batch, flat in `out`
  check_batched<T>(50, 1028, 5);  // and in `in`
}

TEST(transpose, batched) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_batched_all<std::uint8_t>();
  check_batched_all<std::uint16_t>();
  check_batched_all<float>();
  check_batched_all<double>();
  check_batched_all<bytes16>();
}

template <class T>
void check_inplace(std::size_t n, std::size_t offset) {
  if (ppat_test::over_item_budget(n * n)) return;
  SCOPED_TRACE(describe<T>("in place " + std::to_string(n) + " offset " + std::to_string(offset)));
  const auto in = random_elements<T>(n * n + offset);
  const std::vector<T> matrix(in.begin() + offset, in.end());
  auto expected = ppat_reference::transpose(matrix, n, n);
  expected.insert(expected.begin(), in.begin(), in.begin() + offset);
  device_buffer<T> data(in, /*guard=*/64);
  ppat::transpose_inplace(data.data() + offset, n);
  ppat_test::expect_no_cuda_error();
  EXPECT_EQ(ppat_test::first_mismatch(data.download(), expected), -1) << "first wrong element";
  EXPECT_TRUE(data.guards_intact()) << "write outside data";
}

template <class T>
void check_inplace_all() {
  for (std::size_t n : {1, 2, 31, 64, 65, 129, 1024, 4099})
    check_inplace<T>(n, 0);
  check_inplace<T>(200, 1);  // not 16-byte aligned: element by element
}

TEST(transpose, in_place) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_inplace_all<std::uint8_t>();
  check_inplace_all<std::uint16_t>();
  check_inplace_all<float>();
  check_inplace_all<double>();
  check_inplace_all<bytes16>();
}

template <class T>
void check_permute(const std::vector<std::size_t>& shape, const std::vector<int>& axes,
                   std::size_t offset = 0) {
  std::size_t count = 1;
  for (std::size_t extent : shape)
    count *= extent;
  if (ppat_test::over_item_budget(count)) return;
  std::string what = "permute shape (";
  for (std::size_t extent : shape)
    what += std::to_string(extent) + " ";
  what += ") axes (";
  for (int axis : axes)
    what += std::to_string(axis) + " ";
  SCOPED_TRACE(describe<T>(what + ") offset " + std::to_string(offset)));
  const auto in = random_elements<T>(count + offset);
  const std::vector<T> array(in.begin() + offset, in.end());
  device_buffer<T> input(in, /*guard=*/64);
  device_buffer<T> output(count + offset, /*guard=*/64);
  output.poison();
  ppat::permute(input.data() + offset, output.data() + offset, shape, axes);
  ppat_test::expect_no_cuda_error();
  auto actual = output.download();
  actual.erase(actual.begin(), actual.begin() + offset);
  EXPECT_EQ(ppat_test::first_mismatch(actual, ppat_reference::permute(array, shape, axes)), -1)
      << "first wrong element";
  EXPECT_TRUE(output.guards_intact()) << "write outside out";
}

// Random shapes of every rank (extents 1 to 6, some of them one), random axes.
template <class T>
void check_random_permutes() {
  for (int rank = 1; rank <= 8; ++rank) {
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<std::size_t> shape;
      const long long max_extent = rank <= 3 ? 40 : rank <= 5 ? 9 : 5;
      for (const long long extent : ppat_test::random_integers<long long>(rank, 1, max_extent))
        shape.push_back(std::size_t(extent));
      std::vector<int> axes(rank);
      for (int i = 0; i < rank; ++i)
        axes[i] = i;
      std::shuffle(axes.begin(), axes.end(), ppat_test::rng());
      check_permute<T>(shape, axes, std::size_t(trial % 2));
    }
  }
}

TEST(permute, ranks_one_to_eight) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_random_permutes<std::uint8_t>();
  check_random_permutes<std::uint16_t>();
  check_random_permutes<float>();
  check_random_permutes<double>();
  check_random_permutes<bytes16>();
}

// Small planes that follow each other on both sides along the innermost batch axis, under
// an outer batch axis that does not: groups of whole planes, the last group of each run
// cut, 16-byte vectors when aligned and elements from an offset pointer.
template <class T>
void check_small_plane_permutes() {
  for (std::size_t offset : {0, 1}) {
    check_permute<T>({2, 3, 5, 4, 6}, {1, 0, 2, 4, 3}, offset);
    check_permute<T>({3, 7, 400, 8, 24}, {1, 0, 2, 4, 3}, offset);
  }
}

TEST(permute, small_planes_in_groups) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_small_plane_permutes<std::uint8_t>();
  check_small_plane_permutes<std::uint16_t>();
  check_small_plane_permutes<float>();
  check_small_plane_permutes<double>();
  check_small_plane_permutes<bytes16>();
}

TEST(permute, identity_size_one_axes_and_rows) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_permute<float>({7, 9, 11}, {0, 1, 2});                 // a copy
  check_permute<float>({1, 300, 1, 200, 1}, {4, 3, 2, 1, 0});  // a plane
  check_permute<float>({5, 1, 7}, {1, 0, 2});                  // only a size-one axis moves
  check_permute<float>({30, 20, 64}, {1, 0, 2});               // whole rows, 16-byte units
  check_permute<float>({30, 20, 63}, {1, 0, 2});               // whole rows, element by element
  check_permute<std::uint8_t>({6, 5, 4, 33}, {2, 0, 1, 3});
  check_permute<float>({64, 48, 40, 72}, {3, 1, 0, 2});  // the benchmark's 4-d permute
  check_permute<bytes16>({2, 3, 4, 5, 6, 7, 2, 3}, {7, 6, 5, 4, 3, 2, 1, 0});
}

// Captured on one stream and replayed on inputs the capture never saw: a tiled transpose
// with odd sides, a skinny one (a side under a tile), a batch, one in place, and a rank-4
// permute. (Capture on several GPUs is in test_streams.cu, which needs two.)
TEST(transpose, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t rows = 1023, cols = 1025, skinny_rows = 70001, skinny_cols = 3, batch = 3,
                    side = 129;
  const std::vector<std::size_t> shape{30, 20, 7, 9};
  const std::vector<int> axes{3, 1, 0, 2};
  const std::size_t permuted_count = 30 * 20 * 7 * 9;
  device_buffer<float> matrix(rows * cols), transposed(rows * cols, 64);
  device_buffer<std::uint8_t> skinny(skinny_rows * skinny_cols),
      skinny_transposed(skinny_rows * skinny_cols, 64);
  device_buffer<double> batched(batch * rows * cols), batched_transposed(batch * rows * cols, 64);
  device_buffer<bytes16> square(side * side, 64);
  device_buffer<float> to_permute(permuted_count), permuted(permuted_count, 64);
  std::vector<float> matrix_in, permute_in;
  std::vector<std::uint8_t> skinny_in;
  std::vector<double> batched_in;
  std::vector<bytes16> square_in;
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ppat_test::capture_and_replay(
      stream,
      [&] {
        ppat::transpose(matrix.data(), transposed.data(), rows, cols, stream);
        ppat::transpose(skinny.data(), skinny_transposed.data(), skinny_rows, skinny_cols, stream);
        ppat::transpose_batched(batched.data(), batched_transposed.data(), batch, rows, cols,
                                stream);
        ppat::transpose_inplace(square.data(), side, stream);
        ppat::permute(to_permute.data(), permuted.data(), shape, axes, stream);
      },
      [&](int) {
        matrix_in = random_elements<float>(rows * cols);
        skinny_in = random_elements<std::uint8_t>(skinny_rows * skinny_cols);
        batched_in = random_elements<double>(batch * rows * cols);
        square_in = random_elements<bytes16>(side * side);
        permute_in = random_elements<float>(permuted_count);
        matrix.upload(matrix_in);
        skinny.upload(skinny_in);
        batched.upload(batched_in);
        square.upload(square_in);
        to_permute.upload(permute_in);
        transposed.poison();
        skinny_transposed.poison();
        batched_transposed.poison();
        permuted.poison();
      },
      [&](int) {
        EXPECT_EQ(ppat_test::first_mismatch(transposed.download(),
                                            ppat_reference::transpose(matrix_in, rows, cols)),
                  -1);
        EXPECT_EQ(ppat_test::first_mismatch(
                      skinny_transposed.download(),
                      ppat_reference::transpose(skinny_in, skinny_rows, skinny_cols)),
                  -1);
        std::vector<double> batched_expected;
        for (std::size_t b = 0; b < batch; ++b) {
          const auto first = batched_in.begin() + std::ptrdiff_t(b * rows * cols);
          const auto one = ppat_reference::transpose(
              std::vector<double>(first, first + std::ptrdiff_t(rows * cols)), rows, cols);
          batched_expected.insert(batched_expected.end(), one.begin(), one.end());
        }
        EXPECT_EQ(ppat_test::first_mismatch(batched_transposed.download(), batched_expected), -1);
        EXPECT_EQ(ppat_test::first_mismatch(square.download(),
                                            ppat_reference::transpose(square_in, side, side)),
                  -1);
        EXPECT_EQ(ppat_test::first_mismatch(permuted.download(),
                                            ppat_reference::permute(permute_in, shape, axes)),
                  -1);
        for (auto* guarded : {&transposed, &permuted})
          EXPECT_TRUE(guarded->guards_intact());
        EXPECT_TRUE(skinny_transposed.guards_intact());
        EXPECT_TRUE(batched_transposed.guards_intact());
        EXPECT_TRUE(square.guards_intact());
      });
  ppat::release_stream_memory(stream);
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
}

TEST(transpose_arguments, production_calls_reject_bad_arguments) {
  auto* fake = reinterpret_cast<float*>(std::uintptr_t{1} << 20);  // never dereferenced
  auto* other = fake + 100000;
  using std::invalid_argument;
  EXPECT_THROW(ppat::transpose(fake, 9, other, 20, 20, 10), invalid_argument) << "ld_in < cols";
  EXPECT_THROW(ppat::transpose(fake, 10, other, 19, 20, 10), invalid_argument) << "ld_out < rows";
  EXPECT_THROW(ppat::transpose(fake, 10, fake + 100, 20, 20, 10), invalid_argument) << "overlap";
  EXPECT_THROW(ppat::transpose(fake, 10, static_cast<float*>(nullptr), 20, 20, 10),
               invalid_argument);
  EXPECT_NO_THROW(ppat::transpose(fake, 0, other, 0, 0, 10)) << "empty";
  EXPECT_THROW(ppat::transpose_batched(fake, fake + 50, 2, 10, 10), invalid_argument);
  EXPECT_THROW(ppat::transpose_batched(fake, other, std::size_t{1} << 40, 1 << 20, 1 << 20),
               invalid_argument);
  EXPECT_THROW(ppat::transpose_inplace(static_cast<float*>(nullptr), 10), invalid_argument);
  EXPECT_NO_THROW(ppat::transpose_inplace(static_cast<float*>(nullptr), 0));
  EXPECT_THROW(ppat::permute(fake, other, {2, 3}, {0, 0}), invalid_argument) << "not a permutation";
  EXPECT_THROW(ppat::permute(fake, other, {2, 3}, {0, 2}), invalid_argument) << "axis too big";
  EXPECT_THROW(ppat::permute(fake, other, {2, 3}, {-1, 0}), invalid_argument);
  EXPECT_THROW(ppat::permute(fake, other, {2, 3}, {0}), invalid_argument) << "rank mismatch";
  EXPECT_THROW(ppat::permute(fake, other, {}, {}), invalid_argument) << "rank 0";
  EXPECT_THROW(
      ppat::permute(fake, other, std::vector<std::size_t>(9, 2), {0, 1, 2, 3, 4, 5, 6, 7, 8}),
      invalid_argument)
      << "rank 9";
  EXPECT_THROW(ppat::permute(fake, fake + 3, {2, 3}, {1, 0}), invalid_argument) << "overlap";
  EXPECT_NO_THROW(ppat::permute(fake, other, {2, 0, 3}, {2, 1, 0})) << "empty";
}

// ---- The plan, on the host ------------------------------------------------------------------

using ppat::detail::matrix_layout;
using ppat::detail::order_tiles;
using ppat::detail::permute_plan;
using ppat::detail::place_of_tile;
using ppat::detail::plan_permute;
using ppat::detail::plane_layout;
using ppat::detail::tile_order;
using ppat::detail::tile_place;

TEST(transpose_plan, identity_and_size_one_axes_are_a_copy) {
  const permute_plan same = plan_permute({2, 3, 4}, {0, 1, 2});
  EXPECT_EQ(same.how, permute_plan::kind::copy);
  EXPECT_EQ(same.count, 24u);
  // Moving only axes of extent one moves no data.
  const permute_plan ones = plan_permute({1, 5, 1, 7}, {2, 1, 0, 3});
  EXPECT_EQ(ones.how, permute_plan::kind::copy);
  EXPECT_EQ(ones.count, 35u);
}

// Planes of rows x cols, rows `in_row_stride` apart in `in` and `out_row_stride` in `out`.
void expect_planes(const permute_plan& plan, std::size_t rows, std::size_t cols,
                   std::size_t in_row_stride, std::size_t out_row_stride, int batch_rank) {
  ASSERT_EQ(plan.how, permute_plan::kind::planes);
  EXPECT_EQ(plan.layout.rows, rows);  // rows of `in`
  EXPECT_EQ(plan.layout.cols, cols);  // its contiguous axis
  EXPECT_EQ(plan.layout.in_row_stride, in_row_stride);
  EXPECT_EQ(plan.layout.out_row_stride, out_row_stride);
  EXPECT_EQ(plan.layout.batch_rank, batch_rank);
}

TEST(transpose_plan, a_matrix_is_one_plane) {
  expect_planes(plan_permute({3, 5}, {1, 0}), 3, 5, 5, 3, 0);
}

TEST(transpose_plan, the_last_two_axes_swapped_are_a_batch_of_planes) {
  const permute_plan plan = plan_permute({2, 3, 4}, {0, 2, 1});
  expect_planes(plan, 3, 4, 4, 3, 1);
  EXPECT_EQ(plan.layout.batch_extent[0], 2u);
  EXPECT_EQ(plan.layout.batch_in_stride[0], 12u);
  EXPECT_EQ(plan.layout.batch_out_stride[0], 12u);
}

TEST(transpose_plan, adjacent_axes_merge) {
  // (a, b, c, d) -> (c, d, a, b) is a 6 x 20 matrix transposed.
  expect_planes(plan_permute({2, 3, 4, 5}, {2, 3, 0, 1}), 6, 20, 20, 6, 0);
  // Axes of extent one between two adjacent ones do not keep them apart.
  expect_planes(plan_permute({4, 1, 5, 3}, {3, 0, 1, 2}), 20, 3, 3, 20, 0);
}

TEST(transpose_plan, a_last_axis_that_stays_last_moves_whole_rows) {
  const permute_plan plan = plan_permute({2, 3, 4}, {1, 0, 2});
  ASSERT_EQ(plan.how, permute_plan::kind::rows);
  EXPECT_EQ(plan.row_length, 4u);
  EXPECT_EQ(plan.count, 24u);
  // The other axes in output order, with their input strides.
  ASSERT_EQ(plan.layout.batch_rank, 2);
  EXPECT_EQ(plan.layout.batch_extent[0], 3u);
  EXPECT_EQ(plan.layout.batch_in_stride[0], 4u);
  EXPECT_EQ(plan.layout.batch_extent[1], 2u);
  EXPECT_EQ(plan.layout.batch_in_stride[1], 12u);
}

// The tiles of a batch of odd planes cover every element once, in either order: tiles
// along the output rows numbered first, or along the input rows.
TEST(transpose_plan, tiles_cover_every_element_once_in_either_order) {
  constexpr int side_a = 4, side_b = 8;
  plane_layout layout = matrix_layout(19, 10, 11, 23);  // rows, cols, ld_in, ld_out
  layout.batch_rank = 1;
  layout.batch_extent[0] = 3;
  layout.batch_in_stride[0] = 19 * 11;
  layout.batch_out_stride[0] = 10 * 23;
  const unsigned tiles_b = 3, tiles_a = 3, plane_tiles = 9;  // ceil(19 / 8), ceil(10 / 4)
  EXPECT_FALSE((ppat::detail::tiles_along_b_first<side_a, side_b>(layout)));  // few tiles
  for (const bool along_b : {true, false}) {
    SCOPED_TRACE(along_b ? "along b first" : "along a first");
    const tile_order order = order_tiles<side_a, side_b>(layout, along_b);
    EXPECT_EQ(order.plane_tiles, plane_tiles);
    std::vector<int> covered(3 * 19 * 11, 0);
    for (std::size_t t = 0; t < 3 * plane_tiles; ++t) {
      const tile_place place = along_b ? place_of_tile<side_a, side_b, true>(t, layout, order)
                                       : place_of_tile<side_a, side_b, false>(t, layout, order);
      const std::size_t plane = t / plane_tiles, in_plane = t % plane_tiles;
      const std::size_t tile_b = along_b ? in_plane % tiles_b : in_plane / tiles_a;
      const std::size_t tile_a = along_b ? in_plane / tiles_b : in_plane % tiles_a;
      EXPECT_EQ(place.b_count, tile_b == 2 ? 3 : side_b) << "tile " << t;
      EXPECT_EQ(place.a_count, tile_a == 2 ? 2 : side_a) << "tile " << t;
      for (int b = 0; b < place.b_count; ++b) {
        for (int a = 0; a < place.a_count; ++a) {
          const std::size_t in = place.in_offset + b * layout.in_row_stride + a;
          const std::size_t out = place.out_offset + a * layout.out_row_stride + b;
          ++covered.at(in);
          // The same element on both sides: plane p, row r, column c of `in`.
          const std::size_t p = in / (19 * 11), r = in % (19 * 11) / 11, c = in % 11;
          EXPECT_EQ(p, plane);
          EXPECT_EQ(r, tile_b * side_b + b);
          EXPECT_EQ(c, tile_a * side_a + a);
          EXPECT_EQ(out, p * 10 * 23 + c * 23 + r);
        }
      }
    }
    for (std::size_t i = 0; i < covered.size(); ++i)
      EXPECT_EQ(covered[i], i % 11 < 10 ? 1 : 0) << "input element " << i;
  }
}

// The plan against a direct walk of every element, for every permutation of a rank-4
// shape with an axis of extent one: where each output element comes from.
TEST(transpose_plan, every_rank_four_permutation_maps_every_element) {
  const std::vector<std::size_t> shape{3, 1, 4, 5};
  std::vector<int> axes{0, 1, 2, 3};
  do {
    SCOPED_TRACE(::testing::PrintToString(axes));
    std::vector<std::size_t> in_stride(4), out_shape(4);
    for (int d = 3; d >= 0; --d)
      in_stride[d] = d == 3 ? 1 : in_stride[d + 1] * shape[d + 1];
    for (int i = 0; i < 4; ++i)
      out_shape[i] = shape[axes[i]];
    // expected[o]: the input offset of output element o.
    std::vector<std::size_t> expected(60);
    for (std::size_t o = 0; o < 60; ++o) {
      std::size_t rest = o, from = 0;
      for (int i = 3; i >= 0; --i) {
        from += rest % out_shape[i] * in_stride[axes[i]];
        rest /= out_shape[i];
      }
      expected[o] = from;
    }
    const permute_plan plan = plan_permute(shape, axes);
    std::vector<std::size_t> got(60);
    const auto& l = plan.layout;
    if (plan.how == permute_plan::kind::copy) {
      for (std::size_t o = 0; o < 60; ++o)
        got[o] = o;
    } else if (plan.how == permute_plan::kind::rows) {
      for (std::size_t o = 0; o < 60; ++o) {
        std::size_t row = o / plan.row_length, from = o % plan.row_length;
        for (int d = l.batch_rank - 1; d >= 0; --d) {
          from += row % l.batch_extent[d] * l.batch_in_stride[d];
          row /= l.batch_extent[d];
        }
        got[o] = from;
      }
    } else {
      std::size_t planes = 1;
      for (int d = 0; d < l.batch_rank; ++d)
        planes *= l.batch_extent[d];
      std::fill(got.begin(), got.end(), std::size_t(-1));
      for (std::size_t p = 0; p < planes; ++p) {
        std::size_t in_offset = 0, out_offset = 0;
        ppat::detail::add_plane_offsets(p, l, in_offset, out_offset);
        for (std::size_t b = 0; b < l.rows; ++b)
          for (std::size_t a = 0; a < l.cols; ++a)
            got[out_offset + a * l.out_row_stride + b] = in_offset + b * l.in_row_stride + a;
      }
    }
    EXPECT_EQ(got, expected);
  } while (std::next_permutation(axes.begin(), axes.end()));
}

}  // namespace
