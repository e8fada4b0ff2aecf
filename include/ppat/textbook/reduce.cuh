// Textbook reductions: the classic ladder (Harris, "Optimizing Parallel Reduction in CUDA",
// 2007), each rung one step from the last.
//
//   1. interleaved_reduce   a block of 1024 threads reduces 1024 items in shared memory in
//                           10 steps; in step s, thread t combines item t with item t + s
//                           when t is a multiple of 2s. The threads still at work are spread
//                           over every warp, so every warp stays busy, and diverges, to the
//                           last step.
//   2. sequential_reduce    thread t < s combines item t with item t + s: the working threads
//                           are the first ones, whole warps fall idle, and a warp's accesses
//                           are consecutive words.
//   3. first_add_reduce     512 threads for the 1024 items: each combines two items as it
//                           loads them, so no thread idles through the first step.
//   4. warp_shuffle_reduce  once 32 values are left, one warp finishes them with shuffles,
//                           without shared memory or barriers.
//   5. vector_reduce        a grid the size of the GPU: each thread folds many items read as
//                           16-byte vectors, warps fold by shuffles, and one more launch of
//                           one block folds the blocks' values.
//
// Rungs 1 to 4 leave one value a tile and run again on those values, a launch a level, until
// one tile is left; rung 5 takes two launches for any n. Each writes
// *out = init op in[0] op ... op in[n-1], as ppat::reduce does, and `init` alone for n == 0.
//
// The rungs combine items in an order of their own, so the operator must be one whose
// operands may be swapped: plus on arithmetic types, minimum and maximum on integers (for
// floating-point sums the rounding differs from a left-to-right sum). The production reduce
// takes any associative operator.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <limits>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/memory.cuh"
#include "../core/operators.cuh"
#include "../core/partial.cuh"
#include "../core/shared_storage.cuh"
#include "../core/vector_io.cuh"
#include "../core/warp.cuh"

namespace ppat::textbook {
namespace detail {

// The pieces, defined below in the order a call reaches them.
template <class BlockReduce, class T, class Op>
void reduce_by_levels(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
                      const char* function);
template <class T, class Op>
void reduce_in_two_launches(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
                            const char* function);
struct interleaved_block_reduce;
struct sequential_block_reduce;
struct first_add_block_reduce;
struct warp_shuffle_block_reduce;

}  // namespace detail

template <class T, class Op = plus>
void interleaved_reduce(const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                        cudaStream_t stream = 0) {
  detail::reduce_by_levels<detail::interleaved_block_reduce>(in, out, n, init, op, stream,
                                                             "ppat::textbook::interleaved_reduce");
}

template <class T, class Op = plus>
void sequential_reduce(const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                       cudaStream_t stream = 0) {
  detail::reduce_by_levels<detail::sequential_block_reduce>(in, out, n, init, op, stream,
                                                            "ppat::textbook::sequential_reduce");
}

template <class T, class Op = plus>
void first_add_reduce(const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                      cudaStream_t stream = 0) {
  detail::reduce_by_levels<detail::first_add_block_reduce>(in, out, n, init, op, stream,
                                                           "ppat::textbook::first_add_reduce");
}

template <class T, class Op = plus>
void warp_shuffle_reduce(const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                         cudaStream_t stream = 0) {
  detail::reduce_by_levels<detail::warp_shuffle_block_reduce>(
      in, out, n, init, op, stream, "ppat::textbook::warp_shuffle_reduce");
}

template <class T, class Op = plus>
void vector_reduce(const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                   cudaStream_t stream = 0) {
  detail::reduce_in_two_launches(in, out, n, init, op, stream, "ppat::textbook::vector_reduce");
}

namespace detail {

using ppat::detail::call_context;
using ppat::detail::ceil_div;
using ppat::detail::check_launch;
using ppat::detail::partial;
using ppat::detail::uninitialized_array;

// Before any CUDA call, then before any launch.
template <class T>
void require_reduce_buffers(const T* in, T* out, std::size_t n, const char* function) {
  ppat::detail::require_buffer(in, n, function, "in");
  ppat::detail::require_buffer(out, 1, function, "out");
}
template <class T>
void require_reduce_buffers_readable(const T* in, T* out, std::size_t n, const call_context& call) {
  ppat::detail::require_device_readable(in, n, call, "in");
  ppat::detail::require_device_readable(out, 1, call, "out");
}

template <class BlockReduce, class T, class Op>
__global__ void reduce_tiles_kernel(const T* in, std::size_t n, T* tile_values, T* out, T init,
                                    Op op);

// Level by level: each tile of the level leaves one value in `tile_values`, the next level's
// input, until one tile is left, whose block writes init op (its value) to `out`.
template <class BlockReduce, class T, class Op>
void reduce_by_levels(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
                      const char* function) {
  static_assert(ppat::detail::commutative<T, Op>,
                "the textbook reductions swap operands: plus on arithmetic types, minimum and "
                "maximum on integers (ppat::reduce takes any associative operator)");
  constexpr std::size_t tile = BlockReduce::tile_items;
  require_reduce_buffers(in, out, n, function);
  ppat::detail::require(n / tile < std::size_t(std::numeric_limits<int>::max()), function, "n",
                        "needs more tiles than one grid can launch");
  const call_context call(stream, function);
  require_reduce_buffers_readable(in, out, n, call);
  std::size_t scratch = 0;
  for (std::size_t level = n; level > tile; level = ceil_div(level, tile))
    scratch += ceil_div(level, tile);
  ppat::detail::temporary_buffer<T> values(scratch, call);
  const T* level_in = in;
  T* level_out = values.data();
  std::size_t count = n;
  while (count > tile) {
    const std::size_t tiles = ceil_div(count, tile);
    reduce_tiles_kernel<BlockReduce, T, Op>
        <<<unsigned(tiles), BlockReduce::threads, 0, call.stream()>>>(level_in, count, level_out,
                                                                      nullptr, init, op);
    check_launch(function, "reduce_tiles_kernel");
    level_in = level_out;
    level_out += tiles;
    count = tiles;
  }
  reduce_tiles_kernel<BlockReduce, T, Op>
      <<<1, BlockReduce::threads, 0, call.stream()>>>(level_in, count, nullptr, out, init, op);
  check_launch(function, "reduce_tiles_kernel");
  values.release();
}

// One block a tile. Every tile but the last is full; an empty one (n == 0) has no value.
template <class BlockReduce, class T, class Op>
__global__ void __launch_bounds__(BlockReduce::threads)
    reduce_tiles_kernel(const T* in, std::size_t n, T* tile_values, T* out, T init, Op op) {
  __shared__ uninitialized_array<T, BlockReduce::threads> values;
  const std::size_t first = std::size_t(blockIdx.x) * BlockReduce::tile_items;
  const unsigned valid = unsigned(min(std::size_t(BlockReduce::tile_items), n - first));
  if (valid == 0) {
    if (threadIdx.x == 0) *out = init;
    return;
  }
  const T value = BlockReduce::reduce_tile(in + first, valid, values, op);
  if (threadIdx.x == 0) {
    if (out != nullptr) {
      *out = op(init, value);
    } else {
      tile_values[blockIdx.x] = value;
    }
  }
}

// Rung 1. After the step of stride s, slot t (a multiple of 2s) holds the items
// [t, min(t + 2s, valid)); slots past the tile's end are never read.
struct interleaved_block_reduce {
  static constexpr int threads = 1024;
  static constexpr int tile_items = threads;

  template <class T, class Op>
  __device__ static T reduce_tile(const T* in, unsigned valid,
                                  uninitialized_array<T, threads>& values, Op op) {
    const unsigned t = threadIdx.x;
    if (t < valid) values[t] = in[t];
    __syncthreads();
    for (unsigned s = 1; s < threads; s *= 2) {
      if (t % (2 * s) == 0 && t + s < valid) values[t] = op(values[t], values[t + s]);
      __syncthreads();
    }
    return values[0];
  }
};

// Rungs 2 to 4 fold the live slots [0, live) in halves: in the step of stride s, slot t < s
// takes in slot t + s if that is live, which leaves [0, min(live, s)) live.
template <int Threads, class T, class Op>
__device__ void fold_halves(uninitialized_array<T, Threads>& values, unsigned live,
                            unsigned last_stride, Op op) {
  const unsigned t = threadIdx.x;
  for (unsigned s = Threads / 2; s >= last_stride; s /= 2) {
    if (t < s && t + s < live) values[t] = op(values[t], values[t + s]);
    __syncthreads();
  }
}

// Rung 2: one item a thread, then halves down to one slot.
struct sequential_block_reduce {
  static constexpr int threads = 1024;
  static constexpr int tile_items = threads;

  template <class T, class Op>
  __device__ static T reduce_tile(const T* in, unsigned valid,
                                  uninitialized_array<T, threads>& values, Op op) {
    if (threadIdx.x < valid) values[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    fold_halves(values, valid, 1, op);
    return values[0];
  }
};

// Items t and t + threads of the tile, combined on the way in: returns the live slots.
template <int Threads, class T, class Op>
__device__ unsigned load_two_a_thread(const T* in, unsigned valid,
                                      uninitialized_array<T, Threads>& values, Op op) {
  const unsigned t = threadIdx.x;
  if (t < valid) values[t] = t + Threads < valid ? op(in[t], in[t + Threads]) : in[t];
  __syncthreads();
  return min(valid, unsigned(Threads));
}

// Rung 3: two items a thread on the way in, then halves down to one slot.
struct first_add_block_reduce {
  static constexpr int threads = 512;
  static constexpr int tile_items = 2 * threads;

  template <class T, class Op>
  __device__ static T reduce_tile(const T* in, unsigned valid,
                                  uninitialized_array<T, threads>& values, Op op) {
    const unsigned live = load_two_a_thread(in, valid, values, op);
    fold_halves(values, live, 1, op);
    return values[0];
  }
};

// Rung 4: as rung 3 down to 32 slots, then warp 0 shuffles them together.
struct warp_shuffle_block_reduce {
  static constexpr int threads = 512;
  static constexpr int tile_items = 2 * threads;

  template <class T, class Op>
  __device__ static T reduce_tile(const T* in, unsigned valid,
                                  uninitialized_array<T, threads>& values, Op op) {
    const unsigned live = load_two_a_thread(in, valid, values, op);
    fold_halves(values, live, 32, op);
    partial<T> slot{T{}, false};
    if (threadIdx.x < 32) {
      if (threadIdx.x < live) slot = {values[threadIdx.x], true};
      slot = ppat::detail::warp_reduce(slot, op);
    }
    return slot.value;  // thread 0's: slot 0 is always live
  }
};

// ---- Rung 5 ----------------------------------------------------------------------------

constexpr int vector_threads = 256;
constexpr int vector_blocks_per_sm = 8;

template <class T, class Op>
void launch_vector_reduce(const T* in, std::size_t n, unsigned blocks, T* block_values, T* out,
                          T init, Op op, const call_context& call);
template <bool Aligned, class T, class Op>
__global__ void vector_reduce_kernel(const T* in, std::size_t n, T* block_values, T* out, T init,
                                     Op op);

// A grid of at most what the GPU holds at once, each block folding its share into one
// value; then one block folds those, in the same stream.
template <class T, class Op>
void reduce_in_two_launches(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
                            const char* function) {
  static_assert(ppat::detail::commutative<T, Op>,
                "the textbook reductions swap operands: plus on arithmetic types, minimum and "
                "maximum on integers (ppat::reduce takes any associative operator)");
  require_reduce_buffers(in, out, n, function);
  const call_context call(stream, function);
  require_reduce_buffers_readable(in, out, n, call);
  const unsigned blocks = ppat::detail::grid_stride_blocks(
      n / ppat::detail::items_per_vector<T>, vector_threads, call.limits(), vector_blocks_per_sm);
  if (blocks == 1) {
    launch_vector_reduce(in, n, 1, static_cast<T*>(nullptr), out, init, op, call);
    return;
  }
  ppat::detail::temporary_buffer<T> values(blocks, call);
  launch_vector_reduce(in, n, blocks, values.data(), static_cast<T*>(nullptr), init, op, call);
  launch_vector_reduce<T>(values.data(), blocks, 1, nullptr, out, init, op, call);
  values.release();
}

// 16-byte vector loads where `in` is aligned to them, item loads where it is not.
template <class T, class Op>
void launch_vector_reduce(const T* in, std::size_t n, unsigned blocks, T* block_values, T* out,
                          T init, Op op, const call_context& call) {
  if (ppat::detail::aligned_to(in, 16)) {
    vector_reduce_kernel<true>
        <<<blocks, vector_threads, 0, call.stream()>>>(in, n, block_values, out, init, op);
  } else {
    vector_reduce_kernel<false>
        <<<blocks, vector_threads, 0, call.stream()>>>(in, n, block_values, out, init, op);
  }
  check_launch(call.function(), "vector_reduce_kernel");
}

// Thread i folds vectors i, i + grid threads, ...: every block has at least one vector when
// the grid has more than one block. The items after the last whole vector go to the first
// threads. Each warp folds its threads' values by shuffles, and warp 0 the warps' values.
template <bool Aligned, class T, class Op>
__global__ void __launch_bounds__(vector_threads)
    vector_reduce_kernel(const T* in, std::size_t n, T* block_values, T* out, T init, Op op) {
  constexpr int vec = ppat::detail::items_per_vector<T>;
  constexpr int warps = vector_threads / 32;
  __shared__ uninitialized_array<partial<T>, warps> warp_values;
  const std::size_t thread = std::size_t(blockIdx.x) * vector_threads + threadIdx.x;
  const std::size_t vectors = n / vec;
  partial<T> folded{T{}, false};
  for (std::size_t v = thread; v < vectors; v += std::size_t(gridDim.x) * vector_threads) {
    T items[vec];
    ppat::detail::load_items<Aligned>(in + v * vec, items);
#pragma unroll
    for (int j = 0; j < vec; ++j)
      folded = ppat::detail::then(folded, partial<T>{items[j], true}, op);
  }
  if (vectors * vec + thread < n) {
    folded = ppat::detail::then(folded, partial<T>{in[vectors * vec + thread], true}, op);
  }
  folded = ppat::detail::warp_reduce(folded, op);
  const int warp = int(threadIdx.x / 32);
  if (ppat::detail::lane_id() == 0) warp_values[warp] = folded;
  __syncthreads();
  if (warp != 0) return;
  const partial<T> block = ppat::detail::warp_reduce(ppat::detail::lane_id() < warps
                                                         ? warp_values[ppat::detail::lane_id()]
                                                         : partial<T>{T{}, false},
                                                     op);
  if (threadIdx.x != 0) return;
  if (out != nullptr) {
    *out = block.valid ? op(init, block.value) : init;
  } else {
    block_values[blockIdx.x] = block.value;
  }
}

}  // namespace detail
}  // namespace ppat::textbook
