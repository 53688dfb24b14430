#include "cost/cost_model.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <queue>

#include "io/error.h"

namespace stagecraft {
namespace {

constexpr double kBytesPerMb = 1024.0 * 1024.0;
constexpr double kFloatBytes = 4.0;

/// Times per layer (index 1..) for each of `batches` (ascending), cut where they break two
/// rules: a layer is not kStallRatio times slower at fewer samples, nor slower per sample by
/// more than kPerSampleSlack. Timing errors are stalls (a CPU quota's throttled period, a page
/// fault storm) that the profile's repeats did not outvote, so they are too high: where two
/// sizes disagree that far, the lower time is trusted and the other is cut to what it allows.
/// Fewer samples may well be somewhat slower: OpenBLAS multiplies 4 rows by a 2048 x 2048
/// matrix in 0.8-0.9x the time of 1 or 2 (in the worker's profile and in PyTorch alike), and
/// cutting the smaller sizes to the larger's time priced a stage's forward of one sample at
/// 9.5 ms that trained at 12.5. Within kStallRatio, each size keeps its own time.
void clipProfileOutliers(const std::vector<int>& batches, std::vector<std::vector<double>>& times) {
  constexpr double kPerSampleSlack = 1.1;
  constexpr double kStallRatio = 1.5;
  const size_t n = batches.size();
  if (n < 2) return;
  for (size_t l = 1; l < times.front().size(); ++l) {
    for (size_t k = n - 1; k-- > 0;) {
      if (times[k][l] > kStallRatio * times[k + 1][l]) times[k][l] = times[k + 1][l];
    }
    for (size_t k = 1; k < n; ++k) {
      const double most = times[k - 1][l] * batches[k] / batches[k - 1] * kPerSampleSlack;
      times[k][l] = std::min(times[k][l], most);
    }
  }
}

}  // namespace

std::vector<Transfer> boundaryTransfers(const Stage& from, const Stage& to) {
  std::vector<Transfer> out;
  size_t i = 0, j = 0;
  int left_i = from.members.empty() ? 0 : from.members[0].samples;
  int left_j = to.members.empty() ? 0 : to.members[0].samples;
  while (i < from.members.size() && j < to.members.size()) {
    if (left_i == 0) {
      if (++i < from.members.size()) left_i = from.members[i].samples;
      continue;
    }
    if (left_j == 0) {
      if (++j < to.members.size()) left_j = to.members[j].samples;
      continue;
    }
    const int n = std::min(left_i, left_j);
    out.push_back({from.members[i].device, to.members[j].device, n});
    left_i -= n;
    left_j -= n;
  }
  return out;
}

CostModel::CostModel(const ModelSpec& model, const Cluster& cluster, Optimizer optimizer)
    : model_(&model), cluster_(&cluster), optimizer_(optimizer), profiles_(cluster.size()) {}

void CostModel::setProfiles(const v1::ProfileSet& profiles) {
  for (const auto& dp : profiles.devices()) {
    const auto d = cluster_->find(dp.device());
    if (!d) throw Error("profile: unknown device '" + dp.device() + "'");
    if (!dp.model().empty() && dp.model() != model_->name()) {
      throw Error("profile of '" + dp.device() + "' is for model '" + dp.model() + "', not '" +
                  model_->name() + "'");
    }
    std::vector<const v1::BatchProfile*> batches;
    for (const auto& b : dp.batches()) batches.push_back(&b);
    std::sort(batches.begin(), batches.end(),
              [](auto* a, auto* b) { return a->micro_batch() < b->micro_batch(); });
    Profile p;
    std::vector<std::vector<double>> fwds, bwds;  // per batch, per layer (index 1..layers)
    for (const auto* b : batches) {
      if (b->micro_batch() <= 0) throw Error("profile of '" + dp.device() + "': micro_batch must be positive");
      if (b->layers_size() != model_->layerCount()) {
        throw Error("profile of '" + dp.device() + "': " + std::to_string(b->layers_size()) +
                    " layers timed, the model has " + std::to_string(model_->layerCount()));
      }
      std::vector<double> fwd(model_->layerCount() + 1, 0), bwd(model_->layerCount() + 1, 0);
      for (const auto& t : b->layers()) {
        if (t.layer() < 0 || t.layer() >= model_->layerCount()) {
          throw Error("profile of '" + dp.device() + "': layer index " + std::to_string(t.layer()) + " out of range");
        }
        if (!(std::isfinite(t.forward_ms()) && t.forward_ms() >= 0 && std::isfinite(t.backward_ms()) &&
              t.backward_ms() >= 0)) {
          throw Error("profile of '" + dp.device() + "': layer " + std::to_string(t.layer()) +
                      " has a time that is negative or not a number");
        }
        fwd[t.layer() + 1] = t.forward_ms();
        bwd[t.layer() + 1] = t.backward_ms();
      }
      double total_ms = 0;
      for (int l = 1; l <= model_->layerCount(); ++l) total_ms += fwd[l] + bwd[l];
      if (total_ms <= 0) {
        throw Error("profile of '" + dp.device() + "': every layer takes 0 ms at micro-batch " +
                    std::to_string(b->micro_batch()) + ": not a measured profile");
      }
      if (!p.batches.empty() && p.batches.back() == b->micro_batch()) {
        throw Error("profile of '" + dp.device() + "': micro-batch " + std::to_string(b->micro_batch()) +
                    " is timed twice");
      }
      p.batches.push_back(b->micro_batch());
      fwds.push_back(std::move(fwd));
      bwds.push_back(std::move(bwd));
    }
    for (auto* times : {&fwds, &bwds}) {
      clipProfileOutliers(p.batches, *times);
      for (auto& layers : *times) {
        for (size_t l = 1; l < layers.size(); ++l) layers[l] += layers[l - 1];
      }
    }
    p.fwd = std::move(fwds);
    p.bwd = std::move(bwds);
    if (p.batches.empty()) throw Error("profile of '" + dp.device() + "': no batch sizes");
    const auto& update = optimizer_ == Optimizer::Adam ? dp.adam_update_ms() : dp.sgd_update_ms();
    if (!update.empty()) {
      if (update.size() != model_->layerCount()) {
        throw Error("profile of '" + dp.device() + "': " + std::to_string(update.size()) +
                    " layers' optimizer steps timed, the model has " + std::to_string(model_->layerCount()));
      }
      p.update.assign(1, 0.0);
      for (double ms : update) p.update.push_back(p.update.back() + std::max(0.0, ms));
    }
    p.copy_ms_per_mb = std::max(0.0, dp.copy_ms_per_mb());
    p.allreduce_ms_per_mb = std::max(0.0, dp.allreduce_ms_per_mb());
    if (std::isfinite(dp.cpu_demand()) && dp.cpu_demand() > 0 && dp.machine_cpus() > 0) {
      p.cpu_demand = dp.cpu_demand();
      p.machine_cpus = dp.machine_cpus();
    }
    profiles_[*d] = std::move(p);
  }
}

bool CostModel::hasProfile(int device) const { return profiles_[device].has_value(); }

double CostModel::profiledMs(int d, int begin, int end, int samples, bool backward) const {
  const Profile& p = *profiles_[d];
  const auto& table = backward ? p.bwd : p.fwd;
  auto at = [&](size_t k) { return table[k][end] - table[k][begin]; };
  const size_t n = p.batches.size();
  if (samples < p.batches.front()) {
    // Below the smallest size timed: no faster than that size, and no cheaper per sample
    // (a micro-batch reads every weight whatever its samples). In proportion, the cost of
    // reading the weights vanished: a profile timed at 64 alone once priced micro-batches
    // of 4 at a sixteenth of its time, and the plan of many small micro-batches it chose
    // measured 16x slower than predicted. Between the bounds, the line through the two
    // smallest sizes; with one size, its time.
    const double x0 = p.batches.front(), y0 = at(0);
    const double least = y0 * samples / x0;
    if (n == 1) return y0;
    const double x1 = p.batches[1], y1 = at(1);
    return std::clamp(y0 + (y1 - y0) * (samples - x0) / (x1 - x0), least, y0);
  }
  if (n == 1) return at(0) * samples / p.batches.front();
  // Past the largest size timed, in proportion to it: the slope between the two largest
  // sizes carries their noise far out (a stall in one of them once made a stage's backward
  // at twice the largest size come out at 0 ms, and the plan that put it there measured
  // 2.8x slower than predicted).
  if (samples >= p.batches.back()) return at(n - 1) * samples / p.batches.back();
  size_t hi = 1;
  while (hi + 1 < n && p.batches[hi] < samples) ++hi;
  const double x0 = p.batches[hi - 1], x1 = p.batches[hi];
  const double y0 = at(hi - 1), y1 = at(hi);
  return std::max(0.0, y0 + (y1 - y0) * (samples - x0) / (x1 - x0));
}

void CostModel::setComputeFactors(std::vector<double> factors) {
  if (static_cast<int>(factors.size()) != cluster_->size()) {
    throw std::logic_error("compute factors: " + std::to_string(factors.size()) + " for " + std::to_string(cluster_->size()) +
                " devices");
  }
  for (size_t d = 0; d < factors.size(); ++d) {
    if (!std::isfinite(factors[d]) || factors[d] <= 0) {
      throw Error("compute factor of '" + cluster_->device(static_cast<int>(d)).name + "' must be positive");
    }
  }
  factors_ = std::move(factors);
}

double CostModel::forwardMs(int d, int begin, int end, int samples) const {
  if (samples <= 0 || begin >= end) return 0;
  if (profiles_[d]) return profiledMs(d, begin, end, samples, false) * computeFactor(d);
  return samples * model_->forwardFlops(begin, end) / (cluster_->device(d).gflops * 1e6) * computeFactor(d);
}

double CostModel::backwardMs(int d, int begin, int end, int samples) const {
  if (samples <= 0 || begin >= end) return 0;
  if (profiles_[d]) return profiledMs(d, begin, end, samples, true) * computeFactor(d);
  return samples * model_->backwardFlops(begin, end) / (cluster_->device(d).gflops * 1e6) * computeFactor(d);
}

double CostModel::updateMs(int d, int begin, int end) const {
  if (begin >= end || !profiles_[d] || profiles_[d]->update.empty()) return 0;
  return (profiles_[d]->update[end] - profiles_[d]->update[begin]) * computeFactor(d);
}

double CostModel::allReduceCpuMs(int d, int group_size, double bytes) const {
  if (group_size <= 1 || bytes <= 0 || !profiles_[d]) return 0;
  const double g = group_size;
  const Profile& p = *profiles_[d];
  return bytes / kBytesPerMb * 2.0 * (g - 1) / g * p.allreduce_ms_per_mb;
}

double CostModel::copyMsPerMb(int d) const {
  if (profiles_[d] && profiles_[d]->copy_ms_per_mb > 0) return profiles_[d]->copy_ms_per_mb;
  return kAssumedCopyMsPerMb;
}

double CostModel::cpuDemand(int d) const { return profiles_[d] ? profiles_[d]->cpu_demand : 0; }

int CostModel::machineCpus(int d) const { return profiles_[d] ? profiles_[d]->machine_cpus : 0; }

double CostModel::transferMs(int a, int b, double bytes) const {
  if (a == b || bytes <= 0) return 0;
  return cluster_->latencyMs(a, b) + bytes * 8.0 / (cluster_->bandwidthMbps(a, b) * 1e3);
}

double CostModel::wireMs(int a, int b, double bytes) const {
  if (a == b || bytes <= 0) return 0;
  return bytes * 8.0 / (cluster_->bandwidthMbps(a, b) * 1e3);
}

double CostModel::allReduceMs(std::span<const int> group, double bytes) const {
  const size_t g = group.size();
  if (g <= 1 || bytes <= 0) return 0;
  double cpu = 0;
  for (int d : group) cpu = std::max(cpu, allReduceCpuMs(d, static_cast<int>(g), bytes));
  return std::max(allReduceWireMs(group, bytes), cpu);
}

double CostModel::allReduceWireMs(std::span<const int> group, double bytes) const {
  const size_t g = group.size();
  if (g <= 1 || bytes <= 0) return 0;
  double bandwidth = INFINITY, latency = 0;
  for (size_t i = 0; i < g; ++i) {
    const int a = group[i], b = group[(i + 1) % g];
    bandwidth = std::min(bandwidth, cluster_->bandwidthMbps(a, b));
    latency = std::max(latency, cluster_->latencyMs(a, b));
  }
  const double steps = 2.0 * (g - 1);
  return steps / g * bytes * 8.0 / (bandwidth * 1e3) + steps * latency;
}

CostModel::AllReduceSpan CostModel::allReduceSpan(const Stage& st, std::span<const double> backward_start) const {
  const int begin = st.layer_begin, end = st.layer_end;
  const size_t g = st.members.size();
  double backward_end = 0;
  for (size_t i = 0; i < g; ++i) {
    const auto& m = st.members[i];
    backward_end = std::max(backward_end, backward_start[i] + backwardMs(m.device, begin, end, m.samples));
  }
  if (g <= 1) return {backward_end, backward_end};
  const auto group = st.devices();
  const double bytes = model_->parameters(begin, end) * kFloatBytes;
  double cpu = 0;
  for (int d : group) cpu = std::max(cpu, allReduceCpuMs(d, static_cast<int>(g), bytes));
  AllReduceSpan span{backward_end, backward_end};
  double ring_free = -INFINITY;
  bool first = true;
  for (int e = end; e > begin;) {
    const int b = gradientBucketBegin(*model_, begin, e);
    // The backward runs from the last layer down: bucket [b, e) is done once every
    // member has passed layer b.
    double ready = 0;
    for (size_t i = 0; i < g; ++i) {
      const auto& m = st.members[i];
      ready = std::max(ready, backward_start[i] + backwardMs(m.device, b, end, m.samples));
    }
    const double start = std::max(ready, ring_free);
    if (first) span.start_ms = start;
    first = false;
    ring_free = start + allReduceWireMs(group, model_->parameters(b, e) * kFloatBytes);
    e = b;
  }
  span.end_ms = std::max(ring_free, backward_end + cpu);
  return span;
}

double CostModel::exposedAllReduceMs(const Stage& st) const {
  if (st.members.size() <= 1) return 0;
  const std::vector<double> together(st.members.size(), 0.0);
  const AllReduceSpan span = allReduceSpan(st, together);
  double backward = 0;
  for (const auto& m : st.members) backward = std::max(backward, backwardMs(m.device, st.layer_begin, st.layer_end, m.samples));
  return std::max(0.0, span.end_ms - backward);
}

int gradientBucketBegin(const ModelSpec& model, int begin, int end) {
  // The largest l in [begin, end) whose layers [l, end) hold a bucket's bytes, else begin.
  if (model.parameters(begin, end) * kFloatBytes < kGradientBucketBytes) return begin;
  int lo = begin, hi = end - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (model.parameters(mid, end) * kFloatBytes >= kGradientBucketBytes) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

std::vector<std::pair<int, int>> gradientBuckets(std::span<const double> layer_bytes) {
  std::vector<std::pair<int, int>> buckets;
  int end = static_cast<int>(layer_bytes.size());
  double held = 0;
  for (int l = end - 1; l >= 0; --l) {
    held += layer_bytes[l];
    if (held >= kGradientBucketBytes || l == 0) {
      buckets.emplace_back(l, end);
      end = l;
      held = 0;
    }
  }
  return buckets;
}

double CostModel::stateBytes(int begin, int end) const {
  const double copies = 2.0 + (optimizer_ == Optimizer::Adam ? 2.0 : 1.0);
  return model_->parameters(begin, end) * kFloatBytes * copies + own_backups_ * backupBytes(begin, end);
}

void CostModel::setBackups(int own, int held) {
  if (own < 0 || held < 0) throw std::logic_error("backup copies cannot be negative");
  own_backups_ = own;
  held_backups_ = held;
}

double CostModel::backupBytes(int begin, int end) const {
  const double copies = 1.0 + (optimizer_ == Optimizer::Adam ? 2.0 : 1.0);
  return model_->parameters(begin, end) * kFloatBytes * copies;
}

double CostModel::heldBackupBytes(const Plan& plan, int d) const {
  if (held_backups_ == 0) return 0;
  double bytes = 0;
  for (int s = 0; s < plan.stageCount(); ++s) {
    if (plan.backupTarget(s) == d) {
      bytes += held_backups_ * backupBytes(plan.stages[s].layer_begin, plan.stages[s].layer_end);
    }
  }
  return bytes;
}

double CostModel::activationBytes(int begin, int end, int samples, int in_flight) const {
  return model_->savedBytes(begin, end) * samples * in_flight;
}

double CostModel::memoryLimitBytes(int d) const { return cluster_->device(d).memory_mb * kBytesPerMb; }

namespace {

/// CostModel::maxSamples of a device with `limit` bytes, given the stage's state bytes and
/// its saved bytes per sample of all micro-batches in flight.
int samplesWithin(double limit, double state, double per_sample) {
  const double room = limit - state;
  if (room < 0) return 0;
  if (per_sample <= 0) return INT_MAX / 2;
  return static_cast<int>(std::min<double>(INT_MAX / 2, std::floor(room / per_sample)));
}

}  // namespace

int CostModel::maxSamples(int d, int begin, int end, int in_flight) const {
  return samplesWithin(memoryLimitBytes(d), stateBytes(begin, end),
                       model_->savedBytes(begin, end) * std::max(1, in_flight));
}

std::optional<std::vector<int>> CostModel::splitMicroBatch(std::span<const int> group, int begin,
                                                           int end, int micro_batch,
                                                           int in_flight) const {
  const size_t g = group.size();
  std::vector<int> caps(g);
  long long room = 0;
  // maxSamples of each member, with what they share computed once.
  const double state = stateBytes(begin, end);
  const double per_sample = model_->savedBytes(begin, end) * std::max(1, in_flight);
  for (size_t i = 0; i < g; ++i) {
    caps[i] = std::min(micro_batch, samplesWithin(memoryLimitBytes(group[i]), state, per_sample));
    room += caps[i];
  }
  if (g == 0 || room < micro_batch) return std::nullopt;
  auto finish = [&](size_t i, int samples) {
    return forwardMs(group[i], begin, end, samples) + backwardMs(group[i], begin, end, samples);
  };
  // Giving each next sample to the member that would finish it first minimises the
  // slowest member's time for any increasing time function (and equals the
  // speed-proportional split, rounded well, when time is linear in samples).
  using Entry = std::pair<double, size_t>;  // finish time with one more sample, member
  std::vector<Entry> first;
  first.reserve(g);
  for (size_t i = 0; i < g; ++i) {
    if (caps[i] > 0) first.push_back({finish(i, 1), i});
  }
  // Built in one go (the pairs order totally, so the pops do not depend on how).
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> next(std::greater<>{}, std::move(first));
  std::vector<int> shares(g, 0);
  for (int s = 0; s < micro_batch; ++s) {
    const auto [t, i] = next.top();
    next.pop();
    ++shares[i];
    if (shares[i] < caps[i]) next.push({finish(i, shares[i] + 1), i});
  }
  return shares;
}

double CostModel::soloSamplesPerSecond(int d, int batch) const {
  const int layers = model_->layerCount();
  const double ms = forwardMs(d, 0, layers, batch) + backwardMs(d, 0, layers, batch);
  return ms > 0 ? batch * 1000.0 / ms : 0;
}

int CostModel::smallestProfiledBatch(int d) const {
  return profiles_[d] ? profiles_[d]->batches.front() : 0;
}

int CostModel::profiledBatchCount(int d) const {
  return profiles_[d] ? static_cast<int>(profiles_[d]->batches.size()) : 0;
}

std::vector<ShareBelowProfile> sharesBelowProfiles(const Plan& plan, const CostModel& cost) {
  std::vector<ShareBelowProfile> out;
  for (const Stage& stage : plan.stages) {
    for (const DeviceShare& m : stage.members) {
      const int smallest = cost.smallestProfiledBatch(m.device);
      if (m.samples > 0 && m.samples < smallest) {
        out.push_back({m.device, m.samples, smallest, cost.profiledBatchCount(m.device) == 1});
      }
    }
  }
  return out;
}

BackupCost backupCost(const Plan& plan, const CostModel& cost) {
  // The sender copies the state and the kernel copies it into the socket (the copy goes on
  // the wire as it is, BackupSender); the kernel copies it out on the receiver, which parses it.
  constexpr double kSenderPasses = 2, kReceiverPasses = 2;
  std::vector<double> cpu(cost.deviceCount(), 0.0), link(cost.deviceCount(), 0.0);
  for (int s = 0; s < plan.stageCount(); ++s) {
    const int to = plan.backupTarget(s);
    if (to < 0 || plan.stages[s].members.empty()) continue;
    const int from = plan.stages[s].members.front().device;
    const double bytes = cost.backupBytes(plan.stages[s].layer_begin, plan.stages[s].layer_end);
    const double mb = bytes / kBytesPerMb;
    cpu[from] += kSenderPasses * mb * cost.copyMsPerMb(from);
    cpu[to] += kReceiverPasses * mb * cost.copyMsPerMb(to);
    link[from] += cost.wireMs(from, to, bytes);
  }
  // Devices of one machine share its CPU and memory bandwidth: their copies add up there
  // (four local workers on two cores: each device's share alone priced a round of copies at
  // a third of what it cost the steps).
  const Cluster& cluster = cost.cluster();
  std::vector<std::string> machines;
  for (int d = 0; d < cost.deviceCount(); ++d) machines.push_back(machineOf(cluster.device(d)));
  std::vector<double> machine_cpu(cpu);
  for (int d = 0; d < cost.deviceCount(); ++d) {
    if (machines[d].empty()) continue;
    for (int e = d + 1; e < cost.deviceCount(); ++e) {
      if (machines[e] == machines[d]) {
        machine_cpu[d] += cpu[e];
        machine_cpu[e] += cpu[d];
      }
    }
  }
  BackupCost out;
  for (int d = 0; d < cost.deviceCount(); ++d) {
    out.cpu_ms = std::max(out.cpu_ms, machine_cpu[d]);
    out.link_ms = std::max(out.link_ms, link[d]);
  }
  return out;
}

std::int64_t backupStride(const BackupCost& cost, double step_ms, double budget) {
  constexpr std::int64_t kMostSteps = 10'000;
  constexpr double kLinkShare = 0.5;
  if (!(cost.cpu_ms > 0) && !(cost.link_ms > 0)) return 1;
  if (!(step_ms > 0) || !(budget > 0)) return kMostSteps;
  const double steps = std::max(cost.cpu_ms / (budget * step_ms), cost.link_ms / (kLinkShare * step_ms));
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::min(std::ceil(steps - 1e-9), 1e9)), 1, kMostSteps);
}

}  // namespace stagecraft
