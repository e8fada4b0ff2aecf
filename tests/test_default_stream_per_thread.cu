// Built with --default-stream per-thread: stream 0 is then each host thread's own stream,
// one handle for as many streams as there are threads. Calls from 8 threads on it run in a
// child process, bounded in time, so that a hang fails the test instead of the suite.
#include <ppat/ppat.cuh>

#include "stream_workload.hpp"
#include "support.hpp"

namespace {

TEST(default_stream_per_thread, stream_zero_of_eight_threads) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const int rounds = ppat_test::fits_item_budget(1 << 20) ? 40 : 4;
  PPAT_EXPECT_IN_CHILD(60, [&] { return ppat_test::scan_and_reduce_from_threads(0, 8, rounds); });
}

}  // namespace
