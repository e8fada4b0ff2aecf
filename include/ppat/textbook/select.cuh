// Textbook stream compaction: the two ways it is first taught.
//
//   1. scan_then_scatter_select_if  three steps: a kernel writes each item's flag, a textbook
//                                   scan (Blelloch, three-phase) turns the flags into output
//                                   positions, a kernel scatters the selected items there.
//                                   Stable; it moves the flags and positions through memory
//                                   several times, 8 bytes each per item.
//   2. warp_atomic_select_if        one kernel: each warp ballots its 32 items, and one lane
//                                   reserves room for the warp's selected items with one
//                                   atomicAdd on the count. Fast, but warps reserve in the
//                                   order they happen to run: the output holds the selected
//                                   items in an order that changes from run to run (the count
//                                   and the multiset of items do not).
//
// The production ppat::select_if does it in one pass, stable: each tile learns its output
// offset from the tiles before it through the look-back, and writes whole 16-byte vectors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/memory.cuh"
#include "../core/operators.cuh"
#include "../core/warp.cuh"
#include "scan.cuh"

namespace ppat::textbook {
namespace detail {

template <class T>
void require_select_buffers(const T* in, T* out, std::size_t* num_selected, std::size_t n,
                            const char* function);
template <class T, class Pred>
__global__ void selection_flags_kernel(const T* in, std::size_t n, Pred pred, std::size_t* flags);
template <class T>
__global__ void scatter_selected_kernel(const T* in, const std::size_t* flags,
                                        const std::size_t* positions, std::size_t n, T* out,
                                        std::size_t* num_selected);
template <class T, class Pred>
__global__ void warp_atomic_select_kernel(const T* in, std::size_t n, Pred pred, T* out,
                                          unsigned long long* num_selected);

}  // namespace detail

template <class T, class Pred>
void scan_then_scatter_select_if(const T* in, T* out, std::size_t* num_selected, std::size_t n,
                                 Pred pred, cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::textbook::scan_then_scatter_select_if";
  detail::require_select_buffers(in, out, num_selected, n, function);
  const ppat::detail::call_context call(stream, function);
  ppat::detail::require_device_readable(num_selected, 1, call, "num_selected");
  if (n == 0) {
    call.check(cudaMemsetAsync(num_selected, 0, sizeof(std::size_t), call.stream()),
               "cudaMemsetAsync");
    return;
  }
  ppat::detail::require_device_readable(in, n, call, "in");
  ppat::detail::require_device_readable(out, n, call, "out");
  ppat::detail::temporary_buffer<std::size_t> flags(n, call);
  ppat::detail::temporary_buffer<std::size_t> positions(n, call);
  constexpr int threads = 256;
  const unsigned blocks = ppat::detail::grid_stride_blocks(n, threads, call.limits(), 8);
  detail::selection_flags_kernel<<<blocks, threads, 0, call.stream()>>>(in, n, pred, flags.data());
  ppat::detail::check_launch(function, "selection_flags_kernel");
  detail::three_phase_scan<detail::blelloch_block_scan, true>(
      flags.data(), positions.data(), n, std::size_t{0}, plus{}, call.stream(), function);
  detail::scatter_selected_kernel<<<blocks, threads, 0, call.stream()>>>(
      in, flags.data(), positions.data(), n, out, num_selected);
  ppat::detail::check_launch(function, "scatter_selected_kernel");
  positions.release();
  flags.release();
}

template <class T, class Pred>
void warp_atomic_select_if(const T* in, T* out, std::size_t* num_selected, std::size_t n, Pred pred,
                           cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::textbook::warp_atomic_select_if";
  detail::require_select_buffers(in, out, num_selected, n, function);
  const ppat::detail::call_context call(stream, function);
  ppat::detail::require_device_readable(num_selected, 1, call, "num_selected");
  call.check(cudaMemsetAsync(num_selected, 0, sizeof(std::size_t), call.stream()),
             "cudaMemsetAsync");
  if (n == 0) return;
  ppat::detail::require_device_readable(in, n, call, "in");
  ppat::detail::require_device_readable(out, n, call, "out");
  constexpr int threads = 256;
  detail::warp_atomic_select_kernel<<<
      ppat::detail::grid_stride_blocks(n, threads, call.limits(), 8), threads, 0, call.stream()>>>(
      in, n, pred, out, reinterpret_cast<unsigned long long*>(num_selected));
  ppat::detail::check_launch(function, "warp_atomic_select_kernel");
}

namespace detail {

static_assert(sizeof(std::size_t) == sizeof(unsigned long long), "counts are 64-bit");

template <class T>
void require_select_buffers(const T* in, T* out, std::size_t* num_selected, std::size_t n,
                            const char* function) {
  ppat::detail::require_buffer(in, n, function, "in");
  ppat::detail::require_buffer(num_selected, 1, function, "num_selected");
  const std::size_t out_extent = ppat::detail::require_result_output(out, n, function, "out");
  ppat::detail::require_disjoint(in, n, out, out_extent, function, "in", "out");
  ppat::detail::require_disjoint(in, n, num_selected, 1, function, "in", "num_selected");
  ppat::detail::require_disjoint(out, out_extent, num_selected, 1, function, "out", "num_selected");
}

template <class T, class Pred>
__global__ void selection_flags_kernel(const T* in, std::size_t n, Pred pred, std::size_t* flags) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    flags[i] = pred(in[i]) ? 1 : 0;
}

// The exclusive scan of the flags is each selected item's place; the last item's place and
// flag make the count.
template <class T>
__global__ void scatter_selected_kernel(const T* in, const std::size_t* flags,
                                        const std::size_t* positions, std::size_t n, T* out,
                                        std::size_t* num_selected) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    if (flags[i] != 0) out[positions[i]] = in[i];
    if (i == n - 1) *num_selected = positions[i] + flags[i];
  }
}

// Whole warps walk the input 32 items at a time, so that every ballot has all lanes.
template <class T, class Pred>
__global__ void warp_atomic_select_kernel(const T* in, std::size_t n, Pred pred, T* out,
                                          unsigned long long* num_selected) {
  const int lane = ppat::detail::lane_id();
  const std::size_t warps = std::size_t(gridDim.x) * blockDim.x / 32;
  for (std::size_t first = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32 * 32;
       first < n; first += 32 * warps) {
    const std::size_t i = first + lane;
    const bool keep = i < n && pred(in[i]);
    const unsigned ballot = __ballot_sync(ppat::detail::full_warp, keep);
    unsigned long long base = 0;
    if (lane == 0 && ballot != 0) base = atomicAdd(num_selected, __popc(ballot));
    base = __shfl_sync(ppat::detail::full_warp, base, 0);
    if (keep) out[base + __popc(ballot & ((1u << lane) - 1u))] = in[i];
  }
}

}  // namespace detail
}  // namespace ppat::textbook
