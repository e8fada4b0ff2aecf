// Textbook top-k: sort everything, take the first k, with ppat::top_k's semantics (every key
// type, both orders, ties to the lower position, NaN above +inf).
//
//   sort_then_take_top_k   the keys sorted stably with their positions as values (the
//                          production ppat sort), then the first k of each copied out. The
//                          whole input moves through every radix pass, however small k is.
//
// The production ppat::top_k reads the input once or twice to find the k-th key a digit at a
// time, and sorts only the k it takes (sort/radix_select.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/memory.cuh"
#include "../sort.cuh"
#include "../top_k.cuh"

namespace ppat::textbook {
namespace detail {
template <class Index>
__global__ void positions_kernel(Index* positions, std::size_t n);
}  // namespace detail

template <class K, class Index>
void sort_then_take_top_k(const K* in, std::size_t n, std::size_t k, K* keys_out,
                          Index* indices_out, order ord = order::descending,
                          cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::textbook::sort_then_take_top_k";
  ppat::detail::require_top_k_arguments(in, 1, n, k, keys_out, indices_out, ord, function);
  if (k == 0) return;
  const ppat::detail::call_context call(stream, function);
  ppat::detail::require_top_k_buffers_readable(in, n, k, keys_out, indices_out, call);
  ppat::detail::temporary_buffer<K> sorted_keys(n, call);
  ppat::detail::temporary_buffer<Index> positions(n, call);
  ppat::detail::temporary_buffer<Index> sorted_positions(n, call);
  constexpr int threads = 256;
  const unsigned blocks = unsigned(std::min<std::size_t>(ppat::detail::ceil_div(n, threads), 4096));
  detail::positions_kernel<<<blocks, threads, 0, call.stream()>>>(positions.data(), n);
  ppat::detail::check_launch(function, "positions_kernel");
  // A stable sort keeps equal keys by position: the lower position first, in either order.
  ppat::detail::sort_on_its_path(in, sorted_keys.data(), positions.data(), sorted_positions.data(),
                                 n, ord, 0, 8 * int(sizeof(K)), call);
  ppat::detail::copy_items(sorted_keys.data(), keys_out, k, call);
  ppat::detail::copy_items(sorted_positions.data(), indices_out, k, call);
  sorted_positions.release();
  positions.release();
  sorted_keys.release();
}

namespace detail {

// positions[i] = i.
template <class Index>
__global__ void positions_kernel(Index* positions, std::size_t n) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    positions[i] = Index(i);
}

}  // namespace detail
}  // namespace ppat::textbook
