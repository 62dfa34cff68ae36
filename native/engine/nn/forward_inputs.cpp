#include "engine/nn/forward_inputs.h"

#include "engine/nn/module.h"

namespace vramlab::engine {

Tensor forward_input(Module& m, const Tensor& t) {
  auto* c = dynamic_cast<ForwardInputCast*>(m.forward_hooks.get());
  return c ? c->cast_input(m, t) : t;
}

}  // namespace vramlab::engine
