#pragma once
// Activation checkpointing over a stack of blocks, as the protocols' run_blocks: the
// blocks are grouped into segments (block: 1 each; every k: k each; sqrt:
// ceil(n / round(sqrt(n))) each) and each segment runs under non-reentrant checkpoint
// with the block input and any extra inputs (a Llama block's rotary tables).
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "engine/nn/module.h"
#include "engine/spec/run_spec.h"

namespace vramlab::engine {

// [begin, end) block ranges; empty for no checkpointing.
std::vector<std::pair<size_t, size_t>> checkpoint_segments(size_t depth, const CheckpointSpec& c);

// One block's forward given the running activation and the extra inputs.
using BlockFn = std::function<Tensor(size_t block, const Tensor& x, const std::vector<Tensor>& extra)>;
// Takes the input by value: a caller that moves it in lets the first block's input go when
// that block returns (Python rebinding `hidden_states` block by block).
Tensor run_blocks(size_t depth, Tensor x, const CheckpointSpec& c, const BlockFn& block,
                  const std::vector<Tensor>& extra = {});

}  // namespace vramlab::engine
