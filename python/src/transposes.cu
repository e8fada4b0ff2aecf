// Transposes and permutes: elements are only moved, so they go by their size.
#include <nanobind/stl/vector.h>

#include <ppat/transpose.cuh>

#include "common.hpp"

namespace ppat_python {

namespace {

// A batch of rows x cols matrices; batch 1 is a plain transpose.
void transpose(std::uintptr_t in, std::uintptr_t out, std::size_t batch, std::size_t rows,
               std::size_t cols, std::size_t item_bytes, int device, std::uintptr_t stream) {
  with_item_size(item_bytes, "ppat.transpose", [&](auto tag) {
    using T = typename decltype(tag)::type;
    on_device(device, [&] {
      if (batch == 1) {
        ppat::transpose(address<const T>(in), address<T>(out), rows, cols, as_stream(stream));
      } else {
        ppat::transpose_batched(address<const T>(in), address<T>(out), batch, rows, cols,
                                as_stream(stream));
      }
    });
  });
}

void transpose_inplace(std::uintptr_t data, std::size_t side, std::size_t item_bytes, int device,
                       std::uintptr_t stream) {
  with_item_size(item_bytes, "ppat.transpose_inplace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    on_device(device, [&] { ppat::transpose_inplace(address<T>(data), side, as_stream(stream)); });
  });
}

void permute(std::uintptr_t in, std::uintptr_t out, const std::vector<std::size_t>& shape,
             const std::vector<int>& axes, std::size_t item_bytes, int device,
             std::uintptr_t stream) {
  with_item_size(item_bytes, "ppat.permute", [&](auto tag) {
    using T = typename decltype(tag)::type;
    on_device(device, [&] {
      ppat::permute(address<const T>(in), address<T>(out), shape, axes, as_stream(stream));
    });
  });
}

}  // namespace

void bind_transposes(nb::module_& m) {
  using namespace nb::literals;
  m.def("transpose", &transpose, "input"_a, "out"_a, "batch"_a, "rows"_a, "cols"_a, "item_bytes"_a,
        "device"_a, "stream"_a);
  m.def("transpose_inplace", &transpose_inplace, "data"_a, "side"_a, "item_bytes"_a, "device"_a,
        "stream"_a);
  m.def("permute", &permute, "input"_a, "out"_a, "shape"_a, "axes"_a, "item_bytes"_a, "device"_a,
        "stream"_a);
}

}  // namespace ppat_python
