// The segmented reductions with int64_t offsets.
#include "segmented_reductions.hpp"

template void ppat_python::segment_reduce_with_offsets<std::int64_t>(
    const ppat_python::segment_request&);
