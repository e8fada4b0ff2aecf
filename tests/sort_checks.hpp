// The checks the sort suite's files share (test_sort.cu, test_sort_pairs.cu: one test program
// in two files, so that the build spreads over the cores): keys drawn in every spread, values,
// the case sizes, and one sort checked whole against the host's stable sort.
#pragma once

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
#include "support.hpp"

namespace sort_checks {

using ppat_test::device_buffer;
using ppat_test::key_with_bits;
using ppat_test::on_device;
using ppat_test::poisoned;

using ppat_test::two_words;
using ppat_test::wide;

template <class K>
constexpr bool is_float_key =
    std::is_floating_point_v<K> || std::is_same_v<K, __half> || std::is_same_v<K, __nv_bfloat16>;

template <class K>
std::vector<std::size_t> sorted_positions(const std::vector<K>& keys, ppat::order ord,
                                          int begin_bit = 0, int end_bit = 8 * sizeof(K)) {
  return ppat_reference::sorted_positions(keys, ord == ppat::order::descending, begin_bit, end_bit);
}

// How the keys of a case are drawn.
enum class spread {
  uniform_bits,  // every bit pattern (for floats: NaNs, infinities, denormals among them)
  specials,      // zeros of both signs, infinities, NaNs of both signs and several payloads,
                 // denormals, extremes
  all_equal,
  sorted,
  reversed,
  few_distinct,
  top_byte,  // keys differing only in their top byte
  bottom_byte,
};
inline constexpr spread spreads[] = {spread::uniform_bits, spread::specials,   spread::all_equal,
                                     spread::sorted,       spread::reversed,   spread::few_distinct,
                                     spread::top_byte,     spread::bottom_byte};
inline const char* name(spread s) {
  switch (s) {
    case spread::uniform_bits:
      return "uniform bits";
    case spread::specials:
      return "specials";
    case spread::all_equal:
      return "all equal";
    case spread::sorted:
      return "sorted";
    case spread::reversed:
      return "reversed";
    case spread::few_distinct:
      return "few distinct";
    case spread::top_byte:
      return "top byte only";
    case spread::bottom_byte:
      return "bottom byte only";
  }
  return "?";
}

template <class K>
std::vector<std::uint64_t> special_bits() {
  constexpr int bits = 8 * sizeof(K);
  const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
  const std::uint64_t all = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  if constexpr (is_float_key<K>) {
    const int mantissa = std::is_same_v<K, float>    ? 23
                         : std::is_same_v<K, double> ? 52
                         : std::is_same_v<K, __half> ? 10
                                                     : 7;
    const std::uint64_t infinity = (all >> 1) & ~((std::uint64_t{1} << mantissa) - 1);
    const std::uint64_t one = (infinity >> 1) & infinity;  // exponent bias: 1.0
    return {0,
            sign,             // -0.0
            infinity,         // +inf
            infinity | sign,  // -inf
            infinity | 1,     // NaNs: payloads and signs
            infinity | 5 | sign,
            infinity | (std::uint64_t{1} << (mantissa - 1)),
            infinity | (std::uint64_t{1} << (mantissa - 1)) | sign,
            all,
            1,  // the smallest denormals
            1 | sign,
            (std::uint64_t{1} << mantissa) - 1,  // the largest denormal
            one,
            one | sign,
            infinity - 1,  // the largest finite
            (infinity - 1) | sign};
  } else {
    return {0, 1, all, sign, sign - 1, all - 1, sign + 1, 2};
  }
}

template <class K>
std::vector<K> draw_keys(std::size_t n, spread s) {
  auto& rng = ppat_test::rng();
  std::uniform_int_distribution<std::uint64_t> any;
  const auto random_key = [&] { return key_with_bits<K>(any(rng)); };
  std::vector<K> keys(n);
  switch (s) {
    case spread::uniform_bits:
    case spread::sorted:
    case spread::reversed:
      for (auto& k : keys)
        k = random_key();
      if (s != spread::uniform_bits) {
        const auto order = sorted_positions(
            keys, s == spread::sorted ? ppat::order::ascending : ppat::order::descending);
        keys = ppat_reference::gathered(keys, order);
      }
      break;
    case spread::specials: {
      const auto specials = special_bits<K>();
      std::uniform_int_distribution<std::size_t> pick(0, specials.size());
      for (auto& k : keys) {
        const std::size_t i = pick(rng);
        k = i < specials.size() ? key_with_bits<K>(specials[i]) : random_key();
      }
      break;
    }
    case spread::all_equal:
      std::fill(keys.begin(), keys.end(), random_key());
      break;
    case spread::few_distinct: {
      const K few[] = {random_key(), random_key(), random_key(), random_key(), random_key()};
      std::uniform_int_distribution<int> pick(0, 4);
      for (auto& k : keys)
        k = few[pick(rng)];
      break;
    }
    case spread::top_byte:
    case spread::bottom_byte: {
      const std::uint64_t base = any(rng);
      const int shift = s == spread::top_byte ? 8 * (int(sizeof(K)) - 1) : 0;
      std::uniform_int_distribution<std::uint64_t> byte(0, 255);
      for (auto& k : keys)
        k = key_with_bits<K>((base & ~(std::uint64_t{0xFF} << shift)) | byte(rng) << shift);
      break;
    }
  }
  return keys;
}

template <class V>
std::vector<V> draw_values(std::size_t n) {
  std::vector<V> values(n);
  if constexpr (std::is_same_v<V, std::uint32_t>) {
    std::iota(values.begin(), values.end(), 0u);  // positions: they show stability
  } else if constexpr (std::is_same_v<V, wide>) {
    const auto words = ppat_test::random_integers<std::uint32_t>(4 * n, 0, 0xFFFFFFFFll);
    for (std::size_t i = 0; i < n; ++i)
      values[i] = {words[4 * i], words[4 * i + 1], std::uint32_t(i), words[4 * i + 3]};
  } else if constexpr (std::is_same_v<V, two_words>) {
    const auto words = ppat_test::random_integers<std::uint64_t>(n, 0, 0x7FFFFFFFFFFFFFFFll);
    for (std::size_t i = 0; i < n; ++i)
      values[i] = {words[i], std::uint64_t(i)};
  } else {
    std::uniform_int_distribution<std::uint64_t> any;
    for (auto& v : values)
      v = V(any(ppat_test::rng()));
  }
  return values;
}

template <class T>
bool all_poison(const std::vector<T>& items) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(items.data());
  return std::all_of(bytes, bytes + items.size() * sizeof(T),
                     [](unsigned char b) { return b == ppat_test::poison_byte; });
}

// Sorts `keys` (with `values`, unless V is void) through `sort` and expects the host's
// stable order, bitwise, every guard intact and the inputs unchanged.
// `sort(keys_in, keys_out, values_in, values_out)`.
template <class K, class V, class Sort>
void expect_sorted(const std::vector<K>& keys, const std::vector<V>& values, ppat::order ord,
                   int begin_bit, int end_bit, const std::string& what, Sort sort) {
  SCOPED_TRACE(what);
  const std::size_t n = keys.size();
  const bool with_values = !values.empty();
  auto keys_in = on_device(keys);
  auto keys_out = poisoned<K>(n);
  auto values_in = on_device(values);
  auto values_out = poisoned<V>(values.size());
  sort(keys_in->data(), keys_out->data(), values_in->data(), values_out->data());
  ppat_test::expect_no_cuda_error();
  const auto order = sorted_positions(keys, ord, begin_bit, end_bit);
  EXPECT_EQ(ppat_test::first_mismatch(keys_out->download(), ppat_reference::gathered(keys, order)),
            -1)
      << "first key out of place";
  if (with_values) {
    EXPECT_EQ(
        ppat_test::first_mismatch(values_out->download(), ppat_reference::gathered(values, order)),
        -1)
        << "first value out of place";
  }
  EXPECT_EQ(ppat_test::first_mismatch(keys_in->download(), keys), -1) << "keys_in modified";
  EXPECT_EQ(ppat_test::first_mismatch(values_in->download(), values), -1) << "values_in modified";
  EXPECT_TRUE(keys_in->guards_intact() && keys_out->guards_intact() && values_in->guards_intact() &&
              values_out->guards_intact())
      << "written outside a buffer";
}

template <class K>
void expect_keys_sorted(const std::vector<K>& keys, ppat::order ord, const std::string& what,
                        int begin_bit = 0, int end_bit = 8 * sizeof(K)) {
  expect_sorted(keys, std::vector<char>{}, ord, begin_bit, end_bit, what,
                [&](const K* in, K* out, const char*, char*) {
                  ppat::sort_keys(in, out, keys.size(), ord, begin_bit, end_bit);
                });
}

template <class K, class V>
void expect_pairs_sorted(const std::vector<K>& keys, const std::vector<V>& values, ppat::order ord,
                         const std::string& what, int begin_bit = 0, int end_bit = 8 * sizeof(K)) {
  expect_sorted(keys, values, ord, begin_bit, end_bit, what,
                [&](const K* keys_in, K* keys_out, const V* values_in, V* values_out) {
                  ppat::sort_pairs(keys_in, keys_out, values_in, values_out, keys.size(), ord,
                                   begin_bit, end_bit);
                });
}

inline constexpr ppat::order orders[] = {ppat::order::ascending, ppat::order::descending};
inline const char* name(ppat::order ord) {
  return ord == ppat::order::ascending ? "ascending" : "descending";
}

// Around the tiles that one block sorts in shared memory (1024 keys; 4096, 2048 or 1024 by
// pair size; 8192), the clusters' tile sizes (1024, 2048 and 4096 keys, up to 16 tiles),
// primes, sizes the one-launch sort takes (up to a few hundred tiles) and one it leaves to
// the onesweep kernels.
inline constexpr std::size_t small_sizes[] = {1,     2,     3,     31,    1023,  1025, 2047,
                                              2049,  4095,  4096,  4097,  8191,  8192, 8193,
                                              12289, 16384, 16385, 32768, 32769, 65536};
inline constexpr std::size_t large_sizes[] = {65537, 999983, (std::size_t{1} << 20) + 3,
                                              (std::size_t{1} << 21) + 5};

// Under the sanitizers (PPAT_TEST_MAX_ITEMS set), whose kernels run ten to a hundred times
// slower, a few cases stand for the rest: two sizes sorted by one block, a one-block tile
// and a key, two clusters' sizes, several tiles in one launch, and (pairs with 16-byte values) more
// tiles than the GPU holds at once; two spreads.
inline bool instrumented() {
  return std::getenv("PPAT_TEST_MAX_ITEMS") != nullptr;
}
inline bool sampled_out(std::size_t n, spread s) {
  return instrumented() &&
         ((n != 4095 && n != 4097 && n != 8193 && n != 32769 && n != 65537 && n != 299993) ||
          (s != spread::uniform_bits && s != spread::few_distinct));
}

inline std::string case_name(const char* type, ppat::order ord, spread s, std::size_t n) {
  return std::string(type) + " " + name(ord) + ", " + name(s) + ", n = " + std::to_string(n);
}

template <class K>
void keys_of_type(const char* type) {
  for (ppat::order ord : orders) {
    for (spread s : spreads) {
      for (std::size_t n : small_sizes) {
        if (sampled_out(n, s)) continue;
        expect_keys_sorted(draw_keys<K>(n, s), ord, case_name(type, ord, s, n));
      }
      for (std::size_t n : large_sizes) {
        if (ppat_test::over_item_budget(n) || sampled_out(n, s)) continue;
        if (n != large_sizes[0] && s != spread::uniform_bits && s != spread::specials) continue;
        expect_keys_sorted(draw_keys<K>(n, s), ord, case_name(type, ord, s, n));
      }
    }
  }
}

template <class K>
void pairs_of_type(const char* type) {
  for (ppat::order ord : orders) {
    for (spread s : spreads) {
      for (std::size_t n :
           {std::size_t{2}, std::size_t{3073}, std::size_t{4097}, std::size_t{12289},
            std::size_t{32769}, large_sizes[0], large_sizes[3]}) {
        if (ppat_test::over_item_budget(n) || sampled_out(n, s)) continue;
        expect_pairs_sorted(draw_keys<K>(n, s), draw_values<std::uint32_t>(n), ord,
                            case_name(type, ord, s, n) + ", index values");
      }
    }
  }
}

}  // namespace sort_checks
