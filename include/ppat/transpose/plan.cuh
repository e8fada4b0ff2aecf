// The host side of the transposes: the layout of a set of planes, and a permute reduced to
// the fewest axes and then to a copy, planes, or a gather of whole rows. Nothing here
// launches or touches device memory, so CI tests it without a GPU.
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "../core/vector_io.cuh"

namespace ppat::detail {

constexpr int max_permute_rank = 8;

// out(i, a, b) = in(i, b, a) over `batch_rank` batch axes; offsets in elements.
struct plane_layout {
  std::size_t rows;            // b: rows of `in`, the contiguous axis of `out`
  std::size_t cols;            // a: the contiguous axis of `in`, rows of `out`
  std::size_t in_row_stride;   // between consecutive b in `in`
  std::size_t out_row_stride;  // between consecutive a in `out`
  int batch_rank;
  std::size_t batch_extent[max_permute_rank];
  std::size_t batch_in_stride[max_permute_rank];
  std::size_t batch_out_stride[max_permute_rank];
};

// One rows x cols matrix, row r of `in` at r * ld_in, row c of `out` at c * ld_out.
inline plane_layout matrix_layout(std::size_t rows, std::size_t cols, std::size_t ld_in,
                                  std::size_t ld_out) {
  plane_layout layout{};
  layout.rows = rows;
  layout.cols = cols;
  layout.in_row_stride = ld_in;
  layout.out_row_stride = ld_out;
  return layout;
}

// Adds the offsets of plane number `plane` (over the batch axes, the last one fastest).
__host__ __device__ inline void add_plane_offsets(std::size_t plane, const plane_layout& layout,
                                                  std::size_t& in_offset, std::size_t& out_offset) {
  for (int d = layout.batch_rank - 1; d >= 0; --d) {
    const std::size_t index = plane % layout.batch_extent[d];
    plane /= layout.batch_extent[d];
    in_offset += index * layout.batch_in_stride[d];
    out_offset += index * layout.batch_out_stride[d];
  }
}

// Work item w of `per_plane` in each plane: its plane, and its number within the plane.
__host__ __device__ inline void split_plane(std::size_t w, unsigned per_plane, int batch_rank,
                                            std::size_t& plane, unsigned& in_plane) {
  plane = batch_rank > 0 ? w / per_plane : 0;
  in_plane = unsigned(w - plane * per_plane);
}

// Where a tile of the planes lies, and how much of it the matrix covers.
struct tile_place {
  std::size_t in_offset, out_offset;
  int a_count, b_count;
};

// How the tiles of each plane are numbered: first the `fast` tiles along one side (b, the
// output rows, or a, the input rows), then the next strip of them.
struct tile_order {
  unsigned fast;
  unsigned plane_tiles;
  bool along_b;
};

// Tiles along b first where a plane has at least this many tiles on both sides. Writing
// the output rows' neighbouring pieces side by side moved 8192^2 f32 at 97% of copy
// instead of 93% and odd shapes 9-25% faster; with few tiles across (2033601 x 33,
// two), the input rows read in two passes lost 15 points (docs/patterns.md, "Transpose").
constexpr std::size_t tiles_along_b_least = 16;

template <int SideA, int SideB>
bool tiles_along_b_first(const plane_layout& layout) {
  return (layout.rows + SideB - 1) / SideB >= tiles_along_b_least &&
         (layout.cols + SideA - 1) / SideA >= tiles_along_b_least;
}

// The order of SideA x SideB tiles over `layout`'s planes, along b first or along a first.
// Within a plane, tiles are counted in 32 bits (callers refuse more, 2^44 bytes).
template <int SideA, int SideB>
tile_order order_tiles(const plane_layout& layout, bool along_b) {
  const std::size_t tiles_a = (layout.cols + SideA - 1) / SideA;
  const std::size_t tiles_b = (layout.rows + SideB - 1) / SideB;
  return {unsigned(along_b ? tiles_b : tiles_a), unsigned(tiles_a * tiles_b), along_b};
}

template <int SideA, int SideB>
tile_order order_tiles(const plane_layout& layout) {
  return order_tiles<SideA, SideB>(layout, tiles_along_b_first<SideA, SideB>(layout));
}

// Tile t: plane after plane, and within a plane in `order`, whose direction AlongB a
// kernel takes at compile time (a choice at run time cost the 4-byte vector tiles a
// spilled register and 6-20% of their speed).
template <int SideA, int SideB, bool AlongB>
__host__ __device__ inline tile_place place_of_tile(std::size_t t, const plane_layout& layout,
                                                    const tile_order& order) {
  std::size_t plane;
  unsigned in_plane;
  split_plane(t, order.plane_tiles, layout.batch_rank, plane, in_plane);
  const unsigned slow = in_plane / order.fast, fast = in_plane - slow * order.fast;
  const std::size_t a0 = std::size_t(AlongB ? slow : fast) * SideA;
  const std::size_t b0 = std::size_t(AlongB ? fast : slow) * SideB;
  tile_place place{b0 * layout.in_row_stride + a0, a0 * layout.out_row_stride + b0,
                   int(layout.cols - a0 < std::size_t(SideA) ? layout.cols - a0 : SideA),
                   int(layout.rows - b0 < std::size_t(SideB) ? layout.rows - b0 : SideB)};
  add_plane_offsets(plane, layout, place.in_offset, place.out_offset);
  return place;
}

// Calls launch(std::bool_constant<order.along_b>{}): a kernel per direction.
template <class Launch>
void with_tile_direction(const tile_order& order, Launch&& launch) {
  if (order.along_b) {
    launch(std::true_type{});
  } else {
    launch(std::false_type{});
  }
}

// True when every plane of `data` starts on a `bytes` boundary (16 unless said).
template <class T>
bool planes_aligned(const T* data, const std::size_t* batch_strides, int batch_rank,
                    std::size_t bytes = 16) {
  bool aligned = aligned_to(data, bytes);
  for (int d = 0; d < batch_rank; ++d)
    aligned = aligned && batch_strides[d] * sizeof(T) % bytes == 0;
  return aligned;
}

// True when every row of every plane of `data` starts on a `bytes` boundary (16 unless said).
template <class T>
bool rows_aligned(const T* data, std::size_t row_stride, const std::size_t* batch_strides,
                  int batch_rank, std::size_t bytes = 16) {
  return row_stride * sizeof(T) % bytes == 0 &&
         planes_aligned(data, batch_strides, batch_rank, bytes);
}

// Elements from the first of `in` to one past its last, over every plane: reads that reach
// past an element they need never reach past this end.
inline std::size_t input_span(const plane_layout& layout) {
  std::size_t span = (layout.rows - 1) * layout.in_row_stride + layout.cols;
  for (int d = 0; d < layout.batch_rank; ++d)
    span += (layout.batch_extent[d] - 1) * layout.batch_in_stride[d];
  return span;
}

// Blocks for `work` items of a grid-stride kernel: one each, up to the launch limit.
inline unsigned blocks_for(std::size_t work) {
  return unsigned(std::min<std::size_t>(work, 0x7FFFFFFF));
}

// The permutation with axes of extent one dropped and runs of input axes that stay
// adjacent and in order merged into one: the same data movement with the fewest axes.
struct merged_permutation {
  std::vector<std::size_t> shape;  // of the input
  std::vector<int> axes;           // out.shape[i] = shape[axes[i]]
};

inline merged_permutation merge_axes(const std::vector<std::size_t>& shape,
                                     const std::vector<int>& axes) {
  // Output order, skipping extent-one axes.
  std::vector<int> order;
  for (int axis : axes) {
    if (shape[axis] != 1) order.push_back(axis);
  }
  // Groups of input axes that follow each other in the output too.
  std::vector<std::vector<int>> groups;
  for (int axis : order) {
    if (!groups.empty() && groups.back().back() + 1 == axis) {
      groups.back().push_back(axis);
    } else {
      // Axes between the previous one and this one that were dropped keep them adjacent.
      bool adjacent = !groups.empty() && groups.back().back() < axis;
      for (int skipped = groups.empty() ? 0 : groups.back().back() + 1; adjacent && skipped < axis;
           ++skipped)
        adjacent = shape[skipped] == 1;
      if (adjacent) {
        groups.back().push_back(axis);
      } else {
        groups.push_back({axis});
      }
    }
  }
  // Number the groups by their input position.
  std::vector<int> by_input(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g)
    by_input[g] = int(g);
  std::sort(by_input.begin(), by_input.end(),
            [&](int x, int y) { return groups[x].front() < groups[y].front(); });
  merged_permutation merged;
  merged.shape.resize(groups.size());
  merged.axes.resize(groups.size());
  for (std::size_t position = 0; position < by_input.size(); ++position) {
    const auto& group = groups[by_input[position]];
    std::size_t extent = 1;
    for (int axis : group)
      extent *= shape[axis];
    merged.shape[position] = extent;
    merged.axes[by_input[position]] = int(position);
  }
  return merged;
}

// A permute as the device carries it out. Copy: `count` elements in order. Planes: the
// transpose of `layout`. Rows: the input's contiguous axis stays last, so whole rows of
// `row_length` elements move; `layout` holds the other axes in output order, with their
// input strides in elements.
struct permute_plan {
  enum class kind { copy, planes, rows };
  kind how = kind::copy;
  std::size_t count = 0;
  plane_layout layout{};
  std::size_t row_length = 0;
};

inline permute_plan plan_permute(const std::vector<std::size_t>& shape,
                                 const std::vector<int>& axes) {
  const merged_permutation merged = merge_axes(shape, axes);
  const int rank = int(merged.shape.size());
  permute_plan plan;
  plan.count = 1;
  for (std::size_t extent : merged.shape)
    plan.count *= extent;
  bool identity = true;
  for (int i = 0; i < rank; ++i)
    identity = identity && merged.axes[i] == i;
  if (identity) return plan;
  // Row-major strides of the input, and of the output for each input axis.
  std::vector<std::size_t> in_stride(rank), out_stride(rank);
  for (int d = rank - 1; d >= 0; --d)
    in_stride[d] = d == rank - 1 ? 1 : in_stride[d + 1] * merged.shape[d + 1];
  std::size_t running = 1;
  for (int i = rank - 1; i >= 0; --i) {
    out_stride[merged.axes[i]] = running;
    running *= merged.shape[merged.axes[i]];
  }
  const int contiguous_in = rank - 1;                // the input's contiguous axis
  const int contiguous_out = merged.axes[rank - 1];  // the input axis contiguous in `out`
  plane_layout& layout = plan.layout;
  if (contiguous_out != contiguous_in) {
    plan.how = permute_plan::kind::planes;
    layout.cols = merged.shape[contiguous_in];
    layout.rows = merged.shape[contiguous_out];
    layout.in_row_stride = in_stride[contiguous_out];
    layout.out_row_stride = out_stride[contiguous_in];
    for (int d = 0; d < rank; ++d) {
      if (d == contiguous_in || d == contiguous_out) continue;
      layout.batch_extent[layout.batch_rank] = merged.shape[d];
      layout.batch_in_stride[layout.batch_rank] = in_stride[d];
      layout.batch_out_stride[layout.batch_rank] = out_stride[d];
      ++layout.batch_rank;
    }
    return plan;
  }
  plan.how = permute_plan::kind::rows;
  plan.row_length = merged.shape[contiguous_in];
  for (int i = 0; i < rank - 1; ++i) {
    layout.batch_extent[layout.batch_rank] = merged.shape[merged.axes[i]];
    layout.batch_in_stride[layout.batch_rank] = in_stride[merged.axes[i]];
    ++layout.batch_rank;
  }
  return plan;
}

}  // namespace ppat::detail
