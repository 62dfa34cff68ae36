// startRun(job, onWake) -> { cancel(), drainPacked() }: runs a job on its own thread. The
// worker wakes JS through one ThreadSafeFunction, at most once per drain (a latch), and
// the wake-up only calls `onWake`, which is cheap; JS then pulls the events with drainPacked()
// from a later turn of its event loop. So however fast a job reports, the loop gets a
// turn between batches, and the job waits (backpressure) while JS is behind.
//
// Lifetime: RunState is shared by the TSFN (until its finalizer) and the handle's
// functions (until they are collected). The TSFN's one thread slot belongs to the
// worker thread, which releases it as its last act; the finalizer joins the thread.
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
#include <variant>

#include "addon/bindings.h"
#include "addon/js_value.h"
#include "runner/job_spec.h"
#include "runner/worker.h"

namespace vramlab::addon {

namespace {

using namespace vramlab::runner;

// ---- the job request from JS: {kind?, spec?, options?, synthetic?} -----------------

JobRequest readRequest(const Napi::Object& o) {
  engine::SpecValue v = spec_value_from_js(o, "job");
  JobRequest r;
  if (const auto* k = v.find("kind"); k && !k->is_null()) r.kind = k->as_string("job.kind");
  for (auto& [key, f] : v.fields())
    if (key != "kind" && key != "spec" && key != "options" && key != "synthetic")
      throw std::invalid_argument("job." + key + " is not a startRun field (kind, spec, options, synthetic)");
  if (const auto* o2 = v.find("options")) r.options = engine::read_run_options(*o2);
  if (r.kind == "experiment") {
    const auto* spec = v.find("spec");
    if (!spec) throw std::invalid_argument("job.spec is missing (the validated experiment spec)");
    r.spec = engine::read_run_spec(*spec);
  }
  if (const auto* syn = v.find("synthetic"); syn && syn->is_object()) {
    for (auto& [key, f] : syn->fields()) {
      const std::string p = "job.synthetic." + key;
      if (key == "steps")
        r.synthetic.steps = f.as_int(p);
      else if (key == "step_ms")
        r.synthetic.step_ms = f.as_number(p);
      else if (key == "oom_at")
        r.synthetic.oom_at = f.as_int(p);
      else if (key == "throw_at")
        r.synthetic.throw_at = f.as_int(p);
      else if (key == "capacity")
        r.synthetic.capacity = f.as_int(p);
      else
        throw std::invalid_argument(p + " is not a synthetic setting");
    }
  }
  return r;
}

// ---- events and outcome to JS -----------------------------------------------------

Napi::Array categoriesToJs(Napi::Env env, const CategoryBytes& by) {
  auto a = Napi::Array::New(env, by.size());
  for (size_t i = 0; i < by.size(); ++i) a.Set(uint32_t(i), double(by[i]));
  return a;
}

// A drain's events packed into two Float64Arrays and one list of the strings they use
// (each distinct string once): a handful of Node-API calls per drain instead of ~10 per
// event. Setting properties one by one through Node-API made a run with allocator history
// spend most of its time here; main/addon/packed.ts turns the columns back into objects.
// Layouts (PACKED_* in main/addon/packed.ts, same order):
//   samples: t, allocated, reserved, active, requested, by[kNumCategories]
//   events:  kind (0 phase, 1 alloc), t, then
//            phase: begin, iteration, micro_batch, name, module, 0, 0
//            alloc: action, addr, size, block_size, category, module, op   (strings by index)
constexpr size_t kSampleWidth = 5 + kNumCategories;
constexpr size_t kEventWidth = 9;

class StringTable {
 public:
  double index(const std::string& s) {
    auto [it, fresh] = ids_.try_emplace(s, list_.size());
    if (fresh) list_.push_back(&it->first);
    return double(it->second);
  }
  Napi::Array toJs(Napi::Env env) const {
    auto a = Napi::Array::New(env, list_.size());
    for (size_t i = 0; i < list_.size(); ++i) a.Set(uint32_t(i), *list_[i]);
    return a;
  }

 private:
  std::unordered_map<std::string, size_t> ids_;
  std::vector<const std::string*> list_;  // node-based map: the keys stay put
};

Napi::Object batchToJs(Napi::Env env, EventBatch&& b) {
  size_t ns = 0, ne = 0;
  for (auto& ev : b.events) (std::holds_alternative<Sample>(ev) ? ns : ne)++;
  auto samples = Napi::Float64Array::New(env, ns * kSampleWidth);
  auto events = Napi::Float64Array::New(env, ne * kEventWidth);
  double* sp = samples.Data();
  double* ep = events.Data();
  StringTable strings;
  for (auto& ev : b.events) {
    if (auto* s = std::get_if<Sample>(&ev)) {
      *sp++ = s->t_ms;
      *sp++ = double(s->allocated);
      *sp++ = double(s->reserved);
      *sp++ = double(s->active);
      *sp++ = double(s->requested);
      for (int64_t c : s->by) *sp++ = double(c);
    } else if (auto* p = std::get_if<Phase>(&ev)) {
      *ep++ = 0;
      *ep++ = p->t_ms;
      *ep++ = p->begin ? 1 : 0;
      *ep++ = double(p->iteration);
      *ep++ = double(p->micro_batch);
      *ep++ = strings.index(p->name);
      *ep++ = strings.index(p->module);
      *ep++ = 0;
      *ep++ = 0;
    } else if (auto* a = std::get_if<AllocEvent>(&ev)) {
      *ep++ = 1;
      *ep++ = a->t_ms;
      *ep++ = strings.index(a->action);
      *ep++ = double(a->addr);
      *ep++ = double(a->size);
      *ep++ = double(a->block_size);
      *ep++ = double(a->category);
      *ep++ = strings.index(a->module);
      *ep++ = strings.index(a->op);
    }
  }
  auto o = Napi::Object::New(env);
  o.Set("samples", samples);
  o.Set("events", events);
  o.Set("strings", strings.toJs(env));
  o.Set("dropped", double(b.dropped));
  return o;
}

Napi::Object outcomeToJs(Napi::Env env, const Outcome& out) {
  auto o = Napi::Object::New(env);
  o.Set("status", status_name(out.status));
  o.Set("error", out.error.empty() ? env.Null() : Napi::String::New(env, out.error));
  o.Set("duration_ms", out.duration_ms);
  const JobResult& r = out.result;
  // An array of pairs keeps the protocol's order (it0_..., it1_...) exactly.
  auto readings = Napi::Array::New(env, r.readings.size());
  for (size_t i = 0; i < r.readings.size(); ++i) {
    auto pair = Napi::Array::New(env, 2);
    pair.Set(uint32_t(0), r.readings[i].first);
    pair.Set(uint32_t(1), double(r.readings[i].second));
    readings.Set(uint32_t(i), pair);
  }
  o.Set("readings", readings);
  auto ranks = Napi::Array::New(env, r.ranks.size());
  for (size_t k = 0; k < r.ranks.size(); ++k) {
    auto rk = Napi::Array::New(env, r.ranks[k].size());
    for (size_t i = 0; i < r.ranks[k].size(); ++i) {
      auto pair = Napi::Array::New(env, 2);
      pair.Set(uint32_t(0), r.ranks[k][i].first);
      pair.Set(uint32_t(1), double(r.ranks[k][i].second));
      rk.Set(uint32_t(i), pair);
    }
    ranks.Set(uint32_t(k), rk);
  }
  o.Set("ranks", ranks);
  auto cls = Napi::Array::New(env, r.rank_class.size());
  for (size_t k = 0; k < r.rank_class.size(); ++k) cls.Set(uint32_t(k), double(r.rank_class[k]));
  o.Set("rank_class", cls);
  auto ranges = Napi::Array::New(env, r.ranges.size());
  for (size_t i = 0; i < r.ranges.size(); ++i) {
    auto t = Napi::Array::New(env, 3);
    t.Set(uint32_t(0), r.ranges[i].first);
    t.Set(uint32_t(1), double(r.ranges[i].second.first));
    t.Set(uint32_t(2), double(r.ranges[i].second.second));
    ranges.Set(uint32_t(i), t);
  }
  o.Set("ranges", ranges);
  o.Set("nccl", double(r.nccl));
  o.Set("baseline", double(r.baseline));
  o.Set("peak_allocated", double(r.peak_allocated));
  o.Set("peak_reserved", double(r.peak_reserved));
  o.Set("sim_time_ms", r.sim_time_ms < 0 ? env.Null() : Napi::Number::New(env, r.sim_time_ms));
  o.Set("num_parameters", double(r.num_parameters));
  o.Set("trainable_parameters", double(r.trainable_parameters));
  o.Set("context", double(r.context));
  o.Set("sdpa_backend", r.sdpa_backend.empty() ? env.Null() : Napi::String::New(env, r.sdpa_backend));
  if (r.oom) {
    auto m = Napi::Object::New(env);
    m.Set("message", r.oom->message);
    m.Set("requested", double(r.oom->requested));
    m.Set("allocated", double(r.oom->allocated));
    m.Set("reserved", double(r.oom->reserved));
    m.Set("capacity", double(r.oom->capacity));
    m.Set("by", categoriesToJs(env, r.oom->by));
    m.Set("phase", r.oom->phase);
    m.Set("module", r.oom->module);
    m.Set("iteration", double(r.oom->iteration));
    o.Set("oom", m);
  } else {
    o.Set("oom", env.Null());
  }
  return o;
}

// ---- the run ----------------------------------------------------------------------

struct RunState {
  std::unique_ptr<RunWorker> worker;
  Napi::ThreadSafeFunction tsfn;
  bool done_delivered = false;
};

// drainPacked(): every queued event (at most the worker's cap) and, once the job has ended,
// its outcome (exactly once; null before and after).
Napi::Value DrainPacked(Napi::Env env, RunState& st) {
  // Events and outcome come from one atomic drain (see EventBatch::outcome).
  EventBatch batch = st.worker->drain();
  auto out = st.done_delivered ? std::nullopt : std::move(batch.outcome);
  Napi::Object o = batchToJs(env, std::move(batch));
  if (out) {
    st.done_delivered = true;
    o.Set("outcome", outcomeToJs(env, *out));
  } else {
    o.Set("outcome", env.Null());
  }
  return o;
}

Napi::Value StartRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction())
    throw Napi::TypeError::New(env, "startRun(job, onWake): job must be an object and onWake a function");
  std::unique_ptr<Job> job;
  try {
    job = make_job(readRequest(info[0].As<Napi::Object>()));  // throws for a spec it cannot run: nothing has started
  } catch (const std::exception& e) {
    // The build defines NAPI_CPP_EXCEPTIONS but not ..._ALL: std exceptions must become
    // Napi::Error here or they would terminate the process.
    throw Napi::Error::New(env, e.what());
  }

  auto st = std::make_shared<RunState>();
  auto* ctx_ref = new std::shared_ptr<RunState>(st);
  st->tsfn = Napi::ThreadSafeFunction::New(env, info[1].As<Napi::Function>(), "vramlab.run", 0, 1, ctx_ref,
                                           [](Napi::Env, std::shared_ptr<RunState>* ref) {
                                             // Normally the job has ended; at environment teardown it may not have:
                                             // stop it.
                                             (*ref)->worker->cancel();
                                             (*ref)->worker->join();
                                             delete ref;
                                           });
  auto tsfn = st->tsfn;  // copies share the one underlying TSFN
  auto notify = [tsfn]() mutable {
    tsfn.NonBlockingCall([](Napi::Env e, Napi::Function on_wake) {
      if (e != nullptr) on_wake.Call({});
    });
  };
  auto on_exit = [tsfn]() mutable { tsfn.Release(); };
  st->worker = std::make_unique<RunWorker>(std::move(job), notify, on_exit);
  try {
    st->worker->start();
  } catch (const std::exception& e) {
    st->tsfn.Release();  // no thread: give back its slot; the finalizer cleans up
    throw Napi::Error::New(env, std::string("cannot start the run thread: ") + e.what());
  }

  auto handle = Napi::Object::New(env);
  handle.Set("cancel", Napi::Function::New(
                           env,
                           [st](const Napi::CallbackInfo& ci) -> Napi::Value {
                             st->worker->cancel();
                             return ci.Env().Undefined();
                           },
                           "cancel"));
  handle.Set("drainPacked",
             Napi::Function::New(
                 env, [st](const Napi::CallbackInfo& ci) -> Napi::Value { return DrainPacked(ci.Env(), *st); },
                 "drainPacked"));
  return handle;
}

}  // namespace

void registerRunner(Napi::Env env, Napi::Object exports) {
  exports.Set("startRun", Napi::Function::New(env, StartRun, "startRun"));
  auto kinds = Napi::Array::New(env);
  uint32_t n = 0;
  for (const auto& k : available_job_kinds()) kinds.Set(n++, k);
  exports.Set("runnerJobs", kinds);
}

}  // namespace vramlab::addon
