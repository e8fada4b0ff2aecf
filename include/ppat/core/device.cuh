// What ppat needs to know about the GPU a stream runs on, queried once per device.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

#include "error.cuh"

namespace ppat::detail {

struct device_limits {
  int sm_count;
  int max_threads_per_sm;
  int shared_bytes_per_block_optin;  // what a block may use after raising its dynamic limit
  int shared_bytes_per_sm;
  int l2_bytes;
};

// The device `stream` runs on, given whether it is being captured. A stream being captured
// cannot be asked, and work captured from it launches on the current device, so that is
// the answer then.
inline int device_of(cudaStream_t stream, cudaStreamCaptureStatus capture, const char* function) {
  int device = 0;
  if (capture == cudaStreamCaptureStatusActive) {
    check_cuda(cudaGetDevice(&device), function, "cudaGetDevice");
  } else {
    check_cuda(cudaStreamGetDevice(stream, &device), function, "cudaStreamGetDevice");
  }
  return device;
}

inline cudaStreamCaptureStatus capture_status(cudaStream_t stream, const char* function) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(stream, &capture), function, "cudaStreamIsCapturing");
  return capture;
}

inline int device_of(cudaStream_t stream, const char* function) {
  return device_of(stream, capture_status(stream, function), function);
}

inline const device_limits& limits_of(int device, const char* function) {
  static std::mutex mutex;
  static std::map<int, device_limits> known;  // node-based: references stay valid
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(device);
  if (found != known.end()) return found->second;
  device_limits limits{};
  const auto query = [&](int& value, cudaDeviceAttr attribute) {
    check_cuda(cudaDeviceGetAttribute(&value, attribute, device), function,
               "cudaDeviceGetAttribute");
  };
  query(limits.sm_count, cudaDevAttrMultiProcessorCount);
  query(limits.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor);
  query(limits.shared_bytes_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin);
  query(limits.shared_bytes_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  query(limits.l2_bytes, cudaDevAttrL2CacheSize);
  return known.emplace(device, limits).first->second;
}

inline const device_limits& limits_of(cudaStream_t stream, const char* function) {
  return limits_of(device_of(stream, function), function);
}

}  // namespace ppat::detail
