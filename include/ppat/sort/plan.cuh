// What every path of the radix sort shares, whichever kernel runs it: the order, the
// argument checks (the textbook sorts' too), the passes a bit range takes, and the buffers
// each pass reads and writes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include "../core/arguments.cuh"
#include "../core/device.cuh"
#include "../core/memory.cuh"
#include "../core/no_values.cuh"
#include "radix_key.cuh"

namespace ppat {

enum class order { ascending, descending };

namespace detail {

// ---- Arguments ----------------------------------------------------------------------------

// Checks shared with the textbook sorts: everything that can be checked before a CUDA call.
// `in_place` says whether an output may be its input itself (the textbook sorts' may not).
template <class K, class V>
void require_sort_arguments(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                            std::size_t n, order ord, int begin_bit, int end_bit,
                            const char* function, bool in_place) {
  static_assert(radix_key<K>::supported,
                "ppat sorts keys that are integers (not bool), float, double, __half or "
                "__nv_bfloat16");
  constexpr bool has_values = has_values_of<V>;
  const char* const in_name = has_values ? "keys_in" : "in";
  const char* const out_name = has_values ? "keys_out" : "out";
  require(begin_bit >= 0 && begin_bit <= int(8 * sizeof(K)), function, "begin_bit",
          "must be in [0, 8 * sizeof(K)]");
  require(end_bit >= begin_bit && end_bit <= int(8 * sizeof(K)), function, "end_bit",
          "must be in [begin_bit, 8 * sizeof(K)]");
  require(ord == order::ascending || ord == order::descending, function, "ord",
          "must be order::ascending or order::descending");
  require_buffer(keys_in, n, function, in_name);
  require_buffer(keys_out, n, function, out_name);
  if (!in_place || keys_in != keys_out)
    require_disjoint(keys_in, n, keys_out, n, function, in_name, out_name);
  if constexpr (has_values) {
    require_buffer(values_in, n, function, "values_in");
    require_buffer(values_out, n, function, "values_out");
    if (!in_place || values_in != values_out)
      require_disjoint(values_in, n, values_out, n, function, "values_in", "values_out");
    require_disjoint(keys_in, n, values_out, n, function, "keys_in", "values_out");
    require_disjoint(values_in, n, keys_out, n, function, "values_in", "keys_out");
    require_disjoint(keys_out, n, values_out, n, function, "keys_out", "values_out");
  }
}

template <class K, class V>
void require_sort_buffers_readable(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                                   std::size_t n, const call_context& call) {
  constexpr bool has_values = has_values_of<V>;
  require_device_readable(keys_in, n, call, has_values ? "keys_in" : "in");
  require_device_readable(keys_out, n, call, has_values ? "keys_out" : "out");
  if constexpr (has_values) {
    require_device_readable(values_in, n, call, "values_in");
    require_device_readable(values_out, n, call, "values_out");
  }
}

// An empty bit range: the output is the input.
template <class K, class V>
void copy_unsorted(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                   const call_context& call) {
  if (keys_in != keys_out) {
    call.check(
        cudaMemcpyAsync(keys_out, keys_in, n * sizeof(K), cudaMemcpyDeviceToDevice, call.stream()),
        "cudaMemcpyAsync");
  }
  if constexpr (has_values_of<V>) {
    if (values_in == values_out) return;
    call.check(cudaMemcpyAsync(values_out, values_in, n * sizeof(V), cudaMemcpyDeviceToDevice,
                               call.stream()),
               "cudaMemcpyAsync");
  }
}

// ---- Passes and their buffers ---------------------------------------------------------------

constexpr int radix_bits = 8;
constexpr int radix = 1 << radix_bits;

// The bits [begin_bit, end_bit) in passes of equal width, at most radix_bits each.
struct radix_passes {
  int begin_bit;
  int count;
  int width;

  __host__ __device__ static radix_passes of(int begin_bit, int end_bit) {
    const int bits = end_bit - begin_bit;
    const int count = (bits + radix_bits - 1) / radix_bits;
    return {begin_bit, count, count == 0 ? 0 : (bits + count - 1) / count};
  }
  template <class K>
  __host__ __device__ radix_digit<K> digit(int pass, order ord, int end_bit) const {
    const int shift = begin_bit + pass * width;
    const int bits = end_bit - shift < width ? end_bit - shift : width;
    using image_type = typename radix_key<K>::image_type;
    return {ord == order::descending ? image_type(~image_type(0)) : image_type(0), shift,
            (1u << bits) - 1u};
  }
};

// Where each of `passes` passes reads and writes: pass 0 reads the inputs and never writes
// them, and the passes alternate between the outputs and buffers of their own so that the
// last pass writes the outputs. Sorted in place (an output is its input), an even count of
// passes writes the buffers first anyway; an odd count copies the inputs to the buffers
// first and reads them there.
template <class K, class V>
class pass_buffers {
 public:
  pass_buffers(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
               int passes, const call_context& call)
      : keys_in_(keys_in),
        keys_out_(keys_out),
        values_in_(values_in),
        values_out_(values_out),
        passes_(passes),
        copy_inputs_first_(passes % 2 == 1 &&
                           (keys_in == keys_out || (has_values && values_in == values_out))),
        keys_between_(passes > 1 || copy_inputs_first_ ? n : 0, call),
        values_between_(has_values && (passes > 1 || copy_inputs_first_) ? n : 0, call) {
    if (!copy_inputs_first_) return;
    call.check(cudaMemcpyAsync(keys_between_.data(), keys_in, n * sizeof(K),
                               cudaMemcpyDeviceToDevice, call.stream()),
               "cudaMemcpyAsync");
    keys_in_ = keys_between_.data();
    if constexpr (has_values) {
      call.check(cudaMemcpyAsync(values_between_.data(), values_in, n * sizeof(V),
                                 cudaMemcpyDeviceToDevice, call.stream()),
                 "cudaMemcpyAsync");
      values_in_ = reinterpret_cast<const V*>(values_between_.data());
    }
  }

  const K* keys_from(int pass) const { return pass == 0 ? keys_in_ : keys_to(pass - 1); }
  K* keys_to(int pass) const { return to_outputs(pass) ? keys_out_ : keys_between_.data(); }
  const V* values_from(int pass) const { return pass == 0 ? values_in_ : values_to(pass - 1); }
  V* values_to(int pass) const {
    if constexpr (has_values) {
      return to_outputs(pass) ? values_out_ : values_between_.data();
    } else {
      return nullptr;
    }
  }
  void release() {
    values_between_.release();
    keys_between_.release();
  }

 private:
  static constexpr bool has_values = has_values_of<V>;
  bool to_outputs(int pass) const { return (passes_ - 1 - pass) % 2 == 0; }

  const K* keys_in_;
  K* keys_out_;
  const V* values_in_;
  V* values_out_;
  int passes_;
  bool copy_inputs_first_;
  temporary_buffer<K> keys_between_;
  temporary_buffer<value_or_char<V>> values_between_;
};

}  // namespace detail
}  // namespace ppat
