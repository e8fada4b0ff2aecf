// Sorts and top-k by key type, argsort's indices, and the bindings. The instantiations of
// sort_with_key and top_k_with_key live in the generated files sort_<key>.cu.
#include <algorithm>

#include "sorts.hpp"

namespace ppat_python {

#define PPAT_PYTHON_SORT_KEY_ELSEWHERE(K)                     \
  extern template void sort_with_key<K>(const sort_request&); \
  extern template void top_k_with_key<K>(const top_k_request&);
PPAT_PYTHON_SORT_KEY_ELSEWHERE(std::int8_t)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(std::uint8_t)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(std::int16_t)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(std::uint16_t)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(std::int32_t)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(std::uint32_t)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(std::int64_t)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(std::uint64_t)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(float)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(double)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(__half)
PPAT_PYTHON_SORT_KEY_ELSEWHERE(__nv_bfloat16)
#undef PPAT_PYTHON_SORT_KEY_ELSEWHERE

namespace {

// Position in its row of each of n items in rows of `cols`.
__global__ void count_up(std::int64_t* out, std::size_t n, std::size_t cols) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = static_cast<std::int64_t>(cols == n ? i : i % cols);
  }
}

// argsort's values: 0, 1, ..., cols - 1 in every row, written on the call's stream.
void write_indices(std::int64_t* out, std::size_t n, std::size_t cols, cudaStream_t stream) {
  if (n == 0) return;
  constexpr unsigned threads = 256;
  const std::size_t blocks = std::min<std::size_t>((n + threads - 1) / threads, 65536);
  count_up<<<unsigned(blocks), threads, 0, stream>>>(out, n, cols);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("ppat.argsort: ") + cudaGetErrorString(status));
  }
}

void sort(std::uintptr_t keys_in, std::uintptr_t keys_out, std::uintptr_t values_in,
          std::uintptr_t values_out, std::size_t n, std::size_t cols, const std::string& key_dtype,
          std::size_t value_bytes, bool descending, int begin_bit, int end_bit, bool indices,
          int device, std::uintptr_t stream) {
  const sort_request request{keys_in,
                             keys_out,
                             values_in,
                             values_out,
                             n,
                             cols,
                             value_bytes,
                             descending ? ppat::order::descending : ppat::order::ascending,
                             begin_bit,
                             end_bit,
                             as_stream(stream)};
  with_dtype<PPAT_PYTHON_SORT_KEYS>(key_dtype, "ppat.sort", [&](auto tag) {
    using K = typename decltype(tag)::type;
    on_device(device, [&] {
      if (indices) write_indices(address<std::int64_t>(values_in), n, cols, request.stream);
      sort_with_key<K>(request);
    });
  });
}

void top_k(std::uintptr_t in, std::uintptr_t keys_out, std::uintptr_t indices_out, std::size_t rows,
           std::size_t cols, std::size_t k, const std::string& key_dtype, bool largest, int device,
           std::uintptr_t stream) {
  const top_k_request request{in,
                              keys_out,
                              indices_out,
                              rows,
                              cols,
                              k,
                              largest ? ppat::order::descending : ppat::order::ascending,
                              as_stream(stream)};
  with_dtype<PPAT_PYTHON_SORT_KEYS>(key_dtype, "ppat.topk", [&](auto tag) {
    using K = typename decltype(tag)::type;
    on_device(device, [&] { top_k_with_key<K>(request); });
  });
}

}  // namespace

void bind_sorts(nb::module_& m) {
  using namespace nb::literals;
  m.def("sort", &sort, "keys_in"_a, "keys_out"_a, "values_in"_a, "values_out"_a, "n"_a, "cols"_a,
        "key_dtype"_a, "value_bytes"_a, "descending"_a, "begin_bit"_a, "end_bit"_a, "indices"_a,
        "device"_a, "stream"_a,
        "Sorts keys, or pairs with values of value_bytes bytes, whole (cols == n) or each row "
        "of cols; with indices, values_in is first filled with each key's position in its row "
        "(argsort).");
  m.def("top_k", &top_k, "input"_a, "keys_out"_a, "indices_out"_a, "rows"_a, "cols"_a, "k"_a,
        "key_dtype"_a, "largest"_a, "device"_a, "stream"_a,
        "The k largest (or smallest) keys of each row of cols, and their int64 positions in "
        "the row, in order.");
}

}  // namespace ppat_python
