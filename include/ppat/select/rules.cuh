// What a selection reads and writes, and the rules that pick its items: a predicate
// (select_if, partition), flags (select_flagged), or the head of each run of equal items
// (unique, unique_by_key, run_length_encode).
#pragma once

#include <cstddef>
#include <type_traits>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/no_values.cuh"
#include "../core/vector_io.cuh"

namespace ppat::detail {

// What a selection reads and writes: the items examined and kept (`T`), the values that
// travel with them (`V`: unique_by_key's), the length of each kept item's run (`Count`:
// run_length_encode's), and the rule that picks them. no_values where there are none.
// `rejected_out` receives partition_copy's rejected items (null elsewhere); `total_counted`
// says that a count pass has left partition's total kept in *num_selected.
template <class T, class V, class Count, class Rule>
struct select_buffers {
  const T* in;
  T* out;
  const V* values_in;
  V* values_out;
  Count* counts_out;
  std::size_t* num_selected;
  std::size_t n;
  Rule rule;
  T* rejected_out = nullptr;
  bool total_counted = false;
  static constexpr bool has_values = has_values_of<V>;
  static constexpr bool has_counts = !std::is_same_v<Count, no_values>;
};

// A rule picks from a lane's vector of `Vec` items at in[first..], a bit each. Items at or
// past `n` may be padding; their bits are cleared by the kernel. `previous` is the item
// before the vector (read only by rules that ask for it).
template <class Pred>
struct predicate_rule {
  static constexpr bool needs_previous = false;
  Pred pred;

  void require_readable(std::size_t, const call_context&) const {}
  template <int Vec, class T, class Items>
  __device__ unsigned pick(const Items& items, std::size_t, std::size_t, const T&) const {
    unsigned bits = 0;
#pragma unroll
    for (int j = 0; j < Vec; ++j)
      bits |= (static_cast<bool>(pred(items[j])) ? 1u : 0u) << j;
    return bits;
  }
};

template <class Flag>
struct flag_rule {
  static constexpr bool needs_previous = false;
  const Flag* flags;

  void require_readable(std::size_t n, const call_context& call) const {
    require_device_readable(flags, n, call, "flags");
  }
  template <int Vec, class T, class Items>
  __device__ unsigned pick(const Items&, std::size_t first, std::size_t n, const T&) const {
    unsigned bits = 0;
#pragma unroll
    for (int j = 0; j < Vec; ++j) {
      if (first + j < n) bits |= (is_set(flags + first + j) ? 1u : 0u) << j;
    }
    return bits;
  }
  // Nonzero: a bool is read as its byte, so that any nonzero byte counts.
  __device__ static bool is_set(const Flag* flag) {
    if constexpr (std::is_same_v<Flag, bool>) {
      return load_item(reinterpret_cast<const unsigned char*>(flag)) != 0;
    } else {
      return load_item(flag) != Flag{};
    }
  }
};

// The first item of every run of equal items (==: for floating point -0.0 == +0.0, and a
// NaN starts a run of its own).
struct run_head_rule {
  static constexpr bool needs_previous = true;

  void require_readable(std::size_t, const call_context&) const {}
  template <int Vec, class T, class Items>
  __device__ unsigned pick(const Items& items, std::size_t first, std::size_t,
                           const T& previous) const {
    unsigned bits = 0;
    T before = previous;
#pragma unroll
    for (int j = 0; j < Vec; ++j) {
      const T item = items[j];
      bits |= ((first == 0 && j == 0) || !(item == before) ? 1u : 0u) << j;
      before = item;
    }
    return bits;
  }
};

// The selections without values or run lengths.
template <class T, class Rule>
using plain_selection = select_buffers<T, no_values, no_values, Rule>;

}  // namespace ppat::detail
