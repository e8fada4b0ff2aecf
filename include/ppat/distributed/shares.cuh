// Balanced shares: how many of the items of every rank each rank holds when they are spread
// evenly (what a balanced sort's n_out is, and what select_if_balanced leaves on each rank).
#pragma once

#include <nccl.h>

#include <cstddef>

#include "../core/device.cuh"
#include "communicator.cuh"

namespace ppat::distributed {

namespace detail {

// Rank `rank`'s balanced share of `total` items: total / ranks, one more on the first
// total % ranks ranks.
inline std::size_t share_of(unsigned long long total, int ranks, int rank) {
  const auto count = static_cast<unsigned long long>(ranks);
  const auto mine = static_cast<unsigned long long>(rank);
  return std::size_t(total / count + (mine < total % count ? 1 : 0));
}

// This rank's balanced share of the items of every rank's n.
inline std::size_t balanced_share_of(ncclComm_t comm, std::size_t n, const ranks& group,
                                     const call_context& call) {
  unsigned long long total = 0;
  for (unsigned long long size : gather_on_host(comm, {n}, call))
    total += size;
  return share_of(total, group.count, group.mine);
}

}  // namespace detail

// n / ranks of the n items over all ranks, one more on the first n % ranks ranks.
inline std::size_t balanced_share(ncclComm_t comm, std::size_t n, cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::distributed::balanced_share";
  const detail::ranks group = detail::ranks_of(comm, function);
  const detail::call_context call(stream, function);
  return detail::balanced_share_of(comm, n, group, call);
}

}  // namespace ppat::distributed
