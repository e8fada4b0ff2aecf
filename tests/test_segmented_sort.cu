// Segmented and batched sorts against a host stable sort of each segment: segment layouts
// from many tiny segments to one that covers the input, lengths on every path's edges (one
// block of each size, chains of tiles), segments listed out of order with gaps between them
// that must stay untouched, offsets that are no range (read as empty), one offset array
// for both ends; every offset type; keys of every width, floats with NaNs and signed zeros,
// both orders; pairs with positions as values (which show stability) and 16-byte values; in
// place; rows of a matrix; graph capture; a segment longer than a look-back chain; more than
// 2^32 items in a segment; the textbook bitonic sort; bad arguments. Outputs are poisoned first and
// checked whole, bitwise: items outside every segment must keep the poison. The pairs' cases
// are in test_segmented_sort_pairs.cu, the rows' and the textbook's in _rows.cu, the checks
// they share in segmented_sort_checks.hpp: one test program in files compiled side by side.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "segmented_sort_checks.hpp"

namespace {

using namespace segmented_sort_checks;

TEST(segmented_sort, keys_of_every_width) {
  PPAT_REQUIRE_GPU();
  every_layout<std::uint8_t>("u8");
  every_layout<std::int16_t>("i16");
  every_layout<std::uint32_t>("u32");
  every_layout<std::int64_t>("i64");
}

TEST(segmented_sort, floating_point_keys) {
  PPAT_REQUIRE_GPU();
  every_layout<float>("f32");
  every_layout<double>("f64");
  every_layout<__half>("f16");
}

// Pairs and keys alone sorted in place: every segment read before any of it is written. Integer
// keys come back from their images in the merge groups, float keys by their positions.
template <class K>
void expect_sorted_in_place(std::size_t n, layout l) {
  SCOPED_TRACE(std::string(name(l)) + ", n = " + std::to_string(n));
  const auto keys = draw_keys<K>(n);
  const auto values = draw_values<std::uint32_t>(n);
  const segments s = draw_segments<K, std::uint32_t>(n, l);
  auto keys_data = on_device(keys);
  auto keys_alone = on_device(keys);
  auto values_data = on_device(values);
  auto begins = on_device(s.begins);
  auto ends = on_device(s.ends);
  ppat::segmented_sort_pairs(keys_data->data(), keys_data->data(), values_data->data(),
                             values_data->data(), n, s.begins.size(), begins->data(), ends->data(),
                             ppat::order::descending);
  ppat::segmented_sort_keys(keys_alone->data(), keys_alone->data(), n, s.begins.size(),
                            begins->data(), ends->data(), ppat::order::descending);
  ppat_test::expect_no_cuda_error();
  auto from = segmented_positions(keys, s, ppat::order::descending);
  for (std::size_t i = 0; i < n; ++i)
    if (from[i] < 0) from[i] = (long long)i;  // items outside every segment stay
  EXPECT_EQ(ppat_test::first_mismatch(keys_data->download(), expected_output(keys, from)), -1);
  EXPECT_EQ(ppat_test::first_mismatch(keys_alone->download(), expected_output(keys, from)), -1);
  EXPECT_EQ(ppat_test::first_mismatch(values_data->download(), expected_output(values, from)), -1);
  EXPECT_TRUE(keys_data->guards_intact() && keys_alone->guards_intact() &&
              values_data->guards_intact());
}

TEST(segmented_sort, in_place) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{5000}, std::size_t{300007}}) {
    if (ppat_test::over_item_budget(n)) continue;
    for (layout l : {layout::mixed, layout::edges, layout::shuffled_gaps, layout::one}) {
      expect_sorted_in_place<float>(n, l);
      expect_sorted_in_place<std::int32_t>(n, l);
    }
  }
}

TEST(segmented_sort, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 200003;
  const auto keys = draw_keys<std::uint32_t>(n);
  const segments s = draw_segments<std::uint32_t, char>(n, layout::shuffled_gaps);
  auto keys_in = on_device(keys);
  auto keys_out = poisoned<std::uint32_t>(n);
  auto begins = on_device(s.begins);
  auto ends = on_device(s.ends);
  const auto expected = expected_output(keys, segmented_positions(keys, s, ppat::order::ascending));
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ppat_test::capture_and_replay(
      stream,
      [&] {
        ppat::segmented_sort_keys(keys_in->data(), keys_out->data(), n, s.begins.size(),
                                  begins->data(), ends->data(), ppat::order::ascending, stream);
      },
      [&](int) { keys_out->poison(); },
      [&](int) { EXPECT_EQ(ppat_test::first_mismatch(keys_out->download(), expected), -1); });
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
}

// A segment longer than a look-back chain counts (2^29 keys) is sorted as several chains;
// checked on the host in one pass: keys in order, each value (the key's position) increasing
// among equal keys and naming an input key equal to the output key.
TEST(segmented_sort, huge_segment_of_several_chains) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 29) + 70001;
  PPAT_SKIP_OVER_ITEM_BUDGET(n);
  const auto keys = ppat_test::random_integers<std::uint8_t>(n, 0, 255);
  const std::vector<long long> begins = {5, 0}, ends = {(long long)n - 3, 5};
  device_buffer<std::uint8_t> keys_in(n), keys_out(n);
  device_buffer<std::uint32_t> values_in(n), values_out(n);
  keys_in.upload(keys);
  std::vector<std::uint32_t> positions(n);
  std::iota(positions.begin(), positions.end(), 0u);
  values_in.upload(positions);
  keys_out.poison();
  values_out.poison();
  auto begin_offsets = on_device(begins);
  auto end_offsets = on_device(ends);
  ppat::segmented_sort_pairs(keys_in.data(), keys_out.data(), values_in.data(), values_out.data(),
                             n, 2, begin_offsets->data(), end_offsets->data());
  ppat_test::expect_no_cuda_error();
  const auto got_keys = keys_out.download();
  const auto got_values = values_out.download();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool last_item = i == n - 1 || i == n - 2 || i == n - 3;
    if (last_item) {
      wrong += got_values[i] != std::uint32_t(ppat_test::poison_byte) * 0x01010101u;
      continue;
    }
    const bool first_of_segment = i == 0 || i == 5;
    if (got_values[i] >= n) {  // not a position: a wrong answer, not a read past the keys
      ++wrong;
      continue;
    }
    wrong += got_keys[i] != keys[got_values[i]];
    if (!first_of_segment) {
      wrong += got_keys[i] < got_keys[i - 1] ||
               (got_keys[i] == got_keys[i - 1] && got_values[i] <= got_values[i - 1]);
    }
    wrong += (i < 5) != (got_values[i] < 5);
  }
  EXPECT_EQ(wrong, 0u);
}

// More than 2^32 items, one segment of more than 2^32 keys among a short one, a tiny one and
// an empty one, listed out of order, and a gap after them that must keep the poison. u8 keys
// alone, in [0, 250): the giant segment is checked by its counts of each key, in order.
TEST(segmented_sort, huge_u8_segment_above_2_pow_32) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 32) + 4099;
  const std::size_t giant_end = (std::size_t{1} << 32) + 3000, short_end = giant_end + 100;
  const std::vector<long long> begins = {5, (long long)giant_end, 0, (long long)n - 7};
  const std::vector<long long> ends = {(long long)giant_end, (long long)short_end, 5,
                                       (long long)n - 7};
  std::vector<std::uint8_t> keys(n);
  std::minstd_rand cheap(std::uint32_t(ppat_test::run_seed()));
  std::size_t giant_counts[256] = {};
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = std::uint8_t((i * 7 + (cheap() & 1) * 128) % 250);
    if (i >= 5 && i < giant_end) ++giant_counts[keys[i]];
  }
  std::vector<std::uint8_t> tiny(keys.begin(), keys.begin() + 5);
  std::vector<std::uint8_t> short_one(keys.begin() + std::ptrdiff_t(giant_end),
                                      keys.begin() + std::ptrdiff_t(short_end));
  std::sort(tiny.begin(), tiny.end());
  std::sort(short_one.begin(), short_one.end());

  const auto in = on_device(keys);
  keys = {};
  const auto out = poisoned<std::uint8_t>(n);
  auto begin_offsets = on_device(begins);
  auto end_offsets = on_device(ends);
  ppat::segmented_sort_keys(in->data(), out->data(), n, begins.size(), begin_offsets->data(),
                            end_offsets->data());
  ppat_test::expect_no_cuda_error();
  const auto got = out->download();
  EXPECT_TRUE(std::equal(tiny.begin(), tiny.end(), got.begin()));
  std::size_t at = 5, first_wrong = n;
  for (int key = 0; key < 256 && first_wrong == n; ++key) {
    for (std::size_t c = 0; c < giant_counts[key]; ++c, ++at) {
      if (got[at] != key) {
        first_wrong = at;
        break;
      }
    }
  }
  EXPECT_EQ(first_wrong, n) << "the giant segment's first wrong key";
  EXPECT_TRUE(
      std::equal(short_one.begin(), short_one.end(), got.begin() + std::ptrdiff_t(giant_end)));
  EXPECT_TRUE(std::all_of(got.begin() + std::ptrdiff_t(short_end), got.end(), [](std::uint8_t key) {
    return key == ppat_test::poison_byte;
  })) << "items outside every segment were written";
  EXPECT_TRUE(out->guards_intact());
}

TEST(segmented_sort_arguments, bad_arguments_are_rejected) {
  int* none = nullptr;
  int buffer[64] = {};
  long long offsets[4] = {0, 2, 2, 4};
  const auto rejects = [](auto call, const char* argument) {
    ppat_test::expect_rejected("sort_", argument, call);
  };
  const long long* no_offsets = nullptr;
  rejects([&] { ppat::segmented_sort_keys(none, buffer, 4, 2, offsets, offsets + 1); }, "'in'");
  rejects([&] { ppat::segmented_sort_keys(buffer, buffer + 2, 4, 2, offsets, offsets + 1); },
          "'out'");
  rejects([&] { ppat::segmented_sort_keys(buffer, buffer + 8, 4, 2, no_offsets, offsets + 1); },
          "begin_offsets");
  rejects([&] { ppat::segmented_sort_keys(buffer, buffer + 8, 4, 2, offsets, no_offsets); },
          "end_offsets");
  rejects(
      [&] {
        auto* overlapping = reinterpret_cast<long long*>(buffer + 8);
        ppat::segmented_sort_keys(buffer, buffer + 8, 4, 2, overlapping, offsets + 1);
      },
      "begin_offsets");
  rejects(
      [&] {
        auto* overlapping = reinterpret_cast<long long*>(buffer + 24);
        ppat::segmented_sort_pairs(buffer, buffer + 8, buffer + 16, buffer + 24, 4, 2, offsets,
                                   overlapping);
      },
      "end_offsets");
  rejects(
      [&] {
        ppat::segmented_sort_pairs(buffer, buffer + 8, buffer + 16, buffer + 2, 4, 2, offsets,
                                   offsets + 1);
      },
      "values_out");
  rejects(
      [&] {
        ppat::segmented_sort_keys(buffer, buffer + 8, 4, 2, offsets, offsets + 1,
                                  static_cast<ppat::order>(3));
      },
      "ord");
  rejects([&] { ppat::sort_keys_batched(buffer, buffer + 1, 2, 2); }, "'out'");
  rejects([&] { ppat::sort_pairs_batched(buffer, buffer + 8, none, buffer + 24, 2, 2); },
          "values_in");
  rejects(
      [&] {
        ppat::sort_keys_batched(buffer, buffer + 8, std::size_t{1} << 40, std::size_t{1} << 40);
      },
      "cols");
  // The textbook rung sorts into outputs of their own.
  rejects(
      [&] {
        ppat::textbook::bitonic_segmented_sort_keys(buffer, buffer, 4, 2, offsets, offsets + 1);
      },
      "'out'");
  rejects(
      [&] {
        ppat::textbook::bitonic_segmented_sort_pairs(buffer, buffer + 8, buffer + 16, buffer + 16,
                                                     4, 2, offsets, offsets + 1);
      },
      "values_out");
  rejects(
      [&] {
        ppat::textbook::bitonic_segmented_sort_keys(buffer, buffer + 8, 4, 2, no_offsets,
                                                    offsets + 1);
      },
      "begin_offsets");
}

TEST(segmented_sort, nothing_to_sort_launches_nothing) {
  int* none = nullptr;
  const long long* no_offsets = nullptr;
  ppat::segmented_sort_keys(none, none, 0, 0, no_offsets, no_offsets);
  ppat::sort_keys_batched(none, none, 0, 5);
  ppat::sort_keys_batched(none, none, 5, 0);
  SUCCEED();
}

}  // namespace
