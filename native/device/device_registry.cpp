// list_devices / open_device: the simulated presets plus whatever CUDA offers.
#include <stdexcept>
#include <string>

#include "device/cuda_device.h"
#include "device/device.h"
#include "device/presets.h"
#include "device/sim_device.h"

namespace vramlab {

namespace {
constexpr const char* kDefaultSim = "sim:h100-80gb";
constexpr const char* kSimulatedSuffix = " (simulated)";

// "sim:custom:SIZE" or "sim:custom:SIZE@MODEL": SIZE for the allocator, no context. MODEL (a
// preset key, or "cuda:N" for a card with no preset) names the device after that GPU, so the
// engine's name-keyed facts (cuBLAS workspace, SM count, compute capability) are that card's:
// the unbounded and predicted twins of a run keep its card's kernels. Without MODEL the device
// is a generic "Simulated GPU", with an H100's speeds so its modelled times stay meaningful.
std::unique_ptr<Device> open_custom(const std::string& id) {
  std::string rest = id.substr(11);
  size_t at = rest.find('@');
  std::string size = rest.substr(0, at);
  uint64_t total = parse_byte_size(size);
  auto h100 = find_sim_preset("h100-80gb");
  if (at == std::string::npos)
    return std::make_unique<SimDevice>(id, "Simulated GPU (" + size + ")", total, h100 ? h100->mem_bandwidth_gbs : 0,
                                       h100 ? h100->fp32_tflops : 0, h100 ? h100->bf16_tflops : 0);
  std::string model = rest.substr(at + 1);
  if (model.rfind("cuda:", 0) == 0) {
    // The card's own name; its speeds are not known to the time model, so an H100's as above.
    for (const DeviceInfo& d : cuda_list_devices())
      if (d.id == model)
        return std::make_unique<SimDevice>(id, d.name + " (simulated, " + size + ")", total,
                                           h100 ? h100->mem_bandwidth_gbs : 0, h100 ? h100->fp32_tflops : 0,
                                           h100 ? h100->bf16_tflops : 0);
    throw std::invalid_argument("unknown device '" + id + "': no CUDA device " + model + " here");
  }
  auto p = find_sim_preset(model);
  if (!p) throw std::invalid_argument("unknown device '" + id + "': no simulated preset named '" + model + "'");
  std::string name = p->name;
  size_t cut = name.rfind(kSimulatedSuffix);
  if (cut != std::string::npos) name.resize(cut);
  return std::make_unique<SimDevice>(id, name + " (simulated, " + size + ")", total, p->mem_bandwidth_gbs,
                                     p->fp32_tflops, p->bf16_tflops);
}
}  // namespace

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  for (const SimPreset& p : sim_presets()) {
    DeviceInfo d;
    d.id = std::string("sim:") + p.key;
    d.kind = "sim";
    d.name = p.name;
    d.total = p.total;
    d.context = p.context;
    d.context_source = p.context_measured ? "measured" : "estimated";
    d.context_note = p.context_note;
    d.free = p.total - p.context;
    d.mem_bandwidth_gbs = p.mem_bandwidth_gbs;
    d.fp32_tflops = p.fp32_tflops;
    d.bf16_tflops = p.bf16_tflops;
    out.push_back(std::move(d));
  }
  for (DeviceInfo& d : cuda_list_devices()) out.push_back(std::move(d));
  return out;
}

std::unique_ptr<Device> open_device(const std::string& id) {
  if (id.rfind("sim:custom:", 0) == 0) return open_custom(id);
  if (id.rfind("sim:", 0) == 0) {
    auto p = find_sim_preset(id.substr(4));
    if (!p)
      throw std::invalid_argument("unknown device '" + id + "': no simulated preset named '" + id.substr(4) + "'");
    return std::make_unique<SimDevice>(id, p->name, p->total, p->mem_bandwidth_gbs, p->fp32_tflops, p->bf16_tflops,
                                       p->context);
  }
  if (id.rfind("cuda:", 0) == 0) {
    std::string n = id.substr(5);
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("unknown device '" + id + "': expected cuda:<ordinal>");
    return cuda_open_device(std::stoi(n));
  }
  throw std::invalid_argument("unknown device '" + id +
                              "': expected sim:<preset>, sim:custom:<size>[@<preset>] or cuda:<n>");
}

std::string default_device_id() {
  auto gpus = cuda_list_devices();
  return gpus.empty() ? kDefaultSim : gpus.front().id;
}

}  // namespace vramlab
