// ppat::distributed::reduce, and what the scans share with it: each rank reduces its
// shard, the ranks' totals are gathered on every rank, and one thread folds them in order.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/memory.cuh"
#include "../core/operators.cuh"
#include "../core/partial.cuh"
#include "../reduce.cuh"
#include "communicator.cuh"

namespace ppat::distributed {

namespace detail {

// Each rank reduces its shard; the totals of every rank, in rank order, are gathered into
// totals[0, ranks) of every rank (totals[ranks] holds this rank's before it is sent). A
// shard's total is a partial: absent when the shard is empty, so that no init is needed.
template <class T, class Op>
partial<T>* gather_shard_totals(ncclComm_t comm, const T* in, std::size_t n, Op op,
                                const ranks& group, temporary_buffer<partial<T>>& totals,
                                const call_context& call) {
  partial<T>* const gathered = totals.data();
  partial<T>* const mine = gathered + group.count;
  reduce_into(in, n, result_as_partial<T>{mine}, op, call);
  check_nccl(ncclAllGather(mine, gathered, sizeof(partial<T>), ncclUint8, comm, call.stream()),
             comm, call.function(), "ncclAllGather");
  return gathered;
}

// `start` and then totals[0, ranks), in order, into `folded` and, when given, `out`.
template <class T, class Op>
__global__ void fold_ranks_kernel(const partial<T>* totals, int ranks, partial<T> start,
                                  partial<T>* folded, T* out, Op op) {
  partial<T> through = start;
  for (int r = 0; r < ranks; ++r)
    through = then(through, totals[r], op);
  *folded = through;
  if (out != nullptr) *out = through.value;
}

}  // namespace detail

// `init` and then every shard's items, in rank order, into `out` (one T) on every rank.
template <class T, class Op = plus>
void reduce(ncclComm_t comm, const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
            cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::distributed::reduce";
  const detail::ranks group = detail::ranks_of(comm, function);
  const detail::call_context call(stream, function);
  detail::agree_on_arguments(comm, call, [&] {
    detail::require_buffer(in, n, function, "in");
    detail::require_buffer(out, 1, function, "out");
    detail::require_device_readable(in, n, call, "in");
    detail::require_device_readable(out, 1, call, "out");
  });
  detail::temporary_buffer<detail::partial<T>> totals(std::size_t(group.count) + 1, call);
  detail::partial<T>* const gathered =
      detail::gather_shard_totals(comm, in, n, op, group, totals, call);
  detail::fold_ranks_kernel<<<1, 1, 0, call.stream()>>>(
      gathered, group.count, detail::partial<T>{init, true}, gathered + group.count, out, op);
  detail::check_launch(function, "fold_ranks_kernel");
  totals.release();
}

}  // namespace ppat::distributed
