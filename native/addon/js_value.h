#pragma once
// JS values into the engine's SpecValue tree: the one conversion every binding that
// takes a spec or options uses, bounded (depth, entries, string length) so a hostile
// object cannot make the addon recurse or allocate without limit.
#include <napi.h>

#include "engine/spec/spec_value.h"

namespace vramlab::addon {

engine::SpecValue spec_value_from_js(const Napi::Value& v, const char* what);

}  // namespace vramlab::addon
