// Argument checks shared by every public entry. Each throws std::invalid_argument naming
// the function and the argument, before any CUDA call is made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "error.cuh"

namespace ppat::detail {

// A null pointer is only acceptable when there is nothing to read or write through it.
template <class T>
void require_buffer(const T* pointer, std::size_t count, const char* function,
                    const char* argument) {
  if (count > 0 && pointer == nullptr) {
    throw_invalid_argument(function, argument,
                           "is null but must hold " + std::to_string(count) + " elements");
  }
}

// True when the byte ranges [a, a + a_bytes) and [b, b + b_bytes) share any byte.
inline bool ranges_overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto a_begin = reinterpret_cast<std::uintptr_t>(a);
  const auto b_begin = reinterpret_cast<std::uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && a_begin < b_begin + b_bytes && b_begin < a_begin + a_bytes;
}

// `in` and `out` may be the same buffer (in place) or disjoint, never partly overlapping:
// a shifted alias would let one tile overwrite input another tile has not read yet.
template <class T>
void require_same_or_disjoint(const T* in, const T* out, std::size_t count, const char* function) {
  if (in != out && ranges_overlap(in, count * sizeof(T), out, count * sizeof(T))) {
    throw_invalid_argument(function, "out",
                           "partly overlaps 'in' (only in == out or disjoint buffers are allowed)");
  }
}

template <class A, class B>
void require_disjoint(const A* a, std::size_t a_count, const B* b, std::size_t b_count,
                      const char* function, const char* a_name, const char* b_name) {
  if (ranges_overlap(a, a_count * sizeof(A), b, b_count * sizeof(B))) {
    throw_invalid_argument(function, b_name,
                           std::string("overlaps '") + a_name + "' (the buffers must be disjoint)");
  }
}

// rows * cols elements of `element_bytes` each, or an exception if that overflows size_t.
inline std::size_t checked_element_count(std::size_t rows, std::size_t cols,
                                         std::size_t element_bytes, const char* function) {
  const std::size_t max_elements = std::numeric_limits<std::size_t>::max() / element_bytes;
  if (rows != 0 && cols > max_elements / rows) {
    throw_invalid_argument(function, "cols",
                           "times 'rows' overflows the address space (" + std::to_string(rows) +
                               " x " + std::to_string(cols) + ")");
  }
  return rows * cols;
}

// Checks a rows x cols transpose (in and out both rows * cols elements, disjoint) and
// returns the element count.
template <class T>
std::size_t require_transpose_buffers(const T* in, T* out, std::size_t rows, std::size_t cols,
                                      const char* function) {
  const std::size_t count = checked_element_count(rows, cols, sizeof(T), function);
  require_buffer(in, count, function, "in");
  require_buffer(out, count, function, "out");
  require_disjoint(in, count, out, count, function, "in", "out");
  return count;
}

}  // namespace ppat::detail
