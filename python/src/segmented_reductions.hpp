// Segmented reductions, a file an offset type: each instantiates every dtype and operator,
// and the two build side by side.
#pragma once

#include <ppat/segmented_reduce.cuh>

#include "common.hpp"

namespace ppat_python {

// Segment i is [offsets[i], offsets[i + 1]) of the n items; one past them reads as empty.
struct segment_request {
  std::uintptr_t in;
  std::size_t n;
  std::uintptr_t out, offsets;
  std::size_t num_segments;
  std::string dtype, op;
  nb::handle init;
  int device;
  cudaStream_t stream;
};

template <class Offset>
void segment_reduce_with_offsets(const segment_request& r) {
  constexpr const char* function = "ppat.segment_reduce";
  with_dtype<PPAT_PYTHON_NUMBERS>(r.dtype, function, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T start = nb::cast<T>(r.init);
    const Offset* begins = address<const Offset>(r.offsets);
    with_operator(r.op, function, [&](auto combine) {
      on_device(r.device, [&] {
        ppat::segmented_reduce(address<const T>(r.in), r.n, address<T>(r.out), r.num_segments,
                               begins, begins + 1, start, combine, r.stream);
      });
    });
  });
}

}  // namespace ppat_python
