// The argument checks of a plain rows x cols transpose, shared by ppat::transpose and the
// textbook transposes.
#pragma once

#include <cstddef>

#include "../core/arguments.cuh"
#include "../core/device.cuh"

namespace ppat::detail {

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

template <class T>
void require_transpose_readable(const T* in, const T* out, std::size_t count,
                                const call_context& call) {
  require_device_readable(in, count, call, "in");
  require_device_readable(out, count, call, "out");
}

}  // namespace ppat::detail
