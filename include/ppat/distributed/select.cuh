// ppat::distributed::select_if and select_if_balanced: each rank selects from its own shard
// with the single-GPU selection; the counts are gathered, and the balanced form moves the
// runs to their balanced shares.
#pragma once

#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/memory.cuh"
#include "../select.cuh"
#include "communicator.cuh"
#include "shares.cuh"

namespace ppat::distributed {

namespace detail {

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

}  // namespace detail

// Each rank keeps its own shard's selected items, in order, at `out`: the global selection
// is the ranks' outputs in rank order. `num_selected` (device memory) gets this rank's count
// and `selected_before` (device memory, or null) the count of the ranks before it.
template <class T, class Pred>
void select_if(ncclComm_t comm, const T* in, T* out, std::size_t* num_selected,
               std::size_t* selected_before, std::size_t n, Pred pred, cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::distributed::select_if";
  const detail::ranks group = detail::ranks_of(comm, function);
  const detail::call_context call(stream, function);
  detail::agree_on_arguments(comm, call, [&] {
    detail::require_selection_arguments(in, out, n, num_selected, selected_before, n, call);
  });
  detail::select(
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
                        cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::distributed::select_if_balanced";
  const detail::ranks group = detail::ranks_of(comm, function);
  const detail::call_context call(stream, function);
  const std::size_t capacity = detail::balanced_share_of(comm, n, group, call);
  detail::agree_on_arguments(comm, call, [&] {
    detail::require_selection_arguments(in, out, capacity, num_selected, selected_before, n, call);
  });
  detail::temporary_buffer<T> kept(n, call);
  detail::temporary_buffer<std::size_t> kept_count(1, call);
  detail::select(
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

}  // namespace ppat::distributed
