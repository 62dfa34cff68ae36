#include "runner/dist_launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "device/device.h"
#include "engine/backends/cuda/nccl_group.h"
#include "engine/parallel/process_group.h"

namespace vramlab::runner {

using engine::SpecValue;

namespace {

using Clock = std::chrono::steady_clock;

std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

uint64_t fnv(const char* p, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ uint8_t(p[i])) * 1099511628211ull;
  return h;
}

void write_file(const std::string& path, const std::string& bytes) {
  // whole, then renamed: a reader never sees half a file
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  *out = s.str();
  return true;
}

engine::cuda::NcclUniqueId wait_for_id(const std::string& path, double timeout_s) {
  const auto until = Clock::now() + std::chrono::duration<double>(timeout_s);
  std::string bytes;
  while (!read_file(path, &bytes)) {
    if (Clock::now() > until)
      throw std::runtime_error("rank 0 published no group id within the timeout (" + path + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  engine::cuda::NcclUniqueId id;
  if (bytes.size() != sizeof id.internal) throw std::runtime_error("the group id in " + path + " has a wrong size");
  std::memcpy(id.internal, bytes.data(), sizeof id.internal);
  return id;
}

SpecValue num(double v) { return SpecValue::number(v); }

// What a rank reports of its run: readings, losses, the final parameters' fingerprint and
// the collectives it launched.
void put_run(std::map<std::string, SpecValue>& out, const engine::RunResult& r, const engine::ProcessGroup& group) {
  std::vector<SpecValue> readings, losses;
  for (auto& [k, v] : r.readings) readings.push_back(SpecValue::array({SpecValue::string(k), num(double(v))}));
  for (double l : r.losses) losses.push_back(num(l));
  out["readings"] = SpecValue::array(readings);
  out["losses"] = SpecValue::array(losses);
  out["params_fingerprint"] = SpecValue::string(hex64(r.params_fingerprint));
  const auto& c = group.counts();
  out["collectives"] = SpecValue::object({{"all_reduce", num(double(c.all_reduce))},
                                          {"all_reduce_bytes", num(double(c.all_reduce_bytes))},
                                          {"broadcast", num(double(c.broadcast))},
                                          {"broadcast_bytes", num(double(c.broadcast_bytes))},
                                          {"all_gather", num(double(c.all_gather))},
                                          {"all_gather_bytes", num(double(c.all_gather_bytes))},
                                          {"reduce_scatter", num(double(c.reduce_scatter))},
                                          {"reduce_scatter_bytes", num(double(c.reduce_scatter_bytes))}});
}

}  // namespace

std::string rank_device(const std::string& device, int rank) {
  if (device.rfind("cuda:", 0) == 0) return "cuda:" + std::to_string(rank);
  return device;
}

int run_rank_process(const engine::RunSpec& spec_in, const engine::RunOptions& options_in, int rank,
                     const std::string& dir, double id_timeout_s) {
  std::map<std::string, SpecValue> out{{"rank", num(rank)}};
  const std::string result_path = dir + "/rank" + std::to_string(rank) + ".json";
  int status = 0;
  try {
    engine::RunSpec spec = spec_in;
    if (spec.parallel.kind.empty()) throw std::invalid_argument("a launched job needs spec.parallel");
    const int world = int(spec.parallel.world);
    if (rank < 0 || rank >= world) throw std::invalid_argument("rank outside the world");
    spec.device = rank_device(spec.device, rank);
    out["device"] = SpecValue::string(spec.device);
    const bool real = spec.device.rfind("cuda:", 0) == 0;

    // The group's unique id: NCCL's (its bootstrap root runs in rank 0) or, for the
    // simulated device, random bytes that only show every rank joined the same job.
    engine::cuda::NcclUniqueId id{};
    const std::string id_path = dir + "/id";
    if (rank == 0) {
      if (real) {
        std::string why;
        if (!engine::cuda::nccl_unique_id(&id, &why)) throw std::runtime_error(why);
      } else {
        std::random_device rd;
        for (char& c : id.internal) c = char(rd());
      }
      write_file(id_path, std::string(id.internal, sizeof id.internal));
    } else {
      id = wait_for_id(id_path, id_timeout_s);
    }
    out["id_hash"] = SpecValue::string(hex64(fnv(id.internal, sizeof id.internal)));

    std::unique_ptr<engine::ProcessGroup> group;
    if (real) {
      std::string why;
      engine::cuda::NcclFootprint fp;
      group = engine::cuda::make_nccl_group(rank, world, id, &fp, &why);
      if (!group) throw std::runtime_error(why);
      out["nccl"] = SpecValue::object({{"version", num(fp.nccl_version)},
                                       {"before_init", num(double(fp.before_init))},
                                       {"after_init", num(double(fp.after_init))},
                                       {"after_first_all_reduce", num(double(fp.after_first_all_reduce))},
                                       {"after_first_broadcast", num(double(fp.after_first_broadcast))},
                                       {"after_first_all_gather", num(double(fp.after_first_all_gather))},
                                       {"after_first_reduce_scatter", num(double(fp.after_first_reduce_scatter))}});
    } else {
      group = std::make_unique<engine::CountingGroup>(rank, world);
    }

    // only now: rank r touches no GPU but its own before the group selects it (cudaMemGetInfo
    // is the whole GPU's, a context of this process elsewhere would count on another rank)
    out["device_name"] = SpecValue::string(open_device(spec.device)->info().name);
    engine::RunResult r = engine::run_experiment(spec, options_in, {}, group.get());
    put_run(out, r, *group);
  } catch (const std::exception& e) {
    out["error"] = SpecValue::string(e.what());
    status = 1;
  }
  try {
    write_file(result_path, SpecValue::object(out).to_json());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    status = 1;
  }
  return status;
}

int run_single_process(const engine::RunSpec& spec_in, const engine::RunOptions& options, const std::string& dir) {
  std::map<std::string, SpecValue> out{{"rank", num(0)}};
  int status = 0;
  try {
    engine::RunSpec spec = spec_in;
    spec.device = rank_device(spec.device, 0);
    out["device"] = SpecValue::string(spec.device);
    out["device_name"] = SpecValue::string(open_device(spec.device)->info().name);
    std::unique_ptr<engine::ProcessGroup> group;
    if (spec.device.rfind("cuda:", 0) == 0)
      group = std::make_unique<engine::LocalGroup>();
    else
      group = std::make_unique<engine::CountingGroup>(0, 1);
    engine::RunResult r = engine::run_experiment(spec, options, {}, group.get());
    put_run(out, r, *group);
  } catch (const std::exception& e) {
    out["error"] = SpecValue::string(e.what());
    status = 1;
  }
  try {
    write_file(dir + "/rank0.json", SpecValue::object(out).to_json());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "single run: %s\n", e.what());
    status = 1;
  }
  return status;
}

LaunchResult launch_ranks(const std::vector<std::vector<std::string>>& argvs, const std::string& dir,
                          double timeout_s) {
  LaunchResult res;
  std::vector<pid_t> pids;
  for (const auto& argv : argvs) {
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      execv(a[0], a.data());
      std::fprintf(stderr, "cannot start %s: %s\n", a[0], std::strerror(errno));
      _exit(127);
    }
    if (pid < 0) {
      res.error = std::string("fork failed: ") + std::strerror(errno);
      break;
    }
    pids.push_back(pid);
  }
  // Wait for all; after a failure or the timeout, the rest get a grace period, then SIGKILL.
  const auto start = Clock::now();
  auto deadline = start + std::chrono::duration<double>(timeout_s);
  std::vector<int> status(pids.size(), -1);
  std::string exit_error;
  size_t live = pids.size();
  bool killing = false;
  while (live > 0) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (status[r] != -1) continue;
      int st = 0;
      pid_t got = waitpid(pids[r], &st, WNOHANG);
      if (got == pids[r]) {
        status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        --live;
        if (status[r] != 0 && exit_error.empty()) {
          exit_error = "rank " + std::to_string(r) + " exited with status " + std::to_string(status[r]);
          const auto grace = Clock::now() + std::chrono::duration<double>(10);
          if (grace < deadline) deadline = grace;
        }
      }
    }
    if (live > 0 && Clock::now() > deadline && !killing) {
      if (exit_error.empty()) exit_error = "the job ran past its timeout";
      for (size_t r = 0; r < pids.size(); ++r)
        if (status[r] == -1) kill(pids[r], SIGKILL);
      killing = true;
    }
    if (live > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (size_t r = 0; r < argvs.size(); ++r) {
    std::string text;
    if (!read_file(dir + "/rank" + std::to_string(r) + ".json", &text)) {
      if (exit_error.empty()) exit_error = "rank " + std::to_string(r) + " wrote no result";
      res.ranks.push_back(SpecValue::object({{"rank", num(double(r))}, {"error", SpecValue::string("no result")}}));
      continue;
    }
    res.ranks.push_back(engine::parse_json(text));
    if (const SpecValue* e = res.ranks.back().find("error"); e && res.error.empty())
      res.error = "rank " + std::to_string(r) + ": " + e->as_string("error");
  }
  // a rank's own reason first; else how a process ended
  if (res.error.empty()) res.error = exit_error;
  return res;
}

std::string make_job_dir() {
  const char* t = std::getenv("TMPDIR");
  std::string tmpl = std::string(t && *t ? t : "/tmp") + "/vramlab-dist-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("cannot create a job directory under " + tmpl);
  return buf.data();
}

}  // namespace vramlab::runner
