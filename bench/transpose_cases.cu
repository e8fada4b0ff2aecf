// Transpose: the textbook rungs and ppat::transpose beside cuBLAS geam (float and double;
// cuBLAS has no 1-, 2- or 16-byte transpose), on square, skinny and odd shapes; then a 4-d
// permute, a batch of small matrices and an in-place square, which no peer here offers.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <cublas_v2.h>

#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "type_names.hpp"

namespace ppat_bench {
namespace {

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + " failed: cuBLAS status " +
                             std::to_string(int(status)));
  }
}

cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t created = nullptr;
    check_cublas(cublasCreate(&created), "cublasCreate");
    return created;
  }();
  return handle;
}

// out (cols x rows, row-major) = transpose of in (rows x cols, row-major). Column-major,
// `in` is a cols x rows matrix A and `out` the rows x cols matrix C = A^T. B is C itself
// (cuBLAS's in-place form) with beta = 0.
template <class T>
cublasStatus_t cublas_transpose(const T* in, T* out, std::size_t rows, std::size_t cols) {
  const T one = 1, zero = 0;
  const int m = int(rows), n = int(cols);
  if constexpr (std::is_same_v<T, float>) {
    return cublasSgeam(cublas_handle(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, in, n, &zero, out, m,
                       out, m);
  } else {
    return cublasDgeam(cublas_handle(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, in, n, &zero, out, m,
                       out, m);
  }
}

template <class T>
constexpr bool has_cublas = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
void transpose_case(session& s, std::size_t rows, std::size_t cols) {
  const std::size_t count = rows * cols;
  const cudaStream_t stream = s.stream();
  const std::string type = type_name<T>();
  const int sets = s.rotation_sets(2.0 * count * sizeof(T));
  std::vector<device_array<T>> in(sets), out(sets);
  for (int k = 0; k < sets; ++k) {
    in[k] = device_array<T>(count);
    out[k] = device_array<T>(count);
    check(cudaMemset(out[k].data(), 0, out[k].bytes()), "cudaMemset");
    // Random bytes: any element type; floats stay finite by drawing 16-bit pieces < 0x7F00.
    fill_uniform(reinterpret_cast<std::uint16_t*>(in[k].data()), count * sizeof(T) / 2, 0, 0x7EFF,
                 3000 + k);
  }
  device_array<T> expected(count);

  bench_case c;
  c.pattern = "transpose";
  c.label = type;
  c.type = type;
  c.n = count;
  c.shape = std::to_string(rows) + " x " + std::to_string(cols);
  c.bytes = 2.0 * count * sizeof(T);
  c.sets = sets;
  c.copy = [&](int k) {
    check(cudaMemcpyAsync(out[k].data(), in[k].data(), in[k].bytes(), cudaMemcpyDeviceToDevice,
                          stream),
          "cudaMemcpyAsync");
  };
  c.copy_bytes = double(count) * sizeof(T);
  const auto matches_expected = [&] {
    return count_differences(out[0].data(), expected.data(), expected.bytes()) == 0;
  };

  namespace tb = ppat::textbook;
  if constexpr (has_cublas<T>) {
    check_cublas(cublasSetStream(cublas_handle(), stream), "cublasSetStream");
    c.baseline = std::is_same_v<T, float> ? "cublasSgeam" : "cublasDgeam";
    c.variants.push_back({c.baseline,
                          [&](int k) {
                            check_cublas(cublas_transpose(in[k].data(), out[k].data(), rows, cols),
                                         c.baseline.c_str());
                          },
                          nullptr});
    check_cublas(cublas_transpose(in[0].data(), expected.data(), rows, cols), "cublas geam");
  } else {
    tb::transpose_tiled(in[0].data(), expected.data(), rows, cols, stream);
  }
  c.variants.push_back(
      {"textbook::transpose_naive",
       [&](int k) { tb::transpose_naive(in[k].data(), out[k].data(), rows, cols, stream); },
       matches_expected});
  c.variants.push_back(
      {"textbook::transpose_tiled",
       [&](int k) { tb::transpose_tiled(in[k].data(), out[k].data(), rows, cols, stream); },
       matches_expected});
  c.variants.push_back(
      {"ppat::transpose",
       [&](int k) { ppat::transpose(in[k].data(), out[k].data(), rows, cols, stream); },
       matches_expected});
  s.run(c);
}

// One production call with no peer: `run(in, out)` on rotating buffers of `count` floats,
// against a copy of the same bytes.
void unpaired_case(session& s, const std::string& label, const std::string& shape,
                   std::size_t count,
                   const std::function<void(const float*, float*, cudaStream_t)>& run) {
  const cudaStream_t stream = s.stream();
  const int sets = s.rotation_sets(2.0 * count * sizeof(float));
  std::vector<device_array<float>> in(sets), out(sets);
  for (int k = 0; k < sets; ++k) {
    in[k] = device_array<float>(count);
    out[k] = device_array<float>(count);
    fill_uniform(in[k].data(), count, -1, 1, 3100 + k);
  }
  bench_case c;
  c.pattern = "transpose";
  c.label = label;
  c.type = "f32";
  c.n = count;
  c.shape = shape;
  c.bytes = 2.0 * count * sizeof(float);
  c.sets = sets;
  c.copy = [&](int k) {
    check(cudaMemcpyAsync(out[k].data(), in[k].data(), in[k].bytes(), cudaMemcpyDeviceToDevice,
                          stream),
          "cudaMemcpyAsync");
  };
  c.copy_bytes = double(count) * sizeof(float);
  c.variants.push_back({"ppat::" + label.substr(0, label.find(' ')),
                        [&](int k) { run(in[k].data(), out[k].data(), stream); }, nullptr});
  s.run(c);
}

void unpaired_cases(session& s) {
  const std::vector<std::size_t> shape = {64, 64, 256, 256};  // 2^28 floats
  unpaired_case(s, "permute (3, 1, 0, 2)", "64 x 64 x 256 x 256", std::size_t{1} << 28,
                [&](const float* in, float* out, cudaStream_t stream) {
                  ppat::permute(in, out, shape, {3, 1, 0, 2}, stream);
                });
  unpaired_case(s, "transpose_batched 4096 x (64 x 64)", "4096 x 64 x 64", std::size_t{1} << 24,
                [](const float* in, float* out, cudaStream_t stream) {
                  ppat::transpose_batched(in, out, 4096, 64, 64, stream);
                });
  // In place: `out` is the matrix; `in` is unused.
  unpaired_case(s, "transpose_inplace 16384 x 16384", "16384 x 16384", std::size_t{1} << 28,
                [](const float*, float* data, cudaStream_t stream) {
                  ppat::transpose_inplace(data, 16384, stream);
                });
}

struct shape {
  std::size_t rows, cols;
};

template <class T>
void shapes_for(session& s, const std::vector<shape>& shapes) {
  for (const shape& sh : shapes)
    transpose_case<T>(s, sh.rows, sh.cols);
}

}  // namespace

void bench_transpose(session& s) {
  if (!s.wants_pattern("transpose")) return;
  std::vector<shape> shapes;
  if (!s.opts().log2_sizes.empty()) {
    for (int log2_n : s.opts().log2_sizes) {
      shapes.push_back({std::size_t{1} << (log2_n / 2), std::size_t{1} << (log2_n - log2_n / 2)});
    }
  } else if (s.opts().quick) {
    shapes = {{1024, 1024}, {8192, 8192}, {16384, 16384}, {33, 1 << 20}, {1 << 20, 33}};
  } else {
    shapes = {{1024, 1024},  {4096, 4096},  {8192, 8192},  {16384, 16384}, {4096, 65536},
              {65536, 4096}, {33, 1 << 20}, {1 << 20, 33}, {8191, 8193}};
  }
  const std::vector<shape> large = {{16384, 16384}};
  const bool custom = !s.opts().log2_sizes.empty();
  const std::vector<std::string> defaults =
      s.opts().quick ? std::vector<std::string>{"f32"}
                     : std::vector<std::string>{"f32", "f64", "u8", "u16", "16B"};
  if (s.wants_type("f32", defaults)) shapes_for<float>(s, shapes);
  if (s.wants_type("f64", defaults)) shapes_for<double>(s, shapes);
  // Element sizes cuBLAS lacks: one large matrix each unless sizes are given.
  if (s.wants_type("u8", defaults)) shapes_for<std::uint8_t>(s, custom ? shapes : large);
  if (s.wants_type("u16", defaults)) shapes_for<std::uint16_t>(s, custom ? shapes : large);
  if (s.wants_type("16B", defaults)) shapes_for<uint4>(s, custom ? shapes : large);
  if (!custom && s.wants_type("f32", defaults)) unpaired_cases(s);
}

}  // namespace ppat_bench
