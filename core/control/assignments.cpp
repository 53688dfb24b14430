#include "control/assignments.h"

#include <cmath>
#include <stdexcept>

#include "control/net.h"
#include "io/error.h"

namespace stagecraft::control {
namespace {

v1::Member member(const Cluster& cluster, const DeviceShare& share) {
  v1::Member m;
  const Device& device = cluster.device(share.device);
  m.set_name(device.name);
  m.set_address(device.address);
  m.set_samples(share.samples);
  return m;
}

}  // namespace

void checkTrainingOptions(const TrainingOptions& options) {
  if (!(options.holdout >= 0 && options.holdout <= 0.5)) {
    throw Error("--holdout must be within 0 and 0.5, got " + std::to_string(options.holdout));
  }
  if (!(std::isfinite(options.lr) && options.lr > 0)) throw Error("learning rate must be positive");
  if (!(std::isfinite(options.momentum) && options.momentum >= 0 && options.momentum < 1)) {
    throw Error("momentum must be in [0, 1)");
  }
  if (options.weight_decay < 0) throw Error("weight decay must not be negative");
  if (options.data == "synthetic") return;
  if (options.data != "mnist" && options.data != "cifar10" && options.data != "imagefolder") {
    throw Error("data must be synthetic, mnist, cifar10 or imagefolder, got '" + options.data + "'");
  }
  if (options.data_path.empty()) throw Error(options.data + " data needs a data path");
  if (options.data == "mnist" && options.labels_path.empty()) throw Error("mnist data needs a labels path");
  if (options.data == "imagefolder" && !options.labels_path.empty()) {
    throw Error("imagefolder data takes its labels from the class folders: give no labels path");
  }
}

double defaultLearningRate(std::string_view model, Optimizer optimizer) {
  struct Default {
    std::string_view model;
    double sgd;
    double adam;
  };
  // Checked by tests/worker/torch_defaults_test.cpp: 200 steps each, no divergence.
  static constexpr Default kDefaults[] = {
      {"mlp", 0.01, 0.0002},     {"vgg11", 0.01, 0.0005},   {"resnet18", 0.02, 0.001},
      {"mobilenetv2", 0.02, 0.001}, {"gpt-mini", 0.02, 0.0005},
  };
  const bool adam = optimizer == Optimizer::Adam;
  for (const Default& d : kDefaults) {
    if (d.model == model) return adam ? d.adam : d.sgd;
  }
  return adam ? 0.001 : 0.02;
}

v1::OptimizerConfig optimizerConfig(const TrainingOptions& options, Optimizer optimizer) {
  v1::OptimizerConfig c;
  c.set_kind(std::string(optimizerName(optimizer)));
  c.set_lr(options.lr);
  c.set_momentum(options.momentum);
  c.set_weight_decay(options.weight_decay);
  c.set_beta1(options.beta1);
  c.set_beta2(options.beta2);
  c.set_eps(options.eps);
  return c;
}

v1::DataConfig dataConfig(const TrainingOptions& options) {
  v1::DataConfig c;
  c.set_kind(options.data);
  c.set_path(options.data_path);
  c.set_labels_path(options.labels_path);
  c.set_seed(options.seed);
  c.set_holdout(options.holdout);
  return c;
}

TrainingOptions trainingOptionsFrom(const v1::OptimizerConfig& optimizer, const v1::DataConfig& data) {
  TrainingOptions o;
  o.lr = optimizer.lr();
  o.momentum = optimizer.momentum();
  o.weight_decay = optimizer.weight_decay();
  o.beta1 = optimizer.beta1();
  o.beta2 = optimizer.beta2();
  o.eps = optimizer.eps();
  o.data = data.kind();
  o.data_path = data.path();
  o.labels_path = data.labels_path();
  o.seed = data.seed();
  o.holdout = data.holdout();
  return o;
}

std::vector<v1::StageAssignment> buildAssignments(const Plan& plan, const ModelSpec& model, const Cluster& cluster,
                                                  const TrainingOptions& options) {
  for (const auto& stage : plan.stages) {
    for (const auto& share : stage.members) {
      const Device& device = cluster.device(share.device);
      if (device.address.empty()) throw Error("device '" + device.name + "' has no worker address in the cluster");
      if (!splitHostPort(device.address)) {
        throw Error("device '" + device.name + "': address '" + device.address + "' is not host:port");
      }
    }
  }

  const v1::OptimizerConfig optimizer = optimizerConfig(options, plan.optimizer);
  const v1::DataConfig data = dataConfig(options);

  std::vector<v1::StageAssignment> out;
  for (int s = 0; s < plan.stageCount(); ++s) {
    const Stage& stage = plan.stages[s];
    v1::StageAssignment base;
    base.set_job(options.job);
    *base.mutable_model() = model.proto();
    base.set_stage(s);
    base.set_stages(plan.stageCount());
    base.set_layer_begin(stage.layer_begin);
    base.set_layer_end(stage.layer_end);
    for (const auto& share : stage.members) *base.add_group() = member(cluster, share);
    if (s > 0) {
      for (const auto& share : plan.stages[s - 1].members) *base.add_previous() = member(cluster, share);
    }
    if (s + 1 < plan.stageCount()) {
      for (const auto& share : plan.stages[s + 1].members) *base.add_next() = member(cluster, share);
    }
    base.set_batch_size(plan.batch_size);
    base.set_microbatches(plan.microbatches);
    base.set_schedule(std::string(scheduleName(plan.schedule)));
    *base.mutable_optimizer() = optimizer;
    *base.mutable_data() = data;
    base.set_seed(options.seed);
    // The group meets at its rank-0 member's worker (GroupStore), behind its token.
    base.set_store_address(cluster.device(stage.members.front().device).address);
    base.set_start_step(options.start_step);
    for (int rank = 0; rank < static_cast<int>(stage.members.size()); ++rank) {
      v1::StageAssignment assignment = base;
      assignment.set_rank(rank);
      if (rank == 0 && options.backup_every > 0) {
        assignment.set_backup_every(options.backup_every);
        const int target = plan.backupTarget(s);
        if (target >= 0) *assignment.mutable_backup_to() = member(cluster, DeviceShare{target, 0});
      }
      out.push_back(std::move(assignment));
    }
  }
  return out;
}

Cluster withAddresses(const Cluster& cluster, std::span<const std::pair<std::string, std::string>> addresses) {
  v1::Cluster proto = cluster.toProto();
  for (const auto& [name, address] : addresses) {
    for (auto& device : *proto.mutable_devices()) {
      if (device.name() == name) device.set_address(address);
    }
  }
  return Cluster::fromProto(proto);
}

}  // namespace stagecraft::control
