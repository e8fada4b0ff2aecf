// Histograms of evenly spaced bins.
#include "histograms.hpp"

namespace ppat_python {

namespace {

void histogram_even(std::uintptr_t samples, std::size_t n, const std::string& dtype,
                    std::uintptr_t hist, const std::string& counter_dtype, int bins,
                    const std::string& level_dtype, nb::handle lower, nb::handle upper, int device,
                    std::uintptr_t stream) {
  constexpr const char* function = "ppat.histogram_even";
  with_samples_and_levels(dtype, level_dtype, function, [&](auto sample_tag, auto level_tag) {
    using Sample = typename decltype(sample_tag)::type;
    using Level = typename decltype(level_tag)::type;
    const Level low = nb::cast<Level>(lower), high = nb::cast<Level>(upper);
    with_dtype<std::int32_t, std::int64_t>(counter_dtype, function, [&](auto counter_tag) {
      using Counter = typename decltype(counter_tag)::type;
      on_device(device, [&] {
        ppat::histogram_even(address<const Sample>(samples), n, address<Counter>(hist), bins, low,
                             high, as_stream(stream));
      });
    });
  });
}

}  // namespace

void bind_histograms(nb::module_& m) {
  using namespace nb::literals;
  m.def("histogram_even", &histogram_even, "samples"_a, "n"_a, "dtype"_a, "hist"_a,
        "counter_dtype"_a, "bins"_a, "level_dtype"_a, "lower"_a, "upper"_a, "device"_a, "stream"_a);
}

}  // namespace ppat_python
