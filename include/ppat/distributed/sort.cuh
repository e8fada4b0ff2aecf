// ppat::distributed::sort_keys and sort_pairs: each shard sorted locally, the boundaries of
// the output shards found by a search on the device over every rank's sorted shard, the runs
// exchanged with grouped sends and receives, and the received runs merged.
#pragma once

#include <nccl.h>

#include <algorithm>
#include <vector>

#include "../core/no_values.cuh"
#include "../core/shared_storage.cuh"
#include "../sort.cuh"
#include "communicator.cuh"

namespace ppat::distributed::detail {

template <class K, class V>
void sort(ncclComm_t comm, const K* keys_in, K* keys_out, const V* values_in, V* values_out,
          std::size_t n, std::size_t n_out, order ord, cudaStream_t stream, const char* function);
template <class K>
std::vector<unsigned long long> split_sorted_shards(ncclComm_t comm, const K* sorted, std::size_t n,
                                                    const std::vector<unsigned long long>& sizes,
                                                    order ord, const ranks& group,
                                                    const call_context& call);
template <class K>
__global__ void count_up_to_middles_kernel(const K* sorted, std::size_t n, order ord,
                                           const typename radix_key<K>::image_type* lowest,
                                           const typename radix_key<K>::image_type* highest,
                                           int boundaries, unsigned long long* counts);
template <class K>
__global__ void narrow_kernel(const unsigned long long* counts, const unsigned long long* wanted,
                              int boundaries, typename radix_key<K>::image_type* lowest,
                              typename radix_key<K>::image_type* highest);
template <class K>
__global__ void count_below_and_at_kernel(const K* sorted, std::size_t n, order ord,
                                          const typename radix_key<K>::image_type* at,
                                          int boundaries, unsigned long long* below_and_at);
template <class Count>
__global__ void split_ties_kernel(const Count* below_and_at, const Count* wanted, int ranks,
                                  Count* split);
constexpr int boundary_threads = 128;
template <class K, class V>
void merge_runs(K* keys, V* values, const std::vector<std::size_t>& run_first, K* keys_out,
                V* values_out, order ord, const call_context& call);
template <class K, class V>
__global__ void merge_pair_kernel(const K* a_keys, const V* a_values, std::size_t a_count,
                                  const K* b_keys, const V* b_values, std::size_t b_count,
                                  const std::size_t* a_taken, K* keys_out, V* values_out,
                                  order ord);
template <class K>
__device__ typename radix_key<K>::image_type ordered_image(const K& key, order ord);
template <class K>
__global__ void merge_partitions_kernel(const K* a_keys, std::size_t a_count, const K* b_keys,
                                        std::size_t b_count, order ord, std::size_t tile,
                                        std::size_t tiles, std::size_t* a_taken);
template <class Index, class RunA, class RunB>
__device__ Index merge_split(RunA a, Index a_count, RunB b, Index b_count, Index diagonal,
                             order ord);
template <class K, class V>
constexpr int merge_item_bytes = int(sizeof(K) + (std::is_same_v<V, no_values> ? 0 : sizeof(V)));
// Two sorted runs of 2^29 u32 keys merged on an H200 (CUB's merge 2.48 ms, a copy of the
// bytes 2.01): 16 keys a thread in a padded tile took 3.50 ms (60 registers, four blocks an
// SM); unpadded, 13 took 3.11 or 4.06 by the compiler's choice of registers from one build to
// the next, 15 at eight blocks an SM 3.16, 17 at six 3.14. u32/u32 pairs (CUB 6.80 ms): 8 a
// thread padded 5.48, 11 unpadded at six blocks an SM 5.19 (512 threads: 5.09). Wider items
// keep the bytes a thread, and the compiler chooses their blocks.
template <class K, class V>
using merge_tuning = std::conditional_t<
    merge_item_bytes<K, V> <= 4, tuning<256, 68, 6>,
    std::conditional_t<merge_item_bytes<K, V> <= 8, tuning<256, 88, 6>, tuning<256, 112, 0>>>;
// Items a thread merges: the largest odd count within its bytes, at most 17 (an odd count
// keeps a warp's accesses to shared memory in different banks: see merge_pair_kernel).
template <class K, class V>
constexpr int merge_items =
    (merge_tuning<K, V>::groups_per_thread(merge_item_bytes<K, V>, 17) - 1) / 2 * 2 + 1;
template <class K, class V>
constexpr int merge_tile = merge_tuning<K, V>::threads* merge_items<K, V>;
constexpr int partition_threads = 256;

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

// The sorted runs [run_first[r], run_first[r + 1]) of `keys` (and `values`), merged in
// rounds of neighbouring pairs, the earlier run winning ties: stable, so ties stay in (rank,
// index) order. The rounds alternate between the output and `keys` (`values`), which the
// first round frees; after an even count of rounds the result is copied to the output.
template <class K, class V>
void merge_runs(K* keys, V* values, const std::vector<std::size_t>& run_first, K* keys_out,
                V* values_out, order ord, const call_context& call) {
  constexpr bool has_values = has_values_of<V>;
  const std::size_t total = run_first.back();
  std::vector<std::size_t> runs;  // the non-empty runs' bounds
  runs.push_back(0);
  for (std::size_t r = 1; r < run_first.size(); ++r)
    if (run_first[r] != run_first[r - 1]) runs.push_back(run_first[r]);
  if (total == 0) return;
  // Where each tile of each merge starts in its run a (the tiles' ends, one more than tiles).
  constexpr std::size_t tile = merge_tile<K, V>;
  temporary_buffer<std::size_t> a_taken(ceil_div(total, tile) + runs.size(), call);
  K* from_keys = keys;
  V* from_values = values;
  for (int round = 0; runs.size() > 2; ++round) {
    const bool to_output = round % 2 == 0;
    K* const to_keys = to_output ? keys_out : keys;
    V* const to_values = to_output ? values_out : values;
    std::vector<std::size_t> merged(1, 0);
    std::size_t* pair_taken = a_taken.data();
    for (std::size_t r = 0; r + 1 < runs.size(); r += 2) {
      const std::size_t a = runs[r], b = runs[r + 1];
      const std::size_t end = r + 2 < runs.size() ? runs[r + 2] : b;
      const std::size_t tiles = ceil_div(end - a, tile);
      merge_partitions_kernel<<<unsigned(ceil_div(tiles + 1, std::size_t(partition_threads))),
                                partition_threads, 0, call.stream()>>>(
          from_keys + a, b - a, from_keys + b, end - b, ord, tile, tiles, pair_taken);
      check_launch(call.function(), "merge_partitions_kernel");
      merge_pair_kernel<<<unsigned(tiles), merge_tuning<K, V>::threads, 0, call.stream()>>>(
          from_keys + a, has_values ? from_values + a : nullptr, b - a, from_keys + b,
          has_values ? from_values + b : nullptr, end - b, pair_taken, to_keys + a,
          has_values ? to_values + a : nullptr, ord);
      check_launch(call.function(), "merge_pair_kernel");
      pair_taken += tiles + 1;
      merged.push_back(end);
    }
    runs = merged;
    from_keys = to_keys;
    from_values = to_values;
  }
  a_taken.release();
  if (from_keys == keys_out) return;
  call.check(cudaMemcpyAsync(keys_out, from_keys, total * sizeof(K), cudaMemcpyDeviceToDevice,
                             call.stream()),
             "cudaMemcpyAsync");
  if constexpr (has_values) {
    call.check(cudaMemcpyAsync(values_out, from_values, total * sizeof(V), cudaMemcpyDeviceToDevice,
                               call.stream()),
               "cudaMemcpyAsync");
  }
}

// A block writes one tile of the output. merge_partitions_kernel found, by a binary search
// along each tile's first diagonal, which items of runs a and b the tile takes; the block
// loads them into shared memory (a's, then b's), each thread finds its own diagonal there and
// merges its items into registers, and the merged tile goes back through shared memory so
// that every load and store is coalesced. A thread's items sit merge_items apart, an odd
// count, so that a warp's reads and writes of them fall in different banks: 16 apart, they
// hit the same banks, and the merge ran at 40% of a copy's bandwidth, bound by shared memory.
template <class K, class V>
__global__ void __launch_bounds__(merge_tuning<K, V>::threads, merge_tuning<K, V>::blocks_per_sm)
    merge_pair_kernel(const K* a_keys, const V* a_values, std::size_t a_count, const K* b_keys,
                      const V* b_values, std::size_t b_count, const std::size_t* a_taken,
                      K* keys_out, V* values_out, order ord) {
  constexpr bool has_values = has_values_of<V>;
  constexpr int threads = merge_tuning<K, V>::threads;
  constexpr int items = merge_items<K, V>;
  constexpr int tile = merge_tile<K, V>;
  using value = value_or_char<V>;
  __shared__ uninitialized_array<K, tile> tile_keys;
  __shared__ uninitialized_array<value, has_values ? tile : 1> tile_values;
  const std::size_t total = a_count + b_count;
  const std::size_t first = std::size_t(blockIdx.x) * tile;
  const std::size_t end = first + tile < total ? first + tile : total;
  const std::size_t a_first = a_taken[blockIdx.x], b_first = first - a_first;
  const unsigned count = unsigned(end - first);
  const unsigned a_tile = unsigned(a_taken[blockIdx.x + 1] - a_first);
  const auto key_at = [&](unsigned x) { return tile_keys[int(x)]; };

  // Every load of the thread issued before any store to shared memory.
  K keys[items];
  value values[items];
#pragma unroll
  for (int k = 0; k < items; ++k) {
    const unsigned t = unsigned(k * threads) + threadIdx.x;
    if (t >= count) continue;
    keys[k] = t < a_tile ? a_keys[a_first + t] : b_keys[b_first + (t - a_tile)];
    if constexpr (has_values)
      values[k] = t < a_tile ? a_values[a_first + t] : b_values[b_first + (t - a_tile)];
  }
#pragma unroll
  for (int k = 0; k < items; ++k) {
    const unsigned t = unsigned(k * threads) + threadIdx.x;
    if (t >= count) continue;
    tile_keys[int(t)] = keys[k];
    if constexpr (has_values) tile_values[int(t)] = values[k];
  }
  __syncthreads();

  // The thread's outputs [diagonal, diagonal + items): the next key of each run waits
  // in a register, so each output costs one shared-memory read, the same for every thread
  // whichever run it takes from (a branch there made the warps diverge on keys that
  // interleave finely).
  const unsigned diagonal = min(unsigned(threadIdx.x) * items, count);
  unsigned i = merge_split(
      key_at, a_tile, [&](unsigned x) { return key_at(a_tile + x); }, count - a_tile, diagonal,
      ord);
  unsigned j = a_tile + (diagonal - i);
  const unsigned last = tile - 1;
  K a_key = key_at(min(i, last)), b_key = key_at(min(j, last));
  unsigned taken_from[items];
#pragma unroll
  for (int k = 0; k < items; ++k) {
    const bool from_a =
        j >= count || (i < a_tile && !(ordered_image(b_key, ord) < ordered_image(a_key, ord)));
    keys[k] = from_a ? a_key : b_key;
    taken_from[k] = from_a ? i : j;
    i += from_a ? 1 : 0;
    j += from_a ? 0 : 1;
    const K next = key_at(min(from_a ? i : j, last));
    a_key = from_a ? next : a_key;
    b_key = from_a ? b_key : next;
  }
  if constexpr (has_values) {
#pragma unroll
    for (int k = 0; k < items; ++k)
      values[k] = tile_values[int(min(taken_from[k], last))];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < items; ++k) {
    if (diagonal + unsigned(k) >= count) continue;
    tile_keys[int(diagonal) + k] = keys[k];
    if constexpr (has_values) tile_values[int(diagonal) + k] = values[k];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < items; ++k) {
    const unsigned t = unsigned(k * threads) + threadIdx.x;
    if (t >= count) continue;
    keys_out[first + t] = tile_keys[int(t)];
    if constexpr (has_values) values_out[first + t] = tile_values[int(t)];
  }
}

// a_taken[t]: the items of run a among the first t x tile outputs of the merge (t <= tiles;
// the last, all of a).
template <class K>
__global__ void merge_partitions_kernel(const K* a_keys, std::size_t a_count, const K* b_keys,
                                        std::size_t b_count, order ord, std::size_t tile,
                                        std::size_t tiles, std::size_t* a_taken) {
  const std::size_t t = std::size_t(blockIdx.x) * partition_threads + threadIdx.x;
  if (t > tiles) return;
  const std::size_t total = a_count + b_count;
  const std::size_t diagonal = t * tile < total ? t * tile : total;
  a_taken[t] = merge_split([&](std::size_t x) { return a_keys[x]; }, a_count,
                           [&](std::size_t x) { return b_keys[x]; }, b_count, diagonal, ord);
}

// How many of the first `diagonal` outputs of merging runs a and b (a(x), b(x): their items)
// come from a, a's item first on ties: a binary search along the diagonal.
template <class Index, class RunA, class RunB>
__device__ Index merge_split(RunA a, Index a_count, RunB b, Index b_count, Index diagonal,
                             order ord) {
  Index low = diagonal > b_count ? diagonal - b_count : 0;
  Index high = diagonal < a_count ? diagonal : a_count;
  while (low < high) {
    const Index middle = low + (high - low) / 2;
    // a's item at middle comes before b's at diagonal - 1 - middle unless b's is strictly
    // earlier.
    if (ordered_image(b(diagonal - 1 - middle), ord) < ordered_image(a(middle), ord)) {
      high = middle;
    } else {
      low = middle + 1;
    }
  }
  return low;
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

// The key's place in the sort order as an unsigned integer: its image, flipped for descending.
template <class K>
__device__ typename radix_key<K>::image_type ordered_image(const K& key, order ord) {
  using image = typename radix_key<K>::image_type;
  const image bits = radix_key<K>::image(key);
  return ord == order::ascending ? bits : image(~bits);
}

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

}  // namespace ppat::distributed::detail
