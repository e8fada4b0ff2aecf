// What every file of the _ppat module shares. The ppat package (ppat/__init__.py) has already
// checked each array's framework, device, dtype, shape and contiguity and allocated the
// outputs; these raw calls take what it found: device addresses, element counts, dtype names,
// the device and the stream. ppat's own checks still run behind them (null or host pointers,
// overlapping buffers, bad bins and bits), and its exceptions reach Python as ValueError
// (std::invalid_argument) or RuntimeError (ppat::cuda_error, naming the ppat function).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <ppat/core/operators.cuh>

namespace ppat_python {

namespace nb = nanobind;

// A device address as Python holds it (an integer), typed.
template <class T>
T* address(std::uintptr_t a) {
  return reinterpret_cast<T*>(a);
}

inline cudaStream_t as_stream(std::uintptr_t stream) {
  return reinterpret_cast<cudaStream_t>(stream);
}

// Runs `call` with the GIL released and `device` current: ppat allocates its temporary
// memory on the current device, and the legacy stream (0) belongs to it. The caller's
// device is restored afterwards, also when the call throws.
template <class Call>
void on_device(int device, Call&& call) {
  const nb::gil_scoped_release unlocked;
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess)
    throw std::runtime_error("ppat: cudaGetDevice failed");
  if (previous == device) return call();
  if (cudaSetDevice(device) != cudaSuccess) throw std::runtime_error("ppat: cudaSetDevice failed");
  struct restore {
    int device;
    ~restore() { (void)cudaSetDevice(device); }
  } restore_previous{previous};
  call();
}

template <class T>
struct type_tag {
  using type = T;
};

// The dtype names the ppat package passes: NumPy's, plus bfloat16.
template <class T>
inline constexpr const char* dtype_name = nullptr;
template <>
inline constexpr const char* dtype_name<bool> = "bool";
template <>
inline constexpr const char* dtype_name<std::int8_t> = "int8";
template <>
inline constexpr const char* dtype_name<std::uint8_t> = "uint8";
template <>
inline constexpr const char* dtype_name<std::int16_t> = "int16";
template <>
inline constexpr const char* dtype_name<std::uint16_t> = "uint16";
template <>
inline constexpr const char* dtype_name<std::int32_t> = "int32";
template <>
inline constexpr const char* dtype_name<std::uint32_t> = "uint32";
template <>
inline constexpr const char* dtype_name<std::int64_t> = "int64";
template <>
inline constexpr const char* dtype_name<std::uint64_t> = "uint64";
template <>
inline constexpr const char* dtype_name<__half> = "float16";
template <>
inline constexpr const char* dtype_name<__nv_bfloat16> = "bfloat16";
template <>
inline constexpr const char* dtype_name<float> = "float32";
template <>
inline constexpr const char* dtype_name<double> = "float64";

// Calls `f(type_tag<T>{})` for the T among Types named `dtype`; TypeError for any other.
template <class... Types, class F>
void with_dtype(const std::string& dtype, const char* function, F&& f) {
  bool matched = false;
  ((!matched && dtype == dtype_name<Types> ? (f(type_tag<Types>{}), matched = true) : false), ...);
  if (!matched)
    throw nb::type_error((std::string(function) + ": unsupported dtype " + dtype).c_str());
}

// Elements that are only moved, never looked at, go by their size alone.
struct alignas(16) bytes16 {
  std::uint64_t word[2];
};

template <class F>
void with_item_size(std::size_t bytes, const char* function, F&& f) {
  switch (bytes) {
    case 1:
      return f(type_tag<std::uint8_t>{});
    case 2:
      return f(type_tag<std::uint16_t>{});
    case 4:
      return f(type_tag<std::uint32_t>{});
    case 8:
      return f(type_tag<std::uint64_t>{});
    case 16:
      return f(type_tag<bytes16>{});
    default:
      throw nb::type_error(
          (std::string(function) + ": elements of 1, 2, 4, 8 or 16 bytes only").c_str());
  }
}

// Calls `f(op)` for the operator named "sum", "min" or "max".
template <class F>
void with_operator(const std::string& name, const char* function, F&& f) {
  if (name == "sum") return f(ppat::plus{});
  if (name == "min") return f(ppat::minimum{});
  if (name == "max") return f(ppat::maximum{});
  throw nb::value_error((std::string(function) + ": op is 'sum', 'min' or 'max'").c_str());
}

// The element types the scans, reductions and selections take.
#define PPAT_PYTHON_NUMBERS                                                            \
  std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t, std::uint32_t, \
      std::int64_t, std::uint64_t, float, double

// The key types of the sorts: every type ppat::sort_keys takes.
#define PPAT_PYTHON_SORT_KEYS PPAT_PYTHON_NUMBERS, __half, __nv_bfloat16

// Each binding file's calls; module.cu binds them all.
void bind_scans(nb::module_& m);
void bind_scans_by_key(nb::module_& m);
void bind_reductions(nb::module_& m);
void bind_segmented_reductions(nb::module_& m);
void bind_sorts(nb::module_& m);
void bind_histograms(nb::module_& m);
void bind_range_histograms(nb::module_& m);
void bind_weighted_histograms(nb::module_& m);
void bind_transposes(nb::module_& m);
void bind_selections(nb::module_& m);
void bind_runs(nb::module_& m);

}  // namespace ppat_python
