// A real data-parallel job, one process per rank (as torchrun starts PyTorch's), each
// rank's readings beside the simulated rank's:
//   vramlab_dist SPEC [--out RESULT.json] [--timeout SECONDS] [--warmup linear|matmul]
// SPEC is a partial spec (JSON text or a file) completed with the contract's defaults,
// with "parallel": {"kind": "ddp" | "fsdp2", "world": W, ...} and "device": "cuda:0" (rank r runs on
// cuda:r through NCCL; LD_LIBRARY_PATH must reach libnccl.so.2) or a sim: device (the same
// processes and id exchange, collectives only counted). The launcher starts W copies of
// itself as `vramlab_dist --rank R --dir DIR SPEC`, then simulates the spec on the GPU's
// simulated preset and prints, per reading, the simulation and every rank; then losses,
// final-parameter fingerprints, collectives and NCCL's footprint per rank. Then the same
// training on one GPU, each in a process of its own (`--single fsdp1|plain`): FSDP2 at
// world 1 (same policy), and without `parallel` where the policy casts nothing. Every rank
// draws the same batch, so the job's global batch is W copies of it: its mean loss and
// gradient are the one-GPU run's, and rank 0's losses and final parameters can be
// compared with it (reported, not part of the exit status). Exit 0 when every rank
// equals the simulation and the ranks agree, 1 when they do not, 2 on errors.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "device/device.h"
#include "runner/dist_launch.h"
#include "spec_util.h"

using namespace vramlab;
using engine::SpecValue;

namespace {

SpecValue read_spec_value(const std::string& arg) {
  if (!arg.empty() && arg[0] == '{') return engine::parse_json(arg);
  return engine::load_json_file(arg);
}

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program's path");
  buf[n] = 0;
  return buf;
}

std::string sim_twin(const std::string& device, const std::string& gpu_name) {
  if (device.rfind("sim:", 0) == 0) return device;
  if (gpu_name.find("H200") != std::string::npos) return "sim:h200-141gb";
  if (gpu_name.find("H100") != std::string::npos) return "sim:h100-80gb";
  return "";
}

double mib(double b) { return b / 1048576.0; }

}  // namespace

int main(int argc, char** argv) {
  std::string spec_arg, out_path, dir, warmup = "linear", single;
  int rank = -1;
  double timeout = 600;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--rank")
      rank = std::atoi(next().c_str());
    else if (a == "--dir")
      dir = next();
    else if (a == "--out")
      out_path = next();
    else if (a == "--timeout")
      timeout = std::atof(next().c_str());
    else if (a == "--warmup")
      warmup = next();
    else if (a == "--single")
      single = next();
    else
      spec_arg = a;
  }
  if (spec_arg.empty()) {
    std::fprintf(stderr, "usage: %s SPEC [--out RESULT.json] [--timeout SECONDS] [--warmup linear|matmul]\n", argv[0]);
    return 2;
  }
  try {
    engine::RunSpec spec = spectest::spec(read_spec_value(spec_arg));
    engine::RunOptions options;
    options.warmup = warmup;
    if (rank >= 0) return runner::run_rank_process(spec, options, rank, dir);
    if (single == "fsdp1") {
      spec.parallel.world = 1;
      return runner::run_single_process(spec, options, dir);
    }
    if (single == "plain") {
      spec.parallel = engine::RunSpec{}.parallel;
      return runner::run_single_process(spec, options, dir);
    }
    if (!single.empty()) throw std::invalid_argument("--single takes fsdp1 or plain");

    const int world = int(spec.parallel.world);
    if ((spec.parallel.kind != "ddp" && spec.parallel.kind != "fsdp2") || world < 1)
      throw std::invalid_argument("the spec needs parallel.kind \"ddp\" or \"fsdp2\"");
    dir = runner::make_job_dir();
    const std::string exe = self_exe();
    std::vector<std::vector<std::string>> argvs;
    for (int r = 0; r < world; ++r)
      argvs.push_back({exe, "--rank", std::to_string(r), "--dir", dir, "--warmup", warmup, spec_arg});
    runner::LaunchResult job = runner::launch_ranks(argvs, dir, timeout);
    if (!job.error.empty()) {
      std::fprintf(stderr, "job failed: %s\n", job.error.c_str());
      for (auto& r : job.ranks) std::fprintf(stderr, "  %s\n", r.to_json().c_str());
      return 2;
    }

    // The simulated twin: the GPU's preset (or the spec's sim device), in this process.
    std::string gpu = job.ranks[0].find("device_name") ? job.ranks[0]["device_name"].as_string("device_name") : "";
    const std::string twin = sim_twin(spec.device, gpu);
    if (twin.empty()) throw std::runtime_error("no simulated preset for " + gpu);
    engine::RunSpec sspec = spec;
    sspec.device = twin;
    engine::RunResult sim = engine::run_experiment(sspec, options);
    std::map<std::string, std::pair<int64_t, int64_t>> ranges;
    for (auto& [k, lh] : sim.ranges) ranges[k] = lh;

    bool readings_equal = true, in_range = true;
    std::printf("%-26s %14s", "reading (bytes)", ("sim " + twin).c_str());
    for (int r = 0; r < world; ++r) std::printf(" %14s", job.ranks[r]["device"].as_string("device").c_str());
    std::printf("  sim range\n");
    // each rank beside its simulated rank (FSDP2's ranks differ where rows split unevenly;
    // the column shows rank 0's)
    auto sim_rank = [&](int r) -> const std::vector<std::pair<std::string, int64_t>>& {
      return size_t(r) < sim.ranks.size() ? sim.ranks[size_t(r)] : sim.readings;
    };
    for (size_t i = 0; i < sim.readings.size(); ++i) {
      const auto& [k, v] = sim.readings[i];
      std::printf("%-26s %14lld", k.c_str(), (long long)v);
      bool eq = true;
      for (int r = 0; r < world; ++r) {
        const auto& rr = job.ranks[r]["readings"].items();
        const int64_t got = i < rr.size() && rr[i].items()[0].as_string("key") == k ? rr[i].items()[1].as_int("v") : -1;
        const auto& sr = sim_rank(r);
        const int64_t want = i < sr.size() ? sr[i].second : -1;
        std::printf(" %14lld", (long long)got);
        eq = eq && got == want;
        auto it = ranges.find(k);
        if (it != ranges.end() && (got < it->second.first || got > it->second.second)) in_range = false;
        if (it == ranges.end() && got != want) in_range = false;
      }
      readings_equal = readings_equal && eq;
      auto it = ranges.find(k);
      if (it != ranges.end()) std::printf("  [%lld, %lld]", (long long)it->second.first, (long long)it->second.second);
      std::printf("%s\n", eq ? "" : "  DIFFERS");
    }
    for (int r = 0; r < world; ++r)
      if (job.ranks[r]["readings"].items().size() != sim.readings.size()) readings_equal = false;

    bool losses_equal = true, params_equal = true;
    const bool real = spec.device.rfind("cuda:", 0) == 0;
    std::printf("\nlosses per micro-batch:\n");
    for (int r = 0; r < world; ++r) {
      std::printf("  rank %d:", r);
      for (auto& l : job.ranks[r]["losses"].items()) std::printf(" %.9g", l.as_number("loss"));
      std::printf("   params fingerprint %s\n", job.ranks[r]["params_fingerprint"].as_string("fp").c_str());
      if (job.ranks[r]["losses"].to_json() != job.ranks[0]["losses"].to_json()) losses_equal = false;
      if (job.ranks[r]["params_fingerprint"].as_string("fp") != job.ranks[0]["params_fingerprint"].as_string("fp"))
        params_equal = false;
      if (real && (job.ranks[r]["losses"].items().empty() ||
                   job.ranks[r]["params_fingerprint"].as_string("fp") == "0000000000000000"))
        losses_equal = params_equal = false;
    }
    // the same training on one GPU (see the top of this file)
    std::vector<SpecValue> singles;
    if (real) {
      std::vector<std::string> kinds;
      if (spec.parallel.kind == "fsdp2") kinds.push_back("fsdp1");
      if (spec.parallel.kind == "ddp" || spec.parallel.param_dtype.empty() || spec.parallel.param_dtype == "fp32")
        kinds.push_back("plain");
      for (const std::string& kind : kinds) {
        const std::string sdir = runner::make_job_dir();
        runner::LaunchResult one =
            runner::launch_ranks({{exe, "--single", kind, "--dir", sdir, "--warmup", warmup, spec_arg}}, sdir, timeout);
        SpecValue res = one.ranks.empty() ? SpecValue::object({}) : one.ranks[0];
        std::printf("\none GPU (cuda:0, %s): ",
                    kind == "fsdp1" ? "fsdp2 at world 1, the same policy" : "without parallel");
        if (!one.error.empty()) {
          std::printf("failed: %s\n", one.error.c_str());
        } else {
          for (auto& l : res["losses"].items()) std::printf(" %.9g", l.as_number("loss"));
          const bool le = res["losses"].to_json() == job.ranks[0]["losses"].to_json();
          const bool pe =
              res["params_fingerprint"].as_string("fp") == job.ranks[0]["params_fingerprint"].as_string("fp");
          std::printf("   params fingerprint %s\n  rank 0 vs one GPU: losses %s, final parameters %s\n",
                      res["params_fingerprint"].as_string("fp").c_str(), le ? "equal" : "DIFFER",
                      pe ? "equal" : "DIFFER");
        }
        singles.push_back(SpecValue::object(
            {{"kind", SpecValue::string(kind)}, {"error", SpecValue::string(one.error)}, {"result", res}}));
      }
    }

    std::printf("\ncollectives per rank:");
    for (int r = 0; r < world; ++r) std::printf(" [%s]", job.ranks[r]["collectives"].to_json().c_str());
    std::printf("\n");
    if (real) {
      std::printf("\nNCCL footprint (cudaMemGetInfo used, MiB)   NCCL_RUNTIME_CONNECT=%s NCCL_NVLS_ENABLE=%s\n",
                  std::getenv("NCCL_RUNTIME_CONNECT") ? std::getenv("NCCL_RUNTIME_CONNECT") : "(default)",
                  std::getenv("NCCL_NVLS_ENABLE") ? std::getenv("NCCL_NVLS_ENABLE") : "(default)");
      std::printf("  %-7s %10s %12s %14s %12s %12s %12s %10s\n", "rank", "context", "+comm init", "+1st allreduce",
                  "+1st bcast", "+1st allgath", "+1st redscat", "NCCL total");
      for (int r = 0; r < world; ++r) {
        const SpecValue& n = job.ranks[r]["nccl"];
        double b0 = n["before_init"].as_number("n"), b1 = n["after_init"].as_number("n"),
               b2 = n["after_first_all_reduce"].as_number("n"), b3 = n["after_first_broadcast"].as_number("n"),
               b4 = n["after_first_all_gather"].as_number("n"), b5 = n["after_first_reduce_scatter"].as_number("n");
        std::printf("  %-7d %10.1f %12.1f %14.1f %12.1f %12.1f %12.1f %10.1f\n", r, mib(b0), mib(b1 - b0), mib(b2 - b1),
                    mib(b3 - b2), mib(b4 - b3), mib(b5 - b4), mib(b5 - b0));
      }
      std::printf("  NCCL %d; the simulation models %.0f MiB per rank (engine/parallel/nccl.h)\n",
                  int(job.ranks[0]["nccl"]["version"].as_number("v")), mib(double(sim.nccl)));
    }
    const bool ok = readings_equal && losses_equal && params_equal;
    std::printf("\nreadings equal to the simulation on every rank: %s (inside the simulated ranges: %s)\n",
                readings_equal ? "yes" : "NO", in_range ? "yes" : "NO");
    std::printf("losses equal across ranks: %s; final parameters equal across ranks: %s\n", losses_equal ? "yes" : "NO",
                params_equal ? "yes" : "NO");

    if (!out_path.empty()) {
      std::vector<SpecValue> sr;
      for (auto& [k, v] : sim.readings)
        sr.push_back(SpecValue::array({SpecValue::string(k), SpecValue::number(double(v))}));
      std::ofstream(out_path) << SpecValue::object({{"spec", engine::write_run_spec(spec)},
                                                    {"sim_device", SpecValue::string(twin)},
                                                    {"sim_readings", SpecValue::array(sr)},
                                                    {"ranks", SpecValue::array(job.ranks)},
                                                    {"one_gpu", SpecValue::array(singles)},
                                                    {"readings_equal", SpecValue::boolean(readings_equal)},
                                                    {"losses_equal", SpecValue::boolean(losses_equal)},
                                                    {"params_equal", SpecValue::boolean(params_equal)}})
                                     .to_json()
                              << "\n";
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vramlab_dist: %s\n", e.what());
    return 2;
  }
}
