// Histograms of bins between given levels.
#include "histograms.hpp"

namespace ppat_python {

namespace {

void histogram_range(std::uintptr_t samples, std::size_t n, const std::string& dtype,
                     std::uintptr_t hist, const std::string& counter_dtype, int bins,
                     std::uintptr_t levels, int device, std::uintptr_t stream) {
  constexpr const char* function = "ppat.histogram_range";
  with_dtype<PPAT_PYTHON_NUMBERS>(dtype, function, [&](auto sample_tag) {
    using Sample = typename decltype(sample_tag)::type;
    with_dtype<std::int32_t, std::int64_t>(counter_dtype, function, [&](auto counter_tag) {
      using Counter = typename decltype(counter_tag)::type;
      on_device(device, [&] {
        ppat::histogram_range(address<const Sample>(samples), n, address<Counter>(hist), bins,
                              address<const Sample>(levels), as_stream(stream));
      });
    });
  });
}

}  // namespace

void bind_range_histograms(nb::module_& m) {
  using namespace nb::literals;
  m.def("histogram_range", &histogram_range, "samples"_a, "n"_a, "dtype"_a, "hist"_a,
        "counter_dtype"_a, "bins"_a, "levels"_a, "device"_a, "stream"_a);
}

}  // namespace ppat_python
