#include "stage_layout.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "model/model_spec.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw WorkerError(ErrorCode::InvalidArgument, message); }

std::string range(int begin, int end) { return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")"; }

/// Shares of a neighbour group: non-negative, summing to the micro-batch.
void checkGroup(const google::protobuf::RepeatedPtrField<v1::Member>& group, const std::string& what,
                int micro_batch_size) {
  std::int64_t total = 0;  // shares from the wire may each be near INT_MAX
  std::set<std::string> names;
  for (int i = 0; i < group.size(); ++i) {
    const auto& m = group[i];
    if (m.name().empty()) invalid(what + " member " + std::to_string(i) + " has no name");
    if (!names.insert(m.name()).second) invalid(what + " names '" + m.name() + "' twice");
    if (m.samples() < 0) invalid(what + " member '" + m.name() + "' has " + std::to_string(m.samples()) + " samples");
    total += m.samples();
  }
  if (total != micro_batch_size) {
    invalid(what + " shares sum to " + std::to_string(total) + " samples, not the micro-batch of " +
            std::to_string(micro_batch_size) + " (batch / microbatches)");
  }
}

Stage asStage(const google::protobuf::RepeatedPtrField<v1::Member>& group) {
  Stage s;
  for (int i = 0; i < group.size(); ++i) s.members.push_back({i, group[i].samples()});
  return s;
}

/// The overlaps between this member (index `rank` of `mine`) and the members of `other`.
std::vector<PeerSlice> overlaps(const google::protobuf::RepeatedPtrField<v1::Member>& mine, int rank,
                                const google::protobuf::RepeatedPtrField<v1::Member>& other, bool other_is_next,
                                const std::string& what) {
  std::vector<PeerSlice> out;
  int at = 0;
  const auto transfers = other_is_next ? boundaryTransfers(asStage(mine), asStage(other))
                                       : boundaryTransfers(asStage(other), asStage(mine));
  for (const Transfer& t : transfers) {
    const int me = other_is_next ? t.from_device : t.to_device;
    const int peer = other_is_next ? t.to_device : t.from_device;
    if (me == rank) {
      const auto& m = other[peer];
      if (m.address().empty()) invalid(what + " member '" + m.name() + "' has no address");
      out.push_back({m.name(), m.address(), at, t.samples});
    }
    at += t.samples;
  }
  return out;
}

}  // namespace

StageLayout layoutStage(const v1::StageAssignment& a) {
  StageLayout l;
  if (a.job().empty()) invalid("job is empty");
  l.job = a.job();
  if (a.model().layers_size() == 0) invalid("model '" + a.model().name() + "' has no layers");
  const ModelSpec spec = ModelSpec::fromProto(a.model());  // throws Error for a broken chain
  const int layers = spec.layerCount();

  if (a.stages() < 1) invalid("stages is " + std::to_string(a.stages()) + "; a pipeline has at least 1 stage");
  if (a.stage() < 0 || a.stage() >= a.stages()) {
    invalid("stage " + std::to_string(a.stage()) + " is outside the pipeline's " + std::to_string(a.stages()) +
            " stages");
  }
  l.stage = a.stage();
  l.stages = a.stages();
  if (a.layer_begin() < 0 || a.layer_end() > layers || a.layer_begin() >= a.layer_end()) {
    invalid("layer range " + range(a.layer_begin(), a.layer_end()) + " is not within model '" + spec.name() +
            "' with " + std::to_string(layers) + " layers " + range(0, layers));
  }
  l.layer_begin = a.layer_begin();
  l.layer_end = a.layer_end();
  if (l.first() && l.layer_begin != 0) invalid("stage 0 must start at layer 0, not " + std::to_string(l.layer_begin));
  if (l.last() && l.layer_end != layers) {
    invalid("the last stage must end at layer " + std::to_string(layers) + ", not " + std::to_string(l.layer_end));
  }

  if (a.batch_size() <= 0) invalid("batch_size is " + std::to_string(a.batch_size()) + "; it must be positive");
  if (a.microbatches() <= 0) invalid("microbatches is " + std::to_string(a.microbatches()) + "; it must be positive");
  if (a.batch_size() % a.microbatches() != 0) {
    invalid("batch " + std::to_string(a.batch_size()) + " is not divisible into " + std::to_string(a.microbatches()) +
            " micro-batches");
  }
  l.batch_size = a.batch_size();
  l.microbatches = a.microbatches();
  l.micro_batch_size = l.batch_size / l.microbatches;

  if (a.group_size() == 0) invalid("group is empty");
  if (a.rank() < 0 || a.rank() >= a.group_size()) {
    invalid("rank " + std::to_string(a.rank()) + " is outside the group of " + std::to_string(a.group_size()) +
            " members");
  }
  l.rank = a.rank();
  l.group_size = a.group_size();
  checkGroup(a.group(), "group", l.micro_batch_size);
  for (int i = 0; i < l.rank; ++i) l.sample_begin += a.group(i).samples();
  l.samples = a.group(l.rank).samples();
  // A group meets at its rank-0 member's worker (its GroupStore service): no other
  // address is taken from the assignment, whatever store_address says.
  if (l.group_size > 1) {
    const auto& s = a.group(0).address();
    const auto colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
      invalid("the group's rank-0 member has address '" + s + "', not HOST:PORT (its group meets there)");
    }
  }

  if (l.first() != (a.previous_size() == 0)) {
    invalid(l.first() ? "stage 0 has previous members" : "stage " + std::to_string(l.stage) + " has no previous members");
  }
  if (l.last() != (a.next_size() == 0)) {
    invalid(l.last() ? "the last stage has next members" : "stage " + std::to_string(l.stage) + " has no next members");
  }
  if (!l.first()) {
    checkGroup(a.previous(), "previous", l.micro_batch_size);
    l.previous = overlaps(a.group(), l.rank, a.previous(), false, "previous");
  }
  if (!l.last()) {
    checkGroup(a.next(), "next", l.micro_batch_size);
    l.next = overlaps(a.group(), l.rank, a.next(), true, "next");
  }

  l.schedule = a.schedule().empty() ? Schedule::OneFOneB : parseSchedule(a.schedule());
  if (l.schedule == Schedule::Invalid) invalid("schedule '" + a.schedule() + "' is not 1f1b or gpipe");
  l.optimizer = a.optimizer().kind().empty() ? Optimizer::Sgd : parseOptimizer(a.optimizer().kind());
  if (l.optimizer == Optimizer::Invalid) invalid("optimizer '" + a.optimizer().kind() + "' is not sgd or adam");
  if (!(a.optimizer().lr() > 0)) invalid("optimizer lr is " + std::to_string(a.optimizer().lr()) + "; it must be positive");
  if (a.start_step() < 0) invalid("start_step is negative");
  if (a.has_weights() && (a.weights().layer_begin() != l.layer_begin || a.weights().layer_end() != l.layer_end)) {
    invalid("weights are for layers " + range(a.weights().layer_begin(), a.weights().layer_end()) +
            ", the stage runs " + range(l.layer_begin, l.layer_end));
  }

  if (l.samples > 0) l.ops = scheduleOps(l.schedule, l.stage, l.stages, l.microbatches);
  l.in_flight = l.schedule == Schedule::GPipe ? l.microbatches : std::max(1, std::min(l.stages - l.stage, l.microbatches));

  // The planner's own memory formula, so a plan that fits on paper fits here.
  v1::Cluster one;
  auto* device = one.add_devices();
  device->set_name("self");
  device->set_tier("edge");
  device->set_gflops(1);
  device->set_memory_mb(1);
  device->set_bandwidth_mbps(1);
  const Cluster cluster = Cluster::fromProto(one);
  const CostModel cost(spec, cluster, l.optimizer);
  l.parameters = spec.parameters(l.layer_begin, l.layer_end);
  l.memory_bytes = cost.memoryBytes(l.layer_begin, l.layer_end, l.samples, l.in_flight);
  return l;
}

void checkMemory(const StageLayout& layout, double limit_mb, const std::string& limit_flag) {
  const double need_mb = layout.memory_bytes / (1024.0 * 1024.0);
  if (limit_mb > 0 && need_mb > limit_mb) {
    char text[320];
    std::snprintf(text, sizeof text,
                  "stage %d (layers [%d, %d), %d samples x %d in-flight micro-batches) needs %.1f MB "
                  "but %s is %.1f MB",
                  layout.stage, layout.layer_begin, layout.layer_end, layout.samples, layout.in_flight, need_mb,
                  limit_flag.c_str(), limit_mb);
    throw WorkerError(ErrorCode::ResourceExhausted, text);
  }
}

InboxRules inboxRules(const StageLayout& layout, const v1::Model& model) {
  InboxRules rules;
  rules.microbatches = layout.microbatches;
  const auto shapeAt = [&](int layer) {
    std::vector<std::int64_t> shape;
    if (layer >= 0 && layer < model.layers_size()) {
      for (const int d : model.layers(layer).input_shape()) shape.push_back(d);
    }
    return shape;
  };
  double step_bytes = 0;
  const auto add = [&](const std::vector<PeerSlice>& peers, bool gradient, int layer) {
    const std::vector<std::int64_t> shape = shapeAt(layer);
    double sample_bytes = sizeof(float);
    for (const auto d : shape) sample_bytes *= static_cast<double>(d);
    for (const PeerSlice& p : peers) {
      rules.flows.push_back({p.peer, gradient, p.sample_begin, p.samples, shape});
      step_bytes += sample_bytes * p.samples * layout.microbatches;
    }
  };
  add(layout.previous, false, layout.layer_begin);
  add(layout.next, true, layout.layer_end);
  rules.max_bytes = static_cast<std::size_t>(std::max(3 * step_bytes, 64.0 * (1 << 20)));
  return rules;
}

}  // namespace stagecraft::worker
