// Calls on many streams at once: host threads on per-thread default streams, streams
// destroyed with calls still queued (whose handles the driver hands out again), and a
// stream of another device than the current one. The first two run in a child process,
// bounded in time, so that a hang or a fault fails the test instead of the suite.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "reference.hpp"
#include "stream_workload.hpp"
#include "support.hpp"

namespace {

using ppat_test::device_buffer;

// Calls from 8 host threads on cudaStreamPerThread: one handle for 8 different streams.
TEST(streams, per_thread_default_streams_of_eight_threads) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const int rounds = ppat_test::fits_item_budget(1 << 20) ? 40 : 4;
  PPAT_EXPECT_IN_CHILD(
      60, [&] { return ppat_test::scan_and_reduce_from_threads(cudaStreamPerThread, 8, rounds); });
}

// 64 streams each queue a scan and a reduce behind a closed gate and are destroyed at once,
// half of them after release_stream_memory; 64 new streams, most of which get a destroyed
// stream's handle, queue the same calls behind it. The gate then opens: every call runs at
// once, and every result must be right.
TEST(streams, destroyed_with_calls_queued_and_handles_reused) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  PPAT_EXPECT_IN_CHILD(60, [] {
    constexpr int per_phase = 64;
    const std::size_t max_n = ppat_test::fits_item_budget(1 << 19) ? 300000 : 20000;
    struct call {
      std::vector<int> in;
      int* device_in = nullptr;
      int* device_out = nullptr;
      int* device_sum = nullptr;
    };
    std::vector<call> calls(2 * per_phase);
    const auto cuda = ppat_test::cuda_or_throw;
    for (auto& c : calls) {
      const std::size_t n = ppat_test::random_integers<std::size_t>(1, max_n / 2, max_n)[0];
      c.in = ppat_test::random_integers<int>(n, -1000, 1000);
      cuda(cudaMalloc(&c.device_in, n * sizeof(int)), "cudaMalloc");
      cuda(cudaMalloc(&c.device_out, n * sizeof(int)), "cudaMalloc");
      cuda(cudaMalloc(&c.device_sum, sizeof(int)), "cudaMalloc");
      cuda(cudaMemcpy(c.device_in, c.in.data(), n * sizeof(int), cudaMemcpyHostToDevice),
           "cudaMemcpy");
      cuda(cudaMemset(c.device_out, ppat_test::poison_byte, n * sizeof(int)), "cudaMemset");
      cuda(cudaMemset(c.device_sum, ppat_test::poison_byte, sizeof(int)), "cudaMemset");
    }
    cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const auto make_calls = [&](const call& c, cudaStream_t stream) {
      ppat::inclusive_scan(c.device_in, c.device_out, c.in.size(), ppat::plus{}, stream);
      ppat::reduce(c.device_in, c.device_sum, c.in.size(), 5, ppat::plus{}, stream);
    };
    ppat_test::gate start;
    std::set<cudaStream_t> destroyed;
    for (int i = 0; i < per_phase; ++i) {
      cudaStream_t stream;
      cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      start.hold(stream, 1);
      make_calls(calls[i], stream);
      if (i % 2 == 0) ppat::release_stream_memory(stream);
      cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
      destroyed.insert(stream);
    }
    int reused = 0;
    std::vector<cudaStream_t> second(per_phase);
    for (int i = 0; i < per_phase; ++i) {
      cuda(cudaStreamCreateWithFlags(&second[i], cudaStreamNonBlocking), "cudaStreamCreate");
      reused += int(destroyed.count(second[i]));
      start.hold(second[i], 1);
      make_calls(calls[per_phase + i], second[i]);
    }
    start.open(1);
    for (cudaStream_t stream : second)
      cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
    cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::string failures;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto& c = calls[i];
      std::vector<int> out(c.in.size());
      int sum = 0;
      cuda(cudaMemcpy(out.data(), c.device_out, out.size() * sizeof(int), cudaMemcpyDeviceToHost),
           "cudaMemcpy");
      cuda(cudaMemcpy(&sum, c.device_sum, sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
      const std::string where = "call " + std::to_string(i) + " n=" + std::to_string(c.in.size());
      const long long bad =
          ppat_test::first_mismatch(out, ppat_reference::inclusive_scan(c.in, ppat::plus{}));
      if (bad >= 0) failures += where + ": scan wrong from " + std::to_string(bad) + "\n";
      if (sum != ppat_reference::reduce(c.in, 5, ppat::plus{}))
        failures += where + ": reduce wrong\n";
      (void)cudaFree(c.device_in);
      (void)cudaFree(c.device_out);
      (void)cudaFree(c.device_sum);
    }
    if (!failures.empty())
      failures += std::to_string(reused) + " of " + std::to_string(per_phase) +
                  " new streams had a destroyed stream's handle\n";
    return failures;
  });
}

// A call on one stream while this thread captures another in global mode, where questions
// that might wait on the device are illegal: the call works, and the capture stays valid.
TEST(streams, calls_beside_a_capture_in_global_mode) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = 300007;
  const auto values = ppat_test::random_integers<int>(n, -1000, 1000);
  device_buffer<int> in(values), scanned(n), sum(1), captured_out(n);
  cudaStream_t captured, beside;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&captured, cudaStreamNonBlocking));
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&beside, cudaStreamNonBlocking));
  // Memory the calls on `beside` may be lent once these are done: ppat asks their events.
  ppat::inclusive_scan(in.data(), scanned.data(), n, ppat::plus{}, captured);
  ppat::reduce(in.data(), sum.data(), n, 1, ppat::plus{}, captured);
  PPAT_CUDA_OK(cudaStreamSynchronize(captured));
  scanned.poison();
  sum.poison();
  PPAT_CUDA_OK(cudaStreamBeginCapture(captured, cudaStreamCaptureModeGlobal));
  ppat::inclusive_scan(in.data(), captured_out.data(), n, ppat::plus{}, captured);
  ppat::inclusive_scan(in.data(), scanned.data(), n, ppat::plus{}, beside);
  ppat::reduce(in.data(), sum.data(), n, 1, ppat::plus{}, beside);
  cudaGraph_t graph = nullptr;
  PPAT_CUDA_OK(cudaStreamEndCapture(captured, &graph));
  cudaGraphExec_t exec;
  PPAT_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  PPAT_CUDA_OK(cudaGraphLaunch(exec, captured));
  PPAT_CUDA_OK(cudaStreamSynchronize(captured));
  PPAT_CUDA_OK(cudaStreamSynchronize(beside));
  const auto expected = ppat_reference::inclusive_scan(values, ppat::plus{});
  EXPECT_EQ(ppat_test::first_mismatch(scanned.download(), expected), -1);
  EXPECT_EQ(ppat_test::first_mismatch(captured_out.download(), expected), -1);
  EXPECT_EQ(sum.download()[0], ppat_reference::reduce(values, 1, ppat::plus{}));
  PPAT_CUDA_OK(cudaGraphExecDestroy(exec));
  PPAT_CUDA_OK(cudaGraphDestroy(graph));
  for (cudaStream_t stream : {captured, beside})
    PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
}

// With device 0 current, every pattern runs on a stream of device 1 (and under capture on
// it), and device 0 is current again after each call.
TEST(streams, stream_of_another_device) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  int devices = 0;
  PPAT_CUDA_OK(cudaGetDeviceCount(&devices));
  if (devices < 2) GTEST_SKIP() << "needs two GPUs";
  PPAT_CUDA_OK(cudaSetDevice(1));
  cudaStream_t stream;
  PPAT_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::size_t n = 1000003;
  const auto values = ppat_test::random_integers<int>(n, -1000, 1000);
  const auto samples = ppat_test::random_integers<int>(n, -10, 20010);
  const std::size_t rows = 1001, cols = 999;
  {
    device_buffer<int> in(values), scanned(n), sum(1), matrix(values), transposed(rows * cols);
    device_buffer<int> sample_buffer(samples);
    device_buffer<std::uint32_t> wide(20000), narrow(256);
    const auto expect_device_0 = [](const char* call) {
      int current = -1;
      EXPECT_EQ(cudaGetDevice(&current), cudaSuccess);
      EXPECT_EQ(current, 0) << "after " << call;
    };
    // Device 1 is current while the test prepares and checks, device 0 during the calls.
    const auto run_all = [&] {
      PPAT_CUDA_OK(cudaSetDevice(0));
      ppat::inclusive_scan(in.data(), scanned.data(), n, ppat::plus{}, stream);
      expect_device_0("inclusive_scan");
      ppat::reduce(in.data(), sum.data(), n, 2, ppat::plus{}, stream);
      expect_device_0("reduce");
      // 20,000 bins take more than 48 KB of shared memory: the kernel's limit is raised on
      // the stream's device.
      ppat::histogram_even(sample_buffer.data(), n, wide.data(), 20000, 0, 20000, stream);
      expect_device_0("histogram_even, 20000 bins");
      ppat::histogram_even(sample_buffer.data(), n, narrow.data(), 256, 0, 20000, stream);
      expect_device_0("histogram_even, 256 bins");
      ppat::textbook::histogram_even_shared_atomics(sample_buffer.data(), n, wide.data(), 20000, 0,
                                                    20000, stream);
      expect_device_0("textbook::histogram_even_shared_atomics");
      ppat::transpose(matrix.data(), transposed.data(), rows, cols, stream);
      expect_device_0("transpose");
      PPAT_CUDA_OK(cudaSetDevice(1));
    };
    const auto check_all = [&](const char* how) {
      SCOPED_TRACE(how);
      PPAT_CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_EQ(ppat_test::first_mismatch(scanned.download(),
                                          ppat_reference::inclusive_scan(values, ppat::plus{})),
                -1);
      EXPECT_EQ(sum.download()[0], ppat_reference::reduce(values, 2, ppat::plus{}));
      std::vector<std::uint32_t> wide_expected(20000), narrow_expected(256);
      for (int s : samples) {
        if (s >= 0 && s < 20000) {
          ++wide_expected[s];
          ++narrow_expected[std::size_t(s) * 256 / 20000];
        }
      }
      EXPECT_EQ(ppat_test::first_mismatch(wide.download(), wide_expected), -1);
      EXPECT_EQ(ppat_test::first_mismatch(narrow.download(), narrow_expected), -1);
      std::vector<int> transposed_expected(rows * cols);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c)
          transposed_expected[c * rows + r] = values[r * cols + c];
      EXPECT_EQ(ppat_test::first_mismatch(transposed.download(), transposed_expected), -1);
    };
    run_all();
    check_all("direct calls");

    ppat_test::capture_and_replay(
        stream, run_all,
        [&](int) {
          for (auto* buffer : {&scanned, &sum, &transposed})
            buffer->poison();
          wide.poison();
          narrow.poison();
        },
        [&](int) { check_all("a graph captured on the stream"); });
  }
  PPAT_CUDA_OK(cudaStreamDestroy(stream));
  ppat_test::expect_no_cuda_error();
  PPAT_CUDA_OK(cudaSetDevice(0));
  ppat_test::expect_no_cuda_error();
}

}  // namespace
