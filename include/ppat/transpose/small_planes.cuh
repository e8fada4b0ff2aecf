// Batches of small planes (65536 matrices of 8 x 24, say): a tile would hold one plane and
// stay mostly empty, one block to a few hundred bytes. When consecutive planes follow each
// other on both sides, a block instead moves a group of whole planes: it reads them as one
// run into shared memory and writes them as one run, each output element gathered from its
// plane's row in shared memory. Both runs are 16-byte vectors where the group starts on a
// 16-byte boundary on both sides, elements otherwise.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "plan.cuh"

namespace ppat::detail {

// 256 threads move groups of about 8 KB (against 4 and 16 KB, docs/patterns.md
// "Transpose"), planes of at most 2 KB: an eighth of a tile.
struct small_planes_shape : tuning<256, 32, 0> {
  static constexpr std::size_t group_bytes = 8 * 1024;
  static constexpr std::size_t max_plane_bytes = 2 * 1024;
};

template <class T, bool Vectors>
__global__ void transpose_small_planes_kernel(const T* in, T* out, plane_layout layout,
                                              unsigned group_planes, std::size_t groups_per_run,
                                              std::size_t groups);
template <class T, bool Vectors>
__device__ void load_planes(const T* in, unsigned count, T* staged);
template <class T, bool Vectors>
__device__ void store_transposed_planes(const T* staged, unsigned rows, unsigned cols,
                                        unsigned count, T* out);

// Planes of at most max_plane_bytes, tight on both sides, whose innermost batch axis steps
// one plane on both sides, go to the small-planes kernel (returns true).
template <class T>
bool transpose_small_planes(const T* in, T* out, const plane_layout& layout,
                            const call_context& call) {
  using shape = small_planes_shape;
  if (layout.batch_rank == 0) return false;
  const int inner = layout.batch_rank - 1;  // the batch axis that runs fastest
  const std::size_t plane = layout.rows * layout.cols;
  const bool runs = layout.in_row_stride == layout.cols && layout.out_row_stride == layout.rows &&
                    layout.batch_in_stride[inner] == plane &&
                    layout.batch_out_stride[inner] == plane;
  if (!runs || plane * sizeof(T) > shape::max_plane_bytes) return false;
  // Planes a group: about group_bytes, a whole number of 16-byte vectors.
  std::size_t group_planes = std::max<std::size_t>(1, shape::group_bytes / (plane * sizeof(T)));
  while (group_planes * plane * sizeof(T) % 16 != 0)
    ++group_planes;
  const std::size_t run_planes = layout.batch_extent[inner];  // consecutive planes
  group_planes = std::min(group_planes, run_planes);
  const std::size_t groups_per_run = ceil_div(run_planes, group_planes);
  std::size_t groups = groups_per_run;
  for (int d = 0; d < inner; ++d)
    groups *= layout.batch_extent[d];
  // Vectors when every group starts on a 16-byte boundary on both sides.
  const std::size_t group_bytes = group_planes * plane * sizeof(T);
  const bool vectors = planes_aligned(in, layout.batch_in_stride, inner) &&
                       planes_aligned(out, layout.batch_out_stride, inner) && group_bytes % 16 == 0;
  const std::size_t shared_bytes = group_bytes;
  const auto launch = [&](auto kernel) {
    kernel<<<blocks_for(groups), shape::threads, shared_bytes, call.stream()>>>(
        in, out, layout, unsigned(group_planes), groups_per_run, groups);
  };
  if (vectors) {
    launch(transpose_small_planes_kernel<T, true>);
  } else {
    launch(transpose_small_planes_kernel<T, false>);
  }
  check_launch(call.function(), "transpose_small_planes_kernel");
  return true;
}

// Group g: run g / groups_per_run (its outer batch axes), planes from
// (g % groups_per_run) * group_planes on along the innermost one.
template <class T, bool Vectors>
__global__ void __launch_bounds__(small_planes_shape::threads)
    transpose_small_planes_kernel(const T* in, T* out, plane_layout layout, unsigned group_planes,
                                  std::size_t groups_per_run, std::size_t groups) {
  extern __shared__ uint4 staged_vectors[];
  T* staged = reinterpret_cast<T*>(staged_vectors);
  const int inner = layout.batch_rank - 1;
  const std::size_t run_planes = layout.batch_extent[inner];
  for (std::size_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const std::size_t run = g / groups_per_run;
    const std::size_t first_plane = (g - run * groups_per_run) * group_planes;
    const unsigned count = unsigned(min(std::size_t(group_planes), run_planes - first_plane));
    std::size_t in_offset = 0, out_offset = 0;
    add_plane_offsets(run * run_planes + first_plane, layout, in_offset, out_offset);
    const unsigned items = count * unsigned(layout.rows * layout.cols);
    load_planes<T, Vectors>(in + in_offset, items, staged);
    __syncthreads();
    store_transposed_planes<T, Vectors>(staged, unsigned(layout.rows), unsigned(layout.cols), items,
                                        out + out_offset);
    if (g + gridDim.x < groups) __syncthreads();  // the next group reuses `staged`
  }
}

// `count` elements from `in` into `staged`: 16-byte vectors with Vectors (the last vector
// may be cut only where the run ends the batch: element by element there).
template <class T, bool Vectors>
__device__ void load_planes(const T* in, unsigned count, T* staged) {
  constexpr unsigned vec = unsigned(16 / sizeof(T));
  unsigned first_item = 0;  // of those moved element by element
  if constexpr (Vectors) {
    const unsigned whole = count / vec;
    for (unsigned v = threadIdx.x; v < whole; v += blockDim.x)
      reinterpret_cast<uint4*>(staged)[v] = reinterpret_cast<const uint4*>(in)[v];
    first_item = whole * vec;
  }
  for (unsigned i = first_item + threadIdx.x; i < count; i += blockDim.x)
    staged[i] = in[i];
}

// Output element j of the group: plane j / (rows cols); within it, output row a and
// element b, which is element a of row b of the staged plane.
template <class T, bool Vectors>
__device__ void store_transposed_planes(const T* staged, unsigned rows, unsigned cols,
                                        unsigned count, T* out) {
  constexpr unsigned vec = unsigned(16 / sizeof(T));
  const unsigned plane = rows * cols;
  const auto staged_of = [&](unsigned j) {
    const unsigned p = j / plane, in_plane = j - p * plane, a = in_plane / rows;
    return staged[p * plane + (in_plane - a * rows) * cols + a];
  };
  unsigned first_item = 0;  // of those moved element by element
  if constexpr (Vectors) {
    const unsigned whole = count / vec;
    for (unsigned v = threadIdx.x; v < whole; v += blockDim.x) {
      T items[vec];
#pragma unroll
      for (unsigned e = 0; e < vec; ++e)
        items[e] = staged_of(v * vec + e);
      uint4 raw;
      std::memcpy(&raw, items, 16);
      reinterpret_cast<uint4*>(out)[v] = raw;
    }
    first_item = whole * vec;
  }
  for (unsigned j = first_item + threadIdx.x; j < count; j += blockDim.x)
    out[j] = staged_of(j);
}

}  // namespace ppat::detail
