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

void raise_launch_error(const char* function) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(function) + ": " + cudaGetErrorString(status));
}

// A grid of at most 2^16 blocks of 256 threads, each thread striding over the n items.
constexpr unsigned count_threads = 256;
inline unsigned count_blocks(std::size_t n) {
  return unsigned(std::min<std::size_t>((n + count_threads - 1) / count_threads, 65536));
}

// Position in its row of each of n items in rows of `cols`.
template <class Position>
__global__ void count_up(Position* out, std::size_t n, std::size_t cols) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = static_cast<Position>(cols == n ? i : i % cols);
  }
}

__global__ void widen(const std::uint32_t* narrow, std::int64_t* wide, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    wide[i] = narrow[i];
  }
}

void sort(std::uintptr_t keys_in, std::uintptr_t keys_out, std::uintptr_t values_in,
          std::uintptr_t values_out, std::size_t n, std::size_t cols, const std::string& key_dtype,
          std::size_t value_bytes, bool descending, int begin_bit, int end_bit, int device,
          std::uintptr_t stream) {
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
    on_device(device, [&] { sort_with_key<K>(request); });
  });
}

// Scratch memory of a call, from ppat's pool in the order of the call's stream (the current
// device's): freed in that order too, so that it outlives the work queued on it whatever
// the stream, and graph capture takes both as nodes.
class stream_scratch_bytes {
 public:
  stream_scratch_bytes(std::size_t bytes, cudaStream_t stream, const char* function)
      : stream_(stream) {
    if (bytes == 0) return;
    int device = 0;
    cudaError_t status = cudaGetDevice(&device);
    if (status == cudaSuccess)
      status = cudaMallocFromPoolAsync(&data_, bytes, ppat::temporary_memory_pool(device), stream);
    if (status != cudaSuccess)
      throw std::runtime_error(std::string(function) + ": " + cudaGetErrorString(status));
  }
  stream_scratch_bytes(const stream_scratch_bytes&) = delete;
  stream_scratch_bytes& operator=(const stream_scratch_bytes&) = delete;
  ~stream_scratch_bytes() {
    if (data_ != nullptr) (void)cudaFreeAsync(data_, stream_);
  }
  std::uintptr_t address() const { return reinterpret_cast<std::uintptr_t>(data_); }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

// argsort: the keys sorted carrying each one's position in its row, written first; the sorted
// keys and the positions are scratch. One array of at most 2^32 keys carries 4-byte
// positions, widened to int64 at the end: a sort carrying 4-byte values moves a third fewer
// bytes a pass than one carrying 8. Rows of a matrix (and larger arrays) carry int64
// positions straight to `indices`.
void argsort(std::uintptr_t keys_in, std::uintptr_t indices, std::size_t n, std::size_t cols,
             const std::string& key_dtype, bool descending, int device, std::uintptr_t stream) {
  const bool narrow = cols == n && n <= (std::size_t(1) << 32);
  const std::size_t position_bytes = narrow ? 4 : 8;
  const cudaStream_t s = as_stream(stream);
  with_dtype<PPAT_PYTHON_SORT_KEYS>(key_dtype, "ppat.argsort", [&](auto tag) {
    using K = typename decltype(tag)::type;
    on_device(device, [&] {
      if (n == 0) return;
      const stream_scratch_bytes sorted_keys(n * sizeof(K), s, "ppat.argsort");
      const stream_scratch_bytes positions(n * position_bytes, s, "ppat.argsort");
      const stream_scratch_bytes sorted_positions(narrow ? n * 4 : 0, s, "ppat.argsort");
      const sort_request request{keys_in,
                                 sorted_keys.address(),
                                 positions.address(),
                                 narrow ? sorted_positions.address() : indices,
                                 n,
                                 cols,
                                 position_bytes,
                                 descending ? ppat::order::descending : ppat::order::ascending,
                                 0,
                                 int(8 * sizeof(K)),
                                 s};
      if (narrow) {
        count_up<<<count_blocks(n), count_threads, 0, s>>>(
            address<std::uint32_t>(positions.address()), n, cols);
      } else {
        count_up<<<count_blocks(n), count_threads, 0, s>>>(
            address<std::int64_t>(positions.address()), n, cols);
      }
      raise_launch_error("ppat.argsort");
      sort_with_key<K>(request);
      if (narrow) {
        widen<<<count_blocks(n), count_threads, 0, s>>>(
            address<const std::uint32_t>(sorted_positions.address()),
            address<std::int64_t>(indices), n);
        raise_launch_error("ppat.argsort");
      }
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
        "key_dtype"_a, "value_bytes"_a, "descending"_a, "begin_bit"_a, "end_bit"_a, "device"_a,
        "stream"_a,
        "Sorts keys, or pairs with values of value_bytes bytes, whole (cols == n) or each row "
        "of cols.");
  m.def("argsort", &argsort, "keys_in"_a, "indices"_a, "n"_a, "cols"_a, "key_dtype"_a,
        "descending"_a, "device"_a, "stream"_a,
        "Writes each key's int64 position in its row (of cols) to indices, in the keys' stable "
        "order.");
  m.def("top_k", &top_k, "input"_a, "keys_out"_a, "indices_out"_a, "rows"_a, "cols"_a, "k"_a,
        "key_dtype"_a, "largest"_a, "device"_a, "stream"_a,
        "The k largest (or smallest) keys of each row of cols, and their int64 positions in "
        "the row, in order.");
}

}  // namespace ppat_python
