// Runs of equal consecutive keys: unique, run-length encoding, unique by key, reduce by key.
#include <ppat/select.cuh>

#include "common.hpp"

namespace ppat_python {

namespace {

void unique(std::uintptr_t in, std::uintptr_t out, std::uintptr_t counts_out,
            std::uintptr_t num_runs, std::size_t n, const std::string& dtype, int device,
            std::uintptr_t stream) {
  const char* function = counts_out ? "ppat.run_length_encode" : "ppat.unique";
  with_dtype<PPAT_PYTHON_NUMBERS>(dtype, function, [&](auto tag) {
    using T = typename decltype(tag)::type;
    on_device(device, [&] {
      if (counts_out) {
        ppat::run_length_encode(address<const T>(in), address<T>(out),
                                address<std::int64_t>(counts_out), address<std::size_t>(num_runs),
                                n, as_stream(stream));
      } else {
        ppat::unique(address<const T>(in), address<T>(out), address<std::size_t>(num_runs), n,
                     as_stream(stream));
      }
    });
  });
}

void unique_by_key(std::uintptr_t keys_in, std::uintptr_t values_in, std::uintptr_t keys_out,
                   std::uintptr_t values_out, std::uintptr_t num_runs, std::size_t n,
                   const std::string& key_dtype, std::size_t value_bytes, int device,
                   std::uintptr_t stream) {
  constexpr const char* function = "ppat.unique_by_key";
  with_dtype<std::int32_t, std::int64_t>(key_dtype, function, [&](auto key_tag) {
    using K = typename decltype(key_tag)::type;
    with_item_size(value_bytes, function, [&](auto tag) {
      using V = typename decltype(tag)::type;
      on_device(device, [&] {
        ppat::unique_by_key(address<const K>(keys_in), address<const V>(values_in),
                            address<K>(keys_out), address<V>(values_out),
                            address<std::size_t>(num_runs), n, as_stream(stream));
      });
    });
  });
}

void reduce_by_key(std::uintptr_t keys_in, std::uintptr_t values_in, std::uintptr_t keys_out,
                   std::uintptr_t aggregates_out, std::uintptr_t num_runs, std::size_t n,
                   const std::string& key_dtype, const std::string& dtype, const std::string& op,
                   int device, std::uintptr_t stream) {
  constexpr const char* function = "ppat.reduce_by_key";
  with_dtype<std::int32_t, std::int64_t>(key_dtype, function, [&](auto key_tag) {
    using K = typename decltype(key_tag)::type;
    with_dtype<std::int32_t, std::int64_t, float, double>(dtype, function, [&](auto tag) {
      using V = typename decltype(tag)::type;
      with_operator(op, function, [&](auto combine) {
        on_device(device, [&] {
          ppat::reduce_by_key(address<const K>(keys_in), address<const V>(values_in),
                              address<K>(keys_out), address<V>(aggregates_out),
                              address<std::size_t>(num_runs), n, combine, as_stream(stream));
        });
      });
    });
  });
}

}  // namespace

void bind_runs(nb::module_& m) {
  using namespace nb::literals;
  m.def("unique", &unique, "input"_a, "out"_a, "counts_out"_a, "num_runs"_a, "n"_a, "dtype"_a,
        "device"_a, "stream"_a);
  m.def("unique_by_key", &unique_by_key, "keys_in"_a, "values_in"_a, "keys_out"_a, "values_out"_a,
        "num_runs"_a, "n"_a, "key_dtype"_a, "value_bytes"_a, "device"_a, "stream"_a);
  m.def("reduce_by_key", &reduce_by_key, "keys_in"_a, "values_in"_a, "keys_out"_a,
        "aggregates_out"_a, "num_runs"_a, "n"_a, "key_dtype"_a, "dtype"_a, "op"_a, "device"_a,
        "stream"_a);
}

}  // namespace ppat_python
