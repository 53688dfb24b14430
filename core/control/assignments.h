#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "model/model_spec.h"
#include "plan/plan.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::control {

/// How to train, beyond what the plan fixes (stages, batch, micro-batches, schedule and
/// the optimizer's kind).
struct TrainingOptions {
  std::string job;  ///< empty: the coordinator names one after the model
  double lr = 0.02;  // SGD: mlp trains 200 steps without diverging (0.05 diverged at step ~24)
  double momentum = 0.9;  ///< SGD
  double weight_decay = 0;
  double beta1 = 0.9;  ///< Adam
  double beta2 = 0.999;
  double eps = 1e-8;
  std::string data = "synthetic";  ///< synthetic | mnist | cifar10 | imagefolder
  std::string data_path;           ///< MNIST IDX images, a CIFAR-10 batch or folder, an image folder
  std::string labels_path;         ///< MNIST IDX labels
  std::uint64_t seed = 1;          ///< weight initialisation, sample order, the synthetic task
  /// The share of a file data set kept out of training for evaluation (0 to 0.5).
  double holdout = 0;
  std::int64_t start_step = 0;
  /// Steps between the backups each stage's rank-0 member keeps and sends to the next
  /// stage's first member (the last stage's to the first; in a one-stage plan, to its
  /// second member): the states a lost device's run replays from. 0: none.
  std::int64_t backup_every = 0;
};

/// The learning rate training starts with when the user names none: per zoo model and
/// optimizer, each trained 200 steps without diverging (tests/worker/torch_defaults_test);
/// another model gets the optimizer's general default (SGD 0.02, Adam 0.001).
double defaultLearningRate(std::string_view model, Optimizer optimizer);

/// The optimizer and the data as a StageAssignment carries them, and back (the optimizer's
/// kind is the plan's: `optimizer`).
v1::OptimizerConfig optimizerConfig(const TrainingOptions& options, Optimizer optimizer);
v1::DataConfig dataConfig(const TrainingOptions& options);
TrainingOptions trainingOptionsFrom(const v1::OptimizerConfig& optimizer, const v1::DataConfig& data);

/// Throws Error for options no worker can use: lr not positive, an unknown data kind, a
/// data set without its files.
void checkTrainingOptions(const TrainingOptions& options);

/// One StageAssignment per member of every stage of `plan`, in stage order and, within a
/// stage, in member order (which is also each member's rank and the order of samples in
/// a micro-batch). A stage's group meets at its rank-0 member's worker, which keeps the
/// group's store (store_address says which). Each rank-0 member is told where its backups go (see backup_every;
/// Plan::backupTarget). Throws Error when a member's device has no usable address.
std::vector<v1::StageAssignment> buildAssignments(const Plan& plan, const ModelSpec& model, const Cluster& cluster,
                                                  const TrainingOptions& options);

/// `cluster` with the addresses of the named devices replaced.
Cluster withAddresses(const Cluster& cluster, std::span<const std::pair<std::string, std::string>> addresses);

}  // namespace stagecraft::control
