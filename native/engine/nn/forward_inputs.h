#pragma once
// A forward pre-hook's view of a module's other tensor inputs (those beside the one
// Module::hooked passes): fully_shard's MixedPrecisionPolicy casts every floating forward
// input to param_dtype before it unshards (cast_forward_inputs). A module with several
// inputs asks its hooks, if they implement this, before calling hooked().
#include "engine/core/tensor.h"

namespace vramlab::engine {

class Module;

struct ForwardInputCast {
  virtual ~ForwardInputCast() = default;
  virtual Tensor cast_input(Module& m, const Tensor& t) = 0;
};

// t as module m's forward input: cast by m's hooks where they cast, else t itself.
Tensor forward_input(Module& m, const Tensor& t);

}  // namespace vramlab::engine
