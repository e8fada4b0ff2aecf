// ppat: the command-line program.
//
//   ppat info     the GPU, and its device-to-device copy bandwidth measured now
//   ppat bench    every variant of every pattern timed side by side (see --help)
//   ppat check    every primitive once on random data against the host reference
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "check.hpp"
#include "harness.hpp"

#ifdef PPAT_BENCH_DISTRIBUTED
#include <nccl.h>
#endif

namespace {

constexpr const char* usage = R"(usage: ppat <command> [options]

commands:
  info                 the GPU: name, SMs, L2, memory, and its copy bandwidth measured now
  bench [options]      time every variant of every pattern beside CUB/cuBLAS
  check                run every primitive once on random data against the host reference

bench options:
  --pattern P[,P...]   scan, reduce, select, sort, histogram, transpose, overhead (default: all);
                       distributed (where built with NCCL; only when named): every GPU a
                       rank, each distributed call against one GPU on the same total
  --sizes SPEC         log2 of the item counts: FROM:TO[:STEP] or a list, e.g. 16:30:2 or 20,24
                       (transpose: square-ish matrices of 2^k elements instead of its shapes)
  --types T[,T...]     i32 u32 f32 i64 u64 f64 u8 u16 i16 16B (default: each pattern's own set)
  --json FILE          write every row as JSON (scripts/plot.py draws it)
  --csv FILE           write every row as CSV
  --quick              fewer sizes, types and runs: well under a minute
  --sweep              every public call beside its peer (CUB, cuBLAS, or the copy where
                       there is none) over every type it takes, 2^10-2^30 items with an odd
                       count beside each power of two, and transpose/permute shapes; lists
                       every cell below 1.00x at the end (with --sizes: those powers)

GB/s counts the bytes a call must move (inputs read once, outputs written once).
% copy compares with cudaMemcpyAsync device-to-device of the same bytes, timed in the
same run. "vs X" is X's time divided by the variant's: above 1.00x is faster than X.
)";

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

int parse_int(const std::string& text) {
  std::size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size()) throw usage_error("not a number: '" + text + "'");
  return value;
}

std::vector<int> parse_sizes(const std::string& spec) {
  std::vector<int> sizes;
  if (spec.find(':') != std::string::npos) {
    const auto parts = split(spec, ':');
    if (parts.size() < 2 || parts.size() > 3) throw usage_error("--sizes FROM:TO[:STEP]");
    const int from = parse_int(parts[0]), to = parse_int(parts[1]);
    const int step = parts.size() == 3 ? parse_int(parts[2]) : 1;
    if (step <= 0) throw usage_error("--sizes: STEP must be positive");
    for (int k = from; k <= to; k += step)
      sizes.push_back(k);
  } else {
    for (const auto& part : split(spec, ','))
      sizes.push_back(parse_int(part));
  }
  for (int k : sizes) {
    if (k < 0 || k > 34) throw usage_error("--sizes: log2 sizes go from 0 to 34");
  }
  if (sizes.empty()) throw usage_error("--sizes: no sizes in '" + spec + "'");
  return sizes;
}

ppat_bench::options parse_bench_options(const std::vector<std::string>& args) {
  ppat_bench::options opts;
  std::vector<std::string> patterns = {"scan",      "reduce",    "select",  "sort",
                                       "histogram", "transpose", "overhead"};
#ifdef PPAT_BENCH_DISTRIBUTED
  patterns.push_back("distributed");
#endif
  const std::vector<std::string> types = {"i32", "u32", "f32", "i64", "u64",
                                          "f64", "u8",  "u16", "i16", "16B"};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw usage_error(arg + " needs a value");
      return args[++i];
    };
    if (arg == "--quick") {
      opts.quick = true;
    } else if (arg == "--sweep") {
      opts.sweep = true;
    } else if (arg == "--pattern") {
      opts.patterns = split(value(), ',');
      for (const auto& p : opts.patterns) {
        if (std::find(patterns.begin(), patterns.end(), p) == patterns.end()) {
          throw usage_error("unknown pattern '" + p + "'");
        }
      }
    } else if (arg == "--types") {
      opts.types = split(value(), ',');
      for (const auto& t : opts.types) {
        if (std::find(types.begin(), types.end(), t) == types.end()) {
          throw usage_error("unknown type '" + t + "'");
        }
      }
    } else if (arg == "--sizes") {
      opts.log2_sizes = parse_sizes(value());
    } else if (arg == "--json") {
      opts.json_path = value();
    } else if (arg == "--csv") {
      opts.csv_path = value();
    } else {
      throw usage_error("unknown option '" + arg + "'");
    }
  }
  if (opts.quick && opts.sweep) throw usage_error("--quick and --sweep do not go together");
  return opts;
}

// The commands below need a GPU: say so plainly where there is none.
bool require_gpu() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess && count > 0) return true;
  std::fprintf(stderr,
               "ppat: this command needs an NVIDIA GPU with a working CUDA driver, and none was "
               "found (%s).\n",
               status == cudaSuccess ? "no CUDA devices" : cudaGetErrorString(status));
  return false;
}

ppat_bench::device_facts query_device() {
  int device = 0;
  ppat_bench::check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp props{};
  ppat_bench::check(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  ppat_bench::device_facts facts;
  facts.name = props.name;
  facts.sm_count = props.multiProcessorCount;
  facts.l2_bytes = std::size_t(props.l2CacheSize);
  facts.memory_bytes = props.totalGlobalMem;
  return facts;
}

// Device-to-device copy of 1 GiB: bytes read plus bytes written per second, median of 20.
double copy_bandwidth_gbps() {
  const std::size_t bytes = std::size_t{1} << 30;
  ppat_bench::device_array<unsigned char> from(bytes), to(bytes);
  ppat_bench::check(cudaMemset(from.data(), 1, bytes), "cudaMemset");
  cudaEvent_t start, stop;
  ppat_bench::check(cudaEventCreate(&start), "cudaEventCreate");
  ppat_bench::check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> ms(20);
  for (int rep = -3; rep < int(ms.size()); ++rep) {
    ppat_bench::check(cudaEventRecord(start), "cudaEventRecord");
    ppat_bench::check(cudaMemcpyAsync(to.data(), from.data(), bytes, cudaMemcpyDeviceToDevice),
                      "cudaMemcpyAsync");
    ppat_bench::check(cudaEventRecord(stop), "cudaEventRecord");
    ppat_bench::check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    if (rep >= 0) ppat_bench::check(cudaEventElapsedTime(&ms[rep], start, stop), "elapsed");
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return 2.0 * bytes / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

int info() {
  const auto facts = query_device();
  int device = 0, major = 0, minor = 0;
  ppat_bench::check(cudaGetDevice(&device), "cudaGetDevice");
  ppat_bench::check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                    "cudaDeviceGetAttribute");
  ppat_bench::check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
                    "cudaDeviceGetAttribute");
  std::size_t free_bytes = 0, total_bytes = 0;
  ppat_bench::check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  std::printf("GPU             %s (compute capability %d.%d)\n", facts.name.c_str(), major, minor);
  std::printf("SMs             %d\n", facts.sm_count);
  std::printf("L2 cache        %.1f MB\n", facts.l2_bytes / 1e6);
  std::printf("memory          %.1f GB total, %.1f GB free\n", total_bytes / 1e9, free_bytes / 1e9);
  std::printf(
      "copy bandwidth  %.0f GB/s (cudaMemcpyAsync D2D of 1 GiB, read + write, median "
      "of 20)\n",
      copy_bandwidth_gbps());
  int gpus = 0;
  ppat_bench::check(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
  for (int g = 0; g < gpus; ++g) {
    cudaDeviceProp properties{};
    ppat_bench::check(cudaGetDeviceProperties(&properties, g), "cudaGetDeviceProperties");
    std::printf("GPU %-11d %s, %.1f GB\n", g, properties.name, properties.totalGlobalMem / 1e9);
  }
#ifdef PPAT_BENCH_DISTRIBUTED
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    std::printf("NCCL            %d.%d.%d (ppat::distributed)\n", nccl / 10000, nccl / 100 % 100,
                nccl % 100);
  }
#else
  std::printf("NCCL            not built in (ppat::distributed needs it)\n");
#endif
  return 0;
}

int bench(const std::vector<std::string>& args) {
  ppat_bench::session session(parse_bench_options(args), query_device());
  const auto& device = session.device();
  std::printf("ppat bench on %s (%d SMs, %.0f MB L2)%s\n", device.name.c_str(), device.sm_count,
              device.l2_bytes / 1e6,
              session.opts().quick   ? ", quick"
              : session.opts().sweep ? ", sweep"
                                     : "");
  std::printf(
      "GB/s: bytes that must move (inputs read once, outputs written once). %% copy: "
      "against a D2D copy of\nthe same bytes in this run. vs X: X's time / this time "
      "(above 1.00x: faster than X).\n");
  for (const auto bench_pattern :
       {ppat_bench::bench_overhead, ppat_bench::bench_scan, ppat_bench::bench_reduce,
        ppat_bench::bench_select, ppat_bench::bench_sort, ppat_bench::bench_histogram,
        ppat_bench::bench_transpose}) {
    bench_pattern(session);
    session.write_outputs();
  }
#ifdef PPAT_BENCH_DISTRIBUTED
  ppat_bench::bench_distributed(session);
#endif
  return session.finish() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + std::min(argc, 2), argv + argc);
  const std::string command = argc >= 2 ? argv[1] : "";
  try {
    if (command == "-h" || command == "--help" || command == "help") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (command != "info" && command != "bench" && command != "check") {
      throw usage_error(command.empty() ? "no command" : "unknown command '" + command + "'");
    }
    if (command == "bench") parse_bench_options(args);  // usage errors before the GPU check
    if (!require_gpu()) return 2;
    if (command == "info") return info();
    if (command == "bench") return bench(args);
    return ppat_cli::self_check();
  } catch (const usage_error& e) {
    std::fprintf(stderr, "ppat: %s\n\n%s", e.what(), usage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ppat: error: %s\n", e.what());
    return 1;
  }
}
