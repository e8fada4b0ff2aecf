// The stream a call runs on and the GPU behind it: every public entry builds a
// call_context once its arguments are checked, and everything below asks it.
//
// A stream may belong to any device, whatever device the caller has current: the context
// makes the stream's device current for the rest of the call (shared-memory limits,
// occupancy and the memory pool are per device) and makes the caller's current again at the
// end.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <type_traits>

#include "error.cuh"

namespace ppat::detail {

struct device_limits {
  int sm_count;
  int max_threads_per_sm;
  int shared_bytes_per_block_optin;  // what a block may use after raising its dynamic limit
  int shared_bytes_per_sm;
  int l2_bytes;
  bool pageable_memory_access;  // kernels may read memory from malloc and new
  bool has_clusters;            // thread-block clusters (sm_90 on)
};

inline const device_limits& limits_of(int device, const char* function);
inline int device_of(cudaStream_t stream, bool captured, int current_device, const char* function);

class call_context {
 public:
  call_context(cudaStream_t stream, const char* function) : stream_(stream), function_(function) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
    captured_ = capture != cudaStreamCaptureStatusNone;
    check(cudaGetDevice(&callers_device_), "cudaGetDevice");
    device_ = device_of(stream, captured_, callers_device_, function);
    limits_ = &limits_of(device_, function);
    if (device_ != callers_device_) check(cudaSetDevice(device_), "cudaSetDevice");
  }
  call_context(const call_context&) = delete;
  call_context& operator=(const call_context&) = delete;
  ~call_context() {
    if (device_ != callers_device_ && cudaSetDevice(callers_device_) != cudaSuccess)
      (void)cudaGetLastError();  // an error already propagating is the one to report
  }

  cudaStream_t stream() const { return stream_; }
  const char* function() const { return function_; }
  // Captured into a graph: allocations and memsets become nodes of it, replayed each time.
  bool captured() const { return captured_; }
  int device() const { return device_; }
  const device_limits& limits() const { return *limits_; }

  // A failed CUDA call as ppat::cuda_error naming the public function.
  void check(cudaError_t code, const char* what_failed) const {
    check_cuda(code, function_, what_failed);
  }

 private:
  cudaStream_t stream_;
  const char* function_;
  bool captured_ = false;
  int device_ = 0;
  int callers_device_ = 0;
  const device_limits* limits_ = nullptr;
};

// The default streams (0, cudaStreamLegacy, cudaStreamPerThread) are `current_device`'s.
// A stream being captured cannot be asked through the runtime: on some drivers
// cudaStreamGetDevice then fails and invalidates the capture. Its device is that of its
// context, through the driver API (entry points from the runtime, no libcuda to link).
inline int device_of(cudaStream_t stream, bool captured, int current_device, const char* function) {
  if (stream == 0 || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
    return current_device;
  int device = 0;
  if (!captured) {
    check_cuda(cudaStreamGetDevice(stream, &device), function, "cudaStreamGetDevice");
  } else {
    struct driver_calls {
      CUresult (*stream_context)(CUstream, CUcontext*);
      CUresult (*push)(CUcontext);
      CUresult (*device)(CUdevice*);
      CUresult (*pop)(CUcontext*);
    };
    static const driver_calls driver = [function] {
      driver_calls calls{};
      const auto find = [function](const char* symbol, auto& entry) {
        void* address = nullptr;
        cudaDriverEntryPointQueryResult found{};
        check_cuda(
            cudaGetDriverEntryPointByVersion(symbol, &address, 12000, cudaEnableDefault, &found),
            function, "cudaGetDriverEntryPointByVersion");
        if (found != cudaDriverEntryPointSuccess)
          check_cuda(cudaErrorSymbolNotFound, function, symbol);
        entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(address);
      };
      find("cuStreamGetCtx", calls.stream_context);
      find("cuCtxPushCurrent", calls.push);
      find("cuCtxGetDevice", calls.device);
      find("cuCtxPopCurrent", calls.pop);
      return calls;
    }();
    // Driver and runtime error codes share their numbers.
    const auto check_driver = [function](CUresult result, const char* what) {
      check_cuda(cudaError_t(result), function, what);
    };
    CUcontext context = nullptr;
    check_driver(driver.stream_context(reinterpret_cast<CUstream>(stream), &context),
                 "cuStreamGetCtx");
    check_driver(driver.push(context), "cuCtxPushCurrent");
    CUdevice found = 0;
    const CUresult asked = driver.device(&found);
    CUcontext popped = nullptr;
    check_driver(driver.pop(&popped), "cuCtxPopCurrent");
    check_driver(asked, "cuCtxGetDevice");
    device = int(found);
  }
  return device;
}

// Queried once per device.
inline const device_limits& limits_of(int device, const char* function) {
  static std::mutex mutex;
  static std::map<int, device_limits> known;  // node-based: references stay valid
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(device);
  if (found != known.end()) return found->second;
  device_limits limits{};
  const auto query = [&](cudaDeviceAttr attribute) {
    int value = 0;
    check_cuda(cudaDeviceGetAttribute(&value, attribute, device), function,
               "cudaDeviceGetAttribute");
    return value;
  };
  limits.sm_count = query(cudaDevAttrMultiProcessorCount);
  limits.max_threads_per_sm = query(cudaDevAttrMaxThreadsPerMultiProcessor);
  limits.shared_bytes_per_block_optin = query(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  limits.shared_bytes_per_sm = query(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  limits.l2_bytes = query(cudaDevAttrL2CacheSize);
  limits.pageable_memory_access = query(cudaDevAttrPageableMemoryAccess) != 0;
  limits.has_clusters = query(cudaDevAttrClusterLaunch) != 0;
  return known.emplace(device, limits).first->second;
}

}  // namespace ppat::detail
