// 8- and 16-bit integer keys without values, sorted by every bit, are counted, not ranked:
// a key is its image, so the output is every key value, in order, repeated as often as it
// occurs. A histogram of the keys (histogram.cuh), an exclusive scan of its counts, and a
// fill of the runs: one read and one write of the keys, and no ranking.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/memory.cuh"
#include "../histogram.cuh"
#include "../scan.cuh"
#include "plan.cuh"

namespace ppat::detail {

// 256 threads writing 128 bytes each: 32 KB of output a block (not measured against others).
using fill_tuning = tuning<256, 128, 0>;
constexpr std::size_t fill_block_bytes = fill_tuning::threads * fill_tuning::bytes_per_thread;

// Run j of the output holds key value lowest + j ascending (lowest + bins - 1 - j
// descending) at positions [first(j), first(j + 1)). The output is written in aligned
// 16-byte vectors, the keys before the first and after the last one singly by block 0.
// Block b writes vectors [b x block_vectors, ...): it finds the runs at both ends of its
// range once, and each vector's run within them by a binary search, whatever the lengths
// and empty runs between (8 or 16 steps at most; none inside one long run). A vector that
// one run covers is stored as is; one that meets several is assembled key by key.
template <class K>
__global__ void __launch_bounds__(fill_tuning::threads, fill_tuning::min_blocks_per_sm)
    fill_runs_kernel(const unsigned long long* starts, K* out, std::size_t n, bool descending) {
  constexpr int bins = 1 << (8 * sizeof(K));
  constexpr int lowest = std::is_signed_v<K> ? -bins / 2 : 0;
  constexpr int per_vector = int(16 / sizeof(K));
  constexpr std::size_t block_vectors = fill_block_bytes / 16;
  // Where ascending run v starts (v == bins: n); descending run j is ascending run
  // bins - 1 - j, counted from the end.
  const auto start_of = [&](int v) -> std::size_t { return v < bins ? starts[v] : n; };
  const auto first = [&](int j) -> std::size_t {
    return descending ? n - start_of(bins - j) : start_of(j);
  };
  const auto key_of = [&](int j) { return K(lowest + (descending ? bins - 1 - j : j)); };
  // The run at position p, given runs low <= it <= high: the last one that starts at or
  // before p (an empty run starts where the next one does, and loses to it).
  const auto run_at = [&](std::size_t p, int low, int high) {
    while (low < high) {
      const int middle = (low + high + 1) / 2;
      if (first(middle) <= p) {
        low = middle;
      } else {
        high = middle - 1;
      }
    }
    return low;
  };

  const std::size_t head =
      min(n, (16 - reinterpret_cast<std::uintptr_t>(out) % 16) % 16 / sizeof(K));
  const std::size_t vectors = (n - head) / per_vector;
  const std::size_t tail = head + vectors * per_vector;
  if (blockIdx.x == 0) {
    for (std::size_t p = threadIdx.x; p < head; p += fill_tuning::threads)
      out[p] = key_of(run_at(p, 0, bins - 1));
    for (std::size_t p = tail + threadIdx.x; p < n; p += fill_tuning::threads)
      out[p] = key_of(run_at(p, 0, bins - 1));
  }
  const std::size_t lo = std::size_t(blockIdx.x) * block_vectors;
  const std::size_t hi = min(vectors, lo + block_vectors);
  if (lo >= hi) return;
  __shared__ int end_runs[2];
  if (threadIdx.x == 0) end_runs[0] = run_at(head + lo * per_vector, 0, bins - 1);
  if (threadIdx.x == 32) end_runs[1] = run_at(head + hi * per_vector - 1, 0, bins - 1);
  __syncthreads();
  const int low_run = end_runs[0];
  const int high_run = end_runs[1];
  uint4* const vector_out = reinterpret_cast<uint4*>(out + head);
  for (std::size_t v = lo + threadIdx.x; v < hi; v += fill_tuning::threads) {
    const std::size_t p = head + v * per_vector;
    const int j = run_at(p, low_run, high_run);
    K keys[per_vector];
    if (j == high_run || first(j + 1) >= p + per_vector) {
#pragma unroll
      for (int k = 0; k < per_vector; ++k)
        keys[k] = key_of(j);
    } else {
      for (int k = 0; k < per_vector; ++k)
        keys[k] = key_of(run_at(p + k, j, high_run));
    }
    uint4 word;
    std::memcpy(&word, keys, 16);
    vector_out[v] = word;
  }
}

template <class K>
void counting_sort(const K* keys_in, K* keys_out, std::size_t n, order ord,
                   const call_context& call) {
  constexpr int bins = 1 << (8 * sizeof(K));
  constexpr int lowest = std::is_signed_v<K> ? -bins / 2 : 0;
  temporary_buffer<unsigned long long> counts(2 * bins, call);
  unsigned long long* const hist = counts.data();
  unsigned long long* const starts = hist + bins;
  count_even<1, 1>(keys_in, static_cast<const unweighted*>(nullptr), n,
                   std::array<unsigned long long*, 1>{hist}, std::array<int, 1>{bins},
                   std::array<int, 1>{lowest}, std::array<int, 1>{lowest + bins}, call);
  plain_scan(plain_source<true, unsigned long long, plus, 2, true>{hist, starts, plus{}},
             std::size_t(bins), partial<unsigned long long>{0, true}, call);
  const std::size_t blocks = std::max<std::size_t>(1, ceil_div(n * sizeof(K), fill_block_bytes));
  fill_runs_kernel<<<unsigned(blocks), fill_tuning::threads, 0, call.stream()>>>(
      starts, keys_out, n, ord == order::descending);
  check_launch(call.function(), "fill_runs_kernel");
  counts.release();
}

}  // namespace ppat::detail
