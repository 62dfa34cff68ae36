// startRun(job, onWake) -> { cancel(), drain() }: runs a job on its own thread. The
// worker wakes JS through one ThreadSafeFunction, at most once per drain (a latch), and
// the wake-up only calls `onWake`, which is cheap; JS then pulls the events with drain()
// from a later turn of its event loop. So however fast a job reports, the loop gets a
// turn between batches, and the job waits (backpressure) while JS is behind.
//
// Lifetime: RunState is shared by the TSFN (until its finalizer) and the handle's
// functions (until they are collected). The TSFN's one thread slot belongs to the
// worker thread, which releases it as its last act; the finalizer joins the thread.
#include <memory>
#include <optional>
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

Napi::Object batchToJs(Napi::Env env, EventBatch&& b) {
  auto samples = Napi::Array::New(env);
  auto events = Napi::Array::New(env);
  uint32_t ns = 0, ne = 0;
  for (auto& ev : b.events) {
    if (auto* s = std::get_if<Sample>(&ev)) {
      auto o = Napi::Object::New(env);
      o.Set("t", s->t_ms);
      o.Set("allocated", double(s->allocated));
      o.Set("reserved", double(s->reserved));
      o.Set("active", double(s->active));
      o.Set("requested", double(s->requested));
      o.Set("by", categoriesToJs(env, s->by));
      samples.Set(ns++, o);
    } else if (auto* p = std::get_if<Phase>(&ev)) {
      auto o = Napi::Object::New(env);
      o.Set("type", "phase");
      o.Set("t", p->t_ms);
      o.Set("edge", p->begin ? "begin" : "end");
      o.Set("name", p->name);
      o.Set("iteration", double(p->iteration));
      o.Set("micro_batch", double(p->micro_batch));
      o.Set("module", p->module);
      events.Set(ne++, o);
    } else if (auto* a = std::get_if<AllocEvent>(&ev)) {
      auto o = Napi::Object::New(env);
      o.Set("type", "alloc");
      o.Set("t", a->t_ms);
      o.Set("action", a->action);
      o.Set("addr", double(a->addr));
      o.Set("size", double(a->size));
      if (a->block_size > 0) o.Set("blockSize", double(a->block_size));
      o.Set("category", double(a->category));
      o.Set("module", a->module);
      if (!a->op.empty()) o.Set("op", a->op);
      events.Set(ne++, o);
    }
  }
  auto o = Napi::Object::New(env);
  o.Set("samples", samples);
  o.Set("events", events);
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

// drain(): every queued event (at most the worker's cap) and, once the job has ended,
// its outcome (exactly once; null before and after).
Napi::Value Drain(Napi::Env env, RunState& st) {
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
  handle.Set("drain",
             Napi::Function::New(
                 env, [st](const Napi::CallbackInfo& ci) -> Napi::Value { return Drain(ci.Env(), *st); }, "drain"));
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
