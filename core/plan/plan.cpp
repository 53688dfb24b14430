#include "plan/plan.h"

#include <algorithm>

namespace stagecraft {

std::string_view scheduleName(Schedule schedule) {
  switch (schedule) {
    case Schedule::OneFOneB: return "1f1b";
    case Schedule::GPipe: return "gpipe";
    case Schedule::Invalid: break;
  }
  return "invalid";
}

Schedule parseSchedule(std::string_view text) {
  if (text == "1f1b") return Schedule::OneFOneB;
  if (text == "gpipe") return Schedule::GPipe;
  return Schedule::Invalid;
}

std::string_view optimizerName(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::Sgd: return "sgd";
    case Optimizer::Adam: return "adam";
    case Optimizer::Invalid: break;
  }
  return "invalid";
}

Optimizer parseOptimizer(std::string_view text) {
  if (text == "sgd") return Optimizer::Sgd;
  if (text == "adam") return Optimizer::Adam;
  return Optimizer::Invalid;
}

std::vector<int> Stage::devices() const {
  std::vector<int> out;
  out.reserve(members.size());
  for (const auto& m : members) out.push_back(m.device);
  return out;
}

std::int64_t Stage::samples() const {
  std::int64_t total = 0;
  for (const auto& m : members) total += m.samples;
  return total;
}

int Plan::inFlight(int s) const {
  if (schedule == Schedule::GPipe) return microbatches;
  return std::max(1, std::min(stageCount() - s, microbatches));
}

int Plan::backupTarget(int s) const {
  const int sender = stages.at(s).members.empty() ? -1 : stages[s].members.front().device;
  for (const DeviceShare& m : stages[(s + 1) % stageCount()].members) {
    if (m.device != sender) return m.device;
  }
  return -1;
}

std::vector<int> Plan::stageOfDevice(int devices) const {
  std::vector<int> out(devices, -1);
  for (int s = 0; s < stageCount(); ++s) {
    for (const auto& m : stages[s].members) {
      if (m.device >= 0 && m.device < devices) out[m.device] = s;
    }
  }
  return out;
}

}  // namespace stagecraft
