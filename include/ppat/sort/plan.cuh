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
  if (keys_in != keys_out) copy_items(keys_in, keys_out, n, call);
  if constexpr (has_values_of<V>) {
    if (values_in != values_out) copy_items(values_in, values_out, n, call);
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

// ---- Passes whose keys all share one digit --------------------------------------------------
//
// A pass in which one digit holds every key leaves them in their order: it need not move
// them. Keys of a few values in many bits (int64 positions, small counts, a shared exponent)
// have such passes; the digit counts, which come before any pass, show them. Only the device
// knows them, so the kernel that counts the digits gives each pass the host launches a role
// (pass_role): a pass that sorts reads and writes the buffers pass_buffers gives it, and the
// passes that move nothing between two that sort are skipped, but for one copy where the
// keys are not already where the next sort reads them.

// The buffers a pass reads or writes: the inputs, the outputs, the buffers between passes.
enum class pass_buffer : unsigned char { inputs, outputs, between };
enum class pass_action : unsigned char { sort, copy, skip };

struct alignas(4) pass_role {
  pass_action action;
  pass_buffer from, to;  // a copy's
};

// Where pass `pass` of `passes` writes, as pass_buffers lays the passes out (the last writes
// the outputs), and where it reads (the first the inputs).
__host__ __device__ inline pass_buffer written_by(int pass, int passes) {
  return (passes - 1 - pass) % 2 == 0 ? pass_buffer::outputs : pass_buffer::between;
}
__host__ __device__ inline pass_buffer read_by(int pass, int passes) {
  return pass == 0 ? pass_buffer::inputs : written_by(pass - 1, passes);
}

// The roles of `passes` passes, of which those with their bit set in `moving` sort (from
// read_by to written_by). In a run of passes that do not, the last copies the keys to where
// the next sort reads them, or to the outputs after the last sort, unless they are there
// already: `inputs_are` is the buffer the inputs are too (the outputs of a sort in place, or
// the buffers between where pass_buffers copied the inputs there first), or inputs.
__host__ __device__ inline void plan_pass_roles(unsigned moving, int passes, pass_buffer inputs_are,
                                                pass_role* roles) {
  const auto actual = [&](pass_buffer b) { return b == pass_buffer::inputs ? inputs_are : b; };
  pass_buffer at = pass_buffer::inputs;  // where the keys are
  for (int p = 0; p < passes; ++p) {
    if (moving >> p & 1u) {
      roles[p] = {pass_action::sort, read_by(p, passes), written_by(p, passes)};
      at = written_by(p, passes);
      continue;
    }
    const bool run_ends = p + 1 == passes || (moving >> (p + 1) & 1u) != 0;
    const pass_buffer wanted = p + 1 < passes ? read_by(p + 1, passes) : pass_buffer::outputs;
    if (run_ends && actual(at) != actual(wanted)) {
      roles[p] = {pass_action::copy, at, wanted};
      at = wanted;
    } else {
      roles[p] = {pass_action::skip, at, at};
    }
  }
}

// The buffers a pass may read or write, of keys or of values; the inputs are never written.
template <class T>
struct pass_arrays {
  const T* inputs;
  T* outputs;
  T* between;

  __host__ __device__ const T* from(pass_buffer b) const {
    return b == pass_buffer::inputs ? inputs : to(b);
  }
  __host__ __device__ T* to(pass_buffer b) const {
    return b == pass_buffer::outputs ? outputs : between;
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
    copy_items(keys_in, keys_between_.data(), n, call);
    keys_in_ = keys_between_.data();
    if constexpr (has_values) {
      copy_items(reinterpret_cast<const value_or_char<V>*>(values_in), values_between_.data(), n,
                 call);
      values_in_ = reinterpret_cast<const V*>(values_between_.data());
    }
  }

  // The buffer the inputs are too (plan_pass_roles): the buffers between where the inputs
  // were copied there first, the outputs where keys and values are both sorted in place.
  // Where only one of them is, the inputs count as their own: a copy of that one from the
  // inputs to the outputs then writes each item where it already is, where taking the
  // inputs for the outputs would leave the other one's outputs unwritten.
  pass_buffer inputs_are() const {
    if (copy_inputs_first_) return pass_buffer::between;
    const bool in_place = keys_in_ == keys_out_ && (!has_values || values_in_ == values_out_);
    return in_place ? pass_buffer::outputs : pass_buffer::inputs;
  }
  pass_arrays<K> keys() const { return {keys_in_, keys_out_, keys_between_.data()}; }
  pass_arrays<V> values() const {
    if constexpr (has_values) {
      return {values_in_, values_out_, values_between_.data()};
    } else {
      return {nullptr, nullptr, nullptr};
    }
  }

  const K* keys_from(int pass) const { return keys().from(read_by(pass, passes_)); }
  K* keys_to(int pass) const { return keys().to(written_by(pass, passes_)); }
  const V* values_from(int pass) const { return values().from(read_by(pass, passes_)); }
  V* values_to(int pass) const { return values().to(written_by(pass, passes_)); }
  void release() {
    values_between_.release();
    keys_between_.release();
  }

 private:
  static constexpr bool has_values = has_values_of<V>;

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
