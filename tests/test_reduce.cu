// The production reduce against the host reference: every size class up to more than
// 2^32 items, several types and operators (one non-commutative), unaligned input,
// floating-point determinism, streams, graph capture, bad input. Then the textbook ladder:
// every rung at its tile and level boundaries, types and operators, unaligned input, a
// stream, bad input.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::affine;
using ppat_test::device_buffer;

// Runs one reduce on `in` and checks the one result against the host reference, exactly.
template <class T, class Op>
void check_reduce(const std::vector<T>& in, T init, Op op) {
  if (ppat_test::over_item_budget(in.size())) return;
  SCOPED_TRACE("n=" + std::to_string(in.size()));
  device_buffer<T> input(in, /*guard=*/64);
  device_buffer<T> output(1, /*guard=*/64);
  output.poison();
  ppat::reduce(input.data(), output.data(), in.size(), init, op);
  ppat_test::expect_no_cuda_error();
  const std::vector<T> expected{ppat_reference::reduce(in, init, op)};
  EXPECT_EQ(ppat_test::first_mismatch(output.download(), expected), -1) << "wrong result";
  EXPECT_TRUE(input.guards_intact() && output.guards_intact()) << "write outside a buffer";
}

// The paths' edges for i32: one block reading everything at once up to 4096 items (512
// threads) and up to 16384 (1024 threads), one block of 1024 threads reading tiles of 32768
// up to 131072, then tiles of 8192 on a grid; primes, and the sizes around them.
const std::size_t sizes[] = {0,       1,       2,       31,      32,     33,     4095,
                             4096,    4097,    8191,    8192,    8193,   16383,  16384,
                             16385,   32767,   32769,   131071,  131072, 131073, 147457,
                             1000003, 1048579, 4194304, 16777259};

TEST(reduce, i32_plus_at_every_boundary) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : sizes)
    check_reduce(ppat_test::random_integers<int>(n, -1000000, 1000000), 17, ppat::plus{});
}

TEST(reduce, types_and_operators) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n :
       {std::size_t{0}, std::size_t{33}, std::size_t{131073}, std::size_t{1048579}}) {
    check_reduce<std::uint8_t>(ppat_test::random_integers<std::uint8_t>(n, 0, 255), 3,
                               ppat::plus{});
    check_reduce<std::uint8_t>(ppat_test::random_integers<std::uint8_t>(n, 0, 254), 0,
                               ppat::maximum{});
    check_reduce<std::uint32_t>(ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll),
                                0xFFFFFFFFu, ppat::minimum{});
    check_reduce<int>(ppat_test::random_integers<int>(n, -1000000, 1000000), 0, ppat::maximum{});
    check_reduce<std::int64_t>(ppat_test::random_integers<std::int64_t>(n, -(1ll << 40), 1ll << 40),
                               -5, ppat::plus{});
    check_reduce(ppat_test::exact_fractions<float>(n, 1024, 1.0 / 8), 0.5f, ppat::plus{});
    check_reduce(ppat_test::exact_fractions<double>(n, 1 << 20, 1.0 / 1024), -0.25, ppat::plus{});
    check_reduce(ppat_test::exact_fractions<float>(n, 1 << 20, 1.0 / 8), 3.0f, ppat::minimum{});
    check_reduce(ppat_test::exact_fractions<double>(n, 1 << 20, 1.0 / 8), -3.0, ppat::maximum{});
    check_reduce(ppat_test::random_affine_maps(n), affine{3u, 5u, 0u}, ppat_test::then{});
  }
}

// Operators that commute fold from their identity instead of flagging "nothing yet": the
// identity must never show. Maxima of negative integers (an identity of 0 would win), minima
// of positive ones, and sums of -0.0 (whose identity is -0.0, not +0.0), on every path.
TEST(reduce, commutative_operators_fold_from_their_identity) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{1}, std::size_t{769}, std::size_t{4097}, std::size_t{16385},
                        std::size_t{131073}, std::size_t{1048579}}) {
    check_reduce<int>(ppat_test::random_integers<int>(n, -1000000, -1000), -2000000,
                      ppat::maximum{});
    check_reduce<std::int64_t>(ppat_test::random_integers<std::int64_t>(n, 1000, 1ll << 40),
                               std::int64_t{1} << 41, ppat::minimum{});
    check_reduce<std::int16_t>(ppat_test::random_integers<std::int16_t>(n, -30000, -2), -32000,
                               ppat::maximum{});
    if (ppat_test::over_item_budget(n)) continue;
    SCOPED_TRACE("n=" + std::to_string(n));
    device_buffer<float> zeros(std::vector<float>(n, -0.0f));
    device_buffer<float> sum(1);
    sum.poison();
    ppat::reduce(zeros.data(), sum.data(), n, -0.0f);
    ppat_test::expect_no_cuda_error();
    EXPECT_TRUE(std::signbit(sum.download()[0]) && sum.download()[0] == 0.0f)
        << "the sum of -0.0s is " << sum.download()[0];
  }
}

// Affine maps x -> a*x + b over 32-bit wraparound integers in 8 bytes: two to a 16-byte
// vector, so a non-commutative operator on the vectorized path.
struct affine_pair {
  std::uint32_t a, b;
};
struct then_pair {
  __host__ __device__ affine_pair operator()(const affine_pair& f, const affine_pair& g) const {
    return {g.a * f.a, g.a * f.b + g.b};
  }
};

// A non-commutative operator where blocks reduce several tiles each (one block of 2 or 4
// tiles; 528 blocks, the H200's grid, of 1.4 to 15 tiles), and where the last block reads
// several block results a thread: everything must still combine in item order.
TEST(reduce, non_commutative_over_many_tiles_a_block) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n :
       {std::size_t{20000}, std::size_t{50001}, std::size_t{3000017}, std::size_t{20000003}}) {
    if (ppat_test::over_item_budget(n)) continue;
    check_reduce(ppat_test::random_affine_maps(n), affine{7u, 2u, 0u}, ppat_test::then{});
    const auto a = ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll);
    const auto b = ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll);
    std::vector<affine_pair> pairs(n);
    for (std::size_t i = 0; i < n; ++i)
      pairs[i] = {a[i] | 1u, b[i]};
    check_reduce(pairs, affine_pair{5u, 9u}, then_pair{});
  }
}

// A user functor is an operator ppat cannot know to be commutative: combined in order.
struct bitwise_xor {
  __host__ __device__ std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const {
    return a ^ b;
  }
};

TEST(reduce, user_operator_on_integers) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{1}, std::size_t{131073}, std::size_t{1000003}})
    check_reduce(ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll), 5u, bitwise_xor{});
}

TEST(reduce, unaligned_input) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 1000003;
  const auto in = ppat_test::random_integers<int>(n + 1, -1000, 1000);
  device_buffer<int> input(in), output(1);
  ppat::reduce(input.data() + 1, output.data(), n, 0);
  ppat_test::expect_no_cuda_error();
  const std::vector<int> shifted(in.begin() + 1, in.end());
  EXPECT_EQ(output.download()[0], ppat_reference::reduce(shifted, 0, ppat::plus{}));
}

TEST(reduce, float_results_are_deterministic) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 30000001;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  std::uniform_real_distribution<float> pick(-1.0f, 1.0f);
  std::vector<float> in(n);
  for (auto& v : in)
    v = pick(ppat_test::rng());
  device_buffer<float> input(in), results(2);
  results.poison();
  ppat::reduce(input.data(), results.data(), n, 0.5f);
  ppat::reduce(input.data(), results.data() + 1, n, 0.5f);
  ppat_test::expect_no_cuda_error();
  const auto got = results.download();
  EXPECT_EQ(std::memcmp(&got[0], &got[1], sizeof(float)), 0) << got[0] << " vs " << got[1];
  // And close to the double-precision sum: n terms of size <= 1, partial sums of size
  // about sqrt(n), each rounding at most 2^-24 of them.
  double exact = 0.5;
  for (float v : in)
    exact += v;
  EXPECT_LT(std::abs(double(got[0]) - exact), 1.0);
}

// The same float values from buffers of any alignment give the same bits: the split into
// blocks and every combination's order depend on n alone.
template <class T>
void expect_same_bits_at_every_alignment(std::size_t n) {
  if (ppat_test::over_item_budget(n)) return;
  SCOPED_TRACE(std::string(sizeof(T) == 4 ? "f32" : "f64") + " n=" + std::to_string(n));
  const auto values = ppat_test::spread_floats<T>(n);
  constexpr std::size_t most = 16 / sizeof(T) - 1;  // items short of the next 16 bytes
  device_buffer<T> input(n + most), result(most + 1);
  std::vector<std::size_t> shifts(most + 1);
  std::iota(shifts.begin(), shifts.end(), std::size_t{0});
  ppat_test::expect_same_bits_wherever(
      shifts,
      [&](std::size_t shift) {
        input.upload(ppat_test::placed_at(values, shift, most));
        result.poison();
        ppat::reduce(input.data() + shift, result.data() + shift, n, T(0.25));
        ppat_test::expect_no_cuda_error();
        return std::vector<T>{result.download()[shift]};
      },
      [](std::size_t shift) { return std::to_string(shift) + " items off 16 bytes"; });
}

TEST(reduce, float_bits_do_not_depend_on_alignment) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{1000}, std::size_t{100003}, std::size_t{3000017}}) {
    expect_same_bits_at_every_alignment<float>(n);
    expect_same_bits_at_every_alignment<double>(n);
  }
}

// More than 2^32 items: 64-bit indexing everywhere.
TEST(reduce, huge_above_2_pow_32) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 32) + 4099;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  // Bytes whose sum fits 64 bits, reduced as bytes (mod 256) and, through maximum, once
  // more: the largest byte sits at one random place beyond 2^32.
  auto in = ppat_test::random_integers<std::uint8_t>(n, 0, 200);
  in[(std::size_t{1} << 32) + ppat_test::random_integers<std::size_t>(1, 0, 4098)[0]] = 255;
  check_reduce<std::uint8_t>(in, 1, ppat::plus{});
  check_reduce<std::uint8_t>(in, 0, ppat::maximum{});
}

TEST(reduce, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 1000003;
  auto in = ppat_test::random_integers<int>(n, -1000, 1000);
  device_buffer<int> input(in), output(1);
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ppat_test::capture_and_replay(
      stream, [&] { ppat::reduce(input.data(), output.data(), n, 7, ppat::plus{}, stream); },
      [&](int) {
        in = ppat_test::random_integers<int>(n, -1000, 1000);
        input.upload(in);
        output.poison();
      },
      [&](int) { EXPECT_EQ(output.download()[0], ppat_reference::reduce(in, 7, ppat::plus{})); });
  ppat::release_stream_memory(stream);
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
}

// Argument checks come before any CUDA call, so these run without a GPU.
TEST(reduce_arguments, bad_buffers_are_rejected) {
  int* fake = reinterpret_cast<int*>(std::uintptr_t{1} << 20);  // never dereferenced
  EXPECT_THROW(ppat::reduce<int>(nullptr, fake, 10), std::invalid_argument);
  EXPECT_THROW(ppat::reduce<int>(fake, nullptr, 10), std::invalid_argument);
  EXPECT_THROW(ppat::reduce<int>(nullptr, nullptr, 0), std::invalid_argument);
  try {
    ppat::reduce<int>(fake, nullptr, 0);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ppat::reduce"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'out'"), std::string::npos) << e.what();
  }
}

// ---- The textbook ladder ------------------------------------------------------------------

enum class rung { interleaved, sequential, first_add, warp_shuffle, vector };
constexpr rung rungs[] = {rung::interleaved, rung::sequential, rung::first_add, rung::warp_shuffle,
                          rung::vector};

const char* rung_name(rung r) {
  switch (r) {
    case rung::interleaved:
      return "interleaved_reduce";
    case rung::sequential:
      return "sequential_reduce";
    case rung::first_add:
      return "first_add_reduce";
    case rung::warp_shuffle:
      return "warp_shuffle_reduce";
    case rung::vector:
      return "vector_reduce";
  }
  return "?";
}

template <class T, class Op>
void run_rung(rung r, const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream = 0) {
  namespace tb = ppat::textbook;
  switch (r) {
    case rung::interleaved:
      return tb::interleaved_reduce(in, out, n, init, op, stream);
    case rung::sequential:
      return tb::sequential_reduce(in, out, n, init, op, stream);
    case rung::first_add:
      return tb::first_add_reduce(in, out, n, init, op, stream);
    case rung::warp_shuffle:
      return tb::warp_shuffle_reduce(in, out, n, init, op, stream);
    case rung::vector:
      return tb::vector_reduce(in, out, n, init, op, stream);
  }
}

// One rung on `in` from item `offset` on, against the host reference, exactly.
template <class T, class Op>
void check_rung(rung r, const std::vector<T>& in, T init, Op op, std::size_t offset = 0) {
  if (ppat_test::over_item_budget(in.size())) return;
  const std::size_t n = in.size() - offset;
  SCOPED_TRACE(std::string(rung_name(r)) + " n=" + std::to_string(n) +
               " offset=" + std::to_string(offset));
  device_buffer<T> input(in, /*guard=*/64);
  device_buffer<T> output(1, /*guard=*/64);
  output.poison();
  run_rung(r, input.data() + offset, output.data(), n, init, op);
  ppat_test::expect_no_cuda_error();
  const std::vector<T> shifted(in.begin() + std::ptrdiff_t(offset), in.end());
  const std::vector<T> expected{ppat_reference::reduce(shifted, init, op)};
  EXPECT_EQ(ppat_test::first_mismatch(output.download(), expected), -1) << "wrong result";
  EXPECT_TRUE(input.guards_intact() && output.guards_intact()) << "write outside a buffer";
}

// Tiles of 1024 items, levels at 1024^2 and above (three levels past 2^20), a warp's 32,
// a 16-byte vector's 4, primes.
const std::size_t rung_sizes[] = {0,    1,     2,       3,       4,       5,       31,
                                  32,   33,    1023,    1024,    1025,    2047,    2048,
                                  2049, 65537, 1048575, 1048576, 1048577, 1050627, 4194319};

TEST(reduce_rungs, i32_plus_at_every_boundary) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (rung r : rungs)
    for (std::size_t n : rung_sizes)
      check_rung(r, ppat_test::random_integers<int>(n, -1000000, 1000000), -9, ppat::plus{});
}

TEST(reduce_rungs, types_and_operators) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (rung r : rungs) {
    for (std::size_t n :
         {std::size_t{0}, std::size_t{7}, std::size_t{2049}, std::size_t{1048579}}) {
      check_rung<std::uint8_t>(r, ppat_test::random_integers<std::uint8_t>(n, 0, 255), 3,
                               ppat::plus{});
      check_rung<std::uint8_t>(r, ppat_test::random_integers<std::uint8_t>(n, 0, 254), 0,
                               ppat::maximum{});
      check_rung<std::int16_t>(r, ppat_test::random_integers<std::int16_t>(n, -30000, 30000), 5,
                               ppat::minimum{});
      check_rung<std::uint32_t>(r, ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll),
                                0xFFFFFFFFu, ppat::minimum{});
      check_rung<std::int64_t>(r,
                               ppat_test::random_integers<std::int64_t>(n, -(1ll << 40), 1ll << 40),
                               -5, ppat::plus{});
      check_rung(r, ppat_test::exact_fractions<float>(n, 1024, 1.0 / 8), 0.5f, ppat::plus{});
      check_rung(r, ppat_test::exact_fractions<double>(n, 1 << 20, 1.0 / 1024), -0.25,
                 ppat::plus{});
    }
  }
}

// Item-sized loads where the input is not 16-byte aligned (the vector rung), and any start
// for the others.
TEST(reduce_rungs, unaligned_input) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (rung r : rungs) {
    for (std::size_t offset : {std::size_t{1}, std::size_t{3}}) {
      check_rung(r, ppat_test::random_integers<int>(1000003 + offset, -1000, 1000), 2, ppat::plus{},
                 offset);
      check_rung<std::uint8_t>(r, ppat_test::random_integers<std::uint8_t>(70001 + offset, 0, 255),
                               1, ppat::plus{}, offset);
    }
  }
}

TEST(reduce_rungs, runs_on_a_non_default_stream) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 1000003;
  const auto in = ppat_test::random_integers<int>(n, -1000, 1000);
  device_buffer<int> input(in), output(1);
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (rung r : rungs) {
    output.poison();
    run_rung(r, input.data(), output.data(), n, 7, ppat::plus{}, stream);
    PPAT_CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_EQ(output.download()[0], ppat_reference::reduce(in, 7, ppat::plus{})) << rung_name(r);
  }
  ppat::release_stream_memory(stream);
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
}

// Argument checks come before any CUDA call, so these run without a GPU.
TEST(reduce_rungs_arguments, bad_buffers_are_rejected_naming_the_rung) {
  int* fake = reinterpret_cast<int*>(std::uintptr_t{1} << 20);  // never dereferenced
  for (rung r : rungs) {
    EXPECT_THROW(run_rung<int>(r, nullptr, fake, 10, 0, ppat::plus{}), std::invalid_argument);
    try {
      run_rung<int>(r, fake, nullptr, 0, 0, ppat::plus{});
      ADD_FAILURE() << rung_name(r) << ": no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("ppat::textbook::") + rung_name(r)),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("'out'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
