// Launch arithmetic shared by every kernel: grid sizes for 64-bit element counts.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include "device.cuh"
#include "error.cuh"

namespace ppat::detail {

__host__ __device__ constexpr std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

// Blocks for a grid-stride loop over `items`: enough for `blocks_per_sm` resident blocks on
// every SM, never more than the items need. Always at least one.
inline unsigned grid_stride_blocks(std::size_t items, int threads, const device_limits& limits,
                                   int blocks_per_sm) {
  const std::size_t wanted = ceil_div(std::max<std::size_t>(items, 1), threads);
  const std::size_t resident = std::size_t(limits.sm_count) * blocks_per_sm;
  return unsigned(std::min(wanted, resident));
}

// Blocks of `block` threads covering cols along x and rows along y, capped at the launch
// limits (2^31 - 1 along x, 65535 along y); kernels grid-stride past the caps.
inline dim3 grid_2d(std::size_t rows, std::size_t cols, dim3 block) {
  return dim3(unsigned(std::min<std::size_t>(ceil_div(cols, block.x), 0x7FFFFFFF)),
              unsigned(std::min<std::size_t>(ceil_div(rows, block.y), 65535)));
}

// A kernel asking for more than 48 KB of dynamic shared memory must say so first, on the
// device it runs on (the call's, current while the call runs).
template <class Kernel>
void allow_dynamic_shared_bytes(Kernel kernel, std::size_t bytes, const call_context& call) {
  if (bytes > 48 * 1024) {
    call.check(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
        "cudaFuncSetAttribute");
  }
}

}  // namespace ppat::detail
