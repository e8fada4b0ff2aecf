// Reductions.
#include <ppat/reduce.cuh>

#include "common.hpp"

namespace ppat_python {

namespace {

void reduce(std::uintptr_t in, std::uintptr_t out, std::size_t n, const std::string& dtype,
            const std::string& op, nb::handle init, int device, std::uintptr_t stream) {
  constexpr const char* function = "ppat.reduce";
  with_dtype<PPAT_PYTHON_NUMBERS>(dtype, function, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T start = nb::cast<T>(init);
    with_operator(op, function, [&](auto combine) {
      on_device(device, [&] {
        ppat::reduce(address<const T>(in), address<T>(out), n, start, combine, as_stream(stream));
      });
    });
  });
}

}  // namespace

void bind_reductions(nb::module_& m) {
  using namespace nb::literals;
  m.def("reduce", &reduce, "input"_a, "out"_a, "n"_a, "dtype"_a, "op"_a, "init"_a, "device"_a,
        "stream"_a);
}

}  // namespace ppat_python
