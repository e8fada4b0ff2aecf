// Radix sort against a host stable sort: every key type, both orders, keys alone and with
// values (indices, which show stability; 1-, 8- and 16-byte values), sizes from 1 past tile
// boundaries and primes to 2^20 + 3, key spreads from uniform bits to all equal, floats
// with NaNs of both signs and several payloads, infinities, signed zeros and denormals;
// passes in which one digit holds every key; bit ranges; in place, on every path; streams
// and graph capture; the textbook rungs; more than 2^29 keys (several portions a pass) and
// more than 2^32, checked on the device; bad arguments.
// Outputs are poisoned first and checked whole, bitwise; inputs must come back unchanged. The
// pairs' stability and value widths are in test_sort_pairs.cu, the checks both files share in
// sort_checks.hpp: one test program in two files compiled side by side.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference.hpp"
#include "sort_checks.hpp"
#include "support.hpp"

namespace {

using namespace sort_checks;

TEST(sort, keys_unsigned) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  keys_of_type<std::uint8_t>("u8");
  keys_of_type<std::uint16_t>("u16");
  keys_of_type<std::uint32_t>("u32");
  keys_of_type<std::uint64_t>("u64");
}

TEST(sort, keys_signed) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  keys_of_type<std::int8_t>("i8");
  keys_of_type<std::int16_t>("i16");
  keys_of_type<std::int32_t>("i32");
  keys_of_type<std::int64_t>("i64");
}

TEST(sort, keys_floating_point) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  keys_of_type<float>("f32");
  keys_of_type<double>("f64");
  keys_of_type<__half>("f16");
  keys_of_type<__nv_bfloat16>("bf16");
}

// Floats with no NaN among them, signed zeros, infinities and denormals included: a small
// sort takes these back from their images (one image stands for every NaN, so a tile with a
// NaN sorts by position), which a NaN anywhere in the keys would hide.
template <class K>
void keys_without_nan(const char* type) {
  for (ppat::order ord : orders) {
    for (std::size_t n : {std::size_t{31}, std::size_t{1023}, std::size_t{2049}, std::size_t{4095},
                          std::size_t{8192}}) {
      if (sampled_out(n, spread::uniform_bits)) continue;
      auto keys = draw_keys<K>(n, spread::specials);
      std::uniform_int_distribution<int> sign(0, 1);
      for (auto& k : keys)
        if (k != k) k = sign(ppat_test::rng()) == 0 ? K(0.0) : K(-0.0);
      expect_keys_sorted(
          keys, ord,
          std::string(type) + " without NaN " + name(ord) + ", n = " + std::to_string(n));
    }
  }
}

TEST(sort, floating_point_keys_without_nan) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  keys_without_nan<float>("f32");
  keys_without_nan<double>("f64");
}

template <class K>
void bit_ranges(const char* type, std::initializer_list<std::pair<int, int>> ranges) {
  for (const auto& [begin_bit, end_bit] : ranges) {
    for (ppat::order ord : orders) {
      for (std::size_t n : {std::size_t{3073}, std::size_t{4097}, std::size_t{12289},
                            large_sizes[0], large_sizes[3]}) {
        if (ppat_test::over_item_budget(n) || sampled_out(n, spread::uniform_bits)) continue;
        const std::string what = std::string(type) + " bits [" + std::to_string(begin_bit) + ", " +
                                 std::to_string(end_bit) + ") " + name(ord) +
                                 ", n = " + std::to_string(n);
        const auto keys = draw_keys<K>(n, spread::uniform_bits);
        expect_keys_sorted(keys, ord, what, begin_bit, end_bit);
        expect_pairs_sorted(keys, draw_values<std::uint32_t>(n), ord, what + ", index values",
                            begin_bit, end_bit);
      }
    }
  }
}

TEST(sort, bit_ranges_of_unsigned_keys) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  bit_ranges<std::uint8_t>("u8", {{0, 0}, {0, 1}, {3, 7}, {8, 8}});
  bit_ranges<std::uint16_t>("u16", {{0, 9}, {4, 16}});
  bit_ranges<std::uint32_t>("u32",
                            {{0, 16}, {3, 17}, {5, 6}, {5, 27}, {16, 32}, {31, 32}, {32, 32}});
  bit_ranges<std::uint64_t>("u64", {{0, 64}, {7, 50}, {60, 64}, {0, 13}, {40, 64}});
}

// Sorting reads and writes item by item: buffers one item off any alignment work the same.
TEST(sort, unaligned_buffers) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 70001;
  const auto keys = draw_keys<float>(n + 1, spread::specials);
  const auto values = draw_values<std::uint64_t>(n + 1);
  device_buffer<float> keys_in(n + 1), keys_out(n + 1);
  device_buffer<std::uint64_t> values_in(n + 1), values_out(n + 1);
  keys_in.upload(keys);
  values_in.upload(values);
  ppat::sort_pairs(keys_in.data() + 1, keys_out.data() + 1, values_in.data() + 1,
                   values_out.data() + 1, n, ppat::order::descending);
  ppat_test::expect_no_cuda_error();
  const std::vector<float> tail_keys(keys.begin() + 1, keys.end());
  const std::vector<std::uint64_t> tail_values(values.begin() + 1, values.end());
  const auto order = sorted_positions(tail_keys, ppat::order::descending);
  auto got_keys = keys_out.download();
  auto got_values = values_out.download();
  got_keys.erase(got_keys.begin());
  got_values.erase(got_values.begin());
  EXPECT_EQ(ppat_test::first_mismatch(got_keys, ppat_reference::gathered(tail_keys, order)), -1);
  EXPECT_EQ(ppat_test::first_mismatch(got_values, ppat_reference::gathered(tail_values, order)),
            -1);
}

// Sorted in place (each output its own input): one buffer of keys (and one of values) in,
// the host's stable order expected in it, bitwise, its guards intact.
template <class K, class V>
void expect_sorted_in_place(const std::vector<K>& keys, const std::vector<V>& values,
                            ppat::order ord, int begin_bit, int end_bit, const std::string& what) {
  SCOPED_TRACE(what + ", in place");
  const std::size_t n = keys.size();
  auto keys_buffer = on_device(keys);
  auto values_buffer = on_device(values);
  if (values.empty()) {
    ppat::sort_keys(keys_buffer->data(), keys_buffer->data(), n, ord, begin_bit, end_bit);
  } else {
    ppat::sort_pairs(keys_buffer->data(), keys_buffer->data(), values_buffer->data(),
                     values_buffer->data(), n, ord, begin_bit, end_bit);
  }
  ppat_test::expect_no_cuda_error();
  const auto order = sorted_positions(keys, ord, begin_bit, end_bit);
  EXPECT_EQ(
      ppat_test::first_mismatch(keys_buffer->download(), ppat_reference::gathered(keys, order)), -1)
      << "first key out of place";
  if (!values.empty()) {
    EXPECT_EQ(ppat_test::first_mismatch(values_buffer->download(),
                                        ppat_reference::gathered(values, order)),
              -1)
        << "first value out of place";
  }
  EXPECT_TRUE(keys_buffer->guards_intact() && values_buffer->guards_intact())
      << "written outside a buffer";
}

// Every path in place: one block (each tile size), one cluster, one launch, onesweep,
// counting; even and odd counts of passes (an odd count copies the input aside first).
template <class K>
void in_place_of_type(const char* type, std::initializer_list<std::pair<int, int>> ranges) {
  for (const auto& [begin_bit, end_bit] : ranges) {
    for (ppat::order ord : orders) {
      for (std::size_t n : {std::size_t{1}, std::size_t{1023}, std::size_t{4097}, std::size_t{8193},
                            std::size_t{32769}, large_sizes[0], large_sizes[3]}) {
        if (ppat_test::over_item_budget(n) || sampled_out(n, spread::uniform_bits)) continue;
        const std::string what = case_name(type, ord, spread::few_distinct, n) + ", bits [" +
                                 std::to_string(begin_bit) + ", " + std::to_string(end_bit) + ")";
        const auto keys = draw_keys<K>(n, spread::few_distinct);
        expect_sorted_in_place(keys, std::vector<char>{}, ord, begin_bit, end_bit, what);
        expect_sorted_in_place(keys, draw_values<std::uint32_t>(n), ord, begin_bit, end_bit,
                               what + ", index values");
      }
    }
  }
}

TEST(sort, in_place) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  in_place_of_type<std::uint8_t>("u8", {{0, 8}, {0, 0}});
  in_place_of_type<std::int16_t>("i16", {{0, 16}});
  in_place_of_type<std::uint16_t>("u16", {{4, 16}});
  in_place_of_type<std::uint32_t>("u32", {{0, 32}, {0, 24}, {5, 6}});
  in_place_of_type<float>("f32", {{0, 32}});
  in_place_of_type<std::uint64_t>("u64", {{0, 64}, {7, 50}});
}

// Keys that differ only in the bytes whose bits are set in `varying` (bit b: byte b), each of
// the other bytes one random value for all: the passes of those bytes hold every key in one
// digit, and the sort skips them, or copies the keys where the next sort reads them.
template <class K>
std::vector<K> keys_varying_in_bytes(std::size_t n, unsigned varying) {
  auto& rng = ppat_test::rng();
  std::uniform_int_distribution<std::uint64_t> any;
  std::uint64_t mask = 0;
  for (int b = 0; b < int(sizeof(K)); ++b) {
    if ((varying >> b & 1u) != 0) mask |= std::uint64_t{0xFF} << (8 * b);
  }
  const std::uint64_t shared = any(rng);
  std::vector<K> keys(n);
  for (auto& k : keys)
    k = key_with_bits<K>((shared & ~mask) | (any(rng) & mask));
  return keys;
}

// The one-block sort's sizes, the one-launch sort's and onesweep's, keys and pairs, into other
// buffers and in place, both orders: the passes that move nothing at the start, between sorting
// passes, at the end, all of them. Onesweep's size, whose host reference takes longest, sorts
// the first four patterns only.
template <class K>
void one_digit_passes_of_type(const char* type, std::initializer_list<unsigned> patterns) {
  for (std::size_t n : {std::size_t{1023}, std::size_t{4097}, large_sizes[0], large_sizes[3]}) {
    if (ppat_test::over_item_budget(n)) continue;
    int pattern = 0;
    for (unsigned varying : patterns) {
      if (n == large_sizes[3] && pattern++ == 4) break;
      for (ppat::order ord : orders) {
        const std::string what = std::string(type) + " " + name(ord) + ", bytes " +
                                 std::to_string(varying) + " varying, n = " + std::to_string(n);
        const auto keys = keys_varying_in_bytes<K>(n, varying);
        const auto positions = draw_values<std::uint32_t>(n);
        expect_keys_sorted(keys, ord, what);
        expect_pairs_sorted(keys, positions, ord, what + ", index values");
        expect_sorted_in_place(keys, std::vector<char>{}, ord, 0, 8 * sizeof(K), what);
        expect_sorted_in_place(keys, positions, ord, 0, 8 * sizeof(K), what + ", index values");
        // Three passes in place: the inputs are copied aside first.
        expect_sorted_in_place(keys, positions, ord, 0, 24, what + ", bits [0, 24)");
      }
    }
  }
}

// Pairs of which only the keys are sorted in place, or only the values: each output written
// whole, also where no pass sorts (keys all equal) and where passes move nothing, with even
// and odd counts of passes (an odd count copies both inputs aside first).
template <class K>
void half_in_place_of_type(const char* type) {
  for (std::size_t n : {large_sizes[0], large_sizes[3]}) {
    if (ppat_test::over_item_budget(n)) continue;
    for (unsigned varying : {0x0u, 0x1u, 0x2u}) {
      for (int end_bit : {int(8 * sizeof(K)), 24}) {
        SCOPED_TRACE(std::string(type) + ", bytes " + std::to_string(varying) +
                     " varying, bits [0, " + std::to_string(end_bit) +
                     "), n = " + std::to_string(n));
        const auto keys = keys_varying_in_bytes<K>(n, varying);
        const auto values = draw_values<std::uint32_t>(n);
        const auto order = sorted_positions(keys, ppat::order::ascending, 0, end_bit);
        const auto sorted_keys = ppat_reference::gathered(keys, order);
        const auto sorted_values = ppat_reference::gathered(values, order);
        for (const bool keys_in_place : {true, false}) {
          SCOPED_TRACE(keys_in_place ? "keys in place" : "values in place");
          auto keys_in = on_device(keys);
          auto values_in = on_device(values);
          auto keys_out = poisoned<K>(keys_in_place ? 0 : n);
          auto values_out = poisoned<std::uint32_t>(keys_in_place ? n : 0);
          auto& keys_sorted = keys_in_place ? keys_in : keys_out;
          auto& values_sorted = keys_in_place ? values_out : values_in;
          ppat::sort_pairs(keys_in->data(), keys_sorted->data(), values_in->data(),
                           values_sorted->data(), n, ppat::order::ascending, 0, end_bit);
          ppat_test::expect_no_cuda_error();
          EXPECT_EQ(ppat_test::first_mismatch(keys_sorted->download(), sorted_keys), -1);
          EXPECT_EQ(ppat_test::first_mismatch(values_sorted->download(), sorted_values), -1);
          // The input not sorted in place is left as it was.
          if (keys_in_place) {
            EXPECT_EQ(ppat_test::first_mismatch(values_in->download(), values), -1);
          } else {
            EXPECT_EQ(ppat_test::first_mismatch(keys_in->download(), keys), -1);
          }
          EXPECT_TRUE(keys_in->guards_intact() && values_in->guards_intact() &&
                      keys_out->guards_intact() && values_out->guards_intact())
              << "written outside a buffer";
        }
      }
    }
  }
}

TEST(sort, pairs_with_only_keys_or_only_values_in_place) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  half_in_place_of_type<std::uint32_t>("u32");
  half_in_place_of_type<std::uint64_t>("u64");
}

// Keys sorted already (in the sort's order, or all but two neighbours swapped, or in the
// other order), on the one-launch sort's and onesweep's sizes: the counting sees the order
// and no pass sorts. A bit range's order is not the whole key's: keys sorted whole are sorted
// again by their low 16 bits.
template <class K>
void sorted_already_of_type(const char* type) {
  for (std::size_t n : {large_sizes[0], large_sizes[3]}) {
    if (ppat_test::over_item_budget(n)) continue;
    for (ppat::order ord : orders) {
      auto keys = draw_keys<K>(n, spread::few_distinct);
      keys = ppat_reference::gathered(keys, sorted_positions(keys, ord));
      const auto positions = draw_values<std::uint32_t>(n);
      const std::string what = case_name(type, ord, spread::sorted, n);
      expect_keys_sorted(keys, ord, what);
      expect_pairs_sorted(keys, positions, ord, what + ", index values");
      expect_sorted_in_place(keys, positions, ord, 0, 8 * sizeof(K), what + ", index values");
      expect_keys_sorted(keys, ord, what + ", bits [0, 16)", 0, 16);
      const ppat::order other =
          ord == ppat::order::ascending ? ppat::order::descending : ppat::order::ascending;
      expect_pairs_sorted(keys, positions, other, what + ", sorted the other way");
      // Two unequal neighbours out of order: from a warp's first key, and from a random place.
      for (std::size_t at : {std::size_t{4096}, std::size_t(ppat_test::rng()() % (n - 1)) + 1}) {
        auto almost = draw_keys<K>(n, spread::uniform_bits);
        almost = ppat_reference::gathered(almost, sorted_positions(almost, ord));
        while (at + 1 < n && std::memcmp(&almost[at - 1], &almost[at], sizeof(K)) == 0)
          ++at;
        std::swap(almost[at - 1], almost[at]);
        expect_keys_sorted(
            almost, ord,
            what + ", keys " + std::to_string(at - 1) + " and " + std::to_string(at) + " swapped");
      }
    }
  }
}

TEST(sort, keys_sorted_already) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  sorted_already_of_type<std::uint32_t>("u32");
  sorted_already_of_type<std::int32_t>("i32");
  sorted_already_of_type<float>("f32");
  sorted_already_of_type<__nv_bfloat16>("bf16");
  sorted_already_of_type<std::int64_t>("i64");
  sorted_already_of_type<double>("f64");
}

// The roles the passes take (plan_pass_roles), on the host, for every count of passes,
// every set of passes that sort and every layout of the buffers that pass_buffers makes:
// the sorting passes apply in order, each reading the keys the passes before left, no pass
// reads the buffer it writes, none writes the inputs, and the outputs end sorted.
TEST(sort_plan, pass_roles_leave_the_keys_sorted_in_the_outputs) {
  using ppat::detail::pass_action;
  using ppat::detail::pass_buffer;
  for (int passes = 1; passes <= 8; ++passes) {
    // In place: the inputs are the outputs for an even count of passes, and copied to the
    // buffers between first for an odd one.
    const pass_buffer in_place = passes % 2 == 0 ? pass_buffer::outputs : pass_buffer::between;
    for (const pass_buffer inputs_are : {pass_buffer::inputs, in_place}) {
      for (unsigned moving = 0; moving < (1u << passes); ++moving) {
        SCOPED_TRACE(std::to_string(passes) + " passes, sorting " + std::to_string(moving) +
                     ", inputs are " + std::to_string(int(inputs_are)));
        ppat::detail::pass_role roles[8];
        ppat::detail::plan_pass_roles(moving, passes, inputs_are, roles);
        const auto actual = [&](pass_buffer b) {
          return int(b == pass_buffer::inputs ? inputs_are : b);
        };
        // The count of sorting passes applied to the keys each buffer holds; -1: none.
        int applied_in[3] = {0, inputs_are == pass_buffer::outputs ? 0 : -1,
                             inputs_are == pass_buffer::between ? 0 : -1};
        int applied = 0;
        for (int p = 0; p < passes; ++p) {
          const bool sorts = (moving >> p & 1u) != 0;
          ASSERT_EQ(roles[p].action == pass_action::sort, sorts) << "pass " << p;
          if (roles[p].action == pass_action::skip) continue;
          const int from = actual(sorts ? ppat::detail::read_by(p, passes) : roles[p].from);
          const int to = actual(sorts ? ppat::detail::written_by(p, passes) : roles[p].to);
          ASSERT_NE(from, to) << "pass " << p;
          if (passes == 1 && inputs_are != pass_buffer::between) {  // none were allocated
            ASSERT_NE(from, int(pass_buffer::between));
            ASSERT_NE(to, int(pass_buffer::between));
          }
          ASSERT_NE(to, int(pass_buffer::inputs)) << "pass " << p;
          ASSERT_EQ(applied_in[from], applied) << "pass " << p << " reads stale keys";
          applied_in[to] = applied + (sorts ? 1 : 0);
          applied += sorts ? 1 : 0;
        }
        EXPECT_EQ(applied_in[int(pass_buffer::outputs)], applied);
      }
    }
  }
}

TEST(sort, passes_whose_keys_share_one_digit) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  // None varying, passes that move nothing alternating with those that sort, first, last,
  // between.
  one_digit_passes_of_type<std::uint32_t>("u32", {0x0, 0x5, 0x8, 0x1, 0x9, 0x6, 0x7, 0xA});
  // int64 positions and small counts: the high bytes never vary.
  one_digit_passes_of_type<std::int64_t>("i64", {0x00, 0xA5, 0x0F, 0x80, 0x01, 0xFE});
  one_digit_passes_of_type<double>("f64", {0x03, 0xC0});
}

// 8- and 16-bit keys alone, more than one launch holds, are counted and the runs filled in
// 16-byte vectors: outputs that start off a vector boundary, and keys with empty runs.
template <class K>
void counted_keys_into_unaligned_output(const char* type) {
  const std::size_t n = (std::size_t{1} << 21) + 5;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  for (ppat::order ord : orders) {
    for (spread s : {spread::uniform_bits, spread::few_distinct, spread::specials}) {
      SCOPED_TRACE(case_name(type, ord, s, n));
      const auto keys = draw_keys<K>(n, s);
      auto keys_in = on_device(keys);
      auto keys_out = poisoned<K>(n + 1);
      ppat::sort_keys(keys_in->data(), keys_out->data() + 1, n, ord);
      ppat_test::expect_no_cuda_error();
      auto got = keys_out->download();
      EXPECT_TRUE(all_poison(std::vector<K>(got.begin(), got.begin() + 1)));
      got.erase(got.begin());
      EXPECT_EQ(ppat_test::first_mismatch(
                    got, ppat_reference::gathered(keys, sorted_positions(keys, ord))),
                -1);
      EXPECT_TRUE(keys_out->guards_intact());
    }
  }
}

TEST(sort, counted_keys_into_unaligned_outputs) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  counted_keys_into_unaligned_output<std::uint8_t>("u8");
  counted_keys_into_unaligned_output<std::int16_t>("i16");
}

TEST(sort, empty_input_does_nothing) {
  PPAT_REQUIRE_GPU();
  device_buffer<int> out(4, 8);
  out.poison();
  ppat::sort_keys(static_cast<const int*>(nullptr), static_cast<int*>(nullptr), 0);
  ppat::sort_pairs(static_cast<const int*>(nullptr), out.data(), static_cast<const int*>(nullptr),
                   static_cast<int*>(nullptr), 0, ppat::order::descending);
  ppat_test::expect_no_cuda_error();
  EXPECT_TRUE(all_poison(out.download()) && out.guards_intact());
}

// Captured: a sort large enough for the onesweep kernels, and one small enough for the
// one-launch kernel.
TEST(sort, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 3000017, small = 300007;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  device_buffer<std::int32_t> keys_in(n), keys_out(n), small_keys_out(small);
  device_buffer<std::uint32_t> values_in(n), values_out(n);
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<std::int32_t> keys;
  std::vector<std::uint32_t> values;
  ppat_test::capture_and_replay(
      stream,
      [&] {
        ppat::sort_pairs(keys_in.data(), keys_out.data(), values_in.data(), values_out.data(), n,
                         ppat::order::ascending, 0, 32, stream);
        ppat::sort_keys(keys_in.data(), small_keys_out.data(), small, ppat::order::descending, 0,
                        32, stream);
      },
      [&](int replay) {
        keys =
            draw_keys<std::int32_t>(n, replay == 0 ? spread::uniform_bits : spread::few_distinct);
        values = draw_values<std::uint32_t>(n);
        keys_in.upload(keys);
        values_in.upload(values);
        keys_out.poison();
        values_out.poison();
        small_keys_out.poison();
      },
      [&](int) {
        const auto ascending = sorted_positions(keys, ppat::order::ascending);
        EXPECT_EQ(ppat_test::first_mismatch(keys_out.download(),
                                            ppat_reference::gathered(keys, ascending)),
                  -1);
        EXPECT_EQ(ppat_test::first_mismatch(values_out.download(),
                                            ppat_reference::gathered(values, ascending)),
                  -1);
        const std::vector<std::int32_t> head(keys.begin(), keys.begin() + std::ptrdiff_t(small));
        const auto descending = sorted_positions(head, ppat::order::descending);
        EXPECT_EQ(ppat_test::first_mismatch(small_keys_out.download(),
                                            ppat_reference::gathered(head, descending)),
                  -1);
      });
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
}

template <class K>
void textbook_rungs(const char* type) {
  for (ppat::order ord : orders) {
    for (spread s : {spread::uniform_bits, spread::specials, spread::few_distinct}) {
      for (std::size_t n :
           {std::size_t{1}, std::size_t{1023}, std::size_t{4097}, std::size_t{65537}}) {
        if (sampled_out(n, s) || (instrumented() && n > 4097)) continue;
        const auto keys = draw_keys<K>(n, s);
        const auto values = draw_values<std::uint32_t>(n);
        const std::string what = case_name(type, ord, s, n);
        expect_keys_sorted(keys, ord, what);  // the production sort, for comparison
        expect_sorted(keys, values, ord, 0, 8 * sizeof(K), what + ", binary split",
                      [&](const K* keys_in, K* keys_out, const std::uint32_t* values_in,
                          std::uint32_t* values_out) {
                        ppat::textbook::binary_split_sort_pairs(keys_in, keys_out, values_in,
                                                                values_out, n, ord);
                      });
        expect_sorted(keys, values, ord, 0, 8 * sizeof(K), what + ", reduce then scan",
                      [&](const K* keys_in, K* keys_out, const std::uint32_t* values_in,
                          std::uint32_t* values_out) {
                        ppat::textbook::reduce_then_scan_sort_pairs(keys_in, keys_out, values_in,
                                                                    values_out, n, ord);
                      });
        expect_sorted(keys, std::vector<char>{}, ord, 0, 8 * sizeof(K), what + ", keys only",
                      [&](const K* keys_in, K* keys_out, const char*, char*) {
                        ppat::textbook::binary_split_sort_keys(keys_in, keys_out, n, ord);
                        ppat::textbook::reduce_then_scan_sort_keys(keys_in, keys_out, n, ord);
                      });
      }
    }
  }
}

TEST(sort_rungs, both_rungs_are_stable_sorts) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  textbook_rungs<std::uint32_t>("u32");
  textbook_rungs<float>("f32");
  textbook_rungs<std::int16_t>("i16");
  textbook_rungs<double>("f64");
}

// ---- Huge inputs, checked on the device -----------------------------------------------------

// Counts, with atomics, the places where a sort of unsigned keys with their input positions
// as values went wrong: keys out of order, equal keys out of input order, a value that is
// no position or whose key is not the key beside it, a position seen twice.
template <class K>
__global__ void count_sort_errors(const K* keys_in, const K* keys_out,
                                  const std::uint64_t* positions, std::size_t n, unsigned* seen,
                                  unsigned long long* errors) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint64_t from = positions[i];
    bool wrong = from >= n || keys_in[from] != keys_out[i];
    if (!wrong && atomicAdd(&seen[from], 1u) != 0) wrong = true;
    if (i > 0) {
      const K before = keys_out[i - 1];
      if (before > keys_out[i] || (before == keys_out[i] && positions[i - 1] >= from)) wrong = true;
    }
    if (wrong) atomicAdd(errors, 1ull);
  }
}

// Keys only: out of order, or a key value whose count changed.
template <class K>
__global__ void count_key_errors(const K* keys_in, const K* keys_out, std::size_t n,
                                 unsigned long long* counts_in, unsigned long long* counts_out,
                                 unsigned long long* errors) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    atomicAdd(&counts_in[keys_in[i]], 1ull);
    atomicAdd(&counts_out[keys_out[i]], 1ull);
    if (i > 0 && keys_out[i - 1] > keys_out[i]) atomicAdd(errors, 1ull);
  }
}

// More than 2^29 pairs, sorted by bits [0, end_bit) from one buffer into another or in place,
// checked on the device against a copy of the keys.
void huge_pairs(bool in_place, int end_bit) {
  const std::size_t n = (std::size_t{1} << 29) + 4099;
  std::vector<std::uint32_t> keys(n);
  std::minstd_rand cheap(std::uint32_t(ppat_test::run_seed()));
  for (auto& k : keys)  // few enough distinct keys that stability shows
    k = std::uint32_t(cheap()) & 0x00FF00FFu;
  std::vector<std::uint64_t> positions(n);
  std::iota(positions.begin(), positions.end(), std::uint64_t{0});
  device_buffer<std::uint32_t> keys_in(n), keys_out(n);
  device_buffer<std::uint64_t> values_in(in_place ? 0 : n), values_out(n);
  device_buffer<unsigned> seen(n);
  device_buffer<unsigned long long> errors(1);
  keys_in.upload(keys);
  (in_place ? keys_out : keys_in).upload(keys);
  (in_place ? values_out : values_in).upload(positions);
  PPAT_CUDA_OK(cudaMemset(seen.data(), 0, n * sizeof(unsigned)));
  PPAT_CUDA_OK(cudaMemset(errors.data(), 0, sizeof(unsigned long long)));
  if (in_place) {
    ppat::sort_pairs(keys_out.data(), keys_out.data(), values_out.data(), values_out.data(), n,
                     ppat::order::ascending, 0, end_bit);
  } else {
    ppat::sort_pairs(keys_in.data(), keys_out.data(), values_in.data(), values_out.data(), n,
                     ppat::order::ascending, 0, end_bit);
  }
  count_sort_errors<<<1024, 256>>>(keys_in.data(), keys_out.data(), values_out.data(), n,
                                   seen.data(), errors.data());
  ppat_test::expect_no_cuda_error();
  EXPECT_EQ(errors.download()[0], 0u);
}

// A pass runs in two portions, the second starting its digits where the first left them.
TEST(sort, huge_pairs_in_several_portions) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  huge_pairs(false, 32);
}

// The same in place, by the keys' 24 low bits: three passes, so the input is first copied
// aside.
TEST(sort, huge_pairs_in_place_in_several_portions) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  huge_pairs(true, 24);
}

// More than 2^32 u8 keys: every count and output position needs 64 bits.
TEST(sort, huge_u8_above_2_pow_32) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 32) + 4099;
  device_buffer<std::uint8_t> keys_in(n), keys_out(n);
  {
    std::vector<std::uint8_t> keys(n);
    std::minstd_rand cheap(std::uint32_t(ppat_test::run_seed()));
    for (std::size_t i = 0; i < n; ++i)  // skewed: digit 7 a quarter of all keys
      keys[i] = std::uint8_t((cheap() & 3) == 0 ? 7 : cheap());
    keys_in.upload(keys);
  }
  device_buffer<unsigned long long> counts_in(256), counts_out(256), errors(1);
  PPAT_CUDA_OK(cudaMemset(counts_in.data(), 0, 256 * sizeof(unsigned long long)));
  PPAT_CUDA_OK(cudaMemset(counts_out.data(), 0, 256 * sizeof(unsigned long long)));
  PPAT_CUDA_OK(cudaMemset(errors.data(), 0, sizeof(unsigned long long)));
  ppat::sort_keys(keys_in.data(), keys_out.data(), n);
  count_key_errors<<<1024, 256>>>(keys_in.data(), keys_out.data(), n, counts_in.data(),
                                  counts_out.data(), errors.data());
  ppat_test::expect_no_cuda_error();
  EXPECT_EQ(errors.download()[0], 0u);
  EXPECT_EQ(ppat_test::first_mismatch(counts_out.download(), counts_in.download()), -1);
}

TEST(sort_arguments, bad_arguments_are_rejected) {
  int* none = nullptr;
  int buffer[64] = {};
  const auto rejects = [](auto call, const char* argument) {
    try {
      call();
      ADD_FAILURE() << "no exception for " << argument;
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("sort_"), std::string::npos) << message;
      EXPECT_NE(message.find(argument), std::string::npos) << message;
    }
  };
  rejects([&] { ppat::sort_keys(none, buffer, 4); }, "'in'");
  rejects([&] { ppat::sort_keys(buffer, none, 4); }, "'out'");
  rejects([&] { ppat::sort_keys(buffer, buffer + 2, 4); }, "'out'");
  rejects([&] { ppat::sort_keys(buffer, buffer + 1, 4); }, "'out'");
  rejects([&] { ppat::textbook::binary_split_sort_keys(buffer, buffer, 4); }, "'out'");
  rejects([&] { ppat::sort_pairs(buffer, buffer, buffer + 16, buffer + 17, 4); }, "values_out");
  rejects([&] { ppat::sort_pairs(buffer, buffer, buffer + 2, buffer + 2, 4); }, "values_out");
  rejects([&] { ppat::sort_keys(buffer, buffer + 8, 4, ppat::order::ascending, -1, 32); },
          "begin_bit");
  rejects([&] { ppat::sort_keys(buffer, buffer + 8, 4, ppat::order::ascending, 33, 33); },
          "begin_bit");
  rejects([&] { ppat::sort_keys(buffer, buffer + 8, 4, ppat::order::ascending, 0, 33); },
          "end_bit");
  rejects([&] { ppat::sort_keys(buffer, buffer + 8, 4, ppat::order::ascending, 9, 8); }, "end_bit");
  rejects([&] { ppat::sort_keys(buffer, buffer + 8, 4, static_cast<ppat::order>(7)); }, "ord");
  rejects([&] { ppat::sort_pairs(buffer, buffer + 8, none, buffer + 24, 4); }, "values_in");
  rejects([&] { ppat::sort_pairs(buffer, buffer + 8, buffer + 16, none, 4); }, "values_out");
  rejects([&] { ppat::sort_pairs(buffer, buffer + 8, buffer + 16, buffer + 2, 4); }, "values_out");
  rejects([&] { ppat::sort_pairs(buffer, buffer + 8, buffer + 16, buffer + 10, 4); }, "values_out");
  rejects([&] { ppat::sort_pairs(buffer, buffer + 8, buffer + 9, buffer + 24, 4); }, "keys_out");
  rejects([&] { ppat::textbook::binary_split_sort_keys(buffer, buffer + 1, 4); }, "'out'");
  rejects(
      [&] {
        ppat::textbook::reduce_then_scan_sort_pairs(buffer, buffer + 8, buffer + 16, buffer + 24, 4,
                                                    ppat::order::ascending, 0, 40);
      },
      "end_bit");
}

}  // namespace
