// The stage assignments the coordinator sends (control/assignments.h): each member's
// stage, group, rank and neighbours from a plan, and the training options checked first.
#include <gtest/gtest.h>

#include "control/assignments.h"
#include "control_fixtures.h"
#include "io/error.h"
#include "test_fixtures.h"

namespace stagecraft {
namespace {

using control::TrainingOptions;
using testing::hybridPlan;

TEST(ControlAssignments, HybridPlanGivesEachMemberItsStageGroupRankAndNeighbours) {
  const ModelSpec model = testing::uniformLinearModel(8, 32);
  v1::Cluster proto = testing::makeCluster({100, 90, 50, 20, 20}).toProto();
  for (int d = 0; d < proto.devices_size(); ++d) {
    proto.mutable_devices(d)->set_address("10.0.0." + std::to_string(d + 1) + ":5005" + std::to_string(d));
  }
  const Cluster cluster = Cluster::fromProto(proto);
  TrainingOptions options;
  options.job = "job-1";
  options.lr = 0.003;
  options.seed = 42;
  options.start_step = 7;
  const auto assignments = control::buildAssignments(hybridPlan(), model, cluster, options);

  // One per member, in stage then member order.
  ASSERT_EQ(assignments.size(), 5u);
  const std::vector<std::string> order = {"d1", "d0", "d2", "d4", "d3"};
  const std::vector<int> stages = {0, 0, 1, 2, 2};
  const std::vector<int> ranks = {0, 1, 0, 0, 1};
  for (size_t i = 0; i < assignments.size(); ++i) {
    const auto& a = assignments[i];
    EXPECT_EQ(a.group(a.rank()).name(), order[i]) << i;
    EXPECT_EQ(a.stage(), stages[i]) << i;
    EXPECT_EQ(a.rank(), ranks[i]) << i;
    EXPECT_EQ(a.stages(), 3);
    EXPECT_EQ(a.job(), "job-1");
    EXPECT_EQ(a.model().name(), "uniform");
    EXPECT_EQ(a.model().layers_size(), 8);
    EXPECT_EQ(a.batch_size(), 16);
    EXPECT_EQ(a.microbatches(), 4);
    EXPECT_EQ(a.schedule(), "1f1b");
    EXPECT_EQ(a.optimizer().kind(), "adam");
    EXPECT_DOUBLE_EQ(a.optimizer().lr(), 0.003);
    EXPECT_EQ(a.data().kind(), "synthetic");
    EXPECT_EQ(a.data().seed(), 42u);
    EXPECT_EQ(a.seed(), 42u);
    EXPECT_EQ(a.start_step(), 7);
    EXPECT_FALSE(a.has_weights());
  }

  // Layer ranges and groups: members in the plan's order with addresses and shares.
  const auto& first = assignments[0];
  EXPECT_EQ(first.layer_begin(), 0);
  EXPECT_EQ(first.layer_end(), 2);
  ASSERT_EQ(first.group_size(), 2);
  EXPECT_EQ(first.group(0).name(), "d1");
  EXPECT_EQ(first.group(0).address(), "10.0.0.2:50051");
  EXPECT_EQ(first.group(0).samples(), 3);
  EXPECT_EQ(first.group(1).name(), "d0");
  EXPECT_EQ(first.group(1).samples(), 1);
  EXPECT_EQ(first.previous_size(), 0);
  ASSERT_EQ(first.next_size(), 1);
  EXPECT_EQ(first.next(0).name(), "d2");
  EXPECT_EQ(first.next(0).samples(), 4);

  const auto& middle = assignments[2];
  EXPECT_EQ(middle.layer_begin(), 2);
  EXPECT_EQ(middle.layer_end(), 5);
  ASSERT_EQ(middle.previous_size(), 2);
  EXPECT_EQ(middle.previous(0).name(), "d1");
  EXPECT_EQ(middle.previous(1).name(), "d0");
  ASSERT_EQ(middle.next_size(), 2);
  EXPECT_EQ(middle.next(0).name(), "d4");
  EXPECT_EQ(middle.next(0).samples(), 1);
  EXPECT_EQ(middle.next(1).name(), "d3");
  EXPECT_EQ(middle.next(1).address(), "10.0.0.4:50053");

  const auto& last = assignments[4];
  EXPECT_EQ(last.layer_begin(), 5);
  EXPECT_EQ(last.layer_end(), 8);
  EXPECT_EQ(last.next_size(), 0);
  ASSERT_EQ(last.previous_size(), 1);
  EXPECT_EQ(last.previous(0).name(), "d2");

  // The store of a group is on its rank-0 member's host, one port per stage.
  // Each group meets at its rank-0 member's worker.
  EXPECT_EQ(assignments[0].store_address(), "10.0.0.2:50051");
  EXPECT_EQ(assignments[1].store_address(), "10.0.0.2:50051");
  EXPECT_EQ(assignments[2].store_address(), "10.0.0.3:50052");
  EXPECT_EQ(assignments[3].store_address(), "10.0.0.5:50054");
  EXPECT_EQ(assignments[4].store_address(), "10.0.0.5:50054");
}

TEST(ControlAssignments, MemberWithoutAddressIsAnError) {
  const ModelSpec model = testing::uniformLinearModel(8, 32);
  const Cluster cluster = testing::makeCluster({100, 90, 50, 20, 20});  // no addresses
  try {
    control::buildAssignments(hybridPlan(), model, cluster, TrainingOptions{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'d1' has no worker address"), std::string::npos) << e.what();
  }
}

TEST(ControlAssignments, TrainingOptionsAreChecked) {
  TrainingOptions options;
  options.lr = 0;
  EXPECT_THROW(control::checkTrainingOptions(options), Error);
  options.lr = 0.1;
  options.data = "imagenet";
  EXPECT_THROW(control::checkTrainingOptions(options), Error);
  options.data = "mnist";
  options.data_path = "images.idx";
  EXPECT_THROW(control::checkTrainingOptions(options), Error);  // no labels
  options.labels_path = "labels.idx";
  EXPECT_NO_THROW(control::checkTrainingOptions(options));
  options.data = "imagefolder";
  EXPECT_THROW(control::checkTrainingOptions(options), Error);  // the labels are the class folders
  options.labels_path.clear();
  options.data_path = "flowers";
  EXPECT_NO_THROW(control::checkTrainingOptions(options));
  options.data_path.clear();
  EXPECT_THROW(control::checkTrainingOptions(options), Error);  // no folder
  options.data = "cifar10";
  options.data_path = "cifar-10-batches-bin";
  EXPECT_NO_THROW(control::checkTrainingOptions(options));
  options.holdout = 0.6;  // more held out than trained on
  EXPECT_THROW(control::checkTrainingOptions(options), Error);
  options.holdout = 0.1;
  EXPECT_NO_THROW(control::checkTrainingOptions(options));
  EXPECT_EQ(control::dataConfig(options).holdout(), 0.1);  // what the workers split by
}

}  // namespace
}  // namespace stagecraft
