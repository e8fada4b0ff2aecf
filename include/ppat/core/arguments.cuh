// Argument checks shared by every public entry. Each throws std::invalid_argument naming
// the function and the argument: those on sizes and overlaps before any CUDA call is made,
// require_device_readable before anything is launched.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "device.cuh"
#include "error.cuh"

namespace ppat::detail {

// `count` elements at `pointer`: a null pointer only when there is nothing to read or write
// through it, and never a byte count past the end of the address space.
template <class T>
void require_buffer(const T* pointer, std::size_t count, const char* function,
                    const char* argument) {
  if (count == 0) return;
  if (pointer == nullptr) {
    throw_invalid_argument(function, argument,
                           "is null but must hold " + std::to_string(count) + " elements");
  }
  const std::size_t room =
      std::numeric_limits<std::uintptr_t>::max() - reinterpret_cast<std::uintptr_t>(pointer);
  if (count > room / sizeof(T)) {
    throw_invalid_argument(function, argument,
                           "cannot hold " + std::to_string(count) + " elements of " +
                               std::to_string(sizeof(T)) +
                               " bytes: they overflow the address space");
  }
}

// Memory the call's device can read and write at `pointer`, checked before a launch that
// would otherwise fault and lose the CUDA context. Rejected: host memory the driver does not
// know (from malloc, new or the stack) where the device cannot read pageable memory, and
// host memory registered without a device mapping at that address. Device memory freed
// while the driver still maps it (as a pool does) cannot be told from live memory.
template <class T>
void require_device_readable(const T* pointer, std::size_t count, const call_context& call,
                             const char* argument) {
  if (count == 0) return;
  cudaPointerAttributes attributes{};
  call.check(cudaPointerGetAttributes(&attributes, pointer), "cudaPointerGetAttributes");
  if (attributes.type == cudaMemoryTypeUnregistered && !call.limits().pageable_memory_access) {
    throw_invalid_argument(call.function(), argument,
                           "is host memory the device cannot read (allocate it with cudaMalloc, "
                           "cudaMallocManaged or cudaHostAlloc, or register it)");
  }
  if (attributes.type == cudaMemoryTypeHost && attributes.devicePointer != pointer) {
    throw_invalid_argument(call.function(), argument,
                           "is registered host memory the device reaches at another address "
                           "(pass the one cudaHostGetDevicePointer gives)");
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

// An output of as many elements as the data decides (the items kept, the runs, the
// segments), at most `bound`: a pointer wherever the call may write. The caller may size it
// to the result (docs/api.md), so only its first element is sure to be its own: the extent
// returned, which the overlap checks take for it. An overlap further on is the caller's
// sizing, unknowable before the data is read.
template <class T>
std::size_t require_result_output(const T* pointer, std::size_t bound, const char* function,
                                  const char* argument) {
  if (bound == 0) return 0;
  if (pointer == nullptr) {
    throw_invalid_argument(function, argument,
                           "is null but receives up to " + std::to_string(bound) + " elements");
  }
  return 1;
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

}  // namespace ppat::detail
