#include "control/replan.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "io/error.h"
#include "sim/simulator.h"

namespace stagecraft::control {

bool ModelWeights::hasOptimizerState() const {
  for (const auto& [layer, tensors] : layers) {
    for (const auto& t : tensors) {
      if (t.name().find('#') != std::string::npos) return true;
    }
  }
  return false;
}

ModelWeights mergeStageWeights(std::span<const v1::StageWeights> stages, std::span<const std::string> workers) {
  if (stages.size() != workers.size()) throw std::logic_error("mergeStageWeights: one worker name per stage expected");
  if (stages.empty()) throw std::logic_error("no stage weights to merge");
  ModelWeights out;
  out.step = stages.front().step();
  std::vector<std::pair<int, int>> ranges;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const v1::StageWeights& w = stages[i];
    const std::string who = "worker '" + workers[i] + "'";
    const std::string range = "[" + std::to_string(w.layer_begin()) + ", " + std::to_string(w.layer_end()) + ")";
    if (w.step() != out.step) {
      throw protocolError(who + " holds layers " + range + " at step " + std::to_string(w.step()) + ", worker '" +
                  workers.front() + "' at step " + std::to_string(out.step) + ": the stages stopped at different steps");
    }
    if (w.layer_begin() < 0 || w.layer_end() <= w.layer_begin()) throw protocolError(who + " sent weights for layers " + range);
    for (const auto& [b, e] : ranges) {
      if (w.layer_begin() < e && b < w.layer_end()) {
        throw protocolError(who + " sent layers " + range + ", which another stage holds too");
      }
    }
    ranges.emplace_back(w.layer_begin(), w.layer_end());
    for (const auto& t : w.tensors()) {
      const auto layer = tensorLayer(t.name());
      if (!layer) throw protocolError(who + " sent tensor '" + t.name() + "' without a layer index");
      if (*layer < w.layer_begin() || *layer >= w.layer_end()) {
        throw protocolError(who + " sent tensor '" + t.name() + "' of a layer outside its layers " + range);
      }
      out.layers[*layer].push_back(t);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  int next = 0;
  for (const auto& [b, e] : ranges) {
    if (b != next) throw protocolError("no stage sent layers [" + std::to_string(next) + ", " + std::to_string(b) + ")");
    next = e;
  }
  return out;
}

v1::StageWeights sliceWeights(const ModelWeights& weights, int begin, int end) {
  if (begin < 0 || end <= begin) {
    throw std::logic_error("weights: layer range [" + std::to_string(begin) + ", " + std::to_string(end) + ") is empty");
  }
  v1::StageWeights out;
  out.set_layer_begin(begin);
  out.set_layer_end(end);
  out.set_step(weights.step);
  for (auto it = weights.layers.lower_bound(begin); it != weights.layers.end() && it->first < end; ++it) {
    for (const auto& t : it->second) *out.add_tensors() = t;
  }
  return out;
}

void attachWeights(std::vector<v1::StageAssignment>& assignments, const ModelWeights& weights) {
  for (auto& a : assignments) {
    *a.mutable_weights() = sliceWeights(weights, a.layer_begin(), a.layer_end());
    a.set_start_step(weights.step);
  }
}

double measuredComputeMs(const v1::IterationReport& report) {
  double ms = 0;
  for (const auto& e : report.timeline()) {
    if (e.kind() == "forward" || e.kind() == "backward") ms += std::max(0.0, e.end_ms() - e.start_ms());
  }
  return ms;
}

namespace {

/// The forward and backward passes of a member's report that overlap the group's
/// all-reduce, measured and as `forward_ms` and `backward_ms` (one micro-batch each)
/// predict them. The ring's CPU work runs beside the last backward and stretches it (a
/// quota'd member's backward measured 1.7x its profiled time while the ring ran, its
/// forward as profiled); the cost model prices that work after the backward, so counting
/// it as compute too would charge it twice.
struct BesideRing {
  double measured_ms = 0;
  double predicted_ms = 0;
};

BesideRing besideRing(const v1::IterationReport& report, double forward_ms, double backward_ms) {
  std::vector<std::pair<double, double>> rings;
  for (const auto& e : report.timeline()) {
    if (e.kind() == "allreduce") rings.emplace_back(e.start_ms(), e.end_ms());
  }
  BesideRing out;
  if (rings.empty()) return out;
  for (const auto& e : report.timeline()) {
    const bool forward = e.kind() == "forward";
    if (!forward && e.kind() != "backward") continue;
    const bool beside = std::any_of(rings.begin(), rings.end(), [&](const auto& r) {
      return e.start_ms() < r.second && r.first < e.end_ms();
    });
    if (!beside) continue;
    out.measured_ms += std::max(0.0, e.end_ms() - e.start_ms());
    out.predicted_ms += forward ? forward_ms : backward_ms;
  }
  return out;
}

}  // namespace

std::vector<double> computeFactors(const Plan& plan, const CostModel& cost, std::span<const v1::IterationReport> latest) {
  std::size_t members = 0;
  for (const auto& s : plan.stages) members += s.members.size();
  if (latest.size() != members) {
    throw protocolError("calibrating speeds: " + std::to_string(latest.size()) + " reports for the plan's " +
                std::to_string(members) + " members");
  }
  const int devices = cost.deviceCount();
  std::vector<double> predicted(devices, 0), measured(devices, 0);
  // Devices that share a machine's CPUs run slower than alone while the others compute:
  // the simulator prices that (per device, its passes' simulated time over their time
  // alone), and a factor is what is left of the measurement after it.
  std::vector<double> shared(devices, 1.0);
  const bool any_shared = std::any_of(plan.stages.begin(), plan.stages.end(), [&](const Stage& st) {
    return std::any_of(st.members.begin(), st.members.end(),
                       [&](const DeviceShare& s) { return cost.cpuDemand(s.device) > 0; });
  });
  if (any_shared) {
    std::vector<double> simulated(devices, 0);
    for (const TimelineEvent& e : simulate(plan, cost).timeline) {
      if (e.kind == EventKind::Forward || e.kind == EventKind::Backward) simulated[e.device] += e.end_ms - e.start_ms;
    }
    for (const Stage& stage : plan.stages) {
      for (const DeviceShare& share : stage.members) {
        if (share.samples <= 0) continue;
        const double alone = (cost.forwardMs(share.device, stage.layer_begin, stage.layer_end, share.samples) +
                              cost.backwardMs(share.device, stage.layer_begin, stage.layer_end, share.samples)) *
                             plan.microbatches;
        if (alone > 0 && simulated[share.device] > alone) shared[share.device] = simulated[share.device] / alone;
      }
    }
  }
  std::size_t m = 0;
  for (const auto& stage : plan.stages) {
    for (const auto& share : stage.members) {
      const v1::IterationReport& report = latest[m++];
      if (share.samples <= 0) continue;
      const double forward_ms = cost.forwardMs(share.device, stage.layer_begin, stage.layer_end, share.samples);
      const double backward_ms = cost.backwardMs(share.device, stage.layer_begin, stage.layer_end, share.samples);
      const BesideRing left_out = besideRing(report, forward_ms, backward_ms);
      const double took = measuredComputeMs(report) - left_out.measured_ms;
      const double expected =
          ((forward_ms + backward_ms) * plan.microbatches - left_out.predicted_ms) * shared[share.device];
      // When every pass ran beside the ring the differences are rounding residue: nothing
      // measured. A microsecond is far below any pass.
      constexpr double kNothingMs = 1e-3;
      if (took <= kNothingMs || expected <= kNothingMs) continue;
      predicted[share.device] += expected;
      measured[share.device] += took;
    }
  }
  // Devices without telemetry move by the measured devices' typical factor (geometric
  // mean): when the nominal speeds are all off by the same factor, as on an emulated
  // cluster or with a uniformly optimistic cluster file, they stay comparable.
  double log_sum = 0;
  int calibrated = 0;
  for (int d = 0; d < devices; ++d) {
    if (predicted[d] > 0 && measured[d] > 0) {
      log_sum += std::log(measured[d] / predicted[d]);
      ++calibrated;
    }
  }
  const double typical = calibrated > 0 ? std::exp(log_sum / calibrated) : 1.0;
  std::vector<double> factors(devices);
  for (int d = 0; d < devices; ++d) {
    factors[d] = predicted[d] > 0 && measured[d] > 0 ? measured[d] / predicted[d] : typical;
  }
  return factors;
}

std::map<std::string, double> namedFactors(const Plan& plan, const Cluster& cluster, std::span<const double> factors,
                                           const std::function<bool(std::size_t member)>& reported) {
  std::map<std::string, double> out;
  std::size_t member = 0;
  for (const Stage& stage : plan.stages) {
    for (const DeviceShare& m : stage.members) {
      const bool measured = reported(member++) && m.samples > 0;
      const double f = factors[static_cast<std::size_t>(m.device)];
      if (measured && std::isfinite(f) && f > 0) out[cluster.device(m.device).name] = f;
    }
  }
  return out;
}

std::map<std::string, double> measuredFactors(const Plan& plan, const CostModel& uncalibrated,
                                              std::span<const v1::IterationReport> latest) {
  std::vector<double> factors;
  try {
    factors = computeFactors(plan, uncalibrated, latest);
  } catch (const std::exception&) {
    return {};  // advice for the planner only
  }
  return namedFactors(plan, uncalibrated.cluster(), factors,
                      [&](std::size_t member) { return latest[member].step() > 0; });
}

Cluster calibrateCluster(const Plan& plan, const CostModel& cost, std::span<const v1::IterationReport> latest) {
  const std::vector<double> factors = computeFactors(plan, cost, latest);
  const Cluster& cluster = cost.cluster();
  v1::Cluster proto = cluster.toProto();
  for (int d = 0; d < cluster.size(); ++d) proto.mutable_devices(d)->set_gflops(cluster.device(d).gflops / factors[d]);
  return Cluster::fromProto(proto);
}

std::string joinNames(std::span<const std::string> names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

Cluster restrictCluster(const Cluster& cluster, std::span<const std::string> live) {
  std::set<std::string, std::less<>> keep;
  for (const auto& name : live) {
    if (!cluster.find(name)) throw Error("cluster '" + cluster.name() + "' has no device '" + name + "'");
    keep.insert(name);
  }
  if (keep.empty()) throw Error("cluster '" + cluster.name() + "': no live devices left");
  const v1::Cluster all = cluster.toProto();
  v1::Cluster out = all;
  out.clear_devices();
  out.clear_links();
  for (const auto& d : all.devices()) {
    if (keep.count(d.name())) *out.add_devices() = d;
  }
  for (const auto& l : all.links()) {
    if (keep.count(l.a()) && keep.count(l.b())) *out.add_links() = l;
  }
  return Cluster::fromProto(out);
}

std::optional<Plan> withoutDevices(const Plan& plan, const Cluster& cluster, const Cluster& survivors,
                                   std::span<const std::string> lost) {
  const std::set<std::string, std::less<>> gone(lost.begin(), lost.end());
  Plan out = plan;
  for (Stage& stage : out.stages) {
    std::vector<DeviceShare> kept;
    int lost_samples = 0;
    for (const DeviceShare& m : stage.members) {
      const std::string& name = cluster.device(m.device).name;
      if (gone.count(name)) {
        lost_samples += m.samples;
        continue;
      }
      const auto at = survivors.find(name);
      if (!at) throw Error("cluster '" + survivors.name() + "' has no device '" + name + "'");
      kept.push_back({*at, m.samples});
    }
    if (kept.empty()) return std::nullopt;
    // Largest remainders: each survivor's exact part of the lost samples, rounded down,
    // and what is left one sample each to the largest fractions (the first on a tie).
    int kept_samples = 0;
    for (const auto& m : kept) kept_samples += m.samples;
    std::vector<std::pair<double, int>> fractions;
    int given = 0;
    for (int i = 0; i < static_cast<int>(kept.size()); ++i) {
      const double exact = kept_samples > 0 ? static_cast<double>(lost_samples) * kept[i].samples / kept_samples
                                            : static_cast<double>(lost_samples) / static_cast<double>(kept.size());
      const int whole = static_cast<int>(std::floor(exact));
      kept[i].samples += whole;
      given += whole;
      fractions.emplace_back(exact - whole, i);
    }
    std::stable_sort(fractions.begin(), fractions.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (int k = 0; given < lost_samples; ++k, ++given) kept[fractions[k % fractions.size()].second].samples += 1;
    stage.members = std::move(kept);
  }
  out.cluster = survivors.name();
  return out;
}

}  // namespace stagecraft::control
