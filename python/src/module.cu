// _ppat: the raw calls behind the ppat Python package, one binding file a pattern, and what
// the package needs besides: a description of any DLPack array, and a count read back.
#include <nanobind/ndarray.h>
#include <nanobind/stl/vector.h>

#include <vector>

#include "common.hpp"

namespace ppat_python {

namespace {

// The dtype name of a DLPack dtype ("" where ppat has none).
std::string dtype_name_of(nb::dlpack::dtype t) {
  using code = nb::dlpack::dtype_code;
  if (t.lanes != 1) return "";
  switch (static_cast<code>(t.code)) {
    case code::Int:
      return "int" + std::to_string(t.bits);
    case code::UInt:
      return "uint" + std::to_string(t.bits);
    case code::Float:
      return "float" + std::to_string(t.bits);
    case code::Bfloat:
      return t.bits == 16 ? "bfloat16" : "";
    case code::Bool:
      return "bool";
    default:
      return "";
  }
}

// What the ppat package needs of an array from a DLPack producer other than PyTorch and
// CuPy: (address, shape, dtype name, bytes an element, on a CUDA device, device, C order).
nb::tuple describe(nb::ndarray<nb::ro> a) {
  std::vector<std::size_t> shape(a.ndim());
  bool c_order = true;
  std::int64_t expected_stride = 1;
  for (std::size_t d = a.ndim(); d-- > 0;) {
    shape[d] = a.shape(d);
    if (a.shape(d) != 1 && a.stride(d) != expected_stride) c_order = false;
    expected_stride *= std::int64_t(a.shape(d));
  }
  const bool on_cuda = a.device_type() == nb::device::cuda::value;
  return nb::make_tuple(reinterpret_cast<std::uintptr_t>(a.data()), shape, dtype_name_of(a.dtype()),
                        a.itemsize(), on_cuda, a.device_id(), c_order);
}

// A count a selection wrote on `stream`, read once the stream reaches it: the one place
// the package waits, and only where a trimmed result was asked for.
std::size_t read_count(std::uintptr_t count, int device, std::uintptr_t stream) {
  std::size_t value = 0;
  on_device(device, [&] {
    cudaError_t status = cudaMemcpyAsync(&value, address<const std::size_t>(count), sizeof value,
                                         cudaMemcpyDeviceToHost, as_stream(stream));
    if (status == cudaSuccess) status = cudaStreamSynchronize(as_stream(stream));
    if (status != cudaSuccess) {
      throw std::runtime_error(std::string("ppat: reading a selected count: ") +
                               cudaGetErrorString(status));
    }
  });
  return value;
}

}  // namespace

}  // namespace ppat_python

NB_MODULE(_ppat, m) {
  using namespace nanobind::literals;
  m.doc() =
      "ppat's raw calls on device addresses; use the ppat package, which checks and allocates";
  m.def("describe", &ppat_python::describe, "array"_a);
  m.def("read_count", &ppat_python::read_count, "count"_a, "device"_a, "stream"_a);
  ppat_python::bind_scans(m);
  ppat_python::bind_scans_by_key(m);
  ppat_python::bind_reductions(m);
  ppat_python::bind_segmented_reductions(m);
  ppat_python::bind_sorts(m);
  ppat_python::bind_histograms(m);
  ppat_python::bind_range_histograms(m);
  ppat_python::bind_weighted_histograms(m);
  ppat_python::bind_transposes(m);
  ppat_python::bind_selections(m);
  ppat_python::bind_runs(m);
}
