#include "engine/nn/checkpointing.h"

#include <cmath>
#include <stdexcept>

#include "engine/checkpoint/checkpoint.h"

namespace vramlab::engine {

std::vector<std::pair<size_t, size_t>> checkpoint_segments(size_t depth, const CheckpointSpec& c) {
  std::vector<std::pair<size_t, size_t>> segs;
  size_t per = 1;
  switch (c.mode) {
    case CheckpointSpec::Mode::None:
      return segs;
    case CheckpointSpec::Mode::Block:
      per = 1;
      break;
    case CheckpointSpec::Mode::Every:
      if (c.every < 1) throw std::invalid_argument("checkpoint every k needs k >= 1");
      per = size_t(c.every);
      break;
    case CheckpointSpec::Mode::Sqrt: {
      size_t r = std::max<size_t>(1, size_t(std::llround(std::sqrt(double(depth)))));
      per = (depth + r - 1) / r;
      break;
    }
  }
  for (size_t b = 0; b < depth; b += per) segs.emplace_back(b, std::min(depth, b + per));
  return segs;
}

Tensor run_blocks(size_t depth, Tensor x, const CheckpointSpec& c, const BlockFn& block,
                  const std::vector<Tensor>& extra) {
  auto segs = checkpoint_segments(depth, c);
  Tensor h = std::move(x);
  if (segs.empty()) {
    for (size_t i = 0; i < depth; ++i) h = block(i, h, extra);
    return h;
  }
  for (auto [b, e] : segs) {
    std::vector<Tensor> inputs{h};
    inputs.insert(inputs.end(), extra.begin(), extra.end());
    h = checkpoint(
        [b = b, e = e, block](const std::vector<Tensor>& in) {
          std::vector<Tensor> ex(in.begin() + 1, in.end());
          Tensor t = in[0];
          for (size_t i = b; i < e; ++i) t = block(i, t, ex);
          return t;
        },
        inputs);
  }
  return h;
}

}  // namespace vramlab::engine
