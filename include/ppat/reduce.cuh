// Production reduce: deterministic, read at the memory limit.
//
//   ppat::reduce(in, out, n, init, op, stream)   *out = init op in[0] op ... op in[n-1]
//
// Any associative `op`, commutative or not; any trivially copyable T. Blocks reduce
// contiguous runs of tiles, read with 16-byte accesses (item-sized ones where `in` is not
// 16-byte aligned), into one value each; the last block to finish combines those in order
// with `init`, in the same launch. Small inputs take one block: up to 64 KB a block that
// reads everything at once, up to 2^17 items (512 KB at most) one that reads tiles.
// The split and the tiles depend only on n and the GPU, not on the alignment of `in`, so
// floating-point results are the same bits on every run.
//
// Where ppat knows the operator is commutative (plus on arithmetic types, minimum and
// maximum on integers), each thread folds everything it reads into one value; any other
// operator is combined strictly in order, a warp row at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "core/arguments.cuh"
#include "core/atomic.cuh"
#include "core/block.cuh"
#include "core/device.cuh"
#include "core/error.cuh"
#include "core/launch.cuh"
#include "core/memory.cuh"
#include "core/operators.cuh"
#include "core/partial.cuh"
#include "core/shared_storage.cuh"
#include "core/vector_io.cuh"
#include "core/warp.cuh"

namespace ppat {
namespace detail {

template <class T, class Op>
void reduce(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
            const char* function);

}  // namespace detail

template <class T, class Op = plus>
void reduce(const T* in, T* out, std::size_t n, T init = T{}, Op op = {}, cudaStream_t stream = 0) {
  detail::reduce(in, out, n, init, op, stream, "ppat::reduce");
}

namespace detail {

// A tile of `Tuning`'s threads: each warp owns `rows` x 32 x `vec` consecutive items, row r
// of lane l being the `vec` items at r * 32 * vec + l * vec: every row is one coalesced
// access per warp. A thread holds its policy's bytes, at most 16 rows.
template <class Tuning, class T, int Vec>
struct reduce_tile_shape : Tuning {
  static constexpr int vec = Vec;
  static constexpr int rows = Tuning::groups_per_thread(int(sizeof(T)) * Vec, 16);
  static constexpr int warp_items = 32 * vec * rows;
  static constexpr int tile_items = Tuning::warps * warp_items;
};

// The H200's policies: 4 blocks an SM, each keeping 32 KB of items in flight (128 KB an SM). Items
// of up to 8 bytes take blocks of 512 threads with 64 bytes each: against 256 threads with 128
// bytes, twice the warps hide the combining (docs/patterns.md, how the reduce got here).
// Larger items keep 256 threads with 128 bytes, whose registers fit them.
template <class T>
using reduce_tuning =
    std::conditional_t<sizeof(T) <= 8, tuning<512, 64, 4, 4>, tuning<256, 128, 4, 4>>;
// Small inputs take one block, which needs no memory for block results. Up to 64 KB its
// threads read every vector at once, one load each in flight, and the kernel is small: at
// these sizes a call is a launch, a few L2 round trips and the instructions the SM must
// fetch (docs/patterns.md, "Scan", its paragraph on the reduce). Above, up to 2^17 items and
// 512 KB, one block of 1024 threads reads tiles, 128 KB in flight; past 2^17 items, the
// folds of sub-word items on one SM cost more than a grid's start.
template <int Threads, int Vectors>
struct reduce_one_read_shape {
  static constexpr int threads = Threads;
  static constexpr int warps = Threads / 32;
  static constexpr int vectors = Vectors;  // a thread's
  static constexpr std::size_t bytes = std::size_t(Threads) * Vectors * 16;
};
using reduce_one_read_small = reduce_one_read_shape<512, 2>;   // up to 16 KB
using reduce_one_read_large = reduce_one_read_shape<1024, 4>;  // up to 64 KB
using reduce_single_block_tuning = tuning<1024, 128, 1>;
constexpr int reduce_single_block_tiles = 4;  // of the 1024-thread shape
constexpr std::size_t reduce_single_block_items = std::size_t{1} << 17;

// Where a reduction's result goes: `init` and then the items, into a T (the public call),
// or the items alone into a partial that is absent when there are none (one rank's share of
// a distributed reduce, which has no init of its own).
template <class T>
struct result_after_init {
  T* out;
  T init;
  __device__ partial<T> start() const { return {init, true}; }
  __device__ void write(const partial<T>& total) const { *out = total.value; }
};
template <class T>
struct result_as_partial {
  partial<T>* out;
  __device__ partial<T> start() const { return {T{}, false}; }
  __device__ void write(const partial<T>& total) const { *out = total; }
};

template <class T, class Result, class Op>
void reduce_into(const T* in, std::size_t n, Result result, Op op, const call_context& call);
template <bool Aligned, class T, class Result, class Op>
void launch_reduce(const T* in, std::size_t n, Result result, Op op, const call_context& call);
template <class T>
struct block_results;
template <class Shape, bool Commutative, bool Aligned, class T, class Result, class Op>
__global__ void reduce_tiles_kernel(const T* in, std::size_t n, block_results<T> results,
                                    Result result, Op op);
template <class Shape, bool Commutative, bool Aligned, class T, class Result, class Op>
__global__ void reduce_one_read_kernel(const T* in, unsigned n, Result result, Op op);

template <class T, class Op>
void reduce(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
            const char* function) {
  require_buffer(in, n, function, "in");
  require_buffer(out, 1, function, "out");
  const call_context call(stream, function);
  require_device_readable(in, n, call, "in");
  require_device_readable(out, 1, call, "out");
  reduce_into(in, n, result_after_init<T>{out, init}, op, call);
}

template <class T, class Result, class Op>
void reduce_into(const T* in, std::size_t n, Result result, Op op, const call_context& call) {
  if (items_per_vector<T> == 1 || aligned_to(in, 16)) {
    launch_reduce<true>(in, n, result, op, call);
  } else if constexpr (items_per_vector<T> != 1) {
    launch_reduce<false>(in, n, result, op, call);
  }
}

// Each block's result, and a ticket counter that tells the last block to finish: a
// stream_scratch of its own.
template <class T>
struct block_results {
  static constexpr std::size_t values_offset = alignof(T) > 16 ? alignof(T) : 16;
  unsigned char* memory;

  static std::size_t bytes_for(unsigned blocks) { return values_offset + blocks * sizeof(T); }
  __device__ unsigned* tickets() const { return reinterpret_cast<unsigned*>(memory); }
  __device__ T* values() const { return reinterpret_cast<T*>(memory + values_offset); }
};

template <bool Aligned, class T, class Result, class Op>
void launch_reduce(const T* in, std::size_t n, Result result, Op op, const call_context& call) {
  constexpr int vec = items_per_vector<T>;
  using shape = reduce_tile_shape<reduce_tuning<T>, T, vec>;
  using small_shape = reduce_tile_shape<reduce_single_block_tuning, T, vec>;
  constexpr bool reorder = commutative<T, Op>;
  const auto read_at_once = [&](auto shape) {
    using one_read = decltype(shape);
    reduce_one_read_kernel<one_read, reorder, Aligned>
        <<<1, one_read::threads, 0, call.stream()>>>(in, unsigned(n), result, op);
    check_launch(call.function(), "reduce_one_read_kernel");
  };
  if (n * sizeof(T) <= reduce_one_read_small::bytes) return read_at_once(reduce_one_read_small{});
  if (n * sizeof(T) <= reduce_one_read_large::bytes) return read_at_once(reduce_one_read_large{});
  if (n <= std::min(reduce_single_block_items,
                    std::size_t(reduce_single_block_tiles) * small_shape::tile_items)) {
    reduce_tiles_kernel<small_shape, reorder, Aligned>
        <<<1, small_shape::threads, 0, call.stream()>>>(in, n, block_results<T>{}, result, op);
    check_launch(call.function(), "reduce_tiles_kernel");
    return;
  }
  const std::size_t tiles = ceil_div(n, shape::tile_items);
  const unsigned blocks = grid_stride_blocks<shape>(tiles, 1, call.limits());
  stream_scratch memory(block_results<T>::bytes_for(blocks), ticket_and_values, call);
  reduce_tiles_kernel<shape, reorder, Aligned><<<blocks, shape::threads, 0, call.stream()>>>(
      in, n, block_results<T>{memory.data()}, result, op);
  check_launch(call.function(), "reduce_tiles_kernel");
  memory.release();
}

// Warp `warp`'s share of tiles [first_tile, end_tile) of the n items at `in` (Shape::warps
// warps a tile), folded: the warp's result, the same on every lane, absent where the warp
// read nothing. Combined over the warps in warp order, the results fold the run's items in
// order, so any associative operator may be given; Commutative ones are folded by each
// thread first. The items each thread folds, and how, do not depend on Aligned, which
// only says whether `in` allows 16-byte reads.
template <class Shape, bool Commutative, bool Aligned, class T, class Op>
__device__ partial<T> fold_tile_run(const T* in, std::size_t n, std::size_t first_tile,
                                    std::size_t end_tile, int warp, Op op) {
  constexpr int vec = Shape::vec;
  constexpr int rows = Shape::rows;
  const int lane = lane_id();
  // Commutative: this thread's items, in any order. Otherwise: the warp's rows so far, in
  // order, the same on every lane.
  partial<T> folded{T{}, false};
  const auto fold_row = [&](const partial<T>& lane_row) {
    folded = then(folded, Commutative ? lane_row : warp_reduce(lane_row, op), op);
  };
  // The block's run is `run_tiles` x `warps` warp tiles of `warp_items` items. Commutative:
  // warp w reads the w-th warp tile of each tile, so the block reads a tile at a time.
  // Otherwise warp w reads the w-th run of `run_tiles` consecutive warp tiles, so that the
  // warps' results, combined in warp order, combine the items in order.
  const std::size_t run_tiles = end_tile - first_tile;
  const std::size_t first_warp_tile =
      first_tile * Shape::warps + (Commutative ? std::size_t(warp) : warp * run_tiles);
  const std::size_t stride = (Commutative ? Shape::warps : 1) * std::size_t(Shape::warp_items);
  const std::size_t run_first = first_warp_tile * Shape::warp_items;
  for (std::size_t warp_first = run_first; warp_first != run_first + run_tiles * stride;
       warp_first += stride) {
    const std::size_t lane_first = warp_first + std::size_t(lane) * vec;
    if (warp_first + Shape::warp_items <= n) {
      T items[rows][vec];
#pragma unroll
      for (int r = 0; r < rows; ++r)
        load_items<Aligned>(in + lane_first + std::size_t(r) * 32 * vec, items[r]);
#pragma unroll
      for (int r = 0; r < rows; ++r) {
        T row = items[r][0];
#pragma unroll
        for (int j = 1; j < vec; ++j)
          row = op(row, items[r][j]);
        fold_row({row, true});
      }
    } else {
      // The warp tile that n cuts: whole vectors as above, the one that n cuts item by item.
#pragma unroll
      for (int r = 0; r < rows; ++r) {
        const std::size_t row_first = lane_first + std::size_t(r) * 32 * vec;
        partial<T> row{T{}, false};
        if (row_first + vec <= n) {
          T items[vec];
          load_items<Aligned>(in + row_first, items);
          row = {items[0], true};
#pragma unroll
          for (int j = 1; j < vec; ++j)
            row.value = op(row.value, items[j]);
        } else {
#pragma unroll
          for (int j = 0; j < vec; ++j) {
            if (row_first + j < n) row = then(row, partial<T>{in[row_first + j], true}, op);
          }
        }
        fold_row(row);
      }
    }
  }

  if constexpr (Commutative) {
    // Without flags, the identity standing for a lane that read nothing.
    constexpr T identity = identity_of<T, Op>;
    return {warp_reduce_commutative(folded.valid ? folded.value : identity, op),
            __any_sync(full_warp, folded.valid) != 0};
  } else {
    return folded;
  }
}

// One block, every item read at once: thread t holds Shape::vectors 16-byte vectors (items
// one by one where `in` is not aligned), all loads in flight together, and folds them. A
// commutative operator takes vector r * threads + t (each load one coalesced access per
// warp) and folds from its identity, without flags for "nothing yet": at these sizes the
// flags' branches and shuffles took a third of the kernel (docs/patterns.md, "Scan", its
// paragraph on the reduce). Any other takes vectors t * vectors to t * vectors + vectors - 1,
// so that threads, warps and the block combine in order. The vector that n cuts is folded
// item by item in a loop that is not unrolled: the kernel stays small, for the SM fetches
// its instructions on every launch. n * sizeof(T) is at most Shape::bytes.
template <class Shape, bool Commutative, bool Aligned, class T, class Result, class Op>
__global__ void __launch_bounds__(Shape::threads)
    reduce_one_read_kernel(const T* in, unsigned n, Result result, Op op) {
  constexpr int vec = items_per_vector<T>;
  constexpr int vectors = Shape::vectors;
  const auto first_item = [](int r) {
    const unsigned vector =
        Commutative ? r * Shape::threads + threadIdx.x : threadIdx.x * vectors + r;
    return vector * vec;
  };

  T items[vectors][vec];
#pragma unroll
  for (int r = 0; r < vectors; ++r) {
    if (first_item(r) + vec <= n) load_items<Aligned>(in + first_item(r), items[r]);
  }
  // Folds this thread's items into `folded` with `fold(folded, item)`.
  const auto fold_items = [&](auto& folded, auto fold) {
#pragma unroll
    for (int r = 0; r < vectors; ++r) {
      const unsigned first = first_item(r);
      if (first + vec <= n) {
#pragma unroll
        for (int j = 0; j < vec; ++j)
          fold(folded, items[r][j]);
      } else if (first < n) {
#pragma unroll 1
        for (unsigned i = first; i < n; ++i)
          fold(folded, load_item(in + i));
      }
    }
  };

  if constexpr (Commutative) {
    constexpr T identity = identity_of<T, Op>;
    __shared__ block_reduce_commutative_storage<Shape::warps, T> warp_results;
    T folded = identity;
    fold_items(folded, [&](T& into, const T& item) { into = op(into, item); });
    const T total =
        block_reduce_commutative(warp_reduce_commutative(folded, op), op, identity, warp_results);
    if (threadIdx.x == 0) result.write(then(result.start(), partial<T>{total, n != 0}, op));
  } else {
    __shared__ block_reduce_storage<Shape::warps, T> warp_results;
    partial<T> folded{T{}, false};
    fold_items(folded, [&](partial<T>& into, const T& item) {
      into = then(into, partial<T>{item, true}, op);
    });
    const partial<T> total = block_reduce_warps(warp_reduce(folded, op), op, warp_results);
    if (threadIdx.x == 0) result.write(then(result.start(), total, op));
  }
}

// Block b reduces tiles [tiles * b / grid, tiles * (b + 1) / grid): a contiguous run, and at
// least one tile since grid <= tiles. One block writes the start and then its result;
// several write one result each to `results`, and the last of them writes the start and then
// the results in order.
template <class Shape, bool Commutative, bool Aligned, class T, class Result, class Op>
__global__ void __launch_bounds__(Shape::threads, Shape::min_blocks_per_sm)
    reduce_tiles_kernel(const T* in, std::size_t n, block_results<T> results, Result result,
                        Op op) {
  using warp_storage =
      std::conditional_t<Commutative, block_reduce_commutative_storage<Shape::warps, T>,
                         block_reduce_storage<Shape::warps, T>>;
  __shared__ warp_storage warp_results;
  __shared__ bool is_last;
  const int warp = int(threadIdx.x / 32);
  const std::size_t tiles = ceil_div(n, Shape::tile_items);
  const std::size_t first_tile = tiles * blockIdx.x / gridDim.x;
  const std::size_t end_tile = tiles * (blockIdx.x + 1) / gridDim.x;
  // The block's reduction of one result a warp, for warp 0; every block has items to reduce.
  // Without flags where the operator commutes (reduce_one_read_kernel says why).
  const auto block_reduce = [&](const partial<T>& warp_result) -> partial<T> {
    if constexpr (Commutative) {
      constexpr T identity = identity_of<T, Op>;
      return {block_reduce_commutative(warp_result.valid ? warp_result.value : identity, op,
                                       identity, warp_results),
              true};
    } else {
      return block_reduce_warps(warp_result, op, warp_results);
    }
  };

  const partial<T> block_result = block_reduce(
      fold_tile_run<Shape, Commutative, Aligned>(in, n, first_tile, end_tile, warp, op));
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) {
      result.write(then(result.start(), block_result, op));
    } else {
      results.values()[blockIdx.x] = block_result.value;
      is_last = last_to_finish(results.tickets(), gridDim.x);
    }
  }
  if (gridDim.x == 1) return;
  __syncthreads();
  if (!is_last) return;
  // Every block's result is in. Each thread reads `results_per_thread` consecutive ones, all
  // reads of a chunk in flight together, and combines them in order; each warp combines its
  // row, then warp 0 the rows, in order. Every chunk costs one L2 round trip, so a warp
  // reading one row after another was far slower, and with one result a thread the 528
  // blocks the H200 runs took two chunks where 512 took one; with four a thread, the 8-byte
  // kernels spilled (docs/patterns.md, "Scan", how the reduce got here).
  constexpr unsigned results_per_thread = 2;
  constexpr unsigned chunk = Shape::threads * results_per_thread;
  partial<T> total = result.start();
  for (unsigned first = 0; first < gridDim.x; first += chunk) {
    const unsigned mine = first + threadIdx.x * results_per_thread;
    T values[results_per_thread];
#pragma unroll
    for (unsigned j = 0; j < results_per_thread; ++j) {
      if (mine + j < gridDim.x) values[j] = load_published(&results.values()[mine + j]);
    }
    partial<T> thread_result{T{}, false};
#pragma unroll
    for (unsigned j = 0; j < results_per_thread; ++j) {
      if (mine + j < gridDim.x)
        thread_result = then(thread_result, partial<T>{values[j], true}, op);
    }
    partial<T> row;
    if constexpr (Commutative) {
      constexpr T identity = identity_of<T, Op>;
      row = {warp_reduce_commutative(thread_result.valid ? thread_result.value : identity, op),
             true};
    } else {
      row = warp_reduce(thread_result, op);
    }
    __syncthreads();  // the previous chunk's rows have been read
    const partial<T> rows = block_reduce(row);
    if (warp == 0) total = then(total, rows, op);
  }
  if (threadIdx.x == 0) result.write(total);
}

}  // namespace detail
}  // namespace ppat
