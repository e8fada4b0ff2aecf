// Segmented and batched reductions: each segment of an array, or each row of a matrix,
// reduced on its own, in one call.
//
//   ppat::segmented_reduce(in, out, num_segments, begin_offsets, end_offsets, init, op,
//                          stream)   out[i] = init op in[begin_offsets[i]] op ...
//                                             op in[end_offsets[i] - 1]
//   ppat::segmented_reduce(in, n, out, num_segments, begin_offsets, end_offsets, init, op,
//                          stream)   the same over the n items of `in`: a segment reaching
//                                    past them reads as empty
//   ppat::reduce_batched(in, out, rows, cols, init, op, stream)
//                                    out[r] = init op (row r of a row-major matrix, in order)
//
// Any associative `op`, commutative or not, as ppat::reduce takes it; `init` goes first in
// every segment, and an empty one gets `init` alone. Segment i is [begin_offsets[i],
// end_offsets[i]): offsets are 32- or 64-bit device arrays, read on the device only (the
// calls capture into graphs); segments may be empty, of any length, in any order and with
// gaps between them. An offset pair that is no range (negative, end before begin, or past
// n where n is given) is the caller's error and reads as an empty segment. Floating-point
// results are the same bits on every run: a segment's operations depend only on its length.
// reduce/segments.cuh holds the paths a segment takes.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "core/arguments.cuh"
#include "core/device.cuh"
#include "core/error.cuh"
#include "core/launch.cuh"
#include "core/memory.cuh"
#include "core/operators.cuh"
#include "core/segments.cuh"
#include "reduce/segments.cuh"

namespace ppat {

namespace detail {
template <class T, class Offset, class Op>
void segmented_reduce(const T* in, std::size_t n, T* out, std::size_t num_segments,
                      const Offset* begin_offsets, const Offset* end_offsets, T init, Op op,
                      cudaStream_t stream, const char* function);
template <class T, class Op>
void reduce_batched(const T* in, T* out, std::size_t rows, std::size_t cols, T init, Op op,
                    cudaStream_t stream, const char* function);
}  // namespace detail

template <class T, class Offset, class Op = plus>
void segmented_reduce(const T* in, T* out, std::size_t num_segments, const Offset* begin_offsets,
                      const Offset* end_offsets, T init, Op op = {}, cudaStream_t stream = 0) {
  detail::segmented_reduce(in, std::numeric_limits<std::size_t>::max(), out, num_segments,
                           begin_offsets, end_offsets, init, op, stream, "ppat::segmented_reduce");
}

template <class T, class Offset, class Op = plus>
void segmented_reduce(const T* in, std::size_t n, T* out, std::size_t num_segments,
                      const Offset* begin_offsets, const Offset* end_offsets, T init, Op op = {},
                      cudaStream_t stream = 0) {
  detail::segmented_reduce(in, n, out, num_segments, begin_offsets, end_offsets, init, op, stream,
                           "ppat::segmented_reduce");
}

template <class T, class Op = plus>
void reduce_batched(const T* in, T* out, std::size_t rows, std::size_t cols, T init = T{},
                    Op op = {}, cudaStream_t stream = 0) {
  detail::reduce_batched(in, out, rows, cols, init, op, stream, "ppat::reduce_batched");
}

namespace detail {

// The most long segments a call lists, and part slots it hands out: beyond them long
// segments are folded whole, one block each, which is what many long segments want anyway.
// The tests lower them to reach those paths with small inputs.
struct long_segment_limits {
  std::size_t listed = std::size_t(1) << 19;
  std::size_t slots = std::size_t(1) << 18;
};

template <class T, class Segments, class Op>
void launch_short_segments(const T* in, T* out, const Segments& segments, T init, Op op,
                           const long_segment_list<T>& longs, const call_context& call) {
  constexpr auto kernel = reduce_short_segments_kernel<T, Segments, Op>;
  constexpr std::size_t warps = short_segment_threads / 32;
  const std::size_t resident = resident_blocks<kernel>(short_segment_threads, 0, call);
  // A warp takes a segment a lane where there are enough for every resident warp's lanes,
  // fewer where there are not, down to one a warp.
  const auto per_warp = unsigned(std::clamp<std::size_t>(
      ceil_div(segments.count, std::max<std::size_t>(resident * warps, 1)), 1, 32));
  const std::size_t blocks = std::min(ceil_div(segments.count, warps * per_warp), resident);
  kernel<<<unsigned(blocks), short_segment_threads, 0, call.stream()>>>(in, out, segments, per_warp,
                                                                        init, op, longs);
  check_launch(call.function(), "reduce_short_segments_kernel");
}

template <class T, class Segments, class Work, class Op>
void launch_long_segments(const T* in, T* out, const Segments& segments, const Work& work,
                          std::size_t most_work, T init, Op op, const call_context& call) {
  constexpr auto kernel = reduce_long_segments_kernel<T, Segments, Work, Op>;
  const std::size_t blocks =
      std::min(most_work, resident_blocks<kernel>(long_segment_shape<T>::threads, 0, call));
  // Scheduled while the short-segment kernel drains: its list is read only past the wait.
  launch_dependent(kernel, unsigned(blocks), long_segment_shape<T>::threads, 0, call,
                   "reduce_long_segments_kernel", in, out, segments, work, init, op);
}

// Segments by offsets: the short ones folded, the long ones listed and then folded.
template <class T, class Segments, class Op>
void reduce_segments(const T* in, T* out, const Segments& segments, T init, Op op,
                     const call_context& call, const long_segment_limits& limits = {}) {
  using paths = segment_reduce_paths<T>;
  const std::size_t capacity = std::min(segments.count, limits.listed);
  const std::size_t parts_capacity = std::min(capacity * paths::most_parts, limits.slots);
  constexpr std::size_t counts_bytes = 4 * sizeof(unsigned long long);
  stream_scratch counters(counts_bytes + parts_capacity * sizeof(unsigned), counter_words, call);
  const std::size_t value_alignment = std::max<std::size_t>(alignof(T), alignof(long_segment));
  const std::size_t values_offset =
      ceil_div(capacity * sizeof(long_segment), value_alignment) * value_alignment;
  const std::size_t slots_offset =
      ceil_div(values_offset + parts_capacity * sizeof(T), alignof(unsigned)) * alignof(unsigned);
  temporary_buffer<unsigned char> lists(slots_offset + parts_capacity * sizeof(unsigned), call);

  long_segment_list<T> longs{};
  longs.counts = reinterpret_cast<unsigned long long*>(counters.data());
  longs.tickets = reinterpret_cast<unsigned*>(counters.data() + counts_bytes);
  longs.entries = reinterpret_cast<long_segment*>(lists.data());
  longs.part_values = reinterpret_cast<T*>(lists.data() + values_offset);
  longs.part_entry = reinterpret_cast<unsigned*>(lists.data() + slots_offset);
  longs.capacity = capacity;
  longs.parts_capacity = parts_capacity;
  launch_short_segments(in, out, segments, init, op, longs, call);
  // Work for every block it might have: the parts of the listed segments, or where the list
  // runs out, the segments.
  launch_long_segments(in, out, segments, longs,
                       std::max(capacity * paths::most_parts, segments.count), init, op, call);
  counters.release();
  lists.release();
}

// The part slots the one-launch path lends, the helpers it launches and the blocks it
// launches at most; tests lower them to reach the segments that spread but find no slots,
// listers alone, and blocks of several segments.
struct few_segment_limits {
  std::size_t slots = few_segment_slots<char>::most;
  std::size_t helpers = std::numeric_limits<std::size_t>::max();
  std::size_t blocks = std::numeric_limits<std::size_t>::max();
};

// Segments at most few_segments_a_block times the blocks of reduce_few_segments_kernel the
// GPU holds at once, in one launch: a block a segment where they are no more than those
// blocks (the rest helpers), that many blocks otherwise. No second launch, no temporary
// memory. False, with nothing queued, for more segments.
template <class T, class Segments, class Op>
bool reduce_few_segments(const T* in, T* out, const Segments& segments, T init, Op op,
                         const call_context& call, const few_segment_limits& limits = {}) {
  constexpr auto kernel = reduce_few_segments_kernel<T, Segments, Op>;
  constexpr int threads = long_segment_shape<T>::threads;
  const std::size_t most_blocks =
      std::min(resident_blocks<kernel>(threads, 0, call), limits.blocks);
  if (segments.count > most_blocks * few_segments_a_block<T>) return false;
  const std::size_t blocks =
      segments.count >= most_blocks
          ? most_blocks
          : segments.count + std::min(limits.helpers, most_blocks - segments.count);
  stream_scratch memory(few_segment_slots<T>::bytes, counters_epochs_then_values, call);
  const few_segment_slots<T> slots{memory.data(), memory.epoch(),
                                   std::min(limits.slots, few_segment_slots<T>::most)};
  kernel<<<unsigned(blocks), threads, 0, call.stream()>>>(in, out, segments, init, op, slots);
  check_launch(call.function(), "reduce_few_segments_kernel");
  memory.release();
  return true;
}

// Rows of one length take one path, which the host knows: no list.
template <class T, class Op>
void reduce_rows(const T* in, T* out, const row_segments& rows, T init, Op op,
                 const call_context& call) {
  using paths = segment_reduce_paths<T>;
  if (rows.cols <= paths::warp_items) {
    launch_short_segments(in, out, rows, init, op, long_segment_list<T>{}, call);
    return;
  }
  const segment_parts parts = parts_of<T>(rows.cols);
  if (parts.count == 1) {
    launch_long_segments(in, out, rows, long_rows<T>{}, rows.count, init, op, call);
    return;
  }
  stream_scratch tickets(rows.count * sizeof(unsigned), counter_words, call);
  temporary_buffer<T> values(rows.count * parts.count, call);
  launch_long_segments(in, out, rows,
                       long_rows<T>{values.data(), reinterpret_cast<unsigned*>(tickets.data())},
                       rows.count * parts.count, init, op, call);
  tickets.release();
  values.release();
}

// n: the items' extent, or the largest size_t where the caller did not give it.
template <class T, class Offset, class Op>
void segmented_reduce(const T* in, std::size_t n, T* out, std::size_t num_segments,
                      const Offset* begin_offsets, const Offset* end_offsets, T init, Op op,
                      cudaStream_t stream, const char* function) {
  static_assert(std::is_integral_v<Offset> && !std::is_same_v<Offset, bool> &&
                    (sizeof(Offset) == 4 || sizeof(Offset) == 8),
                "ppat::segmented_reduce takes 32- or 64-bit integer offsets");
  static_assert(std::is_trivially_copyable_v<T>, "ppat::segmented_reduce: T is trivially copyable");
  // Without n, the items' extent is in the offsets, on the device: `in` must be there to be
  // read.
  const bool sized = n != std::numeric_limits<std::size_t>::max();
  require_buffer(in, num_segments == 0 ? 0 : sized ? n : 1, function, "in");
  if (sized) require_disjoint(in, n, out, num_segments, function, "in", "out");
  require_buffer(out, num_segments, function, "out");
  require_segment_offsets(begin_offsets, end_offsets, num_segments, out, num_segments, function,
                          "out");
  if (num_segments == 0) return;
  const call_context call(stream, function);
  require_device_readable(in, sized ? n : 1, call, "in");
  require_device_readable(out, num_segments, call, "out");
  require_segment_offsets_readable(begin_offsets, end_offsets, num_segments, call);
  const offset_segments<Offset> segments{begin_offsets, end_offsets, n, num_segments};
  if (!reduce_few_segments(in, out, segments, init, op, call))
    reduce_segments(in, out, segments, init, op, call);
}

template <class T, class Op>
void reduce_batched(const T* in, T* out, std::size_t rows, std::size_t cols, T init, Op op,
                    cudaStream_t stream, const char* function) {
  static_assert(std::is_trivially_copyable_v<T>, "ppat::reduce_batched: T is trivially copyable");
  const std::size_t n = checked_element_count(rows, cols, sizeof(T), function);
  require_buffer(in, n, function, "in");
  require_buffer(out, rows, function, "out");
  require_disjoint(in, n, out, rows, function, "in", "out");
  if (rows == 0) return;
  const call_context call(stream, function);
  require_device_readable(in, n, call, "in");
  require_device_readable(out, rows, call, "out");
  reduce_rows(in, out, row_segments{cols, rows}, init, op, call);
}

}  // namespace detail
}  // namespace ppat
