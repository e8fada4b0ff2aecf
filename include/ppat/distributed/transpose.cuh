// ppat::distributed::transpose: blocks of columns exchanged between the ranks, each block
// transposed by the single-GPU transpose into its place.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <vector>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/memory.cuh"
#include "../transpose.cuh"
#include "communicator.cuh"

namespace ppat::distributed {

// Each rank packs, for every other rank, the columns its output rows come from, sends them,
// and transposes each block it holds into its columns of the output: the blocks, in rank
// order, are the rows of the matrix restricted to this rank's columns.
template <class T>
void transpose(ncclComm_t comm, const T* in, T* out, std::size_t rows, std::size_t cols,
               std::size_t out_rows, cudaStream_t stream = 0) {
  ppat::detail::require_element_size<T>();
  constexpr const char* function = "ppat::distributed::transpose";
  const detail::ranks group = detail::ranks_of(comm, function);
  const detail::call_context call(stream, function);
  // rank r's (rows, cols, out_rows) at [3r, 3r + 3)
  const std::vector<unsigned long long> sizes =
      detail::gather_on_host(comm, {rows, cols, out_rows}, call);
  const auto size_of = [&](int r, int which) {
    return std::size_t(sizes[3 * std::size_t(r) + std::size_t(which)]);
  };
  std::size_t total_rows = 0, total_out_rows = 0;
  bool same_cols = true;
  for (int r = 0; r < group.count; ++r) {
    total_rows += size_of(r, 0);
    total_out_rows += size_of(r, 2);
    same_cols = same_cols && size_of(r, 1) == cols;
  }
  // The same on every rank: every rank throws, or none.
  detail::require(same_cols, function, "cols", "must be the same on every rank");
  detail::require(total_out_rows == cols, function, "out_rows",
                  "must add up, over the ranks, to 'cols'");
  detail::agree_on_arguments(comm, call, [&] {
    const std::size_t in_count = detail::checked_element_count(rows, cols, sizeof(T), function);
    const std::size_t out_count =
        detail::checked_element_count(out_rows, total_rows, sizeof(T), function);
    detail::require_buffer(in, in_count, function, "in");
    detail::require_buffer(out, out_count, function, "out");
    detail::require_disjoint(in, in_count, out, out_count, function, "in", "out");
    detail::require_device_readable(in, in_count, call, "in");
    detail::require_device_readable(out, out_count, call, "out");
  });
  const int me = group.mine;
  std::vector<std::size_t> row_first(1, 0), col_first(1, 0);
  for (int r = 0; r < group.count; ++r) {
    row_first.push_back(row_first.back() + size_of(r, 0));
    col_first.push_back(col_first.back() + size_of(r, 2));
  }
  // Rank j's columns of this rank's rows, packed for it; the blocks this rank receives.
  // Rank j's columns of this rank's rows, packed for it, and the blocks other ranks send
  // (their rows restricted to this rank's columns), both in rank order, this rank left out.
  detail::temporary_buffer<T> packed(rows * (cols - out_rows), call);
  detail::temporary_buffer<T> received((total_rows - rows) * out_rows, call);
  detail::peer_transfers moves(group.count);
  std::vector<std::size_t> received_first(std::size_t(group.count), 0);
  std::size_t packed_end = 0, received_end = 0;
  for (int j = 0; j < group.count; ++j) {
    if (j == me) continue;
    const auto p = std::size_t(j);
    const std::size_t width = size_of(j, 2);
    if (rows != 0 && width != 0) {
      call.check(cudaMemcpy2DAsync(packed.data() + packed_end, width * sizeof(T), in + col_first[p],
                                   cols * sizeof(T), width * sizeof(T), rows,
                                   cudaMemcpyDeviceToDevice, call.stream()),
                 "cudaMemcpy2DAsync");
    }
    moves.send_from[p] = packed.data() + packed_end;
    moves.send_bytes[p] = rows * width * sizeof(T);
    received_first[p] = received_end;
    moves.receive_to[p] = received.data() + received_end;
    moves.receive_bytes[p] = size_of(j, 0) * out_rows * sizeof(T);
    packed_end += rows * width;
    received_end += size_of(j, 0) * out_rows;
  }
  detail::exchange(comm, group, moves, call);
  // Each rank's block transposed into its columns of `out`; this rank's own straight from
  // `in`, which needs no packing.
  for (int j = 0; j < group.count; ++j) {
    const auto p = std::size_t(j);
    if (size_of(j, 0) == 0 || out_rows == 0) continue;
    const T* const block = j == me ? in + col_first[p] : received.data() + received_first[p];
    detail::transpose_planes(
        block, out + row_first[p],
        detail::matrix_layout(size_of(j, 0), out_rows, j == me ? cols : out_rows, total_rows),
        call);
  }
  received.release();
  packed.release();
}

}  // namespace ppat::distributed
