// What a kernel that moves values with its keys takes for V where there are none (sorts of
// keys alone, selections without values), and the type it holds in their place.
#pragma once

#include <type_traits>

namespace ppat::detail {

struct no_values {};
template <class V>
using value_or_char = std::conditional_t<std::is_same_v<V, no_values>, char, V>;
template <class V>
constexpr bool has_values_of = !std::is_same_v<V, no_values>;

}  // namespace ppat::detail
