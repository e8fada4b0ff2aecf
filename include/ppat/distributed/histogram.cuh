// ppat::distributed::histogram_even: each rank's histogram, summed by an all-reduce.
#pragma once

#include <nccl.h>

#include <array>
#include <cstddef>

#include "../core/device.cuh"
#include "../histogram.cuh"
#include "communicator.cuh"

namespace ppat::distributed {

// Every rank's samples counted into `hist` on every rank: each rank's histogram, summed.
template <class Sample, class Counter, class Level>
void histogram_even(ncclComm_t comm, const Sample* samples, std::size_t n, Counter* hist,
                    int num_bins, Level lower, Level upper, cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::distributed::histogram_even";
  detail::ranks_of(comm, function);
  const detail::call_context call(stream, function);
  detail::agree_on_arguments(
      comm, call,
      [&] {
        detail::require_histogram_buffers(samples, n, hist, num_bins, function);
        detail::require_even_levels(lower, upper, function);
        detail::require_histogram_readable(samples, n, hist, num_bins, call);
      },
      num_bins);
  detail::count_even<1, 1>(samples, static_cast<const detail::unweighted*>(nullptr), n,
                           std::array<Counter*, 1>{hist}, std::array<int, 1>{num_bins},
                           std::array<Level, 1>{lower}, std::array<Level, 1>{upper}, call);
  detail::check_nccl(ncclAllReduce(hist, hist, std::size_t(num_bins),
                                   detail::nccl_type_of<Counter>(), ncclSum, comm, call.stream()),
                     comm, function, "ncclAllReduce");
}

}  // namespace ppat::distributed
