// The segmented reductions with int32_t offsets.
#include "segmented_reductions.hpp"

template void ppat_python::segment_reduce_with_offsets<std::int32_t>(
    const ppat_python::segment_request&);
