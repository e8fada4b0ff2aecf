// Transpose: the textbook rungs and ppat::transpose beside cuBLAS geam (float and double;
// cuBLAS has no 1-, 2- or 16-byte transpose), on square, skinny and odd shapes and with
// padded leading dimensions; then permutes, batches of small matrices and in-place squares,
// which no peer here offers: the copy of the same bytes is their peer.
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

// out (cols x rows, row-major, rows ld_out apart) = transpose of in (rows x cols, row-major,
// rows ld_in apart). Column-major, `in` is a cols x rows matrix A and `out` the rows x cols
// matrix C = A^T. B is C itself (cuBLAS's in-place form) with beta = 0.
template <class T>
cublasStatus_t cublas_transpose(const T* in, std::size_t ld_in, T* out, std::size_t ld_out,
                                std::size_t rows, std::size_t cols) {
  const T one = 1, zero = 0;
  const int m = int(rows), n = int(cols), lda = int(ld_in), ldc = int(ld_out);
  if constexpr (std::is_same_v<T, float>) {
    return cublasSgeam(cublas_handle(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, in, lda, &zero, out,
                       ldc, out, ldc);
  } else {
    return cublasDgeam(cublas_handle(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, in, lda, &zero, out,
                       ldc, out, ldc);
  }
}

template <class T>
constexpr bool has_cublas = std::is_same_v<T, float> || std::is_same_v<T, double>;

// Random bytes: any element type; floats stay finite by drawing 16-bit pieces < 0x7F00.
template <class T>
void fill_finite(T* data, std::size_t count, std::uint64_t seed) {
  fill_uniform(reinterpret_cast<std::uint16_t*>(data), count * sizeof(T) / 2, 0, 0x7EFF, seed);
}

// rows x cols, rows of `in` ld_in apart and of `out` ld_out apart (0: tight). The padding
// is neither read nor written, and is not counted as bytes that must move.
template <class T>
void transpose_case(session& s, std::size_t rows, std::size_t cols, std::size_t ld_in = 0,
                    std::size_t ld_out = 0) {
  const bool tight = ld_in == 0 && ld_out == 0;
  if (ld_in == 0) ld_in = cols;
  if (ld_out == 0) ld_out = rows;
  const std::size_t count = rows * cols, in_count = rows * ld_in, out_count = cols * ld_out;
  const cudaStream_t stream = s.stream();
  const std::string type = type_name<T>();
  const int sets = s.rotation_sets(double(in_count + out_count) * sizeof(T));
  // The memsets go to the legacy stream, which the case's stream does not wait for: the
  // fills' device synchronization orders them before the calls.
  device_array<T> expected(out_count);
  check(cudaMemset(expected.data(), 0, expected.bytes()), "cudaMemset");
  std::vector<device_array<T>> in(sets), out(sets);
  for (int k = 0; k < sets; ++k) {
    in[k] = device_array<T>(in_count);
    out[k] = device_array<T>(out_count);
    check(cudaMemset(out[k].data(), 0, out[k].bytes()), "cudaMemset");
    fill_finite(in[k].data(), in_count, 3000 + k);
  }

  bench_case c;
  c.pattern = "transpose";
  c.label = type;
  c.type = type;
  c.n = count;
  c.shape = std::to_string(rows) + " x " + std::to_string(cols);
  if (!tight) {
    c.label += ", ld_in " + std::to_string(ld_in) + ", ld_out " + std::to_string(ld_out);
  }
  c.bytes = 2.0 * count * sizeof(T);
  c.sets = sets;
  c.copy_bytes = double(count) * sizeof(T);
  const auto matches_expected = [&] {
    return count_differences(out[0].data(), expected.data(), expected.bytes()) == 0;
  };

  namespace tb = ppat::textbook;
  if constexpr (has_cublas<T>) {
    check_cublas(cublasSetStream(cublas_handle(), stream), "cublasSetStream");
    c.baseline = std::is_same_v<T, float> ? "cublasSgeam" : "cublasDgeam";
    c.variants.push_back(
        {c.baseline,
         [&](int k) {
           check_cublas(cublas_transpose(in[k].data(), ld_in, out[k].data(), ld_out, rows, cols),
                        c.baseline.c_str());
         },
         nullptr});
    check_cublas(cublas_transpose(in[0].data(), ld_in, expected.data(), ld_out, rows, cols),
                 "cublas geam");
  } else if (tight) {
    tb::transpose_tiled(in[0].data(), expected.data(), rows, cols, stream);
  }
  if (tight) {
    c.variants.push_back(
        {"textbook::transpose_naive",
         [&](int k) { tb::transpose_naive(in[k].data(), out[k].data(), rows, cols, stream); },
         matches_expected});
    c.variants.push_back(
        {"textbook::transpose_tiled",
         [&](int k) { tb::transpose_tiled(in[k].data(), out[k].data(), rows, cols, stream); },
         matches_expected});
  }
  c.variants.push_back(
      {"ppat::transpose",
       [&](int k) {
         ppat::transpose(in[k].data(), ld_in, out[k].data(), ld_out, rows, cols, stream);
       },
       has_cublas<T> || tight ? std::function<bool()>(matches_expected) : std::function<bool()>()});
  s.run(c);
}

// One production call with no peer: `run(in, out)` on rotating buffers of `count` items of
// T, against a copy of the same bytes.
template <class T>
void unpaired_case(session& s, const std::string& call, const std::string& label,
                   const std::string& shape, std::size_t count,
                   const std::function<void(const T*, T*, cudaStream_t)>& run) {
  const cudaStream_t stream = s.stream();
  const int sets = s.rotation_sets(2.0 * count * sizeof(T));
  std::vector<device_array<T>> in(sets), out(sets);
  for (int k = 0; k < sets; ++k) {
    in[k] = device_array<T>(count);
    out[k] = device_array<T>(count);
    fill_finite(in[k].data(), count, 3100 + k);
  }
  bench_case c;
  c.pattern = "transpose";
  c.label = label + " " + type_name<T>();
  c.type = type_name<T>();
  c.n = count;
  c.shape = shape;
  c.bytes = 2.0 * count * sizeof(T);
  c.sets = sets;
  c.copy_bytes = double(count) * sizeof(T);
  c.variants.push_back(
      {"ppat::" + call, [&](int k) { run(in[k].data(), out[k].data(), stream); }, nullptr});
  s.run(c);
}

std::string joined(const std::vector<std::size_t>& values, const char* separator) {
  std::string text;
  for (std::size_t v : values)
    text += (text.empty() ? "" : separator) + std::to_string(v);
  return text;
}

template <class T>
void permute_case(session& s, const std::vector<std::size_t>& shape, const std::vector<int>& axes) {
  std::size_t count = 1;
  for (std::size_t extent : shape)
    count *= extent;
  std::string order;
  for (int axis : axes)
    order += (order.empty() ? "" : ", ") + std::to_string(axis);
  unpaired_case<T>(s, "permute", "permute (" + order + ")", joined(shape, " x "), count,
                   [&](const T* in, T* out, cudaStream_t stream) {
                     ppat::permute(in, out, shape, axes, stream);
                   });
}

template <class T>
void batched_case(session& s, std::size_t batch, std::size_t rows, std::size_t cols) {
  unpaired_case<T>(s, "transpose_batched", "transpose_batched", joined({batch, rows, cols}, " x "),
                   batch * rows * cols, [=](const T* in, T* out, cudaStream_t stream) {
                     ppat::transpose_batched(in, out, batch, rows, cols, stream);
                   });
}

// In place: `out` is the matrix; `in` is unused.
template <class T>
void inplace_case(session& s, std::size_t n) {
  unpaired_case<T>(
      s, "transpose_inplace", "transpose_inplace", joined({n, n}, " x "), n * n,
      [=](const T*, T* data, cudaStream_t stream) { ppat::transpose_inplace(data, n, stream); });
}

void unpaired_cases(session& s) {
  permute_case<float>(s, {64, 64, 256, 256}, {3, 1, 0, 2});  // 2^28 floats
  batched_case<float>(s, 4096, 64, 64);
  inplace_case<float>(s, 16384);
}

struct shape {
  std::size_t rows, cols;
};

template <class T>
void shapes_for(session& s, const std::vector<shape>& shapes) {
  for (const shape& sh : shapes)
    transpose_case<T>(s, sh.rows, sh.cols);
}

// Squares, odd squares, wide and tall rectangles, skinny matrices both ways with short
// sides 1-512 (about 2^26 items), padded leading dimensions, batches, in-place squares and
// permutes of ranks 3-6.
template <class T>
void sweep_type(session& s) {
  std::vector<shape> shapes = {{1024, 1024}, {4096, 4096}, {8192, 8192},  {16384, 16384},
                               {1023, 1025}, {8191, 8193}, {4096, 65536}, {65536, 4096}};
  for (std::size_t short_side : {1, 2, 3, 8, 33, 128, 512}) {
    const std::size_t long_side = (std::size_t{1} << 26) / short_side;
    shapes.push_back({short_side, long_side});
    shapes.push_back({long_side, short_side});
  }
  shapes_for<T>(s, shapes);
  transpose_case<T>(s, 8192, 8192, 8193, 0);
  transpose_case<T>(s, 8192, 8192, 0, 8193);
  transpose_case<T>(s, 8191, 8193, 8200, 8195);
  batched_case<T>(s, 4096, 64, 64);
  batched_case<T>(s, 65536, 8, 24);
  batched_case<T>(s, 256, 255, 257);
  inplace_case<T>(s, 16384);
  inplace_case<T>(s, 8191);
  permute_case<T>(s, {256, 512, 1024}, {2, 0, 1});
  permute_case<T>(s, {256, 512, 1024}, {0, 2, 1});
  permute_case<T>(s, {255, 257, 511}, {2, 1, 0});
  permute_case<T>(s, {64, 64, 256, 256}, {3, 1, 0, 2});
  permute_case<T>(s, {64, 64, 256, 256}, {0, 2, 1, 3});
  permute_case<T>(s, {16, 32, 64, 32, 64}, {4, 2, 0, 3, 1});
  permute_case<T>(s, {8, 16, 8, 16, 8, 64}, {5, 3, 1, 0, 2, 4});
}

}  // namespace

void bench_transpose(session& s) {
  if (!s.wants_pattern("transpose")) return;
  if (s.sweep()) {
    const std::vector<std::string> all = {"f32", "f64", "u8", "u16", "16B"};
    if (s.wants_type("f32", all)) sweep_type<float>(s);
    if (s.wants_type("f64", all)) sweep_type<double>(s);
    if (s.wants_type("u8", all)) sweep_type<std::uint8_t>(s);
    if (s.wants_type("u16", all)) sweep_type<std::uint16_t>(s);
    if (s.wants_type("16B", all)) sweep_type<uint4>(s);
    return;
  }
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
