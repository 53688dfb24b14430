// Checkpoints on disk: what is written reads back the same, a write replaces the last one
// whole, and a missing or foreign file is one clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <fstream>
#include <unistd.h>

#include "cluster/cluster_catalog.h"
#include "control/checkpoint.h"
#include "io/error.h"
#include "model/zoo.h"

namespace stagecraft::control {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("stagecraft-checkpoint-" + std::to_string(::getpid()));
  Scratch() { fs::remove_all(dir); }
  ~Scratch() { fs::remove_all(dir); }
};

ModelWeights weightsAt(std::int64_t step, int layers) {
  ModelWeights w;
  w.step = step;
  for (int l = 0; l < layers; ++l) {
    v1::Tensor t;
    t.set_name(std::to_string(l) + ".weight");
    t.add_shape(1);
    t.set_dtype("float32");
    const float value = static_cast<float>(step * 100 + l);
    t.set_data(std::string(reinterpret_cast<const char*>(&value), sizeof value));
    w.layers[l].push_back(t);
  }
  return w;
}

Plan twoStages(const ModelSpec& model) {
  Plan p;
  p.model = model.name();
  p.batch_size = 8;
  p.microbatches = 2;
  p.stages = {{0, 4, {{0, 4}}}, {4, model.layerCount(), {{1, 4}}}};
  return p;
}

TEST(Checkpoint, WhatIsWrittenReadsBack) {
  Scratch scratch;
  const ModelSpec model = loadModel("mlp");
  const Cluster cluster = loadCluster("cloud-edge-end");
  TrainingOptions options;
  options.lr = 0.02;
  options.seed = 9;
  options.data = "synthetic";
  writeCheckpoint(scratch.dir.string(),
                  makeCheckpoint(weightsAt(4, model.layerCount()), model, twoStages(model), cluster, options));
  // A later one replaces it, and no temporary file stays behind.
  writeCheckpoint(scratch.dir.string(),
                  makeCheckpoint(weightsAt(6, model.layerCount()), model, twoStages(model), cluster, options));
  EXPECT_FALSE(fs::exists(scratch.dir / "checkpoint.pb.tmp"));
  EXPECT_EQ(fs::status(scratch.dir / "checkpoint.pb").permissions() & fs::perms::others_read, fs::perms::none);

  const v1::Checkpoint c = readCheckpoint(scratch.dir.string());
  EXPECT_EQ(c.step(), 6);
  EXPECT_EQ(c.model().name(), "mlp");
  EXPECT_EQ(c.plan().stages_size(), 2);
  EXPECT_EQ(c.cluster(), cluster.name());
  const TrainingOptions back = checkpointOptions(c);
  EXPECT_DOUBLE_EQ(back.lr, 0.02);
  EXPECT_EQ(back.seed, 9u);
  EXPECT_EQ(back.start_step, 6);
  const ModelWeights w = checkpointWeights(c);
  EXPECT_EQ(w.step, 6);
  ASSERT_EQ(static_cast<int>(w.layers.size()), model.layerCount());
  float value = 0;
  std::memcpy(&value, w.layers.at(3).front().data().data(), sizeof value);
  EXPECT_EQ(value, 603.0f);
}

TEST(Checkpoint, MissingOrForeignFilesAreOneClearError) {
  Scratch scratch;
  try {
    readCheckpoint(scratch.dir.string());
    FAIL() << "read a checkpoint that is not there";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no checkpoint at"), std::string::npos) << e.what();
  }
  fs::create_directories(scratch.dir);
  std::ofstream(scratch.dir / "checkpoint.pb") << "not a checkpoint at all \x01\x02";
  try {
    readCheckpoint(scratch.dir.string());
    FAIL() << "read garbage as a checkpoint";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint.pb"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stagecraft::control
