// ppat::distributed::sort_keys and sort_pairs: each shard sorted locally, the boundaries of
// the output shards found by a search on the device over every rank's sorted shard, the runs
// exchanged with grouped sends and receives, and the received runs merged
// (distributed/merge.cuh).
#pragma once

#include <nccl.h>

#include <algorithm>
#include <vector>

#include "../core/no_values.cuh"
#include "../sort.cuh"
#include "communicator.cuh"
#include "merge.cuh"

namespace ppat::distributed {
namespace detail {

template <class K, class V>
void sort(ncclComm_t comm, const K* keys_in, K* keys_out, const V* values_in, V* values_out,
          std::size_t n, std::size_t n_out, order ord, cudaStream_t stream, const char* function);

}  // namespace detail

// Rank r's output: the r-th run of the globally sorted sequence, n_out long.
template <class K>
void sort_keys(ncclComm_t comm, const K* in, K* out, std::size_t n, std::size_t n_out,
               order ord = order::ascending, cudaStream_t stream = 0) {
  detail::sort(comm, in, out, static_cast<const detail::no_values*>(nullptr),
               static_cast<detail::no_values*>(nullptr), n, n_out, ord, stream,
               "ppat::distributed::sort_keys");
}

template <class K, class V>
void sort_pairs(ncclComm_t comm, const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                std::size_t n, std::size_t n_out, order ord = order::ascending,
                cudaStream_t stream = 0) {
  detail::sort(comm, keys_in, keys_out, values_in, values_out, n, n_out, ord, stream,
               "ppat::distributed::sort_pairs");
}

namespace detail {

constexpr int boundary_threads = 128;

// Sorted items whose ordered image is below `v` (or, with AtOrBelow, at or below it).
template <bool AtOrBelow, class K>
__device__ unsigned long long count_before(const K* sorted, std::size_t n, order ord,
                                           typename radix_key<K>::image_type v) {
  std::size_t low = 0, high = n;
  while (low < high) {
    const std::size_t middle = low + (high - low) / 2;
    const auto at = ordered_image(sorted[middle], ord);
    if (AtOrBelow ? at <= v : at < v) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

template <class K>
__global__ void count_up_to_middles_kernel(const K* sorted, std::size_t n, order ord,
                                           const typename radix_key<K>::image_type* lowest,
                                           const typename radix_key<K>::image_type* highest,
                                           int boundaries, unsigned long long* counts) {
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= boundaries) return;
  const auto middle = lowest[j] + (highest[j] - lowest[j]) / 2;
  counts[j] = count_before<true>(sorted, n, ord, middle);
}

template <class K>
__global__ void narrow_kernel(const unsigned long long* counts, const unsigned long long* wanted,
                              int boundaries, typename radix_key<K>::image_type* lowest,
                              typename radix_key<K>::image_type* highest) {
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= boundaries || lowest[j] == highest[j]) return;
  const auto middle = lowest[j] + (highest[j] - lowest[j]) / 2;
  if (counts[j] >= wanted[j]) {
    highest[j] = middle;
  } else {
    lowest[j] = middle + 1;
  }
}

template <class K>
__global__ void count_below_and_at_kernel(const K* sorted, std::size_t n, order ord,
                                          const typename radix_key<K>::image_type* at,
                                          int boundaries, unsigned long long* below_and_at) {
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= boundaries) return;
  const unsigned long long below = count_before<false>(sorted, n, ord, at[j]);
  below_and_at[2 * j] = below;
  below_and_at[2 * j + 1] = count_before<true>(sorted, n, ord, at[j]) - below;
}

// Boundary j (thread j): every rank's items below the boundary key, then those equal to it
// in rank order until the boundary's position is reached.
template <class Count>
__global__ void split_ties_kernel(const Count* below_and_at, const Count* wanted, int ranks,
                                  Count* split) {
  const int boundaries = ranks - 1;
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= boundaries) return;
  const auto below = [&](int r) { return below_and_at[(std::size_t(r) * boundaries + j) * 2]; };
  const auto at = [&](int r) { return below_and_at[(std::size_t(r) * boundaries + j) * 2 + 1]; };
  Count all_below = 0;
  for (int r = 0; r < ranks; ++r)
    all_below += below(r);
  Count ties_left = wanted[j] - all_below;
  for (int r = 0; r < ranks; ++r) {
    const Count taken = at(r) < ties_left ? at(r) : ties_left;
    split[std::size_t(r) * boundaries + j] = below(r) + taken;
    ties_left -= taken;
  }
}

// For each boundary b between output shards, the key (as its ordered image v) at global
// position b: the smallest v with at least b items at or below it over all ranks, found by
// halving [0, 2^bits) once a bit, each step one count a boundary on every rank and one
// all-reduce, all on the stream. Items below v come before the boundary; those equal to v
// are taken in rank order until it is reached, which keeps ties in (rank, index) order.
// Returns, on the host, split[i * (ranks + 1) + j]: the items of rank i before boundary j.
template <class K>
std::vector<unsigned long long> split_sorted_shards(ncclComm_t comm, const K* sorted, std::size_t n,
                                                    const std::vector<unsigned long long>& sizes,
                                                    order ord, const ranks& group,
                                                    const call_context& call) {
  using image = typename radix_key<K>::image_type;
  const int ranks = group.count;
  const std::size_t columns = std::size_t(ranks) + 1;
  std::vector<unsigned long long> split(std::size_t(ranks) * columns, 0);
  for (int i = 0; i < ranks; ++i)
    split[std::size_t(i) * columns + std::size_t(ranks)] = sizes[2 * std::size_t(i)];
  const int boundaries = ranks - 1;
  if (boundaries == 0) return split;

  // wanted[j]: the output items before boundary j + 1.
  std::vector<unsigned long long> wanted(static_cast<std::size_t>(boundaries));
  unsigned long long through = 0;
  for (int j = 0; j < boundaries; ++j) {
    through += sizes[2 * std::size_t(j) + 1];
    wanted[std::size_t(j)] = through;
  }
  const std::size_t b = std::size_t(boundaries);
  const unsigned grid = unsigned(ceil_div(b, boundary_threads));
  temporary_buffer<unsigned long long> counts(
      b + b + 2 * b * (std::size_t(ranks) + 1) + b * columns, call);
  unsigned long long* const wanted_on_device = counts.data() + b;
  unsigned long long* const below_and_at = wanted_on_device + b;  // [rank][boundary][2], mine last
  unsigned long long* const split_on_device = below_and_at + 2 * b * (std::size_t(ranks) + 1);
  temporary_buffer<image> range(2 * b, call);
  image* const lowest = range.data();
  image* const highest = range.data() + b;
  call.check(cudaMemcpyAsync(wanted_on_device, wanted.data(), b * sizeof(unsigned long long),
                             cudaMemcpyHostToDevice, call.stream()),
             "cudaMemcpyAsync");
  call.check(cudaMemsetAsync(lowest, 0, b * sizeof(image), call.stream()), "cudaMemsetAsync");
  call.check(cudaMemsetAsync(highest, 0xFF, b * sizeof(image), call.stream()), "cudaMemsetAsync");
  for (int step = 0; step < 8 * int(sizeof(image)); ++step) {
    count_up_to_middles_kernel<<<grid, boundary_threads, 0, call.stream()>>>(
        sorted, n, ord, lowest, highest, boundaries, counts.data());
    check_launch(call.function(), "count_up_to_middles_kernel");
    check_nccl(
        ncclAllReduce(counts.data(), counts.data(), b, ncclUint64, ncclSum, comm, call.stream()),
        comm, call.function(), "ncclAllReduce");
    narrow_kernel<K><<<grid, boundary_threads, 0, call.stream()>>>(counts.data(), wanted_on_device,
                                                                   boundaries, lowest, highest);
    check_launch(call.function(), "narrow_kernel");
  }
  unsigned long long* const mine = below_and_at + 2 * b * std::size_t(ranks);
  count_below_and_at_kernel<<<grid, boundary_threads, 0, call.stream()>>>(sorted, n, ord, lowest,
                                                                          boundaries, mine);
  check_launch(call.function(), "count_below_and_at_kernel");
  check_nccl(ncclAllGather(mine, below_and_at, 2 * b, ncclUint64, comm, call.stream()), comm,
             call.function(), "ncclAllGather");
  split_ties_kernel<<<grid, boundary_threads, 0, call.stream()>>>(below_and_at, wanted_on_device,
                                                                  ranks, split_on_device);
  check_launch(call.function(), "split_ties_kernel");
  std::vector<unsigned long long> inner(std::size_t(ranks) * b);
  call.check(
      cudaMemcpyAsync(inner.data(), split_on_device, inner.size() * sizeof(unsigned long long),
                      cudaMemcpyDeviceToHost, call.stream()),
      "cudaMemcpyAsync");
  call.check(cudaStreamSynchronize(call.stream()), "cudaStreamSynchronize");
  range.release();
  counts.release();
  for (int i = 0; i < ranks; ++i)
    for (int j = 0; j < boundaries; ++j)
      split[std::size_t(i) * columns + std::size_t(j) + 1] =
          inner[std::size_t(i) * b + std::size_t(j)];
  return split;
}

// Each shard sorted locally; then, for every boundary between output shards, how many of each
// rank's sorted items come before it; the runs exchanged with grouped sends and receives;
// and the runs each rank receives, in rank order, merged by a stable sort.
template <class K, class V>
void sort(ncclComm_t comm, const K* keys_in, K* keys_out, const V* values_in, V* values_out,
          std::size_t n, std::size_t n_out, order ord, cudaStream_t stream, const char* function) {
  static_assert(radix_key<K>::supported,
                "ppat sorts keys that are integers (not bool), float, double, __half or "
                "__nv_bfloat16");
  constexpr bool has_values = has_values_of<V>;
  constexpr int key_bits = 8 * int(sizeof(K));
  const ranks group = ranks_of(comm, function);
  const call_context call(stream, function);
  // In place, the caller's buffer holds the shard and then the rank's part of the output.
  const bool in_place = keys_in == keys_out;
  agree_on_arguments(comm, call, [&] {
    const char* const in_name = has_values ? "keys_in" : "in";
    const char* const out_name = has_values ? "keys_out" : "out";
    require(ord == order::ascending || ord == order::descending, function, "ord",
            "must be order::ascending or order::descending");
    require_buffer(keys_in, n, function, in_name);
    require_buffer(keys_out, n_out, function, out_name);
    if (!in_place) require_disjoint(keys_in, n, keys_out, n_out, function, in_name, out_name);
    require_device_readable(keys_in, n, call, in_name);
    require_device_readable(keys_out, n_out, call, out_name);
    if constexpr (has_values) {
      require_buffer(values_in, n, function, "values_in");
      require_buffer(values_out, n_out, function, "values_out");
      require((values_in == values_out) == in_place, function, "values_out",
              "must be values_in exactly when keys_out is keys_in (a sort in place moves both)");
      const std::size_t out_extent = in_place ? std::max(n, n_out) : n_out;
      if (!in_place) {
        require_disjoint(values_in, n, values_out, n_out, function, "values_in", "values_out");
        require_disjoint(keys_in, n, values_out, n_out, function, "keys_in", "values_out");
        require_disjoint(values_in, n, keys_out, n_out, function, "values_in", "keys_out");
      }
      require_disjoint(keys_out, out_extent, values_out, out_extent, function, "keys_out",
                       "values_out");
      require_device_readable(values_in, n, call, "values_in");
      require_device_readable(values_out, n_out, call, "values_out");
    }
  });
  const std::vector<unsigned long long> sizes = gather_on_host(comm, {n, n_out}, call);
  unsigned long long in_total = 0, out_total = 0;
  for (int r = 0; r < group.count; ++r) {
    in_total += sizes[2 * std::size_t(r)];
    out_total += sizes[2 * std::size_t(r) + 1];
  }
  // Every rank sees the same sizes, so every rank throws here or none does.
  require(in_total == out_total, function, "n_out",
          "must add up, over the ranks, to the items of all shards");

  // The shard is sorted into the output where it fits (in place, or n_out >= n as with
  // balanced or kept sizes): the exchange reads it from there before the merge writes the
  // output, so the call holds one buffer of its size (the received runs) beside the
  // caller's, not two.
  const bool sort_in_output = in_place || n_out >= n;
  temporary_buffer<K> sorted_keys_apart(sort_in_output ? 0 : n, call);
  temporary_buffer<value_or_char<V>> sorted_values_apart(has_values && !sort_in_output ? n : 0,
                                                         call);
  K* const sorted_keys = sort_in_output ? keys_out : sorted_keys_apart.data();
  V* const sorted_values_data =
      sort_in_output ? values_out : reinterpret_cast<V*>(sorted_values_apart.data());
  radix_sort(keys_in, sorted_keys, values_in, sorted_values_data, n, ord, 0, key_bits,
             call.stream(), function);
  // split[i * (ranks + 1) + j]: the items of rank i's sorted shard before output shard j.
  const std::vector<unsigned long long> split =
      split_sorted_shards(comm, sorted_keys, n, sizes, ord, group, call);
  const auto split_at = [&](int i, int j) {
    return split[std::size_t(i) * std::size_t(group.count + 1) + std::size_t(j)];
  };

  // Where nothing crosses to or from this rank and the shard was sorted in the output, that
  // is already this rank's part (keys sorted across ranks, say, or a single rank).
  const int me = group.mine;
  bool stays = sort_in_output;
  for (int peer = 0; peer < group.count; ++peer) {
    if (peer == me) continue;
    stays = stays && split_at(me, peer + 1) == split_at(me, peer) &&
            split_at(peer, me + 1) == split_at(peer, me);
  }
  if (stays) return;

  temporary_buffer<K> received_keys(n_out, call);
  temporary_buffer<value_or_char<V>> received_values(has_values ? n_out : 0, call);
  V* const received_values_data = reinterpret_cast<V*>(received_values.data());
  peer_transfers keys_moves(group.count), values_moves(group.count);
  std::size_t received = 0;
  std::vector<std::size_t> run_first(1, 0);  // where each peer's run starts, in rank order
  for (int peer = 0; peer < group.count; ++peer) {
    const auto p = std::size_t(peer);
    const std::size_t send_first = split_at(me, peer);
    const std::size_t send_count = split_at(me, peer + 1) - send_first;
    const std::size_t receive_count = split_at(peer, me + 1) - split_at(peer, me);
    keys_moves.send_from[p] = sorted_keys + send_first;
    keys_moves.send_bytes[p] = send_count * sizeof(K);
    keys_moves.receive_to[p] = received_keys.data() + received;
    keys_moves.receive_bytes[p] = receive_count * sizeof(K);
    if constexpr (has_values) {
      values_moves.send_from[p] = sorted_values_data + send_first;
      values_moves.send_bytes[p] = send_count * sizeof(V);
      values_moves.receive_to[p] = received_values_data + received;
      values_moves.receive_bytes[p] = receive_count * sizeof(V);
    }
    received += receive_count;
    run_first.push_back(received);
  }
  exchange(comm, group, keys_moves, call);
  if constexpr (has_values) exchange(comm, group, values_moves, call);
  merge_runs(received_keys.data(), received_values_data, run_first, keys_out, values_out, ord,
             call);
  received_values.release();
  received_keys.release();
  sorted_values_apart.release();
  sorted_keys_apart.release();
}

}  // namespace detail
}  // namespace ppat::distributed
