// Segments of an array, as the segmented patterns (sorts, reductions) take them: where
// segment i begins and how many items it holds, read on the device so that offsets never
// make a round trip to the host. Two forms: offsets the caller gives (any order, gaps
// between segments, empty ones), and the rows of a row-major matrix.
#pragma once

#include <cstddef>
#include <type_traits>

#include "arguments.cuh"

namespace ppat::detail {

struct segment_range {
  std::size_t begin;
  std::size_t length;
};

// Segment i is [begin_offsets[i], end_offsets[i]). Offsets that are not a range of [0, n]
// (negative, past n, end before begin) are the caller's error, read as an empty segment:
// nothing is written for it.
template <class Offset>
struct offset_segments {
  static_assert(std::is_integral_v<Offset> && !std::is_same_v<Offset, bool> &&
                    (sizeof(Offset) == 4 || sizeof(Offset) == 8),
                "segment offsets are 32- or 64-bit integers");
  const Offset* begin_offsets;
  const Offset* end_offsets;
  std::size_t n;
  std::size_t count;  // segments

  __device__ segment_range operator()(std::size_t i) const {
    const Offset begin = begin_offsets[i];
    const Offset end = end_offsets[i];
    if constexpr (std::is_signed_v<Offset>) {
      if (begin < 0) return {0, 0};
    }
    if (end <= begin || std::size_t(end) > n) return {0, 0};
    return {std::size_t(begin), std::size_t(end) - std::size_t(begin)};
  }
};

// Row i of a row-major rows x cols matrix.
struct row_segments {
  std::size_t cols;
  std::size_t count;  // rows

  __device__ segment_range operator()(std::size_t i) const { return {i * cols, cols}; }
};

// The offset arrays of num_segments segments, checked before any CUDA call: device memory
// the call only reads (they may be one array: end_offsets = begin_offsets + 1), apart from
// every output, whose writes would change the segments under the call.
template <class Offset, class Out>
void require_segment_offsets(const Offset* begin_offsets, const Offset* end_offsets,
                             std::size_t num_segments, const Out* out, std::size_t out_count,
                             const char* function, const char* out_name) {
  require_buffer(begin_offsets, num_segments, function, "begin_offsets");
  require_buffer(end_offsets, num_segments, function, "end_offsets");
  require_disjoint(begin_offsets, num_segments, out, out_count, function, "begin_offsets",
                   out_name);
  require_disjoint(end_offsets, num_segments, out, out_count, function, "end_offsets", out_name);
}

template <class Offset>
void require_segment_offsets_readable(const Offset* begin_offsets, const Offset* end_offsets,
                                      std::size_t num_segments, const call_context& call) {
  require_device_readable(begin_offsets, num_segments, call, "begin_offsets");
  require_device_readable(end_offsets, num_segments, call, "end_offsets");
}

}  // namespace ppat::detail
