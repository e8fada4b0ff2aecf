// ppat::distributed::inclusive_scan and exclusive_scan: the ranks' shard totals gathered
// (distributed/reduce.cuh), folded into what precedes each shard, and each shard scanned
// from there by the single-GPU scan.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/memory.cuh"
#include "../core/operators.cuh"
#include "../core/partial.cuh"
#include "../core/vector_io.cuh"
#include "../scan.cuh"
#include "communicator.cuh"
#include "reduce.cuh"

namespace ppat::distributed {

namespace detail {

template <bool Exclusive, class T, class Op>
void scan(ncclComm_t comm, const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
          const char* function) {
  const ranks group = ranks_of(comm, function);
  const call_context call(stream, function);
  agree_on_arguments(comm, call, [&] {
    require_buffer(in, n, function, "in");
    require_buffer(out, n, function, "out");
    require_same_or_disjoint(in, out, n, function);
    require_device_readable(in, n, call, "in");
    require_device_readable(out, n, call, "out");
  });
  temporary_buffer<partial<T>> totals(std::size_t(group.count) + 1, call);
  // No rank follows the last, so no rank folds its total: it sends an empty shard's (absent)
  // and reads its shard once, not twice (on one rank, the scan costs what ppat::*_scan does).
  const std::size_t counted = group.mine + 1 == group.count ? 0 : n;
  partial<T>* const gathered = gather_shard_totals(comm, in, counted, op, group, totals, call);
  // What precedes this shard: the init of an exclusive scan, then the shards before it.
  partial<T>* const before_shard = gathered + group.count;
  fold_ranks_kernel<<<1, 1, 0, call.stream()>>>(gathered, group.mine, partial<T>{init, Exclusive},
                                                before_shard, static_cast<T*>(nullptr), op);
  check_launch(function, "fold_ranks_kernel");
  if (n > 0) {
    constexpr int vec = items_per_vector<T>;
    const scan_start<T> start(static_cast<const partial<T>*>(before_shard));
    if (vec == 1 || (aligned_to(in, 16) && aligned_to(out, 16))) {
      plain_scan(plain_source<Exclusive, T, Op, vec, true>{in, out, op}, n, start, call);
    } else if constexpr (vec != 1) {
      plain_scan(plain_source<Exclusive, T, Op, vec, false>{in, out, op}, n, start, call);
    }
  }
  totals.release();
}

}  // namespace detail

// out[i] of rank r: the items of every shard before r and of r's shard up to i, in order.
template <class T, class Op = plus>
void inclusive_scan(ncclComm_t comm, const T* in, T* out, std::size_t n, Op op = {},
                    cudaStream_t stream = 0) {
  detail::scan<false>(comm, in, out, n, T{}, op, stream, "ppat::distributed::inclusive_scan");
}

// out[i] of rank r: `init`, then the items of every shard before r and of r's shard before i.
template <class T, class Op = plus>
void exclusive_scan(ncclComm_t comm, const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                    cudaStream_t stream = 0) {
  detail::scan<true>(comm, in, out, n, init, op, stream, "ppat::distributed::exclusive_scan");
}

}  // namespace ppat::distributed
