// runRank(spec, rank, dir) -> exit status: one rank of a launched data-parallel job, run
// in the calling (dedicated) process until it ends (runner/dist_launch.h: the group id
// through `dir`, NCCL on cuda:<rank> or a counting group on a sim: device, the result in
// dir/rank<rank>.json). `vramlab run` starts one such process per rank.
#include "addon/bindings.h"
#include "addon/js_value.h"
#include "engine/experiment/experiment.h"
#include "engine/spec/run_spec.h"
#include "runner/dist_launch.h"

namespace vramlab::addon {

namespace {

Napi::Value RunRank(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 3 || !info[0].IsObject() || !info[1].IsNumber() || !info[2].IsString())
    throw Napi::TypeError::New(env, "runRank(spec, rank, dir)");
  const engine::RunSpec spec = engine::read_run_spec(spec_value_from_js(info[0], "spec"));
  const int rank = info[1].As<Napi::Number>().Int32Value();
  const std::string dir = info[2].As<Napi::String>().Utf8Value();
  return Napi::Number::New(env, runner::run_rank_process(spec, engine::RunOptions{}, rank, dir));
}

}  // namespace

void registerDist(Napi::Env env, Napi::Object exports) {
  exports.Set("runRank", Napi::Function::New(env, RunRank, "runRank"));
}

}  // namespace vramlab::addon
