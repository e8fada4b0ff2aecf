// What a kernel that moves values with its keys takes for V where there are none (sorts of
// keys alone, selections without values), and the type it holds in their place. Also what
// the sorts move a value as: its bytes, never its type.
#pragma once

#include <cstddef>
#include <type_traits>

namespace ppat::detail {

struct no_values {};
template <class V>
using value_or_char = std::conditional_t<std::is_same_v<V, no_values>, char, V>;
template <class V>
constexpr bool has_values_of = !std::is_same_v<V, no_values>;

// A value of `Words` 4-byte words, aligned as the value it stands for.
template <std::size_t Align, std::size_t Words>
struct alignas(Align) value_words {
  unsigned word[Words];
};

// What a sort moves a value of type V as: 4-byte words where V is made of them (size and
// alignment multiples of 4), V itself otherwise. A sort never looks into a value, so every
// value type of one size and alignment takes the same kernels; and 8-byte integer keys with
// values of 8-byte integer words came out of the one-launch sort wrong at ptxas -O1 and up
// (docs/patterns.md, "Radix sort").
template <class V>
using moved_as = std::conditional_t<!has_values_of<V> || sizeof(V) % 4 != 0 || alignof(V) % 4 != 0,
                                    V, value_words<alignof(V), sizeof(V) / 4>>;

template <class V>
const moved_as<V>* moved_values(const V* values) {
  return reinterpret_cast<const moved_as<V>*>(values);
}
template <class V>
moved_as<V>* moved_values(V* values) {
  return reinterpret_cast<moved_as<V>*>(values);
}

}  // namespace ppat::detail
