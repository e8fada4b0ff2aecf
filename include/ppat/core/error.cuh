// Errors: how every ppat call reports bad arguments and CUDA failures.
//
// Bad arguments throw std::invalid_argument before anything is launched; CUDA failures
// throw ppat::cuda_error. Both messages start with the ppat function the user called, so
// a failure deep inside a multi-launch algorithm still names the call that caused it.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace ppat {

// A CUDA runtime call or kernel launch made by `function` failed with `code()`.
class cuda_error : public std::runtime_error {
 public:
  cuda_error(cudaError_t code, const std::string& function, const std::string& what_failed)
      : std::runtime_error(function + ": " + what_failed + " failed: " + cudaGetErrorString(code) +
                           " (" + cudaGetErrorName(code) + ")"),
        code_(code) {}

  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

namespace detail {

inline void check_cuda(cudaError_t code, const char* function, const char* what_failed) {
  if (code != cudaSuccess) {
    // Clear the non-sticky error so it is reported exactly once: by this exception.
    (void)cudaGetLastError();
    throw cuda_error(code, function, what_failed);
  }
}

// Call right after a <<<...>>> launch: configuration errors surface here, not later.
inline void check_launch(const char* function, const char* kernel) {
  check_cuda(cudaGetLastError(), function, kernel);
}

[[noreturn]] inline void throw_invalid_argument(const char* function, const char* argument,
                                                const std::string& why) {
  throw std::invalid_argument(std::string(function) + ": argument '" + argument + "' " + why);
}

inline void require(bool condition, const char* function, const char* argument, const char* why) {
  if (!condition) throw_invalid_argument(function, argument, why);
}

}  // namespace detail
}  // namespace ppat
