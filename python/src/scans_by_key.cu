// Scans of each run of equal consecutive keys.
#include <ppat/scan.cuh>

#include "common.hpp"

namespace ppat_python {

namespace {

void scan_by_key(std::uintptr_t keys, std::uintptr_t in, std::uintptr_t out, std::size_t n,
                 const std::string& key_dtype, const std::string& dtype, bool exclusive,
                 const std::string& op, nb::handle init, int device, std::uintptr_t stream) {
  constexpr const char* function = "ppat.scan_by_key";
  with_dtype<std::int32_t, std::int64_t>(key_dtype, function, [&](auto key_tag) {
    using K = typename decltype(key_tag)::type;
    with_dtype<std::int32_t, std::int64_t, float, double>(dtype, function, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T start = nb::cast<T>(init);
      with_operator(op, function, [&](auto combine) {
        on_device(device, [&] {
          if (exclusive) {
            ppat::exclusive_scan_by_key(address<const K>(keys), address<const T>(in),
                                        address<T>(out), n, start, combine, as_stream(stream));
          } else {
            ppat::inclusive_scan_by_key(address<const K>(keys), address<const T>(in),
                                        address<T>(out), n, combine, as_stream(stream));
          }
        });
      });
    });
  });
}

}  // namespace

void bind_scans_by_key(nb::module_& m) {
  using namespace nb::literals;
  m.def("scan_by_key", &scan_by_key, "keys"_a, "input"_a, "out"_a, "n"_a, "key_dtype"_a, "dtype"_a,
        "exclusive"_a, "op"_a, "init"_a, "device"_a, "stream"_a);
}

}  // namespace ppat_python
