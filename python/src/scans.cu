// Inclusive and exclusive scans.
#include <ppat/scan.cuh>

#include "common.hpp"

namespace ppat_python {

namespace {

void scan(std::uintptr_t in, std::uintptr_t out, std::size_t n, const std::string& dtype,
          bool exclusive, const std::string& op, nb::handle init, int device,
          std::uintptr_t stream) {
  constexpr const char* function = "ppat.scan";
  with_dtype<PPAT_PYTHON_NUMBERS>(dtype, function, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T start = nb::cast<T>(init);
    with_operator(op, function, [&](auto combine) {
      on_device(device, [&] {
        if (exclusive) {
          ppat::exclusive_scan(address<const T>(in), address<T>(out), n, start, combine,
                               as_stream(stream));
        } else {
          ppat::inclusive_scan(address<const T>(in), address<T>(out), n, combine,
                               as_stream(stream));
        }
      });
    });
  });
}

}  // namespace

void bind_scans(nb::module_& m) {
  using namespace nb::literals;
  m.def("scan", &scan, "input"_a, "out"_a, "n"_a, "dtype"_a, "exclusive"_a, "op"_a, "init"_a,
        "device"_a, "stream"_a);
}

}  // namespace ppat_python
