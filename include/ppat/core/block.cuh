// Block-level building blocks.
#pragma once

namespace ppat::detail {

// A barrier for `Threads` threads of the block (whole warps) on hardware barrier `id`
// (1 to 15; __syncthreads is barrier 0), so that some warps can synchronize while others
// carry on with different work. Not the .aligned form: the warps that skip it diverge.
template <int Threads>
__device__ void barrier_among(int id) {
  static_assert(Threads % 32 == 0, "named barriers count whole warps");
  asm volatile("barrier.sync %0, %1;" ::"r"(id), "n"(Threads) : "memory");
}

}  // namespace ppat::detail
