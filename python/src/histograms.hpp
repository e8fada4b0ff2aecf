// What the histogram files share: the dispatch from dtype names to samples, levels and
// counters.
#pragma once

#include <ppat/histogram.cuh>

#include "common.hpp"

namespace ppat_python {

// Integer samples are binned exactly, with integer levels: 32-bit ones where both bounds fit
// (the fast path), 64-bit ones otherwise; the ppat package picks `level_dtype`. Floating
// samples take levels of their own type.
template <class F>
void with_samples_and_levels(const std::string& dtype, const std::string& level_dtype,
                             const char* function, F&& f) {
  with_dtype<PPAT_PYTHON_NUMBERS>(dtype, function, [&](auto sample_tag) {
    using Sample = typename decltype(sample_tag)::type;
    if constexpr (std::is_floating_point_v<Sample>) {
      f(sample_tag, sample_tag);
    } else {
      with_dtype<std::int32_t, std::int64_t>(level_dtype, function,
                                             [&](auto level_tag) { f(sample_tag, level_tag); });
    }
  });
}

}  // namespace ppat_python
