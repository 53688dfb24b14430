#include "control/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/error.h"
#include "plan/plan_io.h"

namespace stagecraft::control {

std::string checkpointPath(const std::string& dir) { return (std::filesystem::path(dir) / "checkpoint.pb").string(); }

v1::Checkpoint makeCheckpoint(const ModelWeights& weights, const ModelSpec& model, const Plan& plan,
                              const Cluster& cluster, const TrainingOptions& options) {
  v1::Checkpoint c;
  c.set_step(weights.step);
  *c.mutable_model() = model.proto();
  *c.mutable_plan() = planToProto(plan, model, cluster);
  *c.mutable_weights() = sliceWeights(weights, 0, model.layerCount());
  *c.mutable_optimizer() = optimizerConfig(options, plan.optimizer);
  *c.mutable_data() = dataConfig(options);
  c.set_cluster(cluster.name());
  c.set_unix_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count());
  return c;
}

void writeCheckpoint(const std::string& dir, const v1::Checkpoint& checkpoint) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw environmentError("checkpoint: cannot create " + dir + ": " + ec.message());
  const std::string path = checkpointPath(dir);
  const std::string temporary = path + ".tmp";
  std::string bytes;
  if (!checkpoint.SerializeToString(&bytes)) throw Error("checkpoint: cannot serialize step " + std::to_string(checkpoint.step()), ErrorKind::Internal);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw environmentError("checkpoint: cannot write " + temporary + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw environmentError("checkpoint: cannot write " + temporary + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  // On disk before it replaces the last good one.
  if (::fsync(fd) != 0 || ::close(fd) != 0) throw environmentError("checkpoint: cannot flush " + temporary + ": " + std::strerror(errno));
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw environmentError("checkpoint: cannot rename " + temporary + " to " + path + ": " + ec.message());
}

v1::Checkpoint readCheckpoint(const std::string& dir) {
  const std::string path = checkpointPath(dir);
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("no checkpoint at " + path);
  v1::Checkpoint c;
  if (!c.ParseFromIstream(&file)) throw Error(path + " is not a Stagecraft checkpoint");
  if (c.model().layers_size() == 0 || c.weights().tensors_size() == 0) {
    throw Error(path + " holds no model or no weights");
  }
  if (c.weights().step() != c.step()) {
    throw Error(path + ": weights of step " + std::to_string(c.weights().step()) + " in a checkpoint of step " +
                std::to_string(c.step()));
  }
  return c;
}

ModelWeights checkpointWeights(const v1::Checkpoint& checkpoint) {
  const std::vector<v1::StageWeights> parts{checkpoint.weights()};
  const std::vector<std::string> names{"checkpoint"};
  return mergeStageWeights(parts, names);
}

TrainingOptions checkpointOptions(const v1::Checkpoint& c) {
  TrainingOptions o = trainingOptionsFrom(c.optimizer(), c.data());
  o.start_step = c.step();
  return o;
}

}  // namespace stagecraft::control
