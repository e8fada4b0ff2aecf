#include "harness.hpp"

#include <ppat/core/memory.cuh>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>
#include <fstream>
#include <sstream>
#include <type_traits>

namespace ppat_bench {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(status));
  }
}

namespace {

__host__ __device__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <class T>
__global__ void fill_uniform_kernel(T* data, std::size_t n, std::size_t run_length, double low,
                                    double high, std::uint64_t seed) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t bits = splitmix64(seed ^ splitmix64(i / run_length));
    if constexpr (std::is_integral_v<T>) {
      const auto span = std::uint64_t(high - low) + 1;
      data[i] = T((long long)low + (long long)(bits % span));
    } else {
      const double unit = double(bits >> 11) * 0x1.0p-53;  // [0, 1)
      data[i] = T(low + (high - low) * unit);
    }
  }
}

template <class T>
__global__ void fill_random_bits_kernel(T* data, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    data[i] = T(splitmix64(seed ^ splitmix64(i)));
}

__global__ void count_differences_kernel(const unsigned char* a, const unsigned char* b,
                                         std::size_t bytes, unsigned long long* differences) {
  unsigned long long mine = 0;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += stride) {
    mine += a[i] != b[i];
  }
  if (mine != 0) atomicAdd(differences, mine);
}

std::string format_time(double us) {
  char text[32];
  if (us >= 10000)
    std::snprintf(text, sizeof text, "%9.2f ms", us / 1000);
  else
    std::snprintf(text, sizeof text, "%9.2f us", us);
  return text;
}

std::string size_text(std::size_t n) {
  const bool power_of_two = n != 0 && (n & (n - 1)) == 0;
  if (!power_of_two) return std::to_string(n);
  int log2 = 0;
  while ((std::size_t{1} << log2) < n)
    ++log2;
  return "2^" + std::to_string(log2);
}

// "ppat::call" times the call on the case's input; "ppat::call, note" on a variation of it.
bool times_public_call(const std::string& variant_name) {
  return variant_name.rfind("ppat::", 0) == 0 && variant_name.find(',') == std::string::npos;
}

}  // namespace

template <class T>
void fill_uniform(T* data, std::size_t n, double low, double high, std::uint64_t seed) {
  fill_uniform_runs(data, n, 1, low, high, seed);
}

template <class T>
void fill_uniform_runs(T* data, std::size_t n, std::size_t run_length, double low, double high,
                       std::uint64_t seed) {
  fill_uniform_kernel<<<1024, 256>>>(data, n, run_length, low, high, seed);
  check(cudaGetLastError(), "fill_uniform_kernel");
  // Cases run on a non-blocking stream, which does not wait for the legacy stream.
  check(cudaDeviceSynchronize(), "fill_uniform_kernel");
}
template <class T>
void fill_random_bits(T* data, std::size_t n, std::uint64_t seed) {
  fill_random_bits_kernel<<<1024, 256>>>(data, n, seed);
  check(cudaGetLastError(), "fill_random_bits_kernel");
  check(cudaDeviceSynchronize(), "fill_random_bits_kernel");
}

template void fill_random_bits(std::uint8_t*, std::size_t, std::uint64_t);
template void fill_random_bits(std::uint16_t*, std::size_t, std::uint64_t);
template void fill_random_bits(std::uint32_t*, std::size_t, std::uint64_t);
template void fill_random_bits(std::uint64_t*, std::size_t, std::uint64_t);
template void fill_random_bits(std::int32_t*, std::size_t, std::uint64_t);
template void fill_random_bits(std::int64_t*, std::size_t, std::uint64_t);
template void fill_uniform(std::uint8_t*, std::size_t, double, double, std::uint64_t);
template void fill_uniform(std::uint16_t*, std::size_t, double, double, std::uint64_t);
template void fill_uniform(std::int16_t*, std::size_t, double, double, std::uint64_t);
template void fill_uniform(std::int32_t*, std::size_t, double, double, std::uint64_t);
template void fill_uniform(std::uint32_t*, std::size_t, double, double, std::uint64_t);
template void fill_uniform(std::int64_t*, std::size_t, double, double, std::uint64_t);
template void fill_uniform(std::uint64_t*, std::size_t, double, double, std::uint64_t);
template void fill_uniform(float*, std::size_t, double, double, std::uint64_t);
template void fill_uniform(double*, std::size_t, double, double, std::uint64_t);
template void fill_uniform_runs(std::uint8_t*, std::size_t, std::size_t, double, double,
                                std::uint64_t);
template void fill_uniform_runs(std::uint16_t*, std::size_t, std::size_t, double, double,
                                std::uint64_t);
template void fill_uniform_runs(std::int16_t*, std::size_t, std::size_t, double, double,
                                std::uint64_t);
template void fill_uniform_runs(std::int32_t*, std::size_t, std::size_t, double, double,
                                std::uint64_t);
template void fill_uniform_runs(std::uint32_t*, std::size_t, std::size_t, double, double,
                                std::uint64_t);
template void fill_uniform_runs(std::int64_t*, std::size_t, std::size_t, double, double,
                                std::uint64_t);
template void fill_uniform_runs(float*, std::size_t, std::size_t, double, double, std::uint64_t);
template void fill_uniform_runs(double*, std::size_t, std::size_t, double, double, std::uint64_t);

__global__ void fill_runs_kernel(std::int32_t* keys, std::size_t n, std::size_t run_length,
                                 std::uint64_t seed) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    keys[i] = std::int32_t(splitmix64(seed ^ (i / run_length)));
}

void fill_runs(std::int32_t* keys, std::size_t n, std::size_t run_length, std::uint64_t seed) {
  fill_runs_kernel<<<1024, 256>>>(keys, n, run_length, seed);
  check(cudaGetLastError(), "fill_runs_kernel");
  check(cudaDeviceSynchronize(), "fill_runs_kernel");
}

void copy_to_device(void* to, const void* from, std::size_t bytes) {
  check(cudaMemcpy(to, from, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaDeviceSynchronize(), "cudaMemcpy");
}

device_array<int> fixed_length_offsets(std::size_t segments, std::size_t length) {
  std::vector<int> host(segments + 1);
  for (std::size_t i = 0; i <= segments; ++i)
    host[i] = int(i * length);
  device_array<int> offsets(segments + 1);
  copy_to_device(offsets.data(), host.data(), host.size() * sizeof(int));
  return offsets;
}

std::size_t count_differences(const void* a, const void* b, std::size_t bytes) {
  device_array<unsigned long long> differences(1);
  check(cudaMemset(differences.data(), 0, sizeof(unsigned long long)), "cudaMemset");
  count_differences_kernel<<<1024, 256>>>(static_cast<const unsigned char*>(a),
                                          static_cast<const unsigned char*>(b), bytes,
                                          differences.data());
  check(cudaGetLastError(), "count_differences_kernel");
  unsigned long long host = 0;
  check(cudaMemcpy(&host, differences.data(), sizeof host, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return std::size_t(host);
}

struct session::loss {
  std::string pattern, label, size, variant, peer;
  double vs_peer;
  double pct_copy;
};

struct session::row {
  std::string variant;
  double time_us;
  double gbps;
  double pct_copy;     // NaN when there is no copy to compare with
  double vs_baseline;  // baseline time / this time: above 1 is faster; NaN without baseline
  std::string check;   // "ok", "WRONG" or "-"
};

session::session(options opts, device_facts device)
    : opts_(std::move(opts)), device_(std::move(device)) {
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreate(&start_), "cudaEventCreate");
  check(cudaEventCreate(&stop_), "cudaEventCreate");
}

session::~session() {
  (void)cudaEventDestroy(start_);
  (void)cudaEventDestroy(stop_);
  try {
    ppat::release_stream_memory(stream_);
  } catch (const std::exception&) {
    // A failing CUDA call has already been reported by the case that made it.
  }
  (void)cudaStreamDestroy(stream_);
}

bool session::wants_pattern(const std::string& pattern) const {
  return opts_.patterns.empty() ||
         std::find(opts_.patterns.begin(), opts_.patterns.end(), pattern) != opts_.patterns.end();
}

bool session::wants_type(const std::string& type, const std::vector<std::string>& defaults) const {
  if (opts_.types.empty() && opts_.sweep) return true;
  const auto& wanted = opts_.types.empty() ? defaults : opts_.types;
  return std::find(wanted.begin(), wanted.end(), type) != wanted.end();
}

std::vector<std::size_t> session::sizes(const std::vector<int>& full,
                                        const std::vector<int>& quick) const {
  std::vector<int> log2s = opts_.log2_sizes;
  if (log2s.empty()) {
    if (opts_.sweep) {
      for (int k = 10; k <= 30; k += 2)
        log2s.push_back(k);
    } else {
      log2s = opts_.quick ? quick : full;
    }
  }
  std::vector<std::size_t> counts;
  for (int k : log2s) {
    counts.push_back(std::size_t{1} << k);
    if (opts_.sweep && k >= 2) counts.push_back((std::size_t{3} << (k - 2)) + 1);
  }
  return counts;
}

int session::rotation_sets(double bytes_per_set) const {
  const double wanted = std::ceil(3.0 * double(device_.l2_bytes) / bytes_per_set);
  const double affordable = std::floor(double(device_.memory_bytes) / 8 / bytes_per_set);
  return int(std::clamp(std::min(wanted, affordable), 1.0, 256.0));
}

double session::median_us(const std::function<void(int set)>& run, int sets) {
  for (int i = 0; i < 3; ++i)
    run(i % sets);  // module load, pools, caches
  check(cudaStreamSynchronize(stream_), "warm-up");

  const auto timed = [&](int set) {
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    run(set);
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return double(ms) * 1000;
  };
  const double estimate = timed(0);
  // A sweep times thousands of cells: less time on each, still a median of ten or more
  // where a call takes under 5 ms.
  const double budget_us = opts_.quick ? 20e3 : opts_.sweep ? 50e3 : 150e3;
  // Fast calls get many runs; calls of tens of milliseconds (a skewed histogram on global
  // atomics) at least five.
  const double min_reps = estimate > 20e3 ? 5 : 10;
  const double max_reps = opts_.quick ? 30 : opts_.sweep ? 100 : 200;
  const int reps = int(std::clamp(budget_us / std::max(estimate, 1.0), min_reps, max_reps));
  std::vector<double> times;
  for (int rep = 0; rep < reps; ++rep)
    times.push_back(timed((rep + 1) % sets));
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[reps / 2];
}

// The copy every case is compared with, on buffers of the harness's own: filled once (so
// that their pages are mapped), then copied in the case's rotation.
double session::copy_median_us(std::size_t bytes, int sets) {
  std::vector<device_array<unsigned char>> from(sets), to(sets);
  for (int k = 0; k < sets; ++k) {
    from[k] = device_array<unsigned char>(bytes);
    to[k] = device_array<unsigned char>(bytes);
    check(cudaMemsetAsync(from[k].data(), 0x5A, bytes, stream_), "cudaMemsetAsync");
    check(cudaMemsetAsync(to[k].data(), 0, bytes, stream_), "cudaMemsetAsync");
  }
  return median_us(
      [&](int k) {
        check(
            cudaMemcpyAsync(to[k].data(), from[k].data(), bytes, cudaMemcpyDeviceToDevice, stream_),
            "cudaMemcpyAsync");
      },
      sets);
}

void session::run(const bench_case& c) {
  if (isatty(STDERR_FILENO)) {
    std::fprintf(stderr, "\r\033[K[%s] %s %s ...", c.pattern.c_str(), c.label.c_str(),
                 c.shape.empty() ? size_text(c.n).c_str() : c.shape.c_str());
    std::fflush(stderr);
  }
  double copy_gbps = NAN;
  std::vector<row> rows;
  if (c.copy_bytes > 0) {
    const double us = copy_median_us(std::size_t(c.copy_bytes), c.sets);
    copy_gbps = 2 * c.copy_bytes / us / 1e3;
    rows.push_back({"copy (cudaMemcpyAsync D2D)", us, copy_gbps, 100.0, NAN, "-"});
  }
  double baseline_us = NAN;
  for (const variant& v : c.variants) {
    if (opts_.sweep && !times_public_call(v.name) && v.name != c.baseline) continue;
    const double us = median_us(v.run, c.sets) / v.calls;
    if (v.name == c.baseline) baseline_us = us;
    std::string verdict = "-";
    if (v.check) {
      v.run(0);
      check(cudaStreamSynchronize(stream_), v.name.c_str());
      verdict = v.check() ? "ok" : "WRONG";
      if (verdict != "ok") all_checks_passed_ = false;
    }
    const double gbps = c.bytes > 0 ? c.bytes / us / 1e3 : NAN;
    rows.push_back({v.name, us, gbps, 100.0 * gbps / copy_gbps, NAN, verdict});
  }
  const std::string peer = c.baseline.empty() ? std::string("copy") : c.baseline;
  const double peer_us =
      c.baseline.empty() ? (c.copy_bytes > 0 ? rows.front().time_us : NAN) : baseline_us;
  for (row& r : rows) {
    if (r.variant.rfind("copy", 0) != 0) r.vs_baseline = baseline_us / r.time_us;
  }
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r\033[K");
  print(c, rows);
  if (opts_.sweep) {
    for (const row& r : rows) {
      const double vs_peer = peer_us / r.time_us;
      if (times_public_call(r.variant) && vs_peer < 1.0) {
        losses_.push_back({c.pattern, c.label, c.shape.empty() ? size_text(c.n) : c.shape,
                           r.variant, peer, vs_peer, r.pct_copy});
      }
    }
  }

  for (const row& r : rows) {
    const double vs_peer = r.variant.rfind("copy", 0) == 0 ? NAN : peer_us / r.time_us;
    const auto number = [](double x) {
      std::ostringstream text;
      if (std::isnan(x))
        text << "null";
      else
        text << x;
      return text.str();
    };
    std::ostringstream json;
    json << "{\"pattern\": \"" << c.pattern << "\", \"case\": \"" << c.label << "\", \"type\": \""
         << c.type << "\", \"n\": " << c.n << ", \"shape\": \"" << c.shape << "\", \"variant\": \""
         << r.variant << "\", \"baseline\": \"" << c.baseline << "\", \"peer\": \"" << peer
         << "\", \"vs_peer\": " << number(vs_peer) << ", \"bytes\": " << number(c.bytes)
         << ", \"time_us\": " << number(r.time_us) << ", \"gbps\": " << number(r.gbps)
         << ", \"pct_copy\": " << number(r.pct_copy)
         << ", \"vs_baseline\": " << number(r.vs_baseline) << ", \"check\": \"" << r.check << "\"}";
    json_rows_.push_back(json.str());
    // Labels and variant names hold commas: quoted.
    std::ostringstream csv;
    csv << c.pattern << ",\"" << c.label << "\"," << c.type << ',' << c.n << ',' << c.shape << ",\""
        << r.variant << "\",\"" << c.baseline << "\"," << peer << ',' << number(vs_peer) << ','
        << number(c.bytes) << ',' << number(r.time_us) << ',' << number(r.gbps) << ','
        << number(r.pct_copy) << ',' << number(r.vs_baseline) << ',' << r.check;
    csv_rows_.push_back(csv.str());
  }
}

void session::print(const bench_case& c, const std::vector<row>& rows) const {
  std::printf("\n%s: %s, n = %s", c.pattern.c_str(), c.label.c_str(), size_text(c.n).c_str());
  if (!c.shape.empty()) std::printf(" (%s)", c.shape.c_str());
  if (c.bytes > 0) std::printf(", %.1f MB must move per call", c.bytes / 1e6);
  std::printf(
      "\n  %-46s %12s%s %9s %7s %8s  %s\n", "variant", "time", c.keys_per_second ? "  Gkeys/s" : "",
      "GB/s", "% copy",
      ("vs " + (c.baseline.empty() ? std::string("-") : c.baseline.substr(0, c.baseline.find(':'))))
          .c_str(),
      "check");
  for (const row& r : rows) {
    char gbps[16] = "-", pct[16] = "-", vs[16] = "-";
    if (!std::isnan(r.gbps)) std::snprintf(gbps, sizeof gbps, "%.1f", r.gbps);
    if (!std::isnan(r.pct_copy)) std::snprintf(pct, sizeof pct, "%.1f%%", r.pct_copy);
    if (!std::isnan(r.vs_baseline)) std::snprintf(vs, sizeof vs, "%.2fx", r.vs_baseline);
    char rate[16] = "";
    if (c.keys_per_second)
      std::snprintf(rate, sizeof rate, " %8.1f", double(c.n) / r.time_us / 1e3);
    std::printf("  %-46s %12s%s %9s %7s %8s  %s\n", r.variant.c_str(),
                format_time(r.time_us).c_str(), rate, gbps, pct, vs, r.check.c_str());
  }
  std::fflush(stdout);
}

void session::write_outputs() const {
  if (!opts_.json_path.empty()) {
    std::ofstream out(opts_.json_path);
    out << "{\n  \"device\": {\"name\": \"" << device_.name
        << "\", \"sm_count\": " << device_.sm_count << ", \"l2_bytes\": " << device_.l2_bytes
        << ", \"memory_bytes\": " << device_.memory_bytes
        << "},\n  \"sweep\": " << (opts_.sweep ? "true" : "false") << ",\n  \"results\": [\n";
    for (std::size_t i = 0; i < json_rows_.size(); ++i) {
      out << "    " << json_rows_[i] << (i + 1 < json_rows_.size() ? ",\n" : "\n");
    }
    out << "  ]\n}\n";
    if (!out) throw std::runtime_error("could not write " + opts_.json_path);
  }
  if (!opts_.csv_path.empty()) {
    std::ofstream out(opts_.csv_path);
    out << "pattern,case,type,n,shape,variant,baseline,peer,vs_peer,bytes,time_us,gbps,pct_copy,"
           "vs_baseline,check\n";
    for (const auto& line : csv_rows_)
      out << line << '\n';
    if (!out) throw std::runtime_error("could not write " + opts_.csv_path);
  }
}

bool session::finish() {
  write_outputs();
  if (opts_.sweep) print_losses();
  if (!all_checks_passed_) std::printf("\nSOME VARIANTS PRODUCED WRONG OUTPUT (check column)\n");
  return all_checks_passed_;
}

// Worst first within each pattern; a cell whose only peer is the copy can rarely reach it,
// so those come after the cells with a library peer.
void session::print_losses() const {
  std::vector<loss> sorted = losses_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const loss& a, const loss& b) {
    const bool a_copy = a.peer == "copy", b_copy = b.peer == "copy";
    if (a_copy != b_copy) return b_copy;
    if (a.pattern != b.pattern) return a.pattern < b.pattern;
    return a.vs_peer < b.vs_peer;
  });
  std::printf("\nsweep: %zu cells below 1.00x their peer\n", sorted.size());
  for (const loss& l : sorted) {
    char pct[16] = "-";
    if (!std::isnan(l.pct_copy)) std::snprintf(pct, sizeof pct, "%.1f%%", l.pct_copy);
    std::printf("  %5.2fx  %-9s %-44s %-16s %-24s vs %s, %s of copy\n", l.vs_peer,
                l.pattern.c_str(), l.label.c_str(), l.size.c_str(), l.variant.c_str(),
                l.peer.c_str(), pct);
  }
  std::fflush(stdout);
}

}  // namespace ppat_bench
