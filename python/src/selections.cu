// Selections: by a mask, by a comparison with a value, and the stable partition.
#include <ppat/select.cuh>

#include "common.hpp"

namespace ppat_python {

namespace {

// Python passes no device code, so the predicates are comparisons with a value, the
// comparison chosen at run time (one branch, the same for every thread).
enum class comparison_kind : int { less, less_equal, greater, greater_equal, equal, not_equal };

template <class T>
struct comparison {
  comparison_kind kind;
  T value;
  __device__ bool operator()(const T& x) const {
    switch (kind) {
      case comparison_kind::less:
        return x < value;
      case comparison_kind::less_equal:
        return x <= value;
      case comparison_kind::greater:
        return x > value;
      case comparison_kind::greater_equal:
        return x >= value;
      case comparison_kind::equal:
        return x == value;
      default:
        return x != value;
    }
  }
};

comparison_kind comparison_named(const std::string& name, const char* function) {
  if (name == "<") return comparison_kind::less;
  if (name == "<=") return comparison_kind::less_equal;
  if (name == ">") return comparison_kind::greater;
  if (name == ">=") return comparison_kind::greater_equal;
  if (name == "==") return comparison_kind::equal;
  if (name == "!=") return comparison_kind::not_equal;
  throw nb::value_error(
      (std::string(function) + ": the comparison is one of < <= > >= == !=").c_str());
}

// partition: the selected items in input order, then the rest in input order.
void select_if(std::uintptr_t in, std::uintptr_t out, std::uintptr_t num_selected, std::size_t n,
               const std::string& dtype, const std::string& compare, nb::handle value,
               bool partition, int device, std::uintptr_t stream) {
  const char* function = partition ? "ppat.partition" : "ppat.select_if";
  const comparison_kind kind = comparison_named(compare, function);
  with_dtype<PPAT_PYTHON_NUMBERS>(dtype, function, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const comparison<T> pred{kind, nb::cast<T>(value)};
    on_device(device, [&] {
      if (partition) {
        ppat::partition(address<const T>(in), address<T>(out), address<std::size_t>(num_selected),
                        n, pred, as_stream(stream));
      } else {
        ppat::select_if(address<const T>(in), address<T>(out), address<std::size_t>(num_selected),
                        n, pred, as_stream(stream));
      }
    });
  });
}

void select_flagged(std::uintptr_t in, std::uintptr_t flags, std::uintptr_t out,
                    std::uintptr_t num_selected, std::size_t n, std::size_t item_bytes,
                    const std::string& flag_dtype, int device, std::uintptr_t stream) {
  constexpr const char* function = "ppat.select";
  with_item_size(item_bytes, function, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_dtype<bool, std::uint8_t, std::int32_t, std::int64_t>(
        flag_dtype, function, [&](auto flag_tag) {
          using Flag = typename decltype(flag_tag)::type;
          on_device(device, [&] {
            ppat::select_flagged(address<const T>(in), address<const Flag>(flags), address<T>(out),
                                 address<std::size_t>(num_selected), n, as_stream(stream));
          });
        });
  });
}

}  // namespace

void bind_selections(nb::module_& m) {
  using namespace nb::literals;
  m.def("select_if", &select_if, "input"_a, "out"_a, "num_selected"_a, "n"_a, "dtype"_a,
        "compare"_a, "value"_a, "partition"_a, "device"_a, "stream"_a);
  m.def("select_flagged", &select_flagged, "input"_a, "flags"_a, "out"_a, "num_selected"_a, "n"_a,
        "item_bytes"_a, "flag_dtype"_a, "device"_a, "stream"_a);
}

}  // namespace ppat_python
