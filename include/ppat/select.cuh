// Stream compaction and its relatives: one pass over memory, stable, counts written on the
// device.
//
//   ppat::select_if(in, out, num_selected, n, pred, stream)        the items pred accepts
//   ppat::select_flagged(in, flags, out, num_selected, n, stream)  the items whose flag is set
//   ppat::partition(in, out, num_selected, n, pred, stream)        accepted, then rejected
//   ppat::partition_copy(in, out_selected, out_rejected, num_selected, n, pred, stream)
//                                                                  the two apart, one pass
//   ppat::unique(in, out, num_selected, n, stream)                 the first of each run
//   ppat::unique_by_key(keys_in, values_in, keys_out, values_out, num_selected, n, stream)
//   ppat::run_length_encode(in, unique_out, counts_out, num_runs, n, stream)
//   ppat::reduce_by_key(keys_in, values_in, unique_out, aggregates_out, num_segments, n, op,
//                       stream)                                    each run's values folded
//
// Selection (all but reduce_by_key): each block reads one tile into registers, decides which
// items it keeps, a bit each (select/rules.cuh), ranks them within the tile (core/block.cuh)
// and stages them in shared memory in output order (select/tile.cuh, the kernel's steps). Only then
// does it learn, through the look-back of core/lookback.cuh, how many items the tiles before it
// kept, and so where its run goes: no register holds an item while the tile waits. The block writes
// the run as whole 16-byte vectors. One launch; the count is the last tile's. run_length_encode's
// runs are unique's, their lengths the distances between run heads: the look-back also carries
// where the last head before a tile sits.
//
// partition keeps the rejected items in input order too, after the selected ones. Where they
// start is the total selected, which only the last tile learns: where every tile fits on the
// GPU at once, one cooperative launch lets the tiles wait for it; larger inputs are counted
// first (select/partition.cuh), one more read. partition_copy writes them to an output of
// their own, after those of the tiles before: the tile's look-back tells it how many items
// those rejected too, so it reads and writes each item once at any size.
//
// reduce_by_key is a scan by key: it lives beside the scans by key, in scan/by_key.cuh.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <limits>
#include <type_traits>

#include "core/arguments.cuh"
#include "core/device.cuh"
#include "core/error.cuh"
#include "core/lookback.cuh"
#include "core/memory.cuh"
#include "core/no_values.cuh"
#include "core/operators.cuh"
#include "core/vector_io.cuh"
#include "scan/by_key.cuh"
#include "select/partition.cuh"
#include "select/rules.cuh"
#include "select/tile.cuh"

namespace ppat {
namespace detail {

// How partition learns the total kept over several tiles: by waiting for the last tile where
// all fit on the GPU at once, from a count pass otherwise. Tests ask for the count pass on
// inputs of every size.
enum class partition_total { whichever_fits, count_pass };

template <rejected_items Rejected = rejected_items::dropped, class T, class V, class Count,
          class Rule>
void select(const select_buffers<T, V, Count, Rule>& io, const char* function, cudaStream_t stream,
            partition_total total = partition_total::whichever_fits);

}  // namespace detail

template <class T, class Pred>
void select_if(const T* in, T* out, std::size_t* num_selected, std::size_t n, Pred pred,
               cudaStream_t stream = 0) {
  detail::select(
      detail::plain_selection<T, detail::predicate_rule<Pred>>{
          in, out, nullptr, nullptr, nullptr, num_selected, n, {pred}},
      "ppat::select_if", stream);
}

template <class T, class Flag>
void select_flagged(const T* in, const Flag* flags, T* out, std::size_t* num_selected,
                    std::size_t n, cudaStream_t stream = 0) {
  static_assert(std::is_integral_v<Flag>, "ppat::select_flagged: flags are integers or bool");
  constexpr const char* function = "ppat::select_flagged";
  detail::require_buffer(flags, n, function, "flags");
  detail::require_disjoint(flags, n, out, detail::require_result_output(out, n, function, "out"),
                           function, "flags", "out");
  detail::require_disjoint(flags, n, num_selected, 1, function, "flags", "num_selected");
  detail::select(
      detail::plain_selection<T, detail::flag_rule<Flag>>{
          in, out, nullptr, nullptr, nullptr, num_selected, n, {flags}},
      function, stream);
}

template <class T, class Pred>
void partition(const T* in, T* out, std::size_t* num_selected, std::size_t n, Pred pred,
               cudaStream_t stream = 0) {
  detail::select<detail::rejected_items::after_kept>(
      detail::plain_selection<T, detail::predicate_rule<Pred>>{
          in, out, nullptr, nullptr, nullptr, num_selected, n, {pred}},
      "ppat::partition", stream);
}

template <class T, class Pred>
void partition_copy(const T* in, T* out_selected, T* out_rejected, std::size_t* num_selected,
                    std::size_t n, Pred pred, cudaStream_t stream = 0) {
  detail::select<detail::rejected_items::own_output>(
      detail::plain_selection<T, detail::predicate_rule<Pred>>{
          in, out_selected, nullptr, nullptr, nullptr, num_selected, n, {pred}, out_rejected},
      "ppat::partition_copy", stream);
}

template <class T>
void unique(const T* in, T* out, std::size_t* num_selected, std::size_t n,
            cudaStream_t stream = 0) {
  detail::select(
      detail::plain_selection<T, detail::run_head_rule>{
          in, out, nullptr, nullptr, nullptr, num_selected, n, {}},
      "ppat::unique", stream);
}

template <class K, class V>
void unique_by_key(const K* keys_in, const V* values_in, K* keys_out, V* values_out,
                   std::size_t* num_selected, std::size_t n, cudaStream_t stream = 0) {
  detail::select(
      detail::select_buffers<K, V, detail::no_values, detail::run_head_rule>{
          keys_in, keys_out, values_in, values_out, nullptr, num_selected, n, {}},
      "ppat::unique_by_key", stream);
}

template <class K, class V, class Op = plus>
void reduce_by_key(const K* keys_in, const V* values_in, K* unique_out, V* aggregates_out,
                   std::size_t* num_segments, std::size_t n, Op op = {}, cudaStream_t stream = 0) {
  detail::reduce_by_key(keys_in, values_in, unique_out, aggregates_out, num_segments, n, op, stream,
                        "ppat::reduce_by_key");
}

template <class T, class Count>
void run_length_encode(const T* in, T* unique_out, Count* counts_out, std::size_t* num_runs,
                       std::size_t n, cudaStream_t stream = 0) {
  static_assert(std::is_integral_v<Count>, "ppat::run_length_encode: counts are integers");
  detail::select(
      detail::select_buffers<T, detail::no_values, Count, detail::run_head_rule>{
          in, unique_out, nullptr, nullptr, counts_out, num_runs, n, {}},
      "ppat::run_length_encode", stream);
}

namespace detail {

template <rejected_items Rejected, class T, class V, class Count, class Rule>
void select(const select_buffers<T, V, Count, Rule>& io, const char* function, cudaStream_t stream,
            partition_total total) {
  using buffers = select_buffers<T, V, Count, Rule>;
  constexpr bool has_values = buffers::has_values;
  constexpr bool has_counts = buffers::has_counts;
  const std::size_t n = io.n;
  const char* const in_name = has_values ? "keys_in" : "in";
  constexpr bool own_rejected = Rejected == rejected_items::own_output;
  const char* const out_name = has_values     ? "keys_out"
                               : has_counts   ? "unique_out"
                               : own_rejected ? "out_selected"
                                              : "out";
  const char* const count_name = has_counts ? "num_runs" : "num_selected";
  require_buffer(io.in, n, function, in_name);
  require_buffer(io.num_selected, 1, function, count_name);
  require(n < select_max_items, function, "n", "must be below 2^48");
  // partition's output holds all n items; the others' hold what the data keeps, and only
  // their first item is certain (require_result_output).
  const auto output_extent = [&](const auto* out, const char* name) {
    if constexpr (Rejected == rejected_items::after_kept) {
      require_buffer(out, n, function, name);
      return n;
    } else {
      return require_result_output(out, n, function, name);
    }
  };
  const std::size_t out_extent = output_extent(io.out, out_name);
  require_disjoint(io.in, n, io.out, out_extent, function, in_name, out_name);
  require_disjoint(io.in, n, io.num_selected, 1, function, in_name, count_name);
  require_disjoint(io.out, out_extent, io.num_selected, 1, function, out_name, count_name);
  if constexpr (own_rejected) {
    const std::size_t rejected_extent = output_extent(io.rejected_out, "out_rejected");
    require_disjoint(io.in, n, io.rejected_out, rejected_extent, function, in_name, "out_rejected");
    require_disjoint(io.out, out_extent, io.rejected_out, rejected_extent, function, out_name,
                     "out_rejected");
    require_disjoint(io.rejected_out, rejected_extent, io.num_selected, 1, function, "out_rejected",
                     count_name);
  }
  if constexpr (has_values) {
    require_buffer(io.values_in, n, function, "values_in");
    const std::size_t values_extent = output_extent(io.values_out, "values_out");
    require_disjoint(io.values_in, n, io.values_out, values_extent, function, "values_in",
                     "values_out");
    require_disjoint(io.in, n, io.values_out, values_extent, function, "keys_in", "values_out");
    require_disjoint(io.values_in, n, io.out, out_extent, function, "values_in", "keys_out");
    require_disjoint(io.out, out_extent, io.values_out, values_extent, function, "keys_out",
                     "values_out");
    require_disjoint(io.values_in, n, io.num_selected, 1, function, "values_in", "num_selected");
    require_disjoint(io.values_out, values_extent, io.num_selected, 1, function, "values_out",
                     "num_selected");
  }
  if constexpr (has_counts) {
    const std::size_t counts_extent = output_extent(io.counts_out, "counts_out");
    require_disjoint(io.in, n, io.counts_out, counts_extent, function, "in", "counts_out");
    require_disjoint(io.out, out_extent, io.counts_out, counts_extent, function, "unique_out",
                     "counts_out");
    require_disjoint(io.counts_out, counts_extent, io.num_selected, 1, function, "counts_out",
                     "num_runs");
  }
  const call_context call(stream, function);
  require_device_readable(io.num_selected, 1, call, count_name);
  if (n == 0) {
    call.check(cudaMemsetAsync(io.num_selected, 0, sizeof(std::size_t), call.stream()),
               "cudaMemsetAsync");
    return;
  }
  require_device_readable(io.in, n, call, in_name);
  require_device_readable(io.out, n, call, out_name);
  if constexpr (own_rejected) require_device_readable(io.rejected_out, n, call, "out_rejected");
  if constexpr (has_values) {
    require_device_readable(io.values_in, n, call, "values_in");
    require_device_readable(io.values_out, n, call, "values_out");
  }
  if constexpr (has_counts) require_device_readable(io.counts_out, n, call, "counts_out");
  io.rule.require_readable(n, call);

  using shape = select_tile_shape<T, V, Count>;
  constexpr int vec = shape::vec;
  const std::size_t tiles = ceil_div(n, shape::tile_items);
  require(tiles <= std::size_t(std::numeric_limits<int>::max()), function, "n",
          "needs more tiles than one grid can launch");
  const lookback_layout layout = plan_lookback<select_tally>(tiles);
  stream_scratch flags(layout.flag_bytes, lookback_purpose<select_tally>, call);
  const auto state = lookback_view<select_tally>(flags.data(), flags.epoch(), nullptr, layout);
  // 16-byte loads need every array read that way 16-byte aligned (values packed in words
  // too: u8 keys take 16 u16 values in two accesses); anything else reads item by item, with
  // the same tiles.
  constexpr bool vector_items = loads_16_byte_accesses<T, vec>;
  constexpr bool vector_values = has_values && loads_16_byte_accesses<value_or_char<V>, vec>;
  constexpr bool vector_loads = vector_items || vector_values;
  const bool aligned =
      (!vector_items || aligned_to(io.in, 16)) && (!vector_values || aligned_to(io.values_in, 16));
  const auto run_tiles = [&](auto aligned_loads) {
    constexpr bool Aligned = decltype(aligned_loads)::value;
    constexpr auto kernel = select_kernel<shape, Rejected, Aligned, T, V, Count, Rule>;
    buffers tile_io = io;
    if constexpr (Rejected == rejected_items::after_kept) {
      if (tiles > 1) {
        if (total == partition_total::whichever_fits &&
            tiles <= resident_blocks<kernel>(shape::threads, 0, call)) {
          // Every tile resident at once, which a cooperative launch guarantees (or refuses:
          // then the total is counted first, as for more tiles).
          lookback_state<select_tally> tile_state = state;
          void* arguments[] = {&tile_io, &tile_state};
          if (launch_cooperative<kernel>(dim3(unsigned(tiles)), dim3(shape::threads), arguments, 0,
                                         call))
            return;
        }
        call.check(cudaMemsetAsync(io.num_selected, 0, sizeof(std::size_t), call.stream()),
                   "cudaMemsetAsync");
        count_selected_kernel<shape, Aligned>
            <<<grid_stride_blocks(tiles, 1, call.limits(), shape::min_blocks_per_sm),
               shape::threads, 0, call.stream()>>>(io, unsigned(tiles));
        check_launch(function, "count_selected_kernel");
        tile_io.total_counted = true;
      }
    }
    kernel<<<unsigned(tiles), shape::threads, 0, call.stream()>>>(tile_io, state);
    check_launch(function, "select_kernel");
  };
  if (aligned) {
    run_tiles(std::true_type{});
  } else if constexpr (vector_loads) {
    run_tiles(std::false_type{});
  }
  flags.release();
}

}  // namespace detail
}  // namespace ppat
