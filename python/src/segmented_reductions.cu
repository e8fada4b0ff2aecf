// Segmented reductions: each segment of an array, given by an offset array, reduced on its
// own. The instantiations for each offset type live in segmented_reductions_<offset>.cu.
#include "segmented_reductions.hpp"

namespace ppat_python {

extern template void segment_reduce_with_offsets<std::int32_t>(const segment_request&);
extern template void segment_reduce_with_offsets<std::int64_t>(const segment_request&);

namespace {

void segment_reduce(std::uintptr_t in, std::size_t n, std::uintptr_t out, std::uintptr_t offsets,
                    std::size_t num_segments, const std::string& dtype,
                    const std::string& offset_dtype, const std::string& op, nb::handle init,
                    int device, std::uintptr_t stream) {
  const segment_request request{in,    n,  out,  offsets, num_segments,
                                dtype, op, init, device,  as_stream(stream)};
  with_dtype<std::int32_t, std::int64_t>(offset_dtype, "ppat.segment_reduce", [&](auto tag) {
    segment_reduce_with_offsets<typename decltype(tag)::type>(request);
  });
}

}  // namespace

void bind_segmented_reductions(nb::module_& m) {
  using namespace nb::literals;
  m.def("segment_reduce", &segment_reduce, "input"_a, "n"_a, "out"_a, "offsets"_a, "num_segments"_a,
        "dtype"_a, "offset_dtype"_a, "op"_a, "init"_a, "device"_a, "stream"_a);
}

}  // namespace ppat_python
