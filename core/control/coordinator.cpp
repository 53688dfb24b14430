#include "control/coordinator.h"

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>
#include <grpcpp/support/sync_stream.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <random>

#include "control/net.h"
#include "io/error.h"

namespace stagecraft::control {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// Runs fn(0..n-1) on n threads and waits for all; then rethrows the failure of the
/// lowest index, so the message a user sees does not depend on thread timing.
template <class Fn>
void parallelFor(int n, Fn&& fn) {
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

std::string makeJobName(const std::string& model) {
  std::random_device random;
  const unsigned value = random();
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", value);
  return (model.empty() ? std::string("job") : model) + "-" + suffix;
}

}  // namespace

Coordinator::Coordinator(Cluster cluster, CoordinatorOptions options)
    : cluster_(std::move(cluster)), options_(options), stall_limit_(options.silence_limit) {
  clients_.resize(cluster_.size());
  for (int d = 0; d < cluster_.size(); ++d) {
    const Device& device = cluster_.device(d);
    if (!device.address.empty()) {
      clients_[d] =
          std::make_unique<WorkerClient>(WorkerEndpoint{device.name, device.address, options_.token},
                                       options_.max_message_bytes);
    }
  }
}

Coordinator::~Coordinator() { closeStreams(); }

WorkerClient& Coordinator::client(int device) {
  if (!clients_[device]) {
    throw Error("device '" + cluster_.device(device).name + "' has no worker address in cluster '" + cluster_.name() +
                "'");
  }
  return *clients_[device];
}

std::vector<v1::WorkerInfo> Coordinator::describe() {
  for (int d = 0; d < cluster_.size(); ++d) client(d);  // every device needs an address
  std::vector<v1::WorkerInfo> infos(cluster_.size());
  parallelFor(cluster_.size(), [&](int d) { infos[d] = client(d).describe(options_.call_timeout); });
  return infos;
}

std::vector<std::vector<int>> workersByMachine(const std::vector<v1::WorkerInfo>& infos) {
  std::vector<std::string> keys;
  std::vector<std::vector<int>> machines;
  for (int d = 0; d < static_cast<int>(infos.size()); ++d) {
    std::string key = infos[d].host_id();
    if (key.empty()) {
      // A worker that does not say which machine it is on: its address's host decides.
      const auto hp = splitHostPort(infos[d].address());
      key = !hp ? "worker:" + std::to_string(d) : isLoopbackHost(hp->host) ? "loopback" : "address:" + hp->host;
    }
    const auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      machines.push_back({d});
    } else {
      machines[it - keys.begin()].push_back(d);
    }
  }
  return machines;
}

std::vector<StopOutcome> Coordinator::stopJobs(const std::string& job) {
  std::vector<StopOutcome> out(cluster_.size());
  parallelFor(cluster_.size(), [&](int d) {
    StopOutcome& o = out[d];
    o.device = cluster_.device(d).name;
    if (!clients_[d]) {
      o.error = "device '" + o.device + "' has no worker address";
      return;
    }
    try {
      const v1::HeartbeatReply beat = clients_[d]->heartbeat(options_.call_timeout);
      o.reachable = true;
      o.job = beat.job();
      o.step = beat.step();
      if (beat.state() != "training" || (!job.empty() && beat.job() != job)) return;
      v1::StopRequest request;
      request.set_job(beat.job());
      o.step = clients_[d]->stop(request, options_.call_timeout).step();
      o.stopped = true;
    } catch (const WorkerError& e) {
      o.error = e.what();
    }
  });
  return out;
}

void Coordinator::setSilenceLimits(milliseconds probe_after, milliseconds stall_limit) {
  options_.probe_after = std::max(probe_after, milliseconds(1));
  stall_limit_ = std::clamp(stall_limit, milliseconds(1), options_.silence_limit);
}

std::vector<WorkerProbe> Coordinator::probe(milliseconds deadline) {
  if (deadline <= milliseconds(0)) deadline = options_.call_timeout;
  std::vector<WorkerProbe> probes(cluster_.size());
  parallelFor(cluster_.size(), [&](int d) {
    WorkerProbe& p = probes[d];
    // No token: a probe tells where it looked, and reports never carry the secret.
    p.endpoint = {cluster_.device(d).name, cluster_.device(d).address, {}};
    if (!clients_[d]) {
      p.error = "device '" + p.endpoint.name + "' has no worker address";
      return;
    }
    try {
      p.info = clients_[d]->describe(deadline, Resend::Never);  // a probe reports what it finds
      p.reachable = true;
    } catch (const WorkerError& e) {
      p.error = e.what();
      p.timed_out = e.timedOut();
    }
  });
  return probes;
}

v1::ProfileSet Coordinator::profile(const ModelSpec& model, std::span<const int> micro_batches, int repeats,
                                    const ProfileProgress& on_profiled) {
  for (int d = 0; d < cluster_.size(); ++d) client(d);
  v1::ProfileRequest request;
  *request.mutable_model() = model.proto();
  for (int b : micro_batches) request.add_micro_batches(b);
  request.set_repeats(repeats);

  std::vector<v1::DeviceProfile> profiles(cluster_.size());
  const std::vector<std::vector<int>> machines = workersByMachine(describe());
  std::mutex progress_mutex;
  int done = 0;
  const auto profile_one = [&](int d) {
    WorkerClient& worker = client(d);
    v1::DeviceProfile p = worker.profile(request, options_.profile_timeout);
    const std::string who = worker.endpoint().label();
    for (int b : micro_batches) {
      const auto it = std::find_if(p.batches().begin(), p.batches().end(),
                                   [&](const v1::BatchProfile& bp) { return bp.micro_batch() == b; });
      if (it == p.batches().end()) {
        throw WorkerError(worker.endpoint().name, who + " returned no profile for micro-batch " + std::to_string(b));
      }
      if (it->layers_size() != model.layerCount()) {
        throw WorkerError(worker.endpoint().name, who + " timed " + std::to_string(it->layers_size()) +
                                                      " layers at micro-batch " + std::to_string(b) + "; " +
                                                      model.name() + " has " + std::to_string(model.layerCount()));
      }
    }
    // The cost model matches profiles to devices by the cluster's names.
    p.set_device(cluster_.device(d).name);
    p.set_model(model.name());
    profiles[d] = std::move(p);
    if (on_profiled) {
      std::lock_guard lock(progress_mutex);
      on_profiled(cluster_.device(d).name, ++done, cluster_.size());
    }
  };
  // Machines in parallel, the workers of one machine one after another: timed together,
  // co-hosted workers would each see a fraction of the CPU and look several times slower
  // than they train (a pipeline's stages mostly take turns).
  parallelFor(static_cast<int>(machines.size()), [&](int m) {
    for (int d : machines[m]) profile_one(d);
  });
  v1::ProfileSet set;
  for (auto& p : profiles) *set.add_devices() = std::move(p);
  return set;
}

std::vector<v1::DeployReply> Coordinator::deploy(const Plan& plan, const ModelSpec& model,
                                                 const TrainingOptions& options) {
  closeStreams();
  TrainingOptions named = options;
  if (named.job.empty()) named.job = makeJobName(model.name());
  return deployAssignments(plan, buildAssignments(plan, model, cluster_, named), named.job);
}

std::vector<v1::DeployReply> Coordinator::deploy(const Plan& plan, const ModelSpec& model,
                                                 const TrainingOptions& options, const ModelWeights& weights) {
  closeStreams();
  TrainingOptions named = options;
  if (named.job.empty()) named.job = makeJobName(model.name());
  named.start_step = weights.step;
  std::vector<v1::StageAssignment> assignments = buildAssignments(plan, model, cluster_, named);
  attachWeights(assignments, weights);
  return deployAssignments(plan, std::move(assignments), named.job);
}

std::vector<v1::DeployReply> Coordinator::deploy(const Plan& plan, const ModelSpec& model,
                                                 const TrainingOptions& options, const BackupChoice& choice,
                                                 const Cluster& holders) {
  closeStreams();
  TrainingOptions named = options;
  if (named.job.empty()) named.job = makeJobName(model.name());
  named.start_step = choice.step;
  std::vector<v1::StageAssignment> assignments = buildAssignments(plan, model, cluster_, named);
  attachRestore(assignments, choice, holders);
  return deployAssignments(plan, std::move(assignments), named.job);
}

ModelWeights Coordinator::collectWeights(bool optimizer_state) {
  if (member_device_.empty()) throw std::logic_error("nothing is deployed: no weights to collect");
  closeStreams();
  std::vector<int> rank0;  // one member per stage
  for (int m = 0; m < memberCount(); ++m) {
    if (assignments_[m].rank() == 0) rank0.push_back(m);
  }
  v1::GetWeightsRequest request;
  request.set_optimizer_state(optimizer_state);
  const int n = static_cast<int>(rank0.size());
  std::vector<v1::StageWeights> weights(n);
  std::vector<std::string> workers(n);
  parallelFor(n, [&](int i) {
    WorkerClient& worker = memberClient(rank0[i]);
    workers[i] = worker.endpoint().name;
    // Weights are large: the deploy deadline, not the one for small calls.
    weights[i] = worker.getWeights(request, options_.deploy_timeout);
  });
  return mergeStageWeights(weights, workers);
}

std::int64_t Coordinator::keepStates() {
  if (member_device_.empty()) throw std::logic_error("nothing is deployed: no state to keep");
  closeStreams();
  v1::StopRequest request;
  request.set_job(job_);
  request.set_keep_state(true);
  const int n = memberCount();
  std::vector<std::int64_t> steps(n);
  // A copy of a stage's state in memory: the deploy deadline, not the one for small calls.
  parallelFor(n, [&](int m) { steps[m] = memberClient(m).stop(request, options_.deploy_timeout).step(); });
  for (int m = 1; m < n; ++m) {
    if (steps[m] != steps[0]) {
      throw Error("the stages stopped at different steps (" + memberClient(0).endpoint().name + " at " +
                  std::to_string(steps[0]) + ", " + memberClient(m).endpoint().name + " at " + std::to_string(steps[m]) +
                  ")");
    }
  }
  return steps[0];
}

std::vector<v1::DeployReply> Coordinator::deployAssignments(const Plan& plan,
                                                            std::vector<v1::StageAssignment> assignments,
                                                            const std::string& job) {
  std::vector<int> devices;
  std::vector<bool> last_stage;
  for (int s = 0; s < plan.stageCount(); ++s) {
    for (const auto& m : plan.stages[s].members) {
      client(m.device);
      devices.push_back(m.device);
      last_stage.push_back(s + 1 == plan.stageCount());
    }
  }

  const int n = static_cast<int>(assignments.size());
  std::vector<v1::DeployReply> replies(n);
  std::vector<bool> deployed(n, false);
  try {
    parallelFor(n, [&](int i) {
      replies[i] = client(devices[i]).deploy(assignments[i], options_.deploy_timeout);
      deployed[i] = true;
    });
  } catch (...) {
    // Leave no member holding a stage of a job that cannot run.
    v1::StopRequest request;
    request.set_job(job);
    parallelFor(n, [&](int i) {
      if (!deployed[i]) return;
      try {
        client(devices[i]).stop(request, std::min(options_.call_timeout, milliseconds(5000)));
      } catch (const std::exception&) {
      }
    });
    throw;
  }

  job_ = job;
  batch_size_ = plan.batch_size;
  assignments_ = std::move(assignments);
  member_device_ = std::move(devices);
  member_last_stage_ = std::move(last_stage);
  return replies;
}

void Coordinator::openStreams() {
  closeStreams();
  const int n = static_cast<int>(member_device_.size());
  {
    std::lock_guard lock(mutex_);
    queue_.clear();
    subscribed_.assign(n, false);
  }
  streams_.resize(n);
  for (int m = 0; m < n; ++m) streams_[m].context = std::make_unique<grpc::ClientContext>();
  for (int m = 0; m < n; ++m) streams_[m].thread = std::thread([this, m] { readTelemetry(m); });
}

void Coordinator::readTelemetry(int member) {
  grpc::ClientContext& context = *streams_[member].context;
  authorizeCall(context, memberClient(member).endpoint());
  auto reader = memberClient(member).stub().Telemetry(&context, v1::TelemetryRequest{});
  // Returns once the worker has the stream (or the call has failed): what is sent after
  // Start from then on reaches this reader.
  reader->WaitForInitialMetadata();
  {
    std::lock_guard lock(mutex_);
    subscribed_[member] = true;
  }
  changed_.notify_all();
  v1::TelemetryEvent event;
  while (reader->Read(&event)) {
    StreamItem item;
    item.kind = StreamItem::Kind::Event;
    item.member = member;
    item.event = std::move(event);
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(item));
    }
    changed_.notify_all();
    event.Clear();
  }
  const grpc::Status status = reader->Finish();
  StreamItem item;
  item.kind = StreamItem::Kind::Closed;
  item.member = member;
  item.status_code = static_cast<int>(status.error_code());
  item.status_message = status.error_message();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(item));
  }
  changed_.notify_all();
}

void Coordinator::closeStreams() {
  for (auto& s : streams_) {
    if (s.context) s.context->TryCancel();
  }
  for (auto& s : streams_) {
    if (s.thread.joinable()) s.thread.join();
  }
  streams_.clear();
}

void Coordinator::start(std::int64_t iterations) {
  if (member_device_.empty()) throw std::logic_error("nothing is deployed: call deploy() before start()");
  if (iterations <= 0) throw std::logic_error("iterations must be positive");
  openStreams();
  {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, options_.subscribe_timeout,
                      [&] { return std::all_of(subscribed_.begin(), subscribed_.end(), [](bool s) { return s; }); });
    // A stream that failed already (an unreachable worker) ends the run before it starts.
    for (const auto& item : queue_) {
      if (item.kind == StreamItem::Kind::Closed && item.status_code != 0) {
        const WorkerEndpoint& who = memberClient(item.member).endpoint();
        lock.unlock();
        closeStreams();
        throw workerFailure(who, "Telemetry",
                            grpc::Status(static_cast<grpc::StatusCode>(item.status_code), item.status_message),
                            options_.call_timeout);
      }
    }
  }
  v1::StartRequest request;
  request.set_job(job_);
  request.set_iterations(iterations);
  request.set_keep_backup_step(keep_backup_step_);
  request.set_ship_backup_step(ship_backup_step_);
  request.set_backup_every(backup_schedule_.every);
  request.set_backup_after(backup_schedule_.after);
  started_at_ = Clock::now();
  try {
    parallelFor(static_cast<int>(member_device_.size()),
                [&](int m) { memberClient(m).start(request, options_.call_timeout); });
  } catch (const WorkerError& e) {
    abortRun(e);
  }
}

TrainingResult Coordinator::train(std::int64_t iterations, const TrainingCallbacks& callbacks,
                                  const std::atomic<bool>* cancel) {
  start(iterations);
  return wait(callbacks, cancel);
}

Coordinator::Evaluation Coordinator::evaluate(int micro_batches) {
  if (member_device_.empty()) throw std::logic_error("nothing is deployed: nothing to evaluate");
  v1::EvaluateRequest request;
  request.set_job(job_);
  request.set_micro_batches(micro_batches);
  const int n = memberCount();
  std::vector<v1::EvaluateReply> replies(n);
  std::vector<std::optional<WorkerError>> errors(n);
  std::once_flag released;  // the first failure stops the others, once: they wait on it otherwise
  parallelFor(n, [&](int m) {
    try {
      // As long as a member may be silent in training, plus the call itself.
      replies[m] = memberClient(m).evaluate(request, options_.silence_limit + options_.call_timeout);
    } catch (const WorkerError& e) {
      errors[m] = e;
      std::call_once(released, [&] { stopQuietly(e.worker()); });
    }
  });
  // The first failure that is not the others' being stopped for it.
  const WorkerError* first = nullptr;
  for (const auto& e : errors) {
    if (e && (!first || (first->grpcCode() == grpc::StatusCode::ABORTED && e->grpcCode() != grpc::StatusCode::ABORTED))) {
      first = &*e;
    }
  }
  if (first) throw *first;
  Evaluation out;
  out.step = replies.front().step();
  for (const auto& r : replies) {
    out.samples += r.samples();
    out.correct += r.correct();
    out.loss_sum += r.loss_sum();
  }
  return out;
}

void Coordinator::stop() {
  v1::StopRequest request;
  request.set_job(job_);
  const int n = static_cast<int>(member_device_.size());
  try {
    parallelFor(n, [&](int m) { memberClient(m).stop(request, options_.call_timeout); });
  } catch (...) {
    closeStreams();
    throw;
  }
  closeStreams();
}

void Coordinator::stopQuietly(const std::string& skip) {
  v1::StopRequest request;
  request.set_job(job_);
  const milliseconds deadline = std::min(options_.call_timeout, milliseconds(5000));
  parallelFor(static_cast<int>(member_device_.size()), [&](int m) {
    if (!skip.empty() && memberClient(m).endpoint().name == skip) return;
    try {
      memberClient(m).stop(request, deadline);
    } catch (const std::exception&) {
      // The run is over either way; the failure that ended it is what the user needs.
    }
  });
  closeStreams();
}

void Coordinator::abortRun(const WorkerError& error) {
  stopQuietly(error.timedOut() ? error.worker() : std::string());
  throw error;
}

}  // namespace stagecraft::control
