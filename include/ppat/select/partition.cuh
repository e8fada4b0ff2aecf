// partition's second step. Over several tiles each tile writes its rejected items from the
// end of `out` backwards, since only the last tile learns where they start; this kernel
// puts that run back in input order.
#pragma once

#include <algorithm>
#include <cstddef>

#include "../core/launch.cuh"
#include "../core/shared_storage.cuh"
#include "../core/staged_run.cuh"

namespace ppat::detail {

// Puts partition's rejected items, written in reverse from the end of `out`, back in input
// order. Block b swaps pairs [b x items, (b + 1) x items) of the run: it reads the two runs
// that mirror each other as whole 16-byte vectors into shared memory, reverses each there,
// and writes each where the other was: 16 KB of each run a block.
template <class T>
struct reverse_shape : tuning<256, 64, 0> {
  static constexpr int items = std::max(threads * bytes_per_thread / int(sizeof(T)), 1);
};

template <class T>
__global__ void __launch_bounds__(reverse_shape<T>::threads, reverse_shape<T>::min_blocks_per_sm)
    reverse_rejected_kernel(T* out, const std::size_t* num_selected, std::size_t n) {
  constexpr int threads = reverse_shape<T>::threads;
  constexpr int items = reverse_shape<T>::items;
  constexpr int words = int(ceil_div(std::size_t(items) * sizeof(T), 16)) + 1;
  __shared__ uninitialized_array<uint4, words> low_staged, high_staged;
  const std::size_t first = *num_selected;
  const std::size_t pairs = (n - first) / 2;
  const std::size_t first_pair = std::size_t(blockIdx.x) * items;
  if (first_pair >= pairs) return;
  const int count = int(min(pairs - first_pair, std::size_t(items)));
  T* const low = out + first + first_pair;
  T* const high = out + (n - first_pair - count);
  T* const low_items = reinterpret_cast<T*>(&low_staged[0]);
  T* const high_items = reinterpret_cast<T*>(&high_staged[0]);
  load_run<threads>(low, low_items, count);
  load_run<threads>(high, high_items, count);
  __syncthreads();
  for (int k = int(threadIdx.x); k < count / 2; k += threads) {
    const T low_item = low_items[k], high_item = high_items[k];
    low_items[k] = low_items[count - 1 - k];
    low_items[count - 1 - k] = low_item;
    high_items[k] = high_items[count - 1 - k];
    high_items[count - 1 - k] = high_item;
  }
  __syncthreads();
  store_staged<threads>(low, high_items, count);
  store_staged<threads>(high, low_items, count);
}

}  // namespace ppat::detail
