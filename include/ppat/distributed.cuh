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
// Needs NCCL (<nccl.h>, libnccl): CMake's ppat::distributed target, defined where NCCL is
// found.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/arguments.cuh"
#include "core/device.cuh"
#include "core/error.cuh"
#include "core/memory.cuh"
#include "core/partial.cuh"
#include "distributed/communicator.cuh"
#include "distributed/sort.cuh"
#include "histogram.cuh"
#include "reduce.cuh"
#include "scan.cuh"
#include "select.cuh"
#include "sort.cuh"
#include "transpose.cuh"

namespace ppat {
namespace distributed {

template <class T, class Op = plus>
void reduce(ncclComm_t comm, const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
            cudaStream_t stream = 0);
template <class Sample, class Counter, class Level>
void histogram_even(ncclComm_t comm, const Sample* samples, std::size_t n, Counter* hist,
                    int num_bins, Level lower, Level upper, cudaStream_t stream = 0);
template <class T, class Op = plus>
void inclusive_scan(ncclComm_t comm, const T* in, T* out, std::size_t n, Op op = {},
                    cudaStream_t stream = 0);
template <class T, class Op = plus>
void exclusive_scan(ncclComm_t comm, const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                    cudaStream_t stream = 0);

template <class K>
void sort_keys(ncclComm_t comm, const K* in, K* out, std::size_t n, std::size_t n_out,
               order ord = order::ascending, cudaStream_t stream = 0);
template <class K, class V>
void sort_pairs(ncclComm_t comm, const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                std::size_t n, std::size_t n_out, order ord = order::ascending,
                cudaStream_t stream = 0);
std::size_t balanced_share(ncclComm_t comm, std::size_t n, cudaStream_t stream = 0);
template <class T>
void transpose(ncclComm_t comm, const T* in, T* out, std::size_t rows, std::size_t cols,
               std::size_t out_rows, cudaStream_t stream = 0);
template <class T, class Pred>
void select_if(ncclComm_t comm, const T* in, T* out, std::size_t* num_selected,
               std::size_t* selected_before, std::size_t n, Pred pred, cudaStream_t stream = 0);
template <class T, class Pred>
void select_if_balanced(ncclComm_t comm, const T* in, T* out, std::size_t* num_selected,
                        std::size_t* selected_before, std::size_t n, Pred pred,
                        cudaStream_t stream = 0);

namespace detail {

using namespace ppat::detail;

template <class T, class Op>
partial<T>* gather_shard_totals(ncclComm_t comm, const T* in, std::size_t n, Op op,
                                const ranks& group, temporary_buffer<partial<T>>& totals,
                                const call_context& call);
template <class Count>
__global__ void count_before_rank_kernel(const Count* counts, int rank, std::size_t* before);
template <class Count>
__global__ void store_counts_kernel(Count* count, Count count_value, Count* before,
                                    Count before_value);
inline std::size_t share_of(unsigned long long total, int ranks, int rank);
inline std::size_t balanced_share_of(ncclComm_t comm, std::size_t n, const ranks& group,
                                     const call_context& call);
template <class T>
void require_selection_arguments(const T* in, T* out, std::size_t out_size,
                                 std::size_t* num_selected, std::size_t* selected_before,
                                 std::size_t n, const call_context& call);
template <class T, class Op>
__global__ void fold_ranks_kernel(const partial<T>* totals, int ranks, partial<T> start,
                                  partial<T>* folded, T* out, Op op);
template <bool Exclusive, class T, class Op>
void scan(ncclComm_t comm, const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
          const char* function);

}  // namespace detail

// `init` and then every shard's items, in rank order, into `out` (one T) on every rank.
template <class T, class Op>
void reduce(ncclComm_t comm, const T* in, T* out, std::size_t n, T init, Op op,
            cudaStream_t stream) {
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

// Every rank's samples counted into `hist` on every rank: each rank's histogram, summed.
template <class Sample, class Counter, class Level>
void histogram_even(ncclComm_t comm, const Sample* samples, std::size_t n, Counter* hist,
                    int num_bins, Level lower, Level upper, cudaStream_t stream) {
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

// out[i] of rank r: the items of every shard before r and of r's shard up to i, in order.
template <class T, class Op>
void inclusive_scan(ncclComm_t comm, const T* in, T* out, std::size_t n, Op op,
                    cudaStream_t stream) {
  detail::scan<false>(comm, in, out, n, T{}, op, stream, "ppat::distributed::inclusive_scan");
}

// out[i] of rank r: `init`, then the items of every shard before r and of r's shard before i.
template <class T, class Op>
void exclusive_scan(ncclComm_t comm, const T* in, T* out, std::size_t n, T init, Op op,
                    cudaStream_t stream) {
  detail::scan<true>(comm, in, out, n, init, op, stream, "ppat::distributed::exclusive_scan");
}

// Each rank keeps its own shard's selected items, in order, at `out`: the global selection
// is the ranks' outputs in rank order. `num_selected` (device memory) gets this rank's count
// and `selected_before` (device memory, or null) the count of the ranks before it.
template <class T, class Pred>
void select_if(ncclComm_t comm, const T* in, T* out, std::size_t* num_selected,
               std::size_t* selected_before, std::size_t n, Pred pred, cudaStream_t stream) {
  constexpr const char* function = "ppat::distributed::select_if";
  const detail::ranks group = detail::ranks_of(comm, function);
  const detail::call_context call(stream, function);
  detail::agree_on_arguments(comm, call, [&] {
    detail::require_selection_arguments(in, out, n, num_selected, selected_before, n, call);
  });
  detail::select<false>(
      detail::plain_selection<T, detail::predicate_rule<Pred>>{
          in, out, nullptr, nullptr, nullptr, num_selected, n, {pred}},
      function, call.stream());
  static_assert(sizeof(std::size_t) == sizeof(unsigned long long), "counts go as 64-bit words");
  detail::temporary_buffer<unsigned long long> counts(std::size_t(group.count), call);
  detail::check_nccl(ncclAllGather(num_selected, counts.data(), 1, ncclUint64, comm, call.stream()),
                     comm, function, "ncclAllGather");
  if (selected_before != nullptr) {
    detail::count_before_rank_kernel<<<1, 1, 0, call.stream()>>>(counts.data(), group.mine,
                                                                 selected_before);
    detail::check_launch(function, "count_before_rank_kernel");
  }
  counts.release();
}

// The global selection, in order, rebalanced: rank r's `out` gets its r-th balanced share
// (total / ranks items, one more on the first total % ranks ranks). `out` holds
// balanced_share(comm, n) items, a bound on the share whatever is selected. `num_selected`
// (device memory) gets this rank's share and `selected_before` (device memory, or null) the
// items before it. Each rank selects into a temporary, the ranks learn one another's counts
// (the call waits for its stream there), and the runs move with grouped sends and receives.
template <class T, class Pred>
void select_if_balanced(ncclComm_t comm, const T* in, T* out, std::size_t* num_selected,
                        std::size_t* selected_before, std::size_t n, Pred pred,
                        cudaStream_t stream) {
  constexpr const char* function = "ppat::distributed::select_if_balanced";
  const detail::ranks group = detail::ranks_of(comm, function);
  const detail::call_context call(stream, function);
  const std::size_t capacity = detail::balanced_share_of(comm, n, group, call);
  detail::agree_on_arguments(comm, call, [&] {
    detail::require_selection_arguments(in, out, capacity, num_selected, selected_before, n, call);
  });
  detail::temporary_buffer<T> kept(n, call);
  detail::temporary_buffer<std::size_t> kept_count(1, call);
  detail::select<false>(
      detail::plain_selection<T, detail::predicate_rule<Pred>>{
          in, kept.data(), nullptr, nullptr, nullptr, kept_count.data(), n, {pred}},
      function, call.stream());
  // counts[r]: rank r's selected items; before[r]: those of the ranks before r, in the
  // selection (kept) and in the output (placed).
  std::vector<unsigned long long> counts(std::size_t(group.count));
  {
    detail::temporary_buffer<unsigned long long> gathered(std::size_t(group.count), call);
    detail::check_nccl(
        ncclAllGather(kept_count.data(), gathered.data(), 1, ncclUint64, comm, call.stream()), comm,
        function, "ncclAllGather");
    call.check(cudaMemcpyAsync(counts.data(), gathered.data(), counts.size() * sizeof(counts[0]),
                               cudaMemcpyDeviceToHost, call.stream()),
               "cudaMemcpyAsync");
    call.check(cudaStreamSynchronize(call.stream()), "cudaStreamSynchronize");
    gathered.release();
  }
  std::vector<std::size_t> kept_before(1, 0), placed_before(1, 0);
  for (int r = 0; r < group.count; ++r)
    kept_before.push_back(kept_before.back() + std::size_t(counts[std::size_t(r)]));
  const std::size_t selected = kept_before.back();
  for (int r = 0; r < group.count; ++r)
    placed_before.push_back(placed_before.back() + detail::share_of(selected, group.count, r));
  const auto me = std::size_t(group.mine);
  // Global positions [first, end) of rank a's selection that fall in rank b's output.
  const auto overlap = [&](std::size_t a, std::size_t b) {
    const std::size_t first = std::max(kept_before[a], placed_before[b]);
    const std::size_t end = std::min(kept_before[a + 1], placed_before[b + 1]);
    return std::pair<std::size_t, std::size_t>{first, std::max(first, end)};
  };
  detail::peer_transfers moves(group.count);
  for (std::size_t p = 0; p < std::size_t(group.count); ++p) {
    const auto [send_first, send_end] = overlap(me, p);
    if (send_end != send_first) {
      moves.send_from[p] = kept.data() + (send_first - kept_before[me]);
      moves.send_bytes[p] = (send_end - send_first) * sizeof(T);
    }
    const auto [receive_first, receive_end] = overlap(p, me);
    if (receive_end != receive_first) {
      moves.receive_to[p] = out + (receive_first - placed_before[me]);
      moves.receive_bytes[p] = (receive_end - receive_first) * sizeof(T);
    }
  }
  detail::exchange(comm, group, moves, call);
  detail::store_counts_kernel<<<1, 1, 0, call.stream()>>>(
      num_selected, placed_before[me + 1] - placed_before[me], selected_before, placed_before[me]);
  detail::check_launch(function, "store_counts_kernel");
  kept_count.release();
  kept.release();
}

template <class K>
void sort_keys(ncclComm_t comm, const K* in, K* out, std::size_t n, std::size_t n_out, order ord,
               cudaStream_t stream) {
  detail::sort(comm, in, out, static_cast<const detail::no_values*>(nullptr),
               static_cast<detail::no_values*>(nullptr), n, n_out, ord, stream,
               "ppat::distributed::sort_keys");
}

template <class K, class V>
void sort_pairs(ncclComm_t comm, const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                std::size_t n, std::size_t n_out, order ord, cudaStream_t stream) {
  detail::sort(comm, keys_in, keys_out, values_in, values_out, n, n_out, ord, stream,
               "ppat::distributed::sort_pairs");
}

// n / ranks of the n items over all ranks, one more on the first n % ranks ranks.
inline std::size_t balanced_share(ncclComm_t comm, std::size_t n, cudaStream_t stream) {
  constexpr const char* function = "ppat::distributed::balanced_share";
  const detail::ranks group = detail::ranks_of(comm, function);
  const detail::call_context call(stream, function);
  return detail::balanced_share_of(comm, n, group, call);
}

// Each rank packs, for every other rank, the columns its output rows come from, sends them,
// and transposes each block it holds into its columns of the output: the blocks, in rank
// order, are the rows of the matrix restricted to this rank's columns.
template <class T>
void transpose(ncclComm_t comm, const T* in, T* out, std::size_t rows, std::size_t cols,
               std::size_t out_rows, cudaStream_t stream) {
  ppat::detail::require_element_size<T>();
  constexpr const char* function = "ppat::distributed::transpose";
  const detail::ranks group = detail::ranks_of(comm, function);
  const detail::call_context call(stream, function);
  // rank r's (rows, cols, out_rows) at [3r, 3r + 3)
  const std::vector<unsigned long long> sizes =
      detail::gather_on_host(comm, {rows, cols, out_rows}, call);
  const auto size_of = [&](int r, int which) {
    return std::size_t(sizes[3 * std::size_t(r) + std::size_t(which)]);
  };
  std::size_t total_rows = 0, total_out_rows = 0;
  bool same_cols = true;
  for (int r = 0; r < group.count; ++r) {
    total_rows += size_of(r, 0);
    total_out_rows += size_of(r, 2);
    same_cols = same_cols && size_of(r, 1) == cols;
  }
  // The same on every rank: every rank throws, or none.
  detail::require(same_cols, function, "cols", "must be the same on every rank");
  detail::require(total_out_rows == cols, function, "out_rows",
                  "must add up, over the ranks, to 'cols'");
  detail::agree_on_arguments(comm, call, [&] {
    const std::size_t in_count = detail::checked_element_count(rows, cols, sizeof(T), function);
    const std::size_t out_count =
        detail::checked_element_count(out_rows, total_rows, sizeof(T), function);
    detail::require_buffer(in, in_count, function, "in");
    detail::require_buffer(out, out_count, function, "out");
    detail::require_disjoint(in, in_count, out, out_count, function, "in", "out");
    detail::require_device_readable(in, in_count, call, "in");
    detail::require_device_readable(out, out_count, call, "out");
  });
  const int me = group.mine;
  std::vector<std::size_t> row_first(1, 0), col_first(1, 0);
  for (int r = 0; r < group.count; ++r) {
    row_first.push_back(row_first.back() + size_of(r, 0));
    col_first.push_back(col_first.back() + size_of(r, 2));
  }
  // Rank j's columns of this rank's rows, packed for it; the blocks this rank receives.
  // Rank j's columns of this rank's rows, packed for it, and the blocks other ranks send
  // (their rows restricted to this rank's columns), both in rank order, this rank left out.
  detail::temporary_buffer<T> packed(rows * (cols - out_rows), call);
  detail::temporary_buffer<T> received((total_rows - rows) * out_rows, call);
  detail::peer_transfers moves(group.count);
  std::vector<std::size_t> received_first(std::size_t(group.count), 0);
  std::size_t packed_end = 0, received_end = 0;
  for (int j = 0; j < group.count; ++j) {
    if (j == me) continue;
    const auto p = std::size_t(j);
    const std::size_t width = size_of(j, 2);
    if (rows != 0 && width != 0) {
      call.check(cudaMemcpy2DAsync(packed.data() + packed_end, width * sizeof(T), in + col_first[p],
                                   cols * sizeof(T), width * sizeof(T), rows,
                                   cudaMemcpyDeviceToDevice, call.stream()),
                 "cudaMemcpy2DAsync");
    }
    moves.send_from[p] = packed.data() + packed_end;
    moves.send_bytes[p] = rows * width * sizeof(T);
    received_first[p] = received_end;
    moves.receive_to[p] = received.data() + received_end;
    moves.receive_bytes[p] = size_of(j, 0) * out_rows * sizeof(T);
    packed_end += rows * width;
    received_end += size_of(j, 0) * out_rows;
  }
  detail::exchange(comm, group, moves, call);
  // Each rank's block transposed into its columns of `out`; this rank's own straight from
  // `in`, which needs no packing.
  for (int j = 0; j < group.count; ++j) {
    const auto p = std::size_t(j);
    if (size_of(j, 0) == 0 || out_rows == 0) continue;
    const T* const block = j == me ? in + col_first[p] : received.data() + received_first[p];
    detail::transpose_planes(
        block, out + row_first[p],
        detail::matrix_layout(size_of(j, 0), out_rows, j == me ? cols : out_rows, total_rows),
        call);
  }
  received.release();
  packed.release();
}

namespace detail {

// Each rank reduces its shard; the totals of every rank, in rank order, are gathered into
// totals[0, ranks) of every rank (totals[ranks] holds this rank's before it is sent). A
// shard's total is a partial: absent when the shard is empty, so that no init is needed.
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

// A selection's checks: `out` receives at most out_bound items, as many as the data decides,
// so only its first is certain (require_result_output); the counts are device words.
template <class T>
void require_selection_arguments(const T* in, T* out, std::size_t out_bound,
                                 std::size_t* num_selected, std::size_t* selected_before,
                                 std::size_t n, const call_context& call) {
  const char* const function = call.function();
  require_buffer(in, n, function, "in");
  require_buffer(num_selected, 1, function, "num_selected");
  require(n < select_max_items, function, "n", "must be below 2^48");
  const std::size_t out_extent = require_result_output(out, out_bound, function, "out");
  require_disjoint(in, n, out, out_extent, function, "in", "out");
  require_disjoint(in, n, num_selected, 1, function, "in", "num_selected");
  require_disjoint(out, out_extent, num_selected, 1, function, "out", "num_selected");
  require_device_readable(in, n, call, "in");
  require_device_readable(out, out_bound, call, "out");
  require_device_readable(num_selected, 1, call, "num_selected");
  if (selected_before != nullptr) {
    require_disjoint(in, n, selected_before, 1, function, "in", "selected_before");
    require_disjoint(out, out_extent, selected_before, 1, function, "out", "selected_before");
    require_disjoint(num_selected, 1, selected_before, 1, function, "num_selected",
                     "selected_before");
    require_device_readable(selected_before, 1, call, "selected_before");
  }
}

// `count_value` into `count` and, when given, `before_value` into `before`.
template <class Count>
__global__ void store_counts_kernel(Count* count, Count count_value, Count* before,
                                    Count before_value) {
  *count = count_value;
  if (before != nullptr) *before = before_value;
}

// The counts of ranks [0, rank), added.
template <class Count>
__global__ void count_before_rank_kernel(const Count* counts, int rank, std::size_t* before) {
  Count sum = 0;
  for (int r = 0; r < rank; ++r)
    sum += counts[r];
  *before = std::size_t(sum);
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
}  // namespace distributed
}  // namespace ppat
