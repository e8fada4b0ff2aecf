// Stream compaction, partition, unique, reduce by key and run-length encode against the host
// reference: item types u8, i32, u64, f32 (NaN and signed zeros), a 12-byte and a 16-byte
// struct; sizes from 1 past tile and look-back boundaries; selections and runs from none to
// all; buffers one item off their alignment; streams and graph capture; the textbook rungs;
// bad arguments; unique and both partitions of u8 past 2^32 items. Outputs are poisoned
// first: every item up to the count is checked, and every item past it must still hold the
// poison.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::device_buffer;

struct triple {  // 12 bytes: one item a vector
  std::uint32_t a, b, c;
};
struct pair64 {  // 16 bytes, 8-byte aligned: one item a vector, read item by item
  std::uint64_t a, b;
};
__host__ __device__ bool operator==(const triple& x, const triple& y) {
  return x.a == y.a && x.b == y.b && x.c == y.c;
}
__host__ __device__ bool operator==(const pair64& x, const pair64& y) {
  return x.a == y.a && x.b == y.b;
}

// An item of each type built from an integer (exactly, for floats below 2^24), and the
// integer a predicate looks at.
template <class T>
T make(std::uint64_t v) {
  if constexpr (std::is_same_v<T, triple>) {
    return {std::uint32_t(v), std::uint32_t(v * 3 + 1), std::uint32_t(v >> 7)};
  } else if constexpr (std::is_same_v<T, pair64>) {
    return {v, ~v};
  } else if constexpr (std::is_floating_point_v<T>) {
    return T(v % (1u << 23));
  } else {
    return T(v);
  }
}
template <class T>
__host__ __device__ std::uint64_t key_of(const T& x) {
  if constexpr (std::is_same_v<T, triple> || std::is_same_v<T, pair64>) {
    return x.a;
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::uint64_t(x);
  } else {
    return std::uint64_t(x);
  }
}

struct odd_key {
  template <class T>
  __host__ __device__ bool operator()(const T& x) const {
    return (key_of(x) & 1) != 0;
  }
};

// Which items a case selects (or where its runs start).
enum class pattern { none, all, alternating, five_percent, half, one_long_run };
constexpr pattern patterns[] = {pattern::none,         pattern::all,  pattern::alternating,
                                pattern::five_percent, pattern::half, pattern::one_long_run};
const char* name(pattern p) {
  switch (p) {
    case pattern::none:
      return "none";
    case pattern::all:
      return "all";
    case pattern::alternating:
      return "alternating";
    case pattern::five_percent:
      return "5%";
    case pattern::half:
      return "50%";
    case pattern::one_long_run:
      return "one long run";
  }
  return "?";
}

std::vector<bool> bits_of(pattern p, std::size_t n) {
  std::vector<bool> bits(n);
  std::bernoulli_distribution five(0.05), half(0.5);
  const std::size_t run_first = n / 5, run_end = n - n / 7;
  for (std::size_t i = 0; i < n; ++i) {
    switch (p) {
      case pattern::none:
        bits[i] = false;
        break;
      case pattern::all:
        bits[i] = true;
        break;
      case pattern::alternating:
        bits[i] = i % 2 == 1;
        break;
      case pattern::five_percent:
        bits[i] = five(ppat_test::rng());
        break;
      case pattern::half:
        bits[i] = half(ppat_test::rng());
        break;
      case pattern::one_long_run:
        bits[i] = i >= run_first && i < run_end;
        break;
    }
  }
  return bits;
}

// Items whose predicate (odd_key) gives `bits`.
template <class T>
std::vector<T> items_selected_by(const std::vector<bool>& bits) {
  std::uniform_int_distribution<std::uint64_t> pick(0, (1u << 21) - 1);
  std::vector<T> items(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i)
    items[i] = make<T>(pick(ppat_test::rng()) << 1 | (bits[i] ? 1 : 0));
  return items;
}

// Items in runs that start where `starts` says (a run also starts at 0): each run a value
// different from the one before. Floats draw from a set with NaN and both zeros, the zeros'
// signs mixed within a run.
template <class T>
std::vector<T> items_in_runs(std::vector<bool> starts) {
  std::vector<T> items(starts.size());
  std::uniform_int_distribution<std::uint64_t> pick(0, 200);
  std::bernoulli_distribution coin(0.5);
  const float specials[] = {0.0f, std::numeric_limits<float>::quiet_NaN(), 1.5f, -2.0f, 3.0f};
  std::uniform_int_distribution<int> special(0, 4);
  T current{};
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (i == 0 || starts[i]) {
      T next;
      do {
        if constexpr (std::is_floating_point_v<T>) {
          next = coin(ppat_test::rng()) ? T(specials[special(ppat_test::rng())])
                                        : make<T>(pick(ppat_test::rng()));
        } else {
          next = make<T>(pick(ppat_test::rng()));
        }
      } while (i > 0 && !std::is_floating_point_v<T> && next == current);
      current = next;
    }
    items[i] = current;
    if constexpr (std::is_floating_point_v<T>) {
      if (current == 0) items[i] = coin(ppat_test::rng()) ? T(0.0) : T(-0.0);
    }
  }
  return items;
}

// A device copy of `values` starting `offset` items into its allocation, with guards.
template <class T>
struct placed {
  device_buffer<T> buffer;
  std::size_t offset;
  placed(const std::vector<T>& values, std::size_t offset)
      : buffer(values.size() + offset, /*guard=*/64), offset(offset) {
    std::vector<T> shifted(offset, values.empty() ? T{} : values[0]);
    shifted.insert(shifted.end(), values.begin(), values.end());
    buffer.upload(shifted);
  }
  placed(std::size_t count, std::size_t offset)
      : buffer(count + offset, /*guard=*/64), offset(offset) {
    buffer.poison();
  }
  T* data() const { return buffer.data() + offset; }
  std::vector<T> download() const {
    const std::vector<T> all = buffer.download();
    return std::vector<T>(all.begin() + std::ptrdiff_t(offset), all.end());
  }
  bool poisoned_before() const {  // the items before data(), which nothing may write
    const std::vector<T> all = buffer.download();
    return offset == 0 || all_poison(all.data(), offset);
  }
  static bool all_poison(const T* items, std::size_t count) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(items);
    return std::all_of(bytes, bytes + count * sizeof(T),
                       [](unsigned char b) { return b == ppat_test::poison_byte; });
  }
};

std::size_t read_count(const device_buffer<std::size_t>& count) {
  return count.download()[0];
}

// `out` holds `expected` and then, up to its end, the poison only (unless `whole`).
template <class T>
void expect_output(const placed<T>& out, const std::vector<T>& expected, const char* what,
                   bool whole = false) {
  const std::vector<T> got = out.download();
  const std::vector<T> head(got.begin(), got.begin() + std::ptrdiff_t(expected.size()));
  EXPECT_EQ(ppat_test::first_mismatch(head, expected), -1) << what << ": first wrong item";
  if (!whole) {
    EXPECT_TRUE(placed<T>::all_poison(got.data() + expected.size(), got.size() - expected.size()))
        << what << ": written past the last selected item";
  }
  EXPECT_TRUE(out.poisoned_before() && out.buffer.guards_intact())
      << what << ": written outside the buffer";
}

// Runs `call(in, out, count)` on `in` placed `offset` items into its allocation and
// expects `kept` in the count and `expected` in `out`, then only the poison (unless `whole`).
template <class T, class Call>
void expect_kept(const std::vector<T>& in, std::size_t offset, std::size_t kept,
                 const std::vector<T>& expected, const char* what, Call call, bool whole = false) {
  placed<T> input(in, offset), output(in.size(), offset);
  device_buffer<std::size_t> count(1, 8);
  count.poison();
  call(input.data(), output.data(), count.data());
  ppat_test::expect_no_cuda_error();
  EXPECT_EQ(read_count(count), kept) << what;
  expect_output(output, expected, what, whole);
  EXPECT_TRUE(count.guards_intact()) << what;
}

// The same with a second input and output (values, run lengths; `second_in` may be empty):
// `call(in, second_in, out, second_out, count)`.
// The second input and output lie `second_offset` items into their allocations.
template <class T, class U, class Call>
void expect_kept_pairs(const std::vector<T>& in, const std::vector<U>& second_in,
                       std::size_t offset, std::size_t second_offset,
                       const std::vector<T>& expected, const std::vector<U>& expected_second,
                       const char* what, Call call) {
  placed<T> input(in, offset), output(in.size(), offset);
  placed<U> second_input(second_in, second_offset), second_output(in.size(), second_offset);
  device_buffer<std::size_t> count(1, 8);
  count.poison();
  call(input.data(), second_input.data(), output.data(), second_output.data(), count.data());
  ppat_test::expect_no_cuda_error();
  EXPECT_EQ(read_count(count), expected.size()) << what;
  expect_output(output, expected, what);
  expect_output(second_output, expected_second, what);
}

template <class T>
std::vector<T> run_heads(const std::vector<T>& in) {
  const auto starts = ppat_reference::run_starts(in);
  return ppat_reference::select(in, [&](std::size_t i) { return bool(starts[i]); });
}

template <class T>
void check_select_if(const std::vector<T>& in, std::size_t offset = 0) {
  if (ppat_test::over_item_budget(in.size())) return;
  const auto kept = ppat_reference::select(in, [&](std::size_t i) { return odd_key{}(in[i]); });
  expect_kept(in, offset, kept.size(), kept, "select_if", [&](const T* from, T* to, auto count) {
    ppat::select_if(from, to, count, in.size(), odd_key{});
  });
}

template <class T, class Flag>
void check_select_flagged(const std::vector<T>& in, const std::vector<Flag>& flags,
                          std::size_t offset = 0) {
  if (ppat_test::over_item_budget(in.size())) return;
  placed<Flag> flag_buffer(flags, offset);
  const auto kept = ppat_reference::select(in, [&](std::size_t i) { return flags[i] != Flag{}; });
  expect_kept(in, offset, kept.size(), kept, "select_flagged",
              [&](const T* from, T* to, auto count) {
                ppat::select_flagged(from, flag_buffer.data(), to, count, in.size());
              });
}

// partition as the public call runs it (over several tiles: all resident and waiting for the
// last, or counted first beyond that), or with the count pass forced at any size.
template <class T>
void check_partition(
    const std::vector<T>& in, std::size_t offset = 0,
    ppat::detail::partition_total total = ppat::detail::partition_total::whichever_fits) {
  if (ppat_test::over_item_budget(in.size())) return;
  const auto kept = ppat_reference::select(in, [&](std::size_t i) { return odd_key{}(in[i]); });
  expect_kept(
      in, offset, kept.size(), ppat_reference::stable_partition(in, odd_key{}), "partition",
      [&](const T* from, T* to, auto count) {
        if (total == ppat::detail::partition_total::whichever_fits) {
          ppat::partition(from, to, count, in.size(), odd_key{});
        } else {
          ppat::detail::select<ppat::detail::rejected_items::after_kept>(
              ppat::detail::plain_selection<T, ppat::detail::predicate_rule<odd_key>>{
                  from, to, nullptr, nullptr, nullptr, count, in.size(), {odd_key{}}},
              "ppat::partition", 0, total);
        }
      },
      /*whole=*/true);
}

// partition_copy: the accepted items in one output, the rejected in the other, each in input
// order and followed by nothing but the poison.
template <class T>
void check_partition_copy(const std::vector<T>& in, std::size_t offset = 0) {
  if (ppat_test::over_item_budget(in.size())) return;
  const auto kept = ppat_reference::select(in, [&](std::size_t i) { return odd_key{}(in[i]); });
  const auto rejected =
      ppat_reference::select(in, [&](std::size_t i) { return !odd_key{}(in[i]); });
  placed<T> rejected_output(in.size(), offset);
  expect_kept(in, offset, kept.size(), kept, "partition_copy",
              [&](const T* from, T* to, auto count) {
                ppat::partition_copy(from, to, rejected_output.data(), count, in.size(), odd_key{});
              });
  expect_output(rejected_output, rejected, "partition_copy's rejected items");
}

template <class T>
void check_unique(const std::vector<T>& in, std::size_t offset = 0) {
  if (ppat_test::over_item_budget(in.size())) return;
  const auto kept = run_heads(in);
  expect_kept(in, offset, kept.size(), kept, "unique",
              [&](const T* from, T* to, auto count) { ppat::unique(from, to, count, in.size()); });
}

template <class K, class V>
void check_unique_by_key(const std::vector<K>& keys, const std::vector<V>& values,
                         std::size_t offset = 0, std::size_t values_offset = 0) {
  if (ppat_test::over_item_budget(keys.size())) return;
  const auto starts = ppat_reference::run_starts(keys);
  expect_kept_pairs(keys, values, offset, values_offset, run_heads(keys),
                    ppat_reference::select(values, [&](std::size_t i) { return bool(starts[i]); }),
                    "unique_by_key", [&](const K* k, const V* v, K* k_out, V* v_out, auto count) {
                      ppat::unique_by_key(k, v, k_out, v_out, count, keys.size());
                    });
}

template <class K, class V, class Op>
void check_reduce_by_key(const std::vector<K>& keys, const std::vector<V>& values, Op op,
                         std::size_t offset = 0) {
  if (ppat_test::over_item_budget(keys.size())) return;
  expect_kept_pairs(keys, values, offset, offset, run_heads(keys),
                    ppat_reference::reduce_by_key(keys, values, op), "reduce_by_key",
                    [&](const K* k, const V* v, K* k_out, V* v_out, auto count) {
                      ppat::reduce_by_key(k, v, k_out, v_out, count, keys.size(), op);
                    });
}

template <class T, class Count>
void check_run_length_encode(const std::vector<T>& in, std::size_t offset = 0) {
  if (ppat_test::over_item_budget(in.size())) return;
  expect_kept_pairs(in, std::vector<Count>{}, offset, offset, run_heads(in),
                    ppat_reference::run_lengths<T, Count>(in), "run_length_encode",
                    [&](const T* from, const Count*, T* to, Count* lengths, auto count) {
                      ppat::run_length_encode(from, to, lengths, count, in.size());
                    });
}

// Tile boundaries of the shapes (2048 to 32768 items), look-back groups of 32 tiles,
// primes, 2^20 + 3.
const std::size_t sizes[] = {1,     2,     31,    32,    33,     2047,   2048, 2049,
                             4095,  4096,  4097,  6143,  6145,   8191,   8192, 8193,
                             32767, 32768, 32769, 65521, 262147, 1048579};
const std::size_t few_sizes[] = {1, 33, 4097, 8193, 32769, 262147, 1048579};

// `body(n, p)` for every size and pattern, each traced.
template <class Sizes, class Body>
void for_each_case(const Sizes& sizes, Body body) {
  for (std::size_t n : sizes) {
    for (pattern p : patterns) {
      SCOPED_TRACE(std::string(name(p)) + " n=" + std::to_string(n));
      body(n, p);
    }
  }
}

template <class T>
void selections_of_every_pattern(std::size_t n) {
  for (pattern p : patterns) {
    SCOPED_TRACE(std::string(name(p)) + " n=" + std::to_string(n));
    const auto in = items_selected_by<T>(bits_of(p, n));
    check_select_if(in);
    check_partition(in);
    check_partition(in, 0, ppat::detail::partition_total::count_pass);
    check_partition_copy(in);
  }
}

TEST(select, select_if_and_partition_i32_at_every_size_and_density) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : sizes)
    selections_of_every_pattern<std::int32_t>(n);
}

TEST(select, select_if_and_partition_item_types) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : few_sizes) {
    selections_of_every_pattern<std::uint8_t>(n);
    selections_of_every_pattern<std::uint64_t>(n);
    selections_of_every_pattern<float>(n);
    selections_of_every_pattern<triple>(n);
    selections_of_every_pattern<pair64>(n);
  }
}

TEST(select, select_flagged_flag_types) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for_each_case(few_sizes, [&](std::size_t n, pattern p) {
    const auto bits = bits_of(p, n);
    const auto items = ppat_test::random_integers<std::int32_t>(n, -1000000, 1000000);
    // Flags of several widths and values: any nonzero value selects.
    std::vector<std::uint8_t> bytes(n);
    std::vector<int> ints(n);
    std::vector<std::uint64_t> wide(n);
    const auto noise = ppat_test::random_integers<std::uint64_t>(n, 1, 1000);
    for (std::size_t i = 0; i < n; ++i) {
      bytes[i] = bits[i] ? std::uint8_t(noise[i] % 255 + 1) : 0;
      ints[i] = bits[i] ? -int(noise[i]) : 0;
      wide[i] = bits[i] ? noise[i] << 40 : 0;
    }
    check_select_flagged(items, bytes);
    check_select_flagged(items, ints);
    check_select_flagged(ppat_test::random_integers<std::uint64_t>(n, 0, 1ll << 60), wide);
    check_select_flagged(items_selected_by<triple>(bits), bytes);
    check_select_flagged(items_selected_by<std::uint8_t>(bits), ints);
    // bool flags, written as bytes of 0 and 1.
    if (ppat_test::over_item_budget(n)) return;
    placed<std::int32_t> input(items, 0), output(n, 0);
    device_buffer<bool> flags(n, 64);
    std::vector<unsigned char> raw(n);
    for (std::size_t i = 0; i < n; ++i)
      raw[i] = bits[i] ? 1 : 0;
    PPAT_CUDA_OK(cudaMemcpy(flags.data(), raw.data(), n, cudaMemcpyHostToDevice));
    device_buffer<std::size_t> count(1, 8);
    ppat::select_flagged(input.data(), flags.data(), output.data(), count.data(), n);
    ppat_test::expect_no_cuda_error();
    const auto expected = ppat_reference::select(items, [&](std::size_t i) { return bits[i]; });
    EXPECT_EQ(read_count(count), expected.size());
    expect_output(output, expected, "select_flagged bool");
  });
}

// Run starts for unique and the reductions by key: every item, none but the first, every
// other, 5%, 50%, and one long run in the middle of single items.
std::vector<bool> starts_of(pattern p, std::size_t n) {
  std::vector<bool> starts = bits_of(p, n);
  if (p == pattern::one_long_run) starts.flip();
  return starts;
}

TEST(select, unique_item_types_and_runs) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for_each_case(sizes, [&](std::size_t n, pattern p) {
    const auto starts = starts_of(p, n);
    check_unique(items_in_runs<std::int32_t>(starts));
    check_unique(items_in_runs<float>(starts));
  });
  for_each_case(few_sizes, [&](std::size_t n, pattern p) {
    const auto starts = starts_of(p, n);
    check_unique(items_in_runs<std::uint8_t>(starts));
    check_unique(items_in_runs<std::uint64_t>(starts));
    check_unique(items_in_runs<triple>(starts));
    check_unique(items_in_runs<pair64>(starts));
  });
}

TEST(select, unique_by_key_types) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for_each_case(few_sizes, [&](std::size_t n, pattern p) {
    const auto starts = starts_of(p, n);
    const auto values = ppat_test::random_integers<std::int32_t>(n, -1000000, 1000000);
    check_unique_by_key(items_in_runs<std::int32_t>(starts), values);
    check_unique_by_key(items_in_runs<float>(starts), ppat_test::spread_floats<double>(n));
    check_unique_by_key(items_in_runs<std::uint8_t>(starts), ppat_test::random_affine_maps(n));
    check_unique_by_key(items_in_runs<pair64>(starts),
                        ppat_test::random_integers<std::uint8_t>(n, 0, 255));
    // 1- and 2-byte keys and values, which stay packed in registers.
    const auto short_values = ppat_test::random_integers<std::uint16_t>(n, 0, 65535);
    const auto byte_values = ppat_test::random_integers<std::uint8_t>(n, 0, 255);
    check_unique_by_key(items_in_runs<std::uint16_t>(starts), short_values);
    check_unique_by_key(items_in_runs<std::uint16_t>(starts), byte_values);
    check_unique_by_key(items_in_runs<std::uint8_t>(starts), short_values);
    check_unique_by_key(items_in_runs<std::uint8_t>(starts), byte_values);
    // Aligned keys, values off 16 bytes (u8 keys take 16 u16 values in two 16-byte loads).
    check_unique_by_key(items_in_runs<std::uint8_t>(starts), short_values, 0, 1);
    check_unique_by_key(items_in_runs<std::uint16_t>(starts), short_values, 0, 3);
  });
}

TEST(select, reduce_by_key_types_and_operators) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for_each_case(sizes, [&](std::size_t n, pattern p) {
    const auto starts = starts_of(p, n);
    const auto keys = items_in_runs<std::int32_t>(starts);
    check_reduce_by_key(keys, ppat_test::random_integers<std::int32_t>(n, -1000, 1000),
                        ppat::plus{});
    check_reduce_by_key(keys, ppat_test::exact_fractions<float>(n, 1024, 1.0 / 8), ppat::plus{});
  });
  for_each_case(few_sizes, [&](std::size_t n, pattern p) {
    const auto starts = starts_of(p, n);
    check_reduce_by_key(items_in_runs<float>(starts),
                        ppat_test::random_integers<std::int64_t>(n, -(1ll << 40), 1ll << 40),
                        ppat::minimum{});
    check_reduce_by_key(items_in_runs<std::uint8_t>(starts),
                        ppat_test::random_integers<std::uint8_t>(n, 0, 255), ppat::maximum{});
    check_reduce_by_key(items_in_runs<triple>(starts),
                        ppat_test::exact_fractions<double>(n, 1 << 20, 1.0 / 1024), ppat::plus{});
    // Not commutative: any misordering shows.
    check_reduce_by_key(items_in_runs<std::uint64_t>(starts), ppat_test::random_affine_maps(n),
                        ppat_test::then{});
  });
}

TEST(select, reduce_by_key_float_results_are_deterministic) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 1048579;
  if (ppat_test::over_item_budget(n)) return;
  const auto keys = items_in_runs<std::int32_t>(bits_of(pattern::five_percent, n));
  const auto values = ppat_test::spread_floats<float>(n);
  std::vector<float> first;
  for (std::size_t offset : {0, 1, 0}) {
    placed<std::int32_t> key_input(keys, offset), unique_output(n, offset);
    placed<float> value_input(values, offset), aggregates(n, offset);
    device_buffer<std::size_t> count(1);
    ppat::reduce_by_key(key_input.data(), value_input.data(), unique_output.data(),
                        aggregates.data(), count.data(), n);
    ppat_test::expect_no_cuda_error();
    auto got = aggregates.download();
    got.resize(read_count(count));
    if (first.empty()) {
      first = got;
      // Not bit-exact against a left fold (the tiles fold in another order), but within the
      // rounding of a fold of that many terms of that size: a wrong or missing term of more
      // than that shows.
      std::vector<double> magnitudes(values.size());
      for (std::size_t i = 0; i < values.size(); ++i)
        magnitudes[i] = std::fabs(values[i]);
      const auto expected = ppat_reference::reduce_by_key(keys, values, ppat::plus{});
      const auto sizes = ppat_reference::reduce_by_key(keys, magnitudes, ppat::plus{});
      const auto lengths = ppat_reference::run_lengths<std::int32_t, std::size_t>(keys);
      ASSERT_EQ(got.size(), expected.size());
      for (std::size_t s = 0; s < got.size(); ++s) {
        const double bound = 2.0 * double(lengths[s]) * 0x1.0p-24 * sizes[s];
        ASSERT_NEAR(got[s], expected[s], bound) << "segment " << s;
      }
    } else {
      EXPECT_EQ(ppat_test::first_mismatch(got, first), -1) << "offset " << offset;
    }
  }
}

TEST(select, run_length_encode_types_and_counts) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for_each_case(sizes, [&](std::size_t n, pattern p) {
    check_run_length_encode<std::int32_t, std::uint32_t>(
        items_in_runs<std::int32_t>(starts_of(p, n)));
  });
  for_each_case(few_sizes, [&](std::size_t n, pattern p) {
    const auto starts = starts_of(p, n);
    check_run_length_encode<std::uint8_t, std::size_t>(items_in_runs<std::uint8_t>(starts));
    check_run_length_encode<float, int>(items_in_runs<float>(starts));
    check_run_length_encode<std::uint64_t, std::uint64_t>(items_in_runs<std::uint64_t>(starts));
    check_run_length_encode<triple, std::uint32_t>(items_in_runs<triple>(starts));
    check_run_length_encode<pair64, std::uint32_t>(items_in_runs<pair64>(starts));
  });
}

// Every buffer one item past its alignment: item-sized loads, the same results.
TEST(select, unaligned_buffers) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{33}, std::size_t{8193}, std::size_t{262147}}) {
    for (pattern p : {pattern::half, pattern::five_percent, pattern::all}) {
      SCOPED_TRACE(std::string(name(p)) + " n=" + std::to_string(n));
      const auto bits = bits_of(p, n);
      check_select_if(items_selected_by<std::uint8_t>(bits), 1);
      check_select_if(items_selected_by<std::int32_t>(bits), 1);
      check_partition(items_selected_by<std::uint64_t>(bits), 1);
      check_partition(items_selected_by<std::uint64_t>(bits), 1,
                      ppat::detail::partition_total::count_pass);
      check_partition_copy(items_selected_by<std::int32_t>(bits), 1);
      check_partition_copy(items_selected_by<triple>(bits), 1);
      std::vector<std::uint8_t> flags(n);
      for (std::size_t i = 0; i < n; ++i)
        flags[i] = bits[i] ? 1 : 0;
      check_select_flagged(items_selected_by<float>(bits), flags, 1);
      const auto starts = starts_of(p, n);
      check_unique(items_in_runs<std::uint8_t>(starts), 1);
      check_unique(items_in_runs<float>(starts), 1);
      check_unique_by_key(items_in_runs<std::int32_t>(starts),
                          ppat_test::random_integers<std::int32_t>(n, -5, 5), 1);
      check_reduce_by_key(items_in_runs<std::int32_t>(starts),
                          ppat_test::exact_fractions<float>(n, 1024, 1.0 / 8), ppat::plus{}, 1);
      check_run_length_encode<std::uint8_t, std::uint32_t>(items_in_runs<std::uint8_t>(starts), 1);
    }
  }
}

TEST(select, empty_input_writes_a_zero_count) {
  PPAT_REQUIRE_GPU();
  device_buffer<std::size_t> count(1, 8);
  const auto expect_zero = [&](const char* what) {
    ppat_test::expect_no_cuda_error();
    EXPECT_EQ(read_count(count), 0u) << what;
    count.poison();
  };
  count.poison();
  int* none = nullptr;
  ppat::select_if(none, none, count.data(), 0, odd_key{});
  expect_zero("select_if");
  ppat::select_flagged(none, static_cast<const char*>(nullptr), none, count.data(), 0);
  expect_zero("select_flagged");
  ppat::partition(none, none, count.data(), 0, odd_key{});
  expect_zero("partition");
  ppat::partition_copy(none, none, none, count.data(), 0, odd_key{});
  expect_zero("partition_copy");
  ppat::unique(none, none, count.data(), 0);
  expect_zero("unique");
  ppat::unique_by_key(none, none, none, none, count.data(), 0);
  expect_zero("unique_by_key");
  ppat::reduce_by_key(none, none, none, none, count.data(), 0);
  expect_zero("reduce_by_key");
  ppat::run_length_encode(none, none, none, count.data(), 0);
  expect_zero("run_length_encode");
  ppat::textbook::scan_then_scatter_select_if(none, none, count.data(), 0, odd_key{});
  expect_zero("scan_then_scatter_select_if");
  ppat::textbook::warp_atomic_select_if(none, none, count.data(), 0, odd_key{});
  expect_zero("warp_atomic_select_if");
}

TEST(select, stream_and_graph_capture) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 1000003;
  auto items = items_selected_by<std::int32_t>(bits_of(pattern::half, n));
  auto keys = items_in_runs<std::int32_t>(bits_of(pattern::half, n));
  placed<std::int32_t> input(items, 0), selected(n, 0), partitioned(n, 0), counted_first(n, 0),
      key_input(keys, 0), unique_keys(n, 0), sums(n, 0);
  device_buffer<std::size_t> counts(4);
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ppat_test::capture_and_replay(
      stream,
      [&] {
        ppat::select_if(input.data(), selected.data(), counts.data(), n, odd_key{}, stream);
        ppat::partition(input.data(), partitioned.data(), counts.data() + 1, n, odd_key{}, stream);
        ppat::reduce_by_key(key_input.data(), input.data(), unique_keys.data(), sums.data(),
                            counts.data() + 2, n, ppat::plus{}, stream);
        ppat::detail::select<ppat::detail::rejected_items::after_kept>(
            ppat::detail::plain_selection<std::int32_t, ppat::detail::predicate_rule<odd_key>>{
                input.data(),
                counted_first.data(),
                nullptr,
                nullptr,
                nullptr,
                counts.data() + 3,
                n,
                {odd_key{}}},
            "ppat::partition", stream, ppat::detail::partition_total::count_pass);
      },
      [&](int) {
        items = items_selected_by<std::int32_t>(bits_of(pattern::half, n));
        keys = items_in_runs<std::int32_t>(bits_of(pattern::five_percent, n));
        input.buffer.upload(items);
        key_input.buffer.upload(keys);
        for (auto* output : {&selected, &partitioned, &counted_first, &sums})
          output->buffer.poison();
        counts.poison();
      },
      [&](int) {
        const auto got = counts.download();
        const auto expected =
            ppat_reference::select(items, [&](std::size_t i) { return odd_key{}(items[i]); });
        EXPECT_EQ(got[0], expected.size());
        EXPECT_EQ(got[1], expected.size());
        EXPECT_EQ(got[3], expected.size());
        expect_output(selected, expected, "select_if");
        const auto partitioned_items = ppat_reference::stable_partition(items, odd_key{});
        expect_output(partitioned, partitioned_items, "partition", true);
        expect_output(counted_first, partitioned_items, "partition, counted first", true);
        const auto expected_sums = ppat_reference::reduce_by_key(keys, items, ppat::plus{});
        EXPECT_EQ(got[2], expected_sums.size());
        auto got_sums = sums.download();
        got_sums.resize(expected_sums.size());
        EXPECT_EQ(ppat_test::first_mismatch(got_sums, expected_sums), -1);
      });
  ppat::release_stream_memory(stream);
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
}

TEST(select_rungs, scan_then_scatter_is_stable) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for_each_case(few_sizes, [&](std::size_t n, pattern p) {
    if (ppat_test::over_item_budget(n)) return;
    const auto in = items_selected_by<float>(bits_of(p, n));
    placed<float> input(in, 0), output(n, 0);
    device_buffer<std::size_t> count(1, 8);
    count.poison();
    ppat::textbook::scan_then_scatter_select_if(input.data(), output.data(), count.data(), n,
                                                odd_key{});
    ppat_test::expect_no_cuda_error();
    const auto expected =
        ppat_reference::select(in, [&](std::size_t i) { return odd_key{}(in[i]); });
    EXPECT_EQ(read_count(count), expected.size());
    expect_output(output, expected, "scan_then_scatter_select_if");
  });
}

// The order depends on scheduling: the count, and the selected items as a multiset.
TEST(select_rungs, warp_atomic_selects_the_right_multiset) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for_each_case(few_sizes, [&](std::size_t n, pattern p) {
    if (ppat_test::over_item_budget(n)) return;
    const auto in = items_selected_by<std::uint64_t>(bits_of(p, n));
    placed<std::uint64_t> input(in, 0), output(n, 0);
    device_buffer<std::size_t> count(1, 8);
    count.poison();
    ppat::textbook::warp_atomic_select_if(input.data(), output.data(), count.data(), n, odd_key{});
    ppat_test::expect_no_cuda_error();
    auto expected = ppat_reference::select(in, [&](std::size_t i) { return odd_key{}(in[i]); });
    ASSERT_EQ(read_count(count), expected.size());
    auto got = output.download();
    EXPECT_TRUE(
        placed<std::uint64_t>::all_poison(got.data() + expected.size(), n - expected.size()));
    got.resize(expected.size());
    std::sort(got.begin(), got.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(ppat_test::first_mismatch(got, expected), -1);
  });
}

TEST(select, huge_above_2_pow_28) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 28) + 7;
  const auto in = items_selected_by<std::int32_t>(bits_of(pattern::half, n));
  check_partition(in);
  check_reduce_by_key(items_in_runs<std::int32_t>(bits_of(pattern::half, n)), in, ppat::plus{});
}

// More than 2^32 items kept: the counts and the output offsets need all 64 bits.
TEST(select, huge_u8_above_2_pow_32) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 32) + 4099;
  std::vector<std::uint8_t> in(n);
  std::minstd_rand cheap(std::uint32_t(ppat_test::run_seed()));
  for (std::size_t i = 0; i < n; ++i)  // a run of two every 16 items, single items between
    in[i] = std::uint8_t(i % 16 == 1 ? in[i - 1] : (i * 7 + (cheap() & 1) * 128) & 0xFF);
  check_unique(in);
  // Odd items are 7 of every 16: partition_copy in one pass, partition counted first (its
  // inputs far past the tiles a GPU holds at once).
  check_partition_copy(in);
  check_partition(in);
}

TEST(select_arguments, bad_arguments_are_rejected) {
  int* none = nullptr;
  int buffer[64] = {};
  std::size_t count = 0;
  EXPECT_THROW(ppat::select_if(none, buffer, &count, 4, odd_key{}), std::invalid_argument);
  EXPECT_THROW(ppat::select_if(buffer, none, &count, 4, odd_key{}), std::invalid_argument);
  EXPECT_THROW(
      ppat::select_if(buffer, buffer + 32, static_cast<std::size_t*>(nullptr), 4, odd_key{}),
      std::invalid_argument);
  EXPECT_THROW(ppat::select_if(buffer, buffer + 2, &count, 4, odd_key{}), std::invalid_argument);
  EXPECT_THROW(ppat::partition(buffer, buffer, &count, 4, odd_key{}), std::invalid_argument);
  EXPECT_THROW(ppat::partition_copy(buffer, buffer + 32, none, &count, 4, odd_key{}),
               std::invalid_argument);
  EXPECT_THROW(ppat::partition_copy(buffer, buffer + 32, buffer + 32, &count, 4, odd_key{}),
               std::invalid_argument);
  EXPECT_THROW(ppat::partition_copy(buffer, buffer + 32, buffer + 2, &count, 4, odd_key{}),
               std::invalid_argument);
  EXPECT_THROW(ppat::partition_copy(buffer, buffer + 32, buffer + 40,
                                    reinterpret_cast<std::size_t*>(buffer + 40), 4, odd_key{}),
               std::invalid_argument);
  EXPECT_THROW(
      ppat::select_flagged(buffer, static_cast<const char*>(nullptr), buffer + 32, &count, 4),
      std::invalid_argument);
  EXPECT_THROW(ppat::select_flagged(buffer, buffer + 32, buffer + 34, &count, 4),
               std::invalid_argument);
  EXPECT_THROW(ppat::unique(buffer, buffer + 32, reinterpret_cast<std::size_t*>(buffer + 32), 4),
               std::invalid_argument);
  EXPECT_THROW(ppat::unique_by_key(buffer, buffer + 8, buffer + 16, buffer + 16, &count, 4),
               std::invalid_argument);
  EXPECT_THROW(ppat::unique_by_key(buffer, none, buffer + 16, buffer + 24, &count, 4),
               std::invalid_argument);
  EXPECT_THROW(ppat::reduce_by_key(buffer, buffer + 8, buffer + 16, buffer + 8, &count, 4),
               std::invalid_argument);
  EXPECT_THROW(ppat::reduce_by_key(buffer, none, buffer + 16, buffer + 24, &count, 4),
               std::invalid_argument);
  EXPECT_THROW(ppat::run_length_encode(buffer, buffer + 16, buffer + 16, &count, 4),
               std::invalid_argument);
  EXPECT_THROW(
      ppat::textbook::scan_then_scatter_select_if(buffer, buffer + 1, &count, 4, odd_key{}),
      std::invalid_argument);
  EXPECT_THROW(ppat::textbook::warp_atomic_select_if(none, buffer, &count, 4, odd_key{}),
               std::invalid_argument);
  try {
    ppat::reduce_by_key(buffer, buffer + 8, buffer + 16, buffer + 24,
                        reinterpret_cast<std::size_t*>(buffer + 24), 4);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("ppat::reduce_by_key"), std::string::npos) << message;
    EXPECT_NE(message.find("num_segments"), std::string::npos) << message;
  }
}

}  // namespace
