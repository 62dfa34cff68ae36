#pragma once
// Every layer, for code that builds models by hand (tests, benchmarks), as torch.nn is.
#include "engine/nn/activation.h"
#include "engine/nn/checkpointing.h"
#include "engine/nn/embedding.h"
#include "engine/nn/layer_norm.h"
#include "engine/nn/linear.h"
#include "engine/nn/lora.h"
#include "engine/nn/module.h"
#include "engine/nn/rms_norm.h"
#include "engine/nn/sequential.h"
