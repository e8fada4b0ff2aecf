// Weighted histograms of evenly spaced bins: each sample adds its weight to its bin.
#include "histograms.hpp"

namespace ppat_python {

namespace {

void histogram_even_weighted(std::uintptr_t samples, std::uintptr_t weights, std::size_t n,
                             const std::string& dtype, const std::string& weight_dtype,
                             std::uintptr_t hist, int bins, const std::string& level_dtype,
                             nb::handle lower, nb::handle upper, int device,
                             std::uintptr_t stream) {
  constexpr const char* function = "ppat.histogram_even";
  with_samples_and_levels(dtype, level_dtype, function, [&](auto sample_tag, auto level_tag) {
    using Sample = typename decltype(sample_tag)::type;
    using Level = typename decltype(level_tag)::type;
    const Level low = nb::cast<Level>(lower), high = nb::cast<Level>(upper);
    with_dtype<float, double>(weight_dtype, function, [&](auto weight_tag) {
      using Weight = typename decltype(weight_tag)::type;
      on_device(device, [&] {
        ppat::histogram_even_weighted(address<const Sample>(samples),
                                      address<const Weight>(weights), n, address<Weight>(hist),
                                      bins, low, high, as_stream(stream));
      });
    });
  });
}

}  // namespace

void bind_weighted_histograms(nb::module_& m) {
  using namespace nb::literals;
  m.def("histogram_even_weighted", &histogram_even_weighted, "samples"_a, "weights"_a, "n"_a,
        "dtype"_a, "weight_dtype"_a, "hist"_a, "bins"_a, "level_dtype"_a, "lower"_a, "upper"_a,
        "device"_a, "stream"_a);
}

}  // namespace ppat_python
