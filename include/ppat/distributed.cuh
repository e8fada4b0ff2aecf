// ppat::distributed: the patterns across GPUs, over an NCCL communicator the caller owns.
//
// Every rank (one GPU, one member of `comm`) calls the same function with its own shard, and
// gets the single-GPU call's result on the concatenation of the shards in rank order. The
// calls are collective: every rank makes them, in the same order, on a stream of the GPU
// its rank belongs to.
//
//   ppat::distributed::reduce(comm, in, out, n, init, op, stream)       // out on every rank
//   ppat::distributed::histogram_even(comm, samples, n, hist, num_bins, lower, upper, stream)
//   ppat::distributed::inclusive_scan(comm, in, out, n, op, stream)     // out: this shard's
//   ppat::distributed::exclusive_scan(comm, in, out, n, init, op, stream)
//   ppat::distributed::sort_keys(comm, in, out, n, n_out, ord, stream)
//   ppat::distributed::sort_pairs(comm, keys_in, keys_out, values_in, values_out, n, n_out,
//                                 ord, stream)
//   ppat::distributed::balanced_share(comm, n, stream)  // n_out for balanced shards
//   ppat::distributed::transpose(comm, in, out, rows, cols, out_rows, stream)
//
//   ppat::distributed::select_if(comm, in, out, num_selected, selected_before, n, pred,
//                                stream)                // each rank keeps its own selection
//   ppat::distributed::select_if_balanced(comm, in, out, num_selected, selected_before, n,
//                                         pred, stream)   // the selection rebalanced
//
// A sort's output on rank r is the r-th run of the globally sorted sequence, n_out long:
// every rank's n_out may differ from its n, as long as they add up to the same total (pass
// n itself to keep the input sizes, or balanced_share's count to balance them). Ties keep
// (rank, index) order: the sort is stable across ranks. A sort may run in place (out == in,
// and values_out == values_in): the buffer then holds max(n, n_out) items, and the call
// needs about one shard of memory beside it instead of two.
//
// transpose takes a matrix sharded by blocks of rows (rank r: `rows` rows of `cols`,
// row-major, the blocks in rank order) and leaves its transpose sharded the same way: rank
// r holds `out_rows` rows of the transpose (columns of the matrix, in rank order), each as
// long as the matrix has rows in all.
//
// n is this rank's count; shards may differ in size, and may be empty. Bad arguments on
// any rank throw std::invalid_argument on every rank, before any data moves: the ranks agree
// on their checks through one all-reduce of a flag, the only point where a call waits for
// its stream (a call captured into a graph skips the agreement and checks only its own
// arguments). NCCL failures throw ppat::nccl_error, CUDA failures ppat::cuda_error, both
// naming the ppat function.
//
// One file a pattern under distributed/, as for one GPU; communicator.cuh holds what they
// share (errors, ranks, the agreement on checks, gathers and exchanges). Needs NCCL
// (<nccl.h>, libnccl): CMake's ppat::distributed target, defined where NCCL is found.
#pragma once

#include "distributed/communicator.cuh"
#include "distributed/histogram.cuh"
#include "distributed/reduce.cuh"
#include "distributed/scan.cuh"
#include "distributed/select.cuh"
#include "distributed/shares.cuh"
#include "distributed/sort.cuh"
#include "distributed/transpose.cuh"
