#include "worker_node.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>

#include "blas_probe.h"
#include "cpu_allowance.h"
#include "data_paths.h"
#include "io/stage_weights.h"
#include "stage_layout.h"
#include "stage_runtime.h"
#include "status_mapping.h"
#include "tensor_channel.h"
#include "worker_error.h"

#ifndef STAGECRAFT_VERSION
#define STAGECRAFT_VERSION "dev"
#endif

namespace stagecraft::worker {
namespace {

double machineMemoryMb() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

/// One machine's identity, shared by the workers it runs: the coordinator profiles those
/// one at a time, since together each would see a share of the CPU.
std::string machineId() {
  for (const char* path : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
    std::ifstream in(path);
    std::string id;
    if (in >> id && !id.empty()) return id;
  }
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && name[0] != 0) return std::string("host:") + name;
  return {};
}

}  // namespace

WorkerNode::WorkerNode(WorkerOptions options)
    : options_(std::move(options)),
      hub_(options_.name),
      link_(options_.bandwidth_mbps),
      backup_sender_(options_.name, options_.token, &link_, [this](const std::string& job, const std::string& why) {
        hub_.log(job, why);
        std::fprintf(stderr, "stagecraft-worker: %s\n", why.c_str());
      }),
      model_files_(options_.cache_dir) {
  configureTorchThreads(options_.threads);
  // The BLAS's own pool follows --threads too: OpenBLAS otherwise starts one thread per core,
  // which fight each other (and LibTorch's threads) under a CPU quota.
  const int threads = options_.threads > 0 ? options_.threads : static_cast<int>(std::thread::hardware_concurrency());
  setBlasThreads(threads);
  blas_ = detectBlas();
  host_id_ = machineId();
  // What the threads do while they run, times the share of the time a CPU quota lets
  // them run: the speed this worker sustains.
  gflops_ = measureMatmulGflops() * readCpuAllowance().shareOf(threads) / options_.slowdown;
  memory_limit_mb_ = options_.memory_mb > 0 ? options_.memory_mb : machineMemoryMb();
  address_ = options_.listen;
  if (options_.lease_s > 0) lease_thread_ = std::thread([this] { watchLease(); });
}

WorkerNode::~WorkerNode() { shutdown(); }

void WorkerNode::touch() {
  std::lock_guard lock(mutex_);
  last_contact_ = std::chrono::steady_clock::now();
}

void WorkerNode::watchLease() {
  const auto lease = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options_.lease_s));
  const auto poll = std::min<std::chrono::steady_clock::duration>(lease / 4, std::chrono::milliseconds(250));
  std::unique_lock wait(lease_mutex_);
  while (!lease_changed_.wait_for(wait, poll, [&] { return lease_closing_; })) {
    std::string job;
    {
      std::lock_guard lock(mutex_);
      if (state_ != State::Training || hub_.subscribers() > 0) {
        last_contact_ = std::max(last_contact_, std::chrono::steady_clock::now() - poll);
        continue;
      }
      if (std::chrono::steady_clock::now() - last_contact_ < lease) continue;
      job = job_;
    }
    wait.unlock();
    try {
      v1::StopRequest request;
      request.set_job(job);
      const v1::StopReply reply = stop(request);
      char line[512];
      std::snprintf(line, sizeof line,
                    "no coordinator for %g s: stopped job '%s' at step %lld (lease expired); ready for a new Deploy",
                    options_.lease_s, job.c_str(), static_cast<long long>(reply.step()));
      hub_.log(job, line);
      std::fprintf(stderr, "stagecraft-worker: %s\n", line);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "stagecraft-worker: lease on job '%s': %s\n", job.c_str(), e.what());
    }
    wait.lock();
  }
}

void WorkerNode::setAddress(const std::string& address) {
  std::lock_guard lock(mutex_);
  address_ = address;
}

const char* WorkerNode::stateName(State state) {
  switch (state) {
    case State::Idle: return "idle";
    case State::Deployed: return "deployed";
    case State::Training: return "training";
    case State::Invalid: break;
  }
  return "invalid";
}

v1::WorkerInfo WorkerNode::describe() const {
  v1::WorkerInfo info;
  info.set_name(options_.name);
  info.set_tier(options_.tier);
  info.set_cores(options_.threads > 0 ? options_.threads : static_cast<int>(std::thread::hardware_concurrency()));
  info.set_memory_mb(memory_limit_mb_);
  info.set_measured_gflops(gflops_);
  info.set_version(STAGECRAFT_VERSION);
  info.set_blas(blas_.summary());
  info.set_blas_kind(blas_.kindName());
  info.set_host_id(host_id_);
  info.set_insecure(options_.token.empty());
  auto* emulation = info.mutable_emulation();
  emulation->set_slowdown(options_.slowdown);
  emulation->set_bandwidth_mbps(options_.bandwidth_mbps);
  emulation->set_memory_mb(options_.memory_mb);
  std::lock_guard lock(mutex_);
  info.set_address(address_);
  info.set_state(stateName(state_));
  info.set_job(job_);
  return info;
}

v1::HeartbeatReply WorkerNode::heartbeat() const {
  v1::HeartbeatReply reply;
  std::lock_guard lock(mutex_);
  reply.set_state(stateName(state_));
  reply.set_job(job_);
  if (runtime_) reply.set_step(runtime_->step());
  return reply;
}

v1::DeviceProfile WorkerNode::profile(const v1::ProfileRequest& request) {
  // Bounded, so a caller cannot tie the worker up for days: a profile times each size a
  // few times.
  if (request.repeats() < 0 || request.repeats() > kMaxProfileRepeats) {
    throw WorkerError(ErrorCode::InvalidArgument, "repeats " + std::to_string(request.repeats()) +
                                                      " is out of range (0 to " +
                                                      std::to_string(kMaxProfileRepeats) + ")");
  }
  if (request.micro_batches_size() > kMaxProfileSizes) {
    throw WorkerError(ErrorCode::InvalidArgument, std::to_string(request.micro_batches_size()) +
                                                      " micro-batch sizes: at most " +
                                                      std::to_string(kMaxProfileSizes) + " per profile");
  }
  for (const int size : request.micro_batches()) {
    if (size <= 0 || size > kMaxProfileMicroBatch) {
      throw WorkerError(ErrorCode::InvalidArgument, "micro-batch size " + std::to_string(size) +
                                                        " is out of range (1 to " +
                                                        std::to_string(kMaxProfileMicroBatch) + ")");
    }
  }
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::Training) {
      throw WorkerError(ErrorCode::FailedPrecondition, "training job '" + job_ + "': profiling would disturb it");
    }
  }
  v1::DeviceProfile profile;
  if (request.model().has_script()) {
    v1::ProfileRequest local = request;
    useCachedScript(*local.mutable_model());
    profile = profileModel(local, options_.slowdown);
  } else {
    profile = profileModel(request, options_.slowdown);
  }
  profile.set_device(options_.name);
  return profile;
}

v1::ModelFileStatus WorkerNode::hasModelFile(const v1::ModelFileRef& ref) const {
  v1::ModelFileStatus status;
  status.set_held(!model_files_.find(ref.sha256(), ref.size()).empty());
  return status;
}

void WorkerNode::useCachedScript(v1::Model& model) const {
  const auto& script = model.script();
  const std::string path = model_files_.find(script.sha256(), script.size());
  if (path.empty()) {
    throw WorkerError(ErrorCode::FailedPrecondition,
                      "model file " + script.file_name() + " (SHA-256 " + script.sha256().substr(0, 12) +
                          "...) is not held here: send it with PutModelFile first");
  }
  model.mutable_script()->set_path(path);
}

std::shared_ptr<StageRuntime> WorkerNode::deployed() const {
  std::lock_guard lock(mutex_);
  if (!runtime_) throw WorkerError(ErrorCode::FailedPrecondition, "not deployed: call Deploy first");
  return runtime_;
}

void WorkerNode::joinTrainer() {
  std::thread finished;
  {
    std::lock_guard lock(mutex_);
    finished = std::move(trainer_);
  }
  if (finished.joinable()) finished.join();
}

v1::DeployReply WorkerNode::deploy(const v1::StageAssignment& given) {
  std::lock_guard control(control_mutex_);
  // Where a deployment's time goes, for its log line: a recovery waits for all of it.
  using Clock = std::chrono::steady_clock;
  auto phase = Clock::now();
  const auto lap = [&phase] {
    const auto now = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - phase).count();
    phase = now;
    return std::to_string(static_cast<long long>(ms + 0.5)) + " ms";
  };
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::Training) {
      throw WorkerError(ErrorCode::FailedPrecondition, "training job '" + job_ + "': Stop it before a new Deploy");
    }
  }
  // Data files only from the data folder, checked before the deployed job is replaced. (A
  // copy only then: an assignment may carry a whole stage's weights.)
  std::optional<v1::StageAssignment> confined;
  if (!given.data().path().empty() || !given.data().labels_path().empty()) {
    confined = given;
    confineDataPaths(*confined->mutable_data(), options_.data_dir);
  }
  // A TorchScript model is read from this worker's copy, never from a path the caller names.
  if (given.model().has_script()) {
    if (!confined) confined = given;
    useCachedScript(*confined->mutable_model());
  }
  StageLayout layout = layoutStage(confined ? *confined : given);
  checkMemory(layout, memory_limit_mb_, options_.memory_mb > 0 ? "--memory-mb" : "this machine's memory");
  // The last job's copies still queued or on the wire are of no use now, and its fetches
  // below (and the other members', from this worker) need the link.
  backup_sender_.keepOnly(given.job());
  // A recovery's deployment starts from backups of the last one: this worker's own, or
  // fetched from the workers that hold them (which keep them until the next Start).
  if (given.restore_size() > 0) {
    if (!confined) confined = given;
    *confined->mutable_weights() = restoreState(
        given, backups_, options_.token,
        std::chrono::milliseconds(static_cast<std::int64_t>(options_.peer_timeout_s * 1000)));
  }
  const v1::StageAssignment& assignment = confined ? *confined : given;
  const std::string state_time = lap();
  joinTrainer();
  const std::string stop_time = lap();
  {
    // The old stage (and its group's store) goes first: the new one may reuse its ports.
    std::lock_guard lock(mutex_);
    runtime_.reset();
    state_ = State::Idle;
    job_.clear();
    // A rank 0 keeps its group's store from now: the other members may ask already.
    group_store_.reset();
    group_store_stage_ = -1;
    if (layout.group_size > 1 && layout.rank == 0) {
      group_store_ = makeGroupStoreHost(
          std::chrono::milliseconds(static_cast<std::int64_t>(options_.peer_timeout_s * 1000)));
      group_store_stage_ = layout.stage;
      group_store_job_ = assignment.job();
    }
  }
  inbox_.open(assignment.job(), inboxRules(layout, assignment.model()));
  // Whatever states were kept for the last deployment, the coordinator fetched them before
  // deploying this one, or names them to restore from: those stay until the new job's first
  // Start, for the other members that may still be fetching them.
  backups_.keepOnly(given.restore_size() > 0 ? given.restore(0).ref().job() : "");
  RuntimeEnv env;
  // The name peers know this member by (the plan's), which their inboxes check.
  env.worker = assignment.group(layout.rank).name();
  env.own_host = hostOf(assignment.group(layout.rank).address());
  if (env.own_host.empty() || env.own_host == "0.0.0.0") env.own_host = "127.0.0.1";
  env.slowdown = options_.slowdown;
  env.allreduce_overlap = options_.allreduce_overlap;
  env.tensor_channel = options_.tensor_channel;
  env.link = &link_;
  env.token = options_.token;
  env.peer_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(options_.peer_timeout_s * 1000));
  env.inbox = &inbox_;
  env.telemetry = &hub_;
  env.backups = &backups_;
  env.backup_sender = &backup_sender_;
  {
    std::lock_guard lock(mutex_);
    env.group_store = group_store_;
  }
  v1::DeployReply reply;
  reply.set_memory_mb(layout.memory_bytes / (1024.0 * 1024.0));
  reply.set_parameters(static_cast<std::int64_t>(layout.parameters));
  const std::string summary = "deployed job '" + assignment.job() + "': stage " + std::to_string(layout.stage) +
                              " of " + std::to_string(layout.stages) + ", layers [" +
                              std::to_string(layout.layer_begin) + ", " + std::to_string(layout.layer_end) +
                              "), rank " + std::to_string(layout.rank) + " of " + std::to_string(layout.group_size) +
                              ", " + std::to_string(layout.samples) + " samples per micro-batch";
  auto runtime = std::make_shared<StageRuntime>(assignment, std::move(layout), env);
  const std::string build_time = lap();
  {
    std::lock_guard lock(mutex_);
    runtime_ = std::move(runtime);
    state_ = State::Deployed;
    job_ = assignment.job();
  }
  const std::string line =
      summary + " (state " + state_time + ", the last job's end " + stop_time + ", building " + build_time + ")";
  hub_.log(assignment.job(), line);
  std::fprintf(stderr, "stagecraft-worker: %s\n", line.c_str());
  return reply;
}

void WorkerNode::start(const v1::StartRequest& request) {
  std::lock_guard control(control_mutex_);
  auto runtime = deployed();
  if (request.iterations() < 0) {
    throw WorkerError(ErrorCode::InvalidArgument, "iterations is negative");
  }
  {
    std::lock_guard lock(mutex_);
    if (!request.job().empty() && request.job() != job_) {
      throw WorkerError(ErrorCode::FailedPrecondition,
                        "job '" + request.job() + "' is not deployed here (job '" + job_ + "' is)");
    }
    if (state_ == State::Training) {
      throw WorkerError(ErrorCode::FailedPrecondition, "already training job '" + job_ + "'");
    }
  }
  joinTrainer();  // the last run's thread, already done
  // The steps the coordinator pins; the one to ship goes out now if it is already kept
  // here (otherwise its copy, still being made, ships it when done).
  const std::string& job = runtime->layout().job;
  runtime->setBackupSchedule(request.backup_every(), request.backup_after());  // before the trainer reads it
  backups_.keepOnly(job);  // the last deployment's, kept for a restore until now
  backups_.pin(job, request.keep_backup_step(), request.ship_backup_step());
  if (const std::string to = runtime->backupAddress(); !to.empty() && request.ship_backup_step() > 0) {
    if (StateCopy state = backups_.own(job, request.ship_backup_step())) backup_sender_.offer(std::move(state), to, true);
  }
  std::lock_guard lock(mutex_);
  runtime->arm();
  state_ = State::Training;
  trainer_ = std::thread([this, runtime, iterations = request.iterations()] { train(runtime, iterations); });
}

void WorkerNode::train(std::shared_ptr<StageRuntime> runtime, std::int64_t iterations) {
  const std::string job = runtime->layout().job;
  // No log line per Start: a coordinator that trains in short segments starts every
  // half second, and its users read the steps, not the segments.
  v1::TelemetryEvent outcome;
  outcome.set_job(job);
  try {
    runtime->run(iterations);
    outcome.set_finished(true);
  } catch (const WorkerError& e) {
    // Aborted by our own Stop is a stop; aborted by a peer's is an error to report.
    if (e.code() == ErrorCode::Aborted && runtime->stopRequested()) {
      outcome.set_log("stopped at step " + std::to_string(runtime->step()));
    } else {
      outcome.set_error(describeError(std::current_exception()));
    }
  } catch (...) {
    outcome.set_error(describeError(std::current_exception()));
  }
  // After a failure or a stop the inbox may hold slices of the unfinished step and is
  // aborted: start afresh so a later Start can run.
  if (!outcome.finished()) inbox_.reopen();
  {
    // Ready for the next Start before anyone hears that this run ended.
    std::lock_guard lock(mutex_);
    if (runtime_ == runtime) state_ = State::Deployed;
  }
  hub_.publish(std::move(outcome));
}

v1::EvaluateReply WorkerNode::evaluate(const v1::EvaluateRequest& request) {
  if (request.micro_batches() <= 0 || request.micro_batches() > kMaxEvalMicroBatches) {
    throw WorkerError(ErrorCode::InvalidArgument, "micro_batches " + std::to_string(request.micro_batches()) +
                                                      " is out of range (1 to " +
                                                      std::to_string(kMaxEvalMicroBatches) + ")");
  }
  std::shared_ptr<StageRuntime> runtime;
  {
    std::lock_guard control(control_mutex_);
    runtime = deployed();
    std::lock_guard lock(mutex_);
    if (!request.job().empty() && request.job() != job_) {
      throw WorkerError(ErrorCode::FailedPrecondition,
                        "job '" + request.job() + "' is not deployed here (job '" + job_ + "' is)");
    }
    if (state_ == State::Training) {
      throw WorkerError(ErrorCode::FailedPrecondition, "training job '" + job_ + "': evaluate between steps");
    }
    // Busy as in training while the pass runs: Start, Deploy and Profile wait for it, Stop ends it.
    state_ = State::Training;
    runtime->arm();
  }
  struct Done {
    WorkerNode& node;
    std::shared_ptr<StageRuntime> runtime;
    ~Done() {
      std::lock_guard lock(node.mutex_);
      if (node.runtime_ == runtime && node.state_ == State::Training) node.state_ = State::Deployed;
    }
  } done{*this, runtime};
  touch();
  try {
    return runtime->evaluate(request.micro_batches());
  } catch (...) {
    inbox_.reopen();  // a stop or a peer's failure aborted the inbox; the job trains on
    throw;
  }
}

v1::StopReply WorkerNode::stop(const v1::StopRequest& request) {
  std::lock_guard control(control_mutex_);
  std::shared_ptr<StageRuntime> runtime;
  {
    std::lock_guard lock(mutex_);
    if (!request.job().empty() && !job_.empty() && request.job() != job_) {
      throw WorkerError(ErrorCode::FailedPrecondition,
                        "job '" + request.job() + "' is not deployed here (job '" + job_ + "' is)");
    }
    runtime = runtime_;
    if (runtime && state_ == State::Training) runtime->requestStop();
  }
  joinTrainer();
  v1::StopReply reply;
  if (!runtime) return reply;
  reply.set_step(runtime->step());
  // The state at this boundary, for a new deployment to restore from here (every member
  // keeps it, so a stage that stays on any member of its group moves nothing).
  const std::string& job = runtime->layout().job;
  if (request.keep_state() && !backups_.own(job, runtime->step())) {
    backups_.keep(std::make_shared<const v1::StageWeights>(runtime->weights(true)));
  }
  return reply;
}

v1::StageWeights WorkerNode::weights(bool optimizer_state) { return deployed()->weights(optimizer_state); }

void WorkerNode::setWeights(const v1::StageWeights& weights) {
  if (weights.step() < 0) {
    throw WorkerError(ErrorCode::InvalidArgument, "step " + std::to_string(weights.step()) + " is negative");
  }
  std::lock_guard control(control_mutex_);
  auto runtime = deployed();
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::Training) {
      throw WorkerError(ErrorCode::FailedPrecondition, "training job '" + job_ + "': Stop it before SetWeights");
    }
  }
  runtime->setWeights(weights);
}

void WorkerNode::receive(v1::PeerTensor tensor, std::optional<bool> finite) {
  inbox_.put(std::move(tensor), finite);
}

void WorkerNode::holdBackup(v1::StageWeights state, const std::string& sender) {
  {
    std::lock_guard lock(mutex_);
    if (state.job() != job_) {
      throw WorkerError(ErrorCode::FailedPrecondition,
                        "a backup for job '" + state.job() + "' (job '" + job_ + "' is deployed here)");
    }
  }
  backups_.hold(std::make_shared<const v1::StageWeights>(std::move(state)), sender);
}

v1::StageWeights WorkerNode::backup(const v1::BackupRef& ref) {
  StateCopy state = backups_.find(ref);
  if (!state) {
    throw WorkerError(ErrorCode::NotFound, "no backup of job '" + ref.job() + "' layers [" +
                                               std::to_string(ref.layer_begin()) + ", " +
                                               std::to_string(ref.layer_end()) + ") at step " +
                                               std::to_string(ref.step()) + " is held here");
  }
  v1::StageWeights out;
  if (ref.slice_begin() != 0 || ref.slice_end() != 0) {
    if (ref.slice_begin() < state->layer_begin() || ref.slice_end() > state->layer_end() ||
        ref.slice_begin() >= ref.slice_end()) {
      throw WorkerError(ErrorCode::InvalidArgument,
                        "layers [" + std::to_string(ref.slice_begin()) + ", " + std::to_string(ref.slice_end()) +
                            ") are not a part of the backup of layers [" + std::to_string(state->layer_begin()) +
                            ", " + std::to_string(state->layer_end()) + ")");
    }
    const v1::StageWeights* whole = state.get();
    out = control::joinLayers(std::span(&whole, 1), ref.slice_begin(), ref.slice_end());
  } else {
    out = *state;
  }
  link_.send(out.ByteSizeLong());  // outgoing like any other traffic: the emulated NIC's pace
  return out;
}

v1::GroupStoreReply WorkerNode::groupStore(const v1::GroupStoreRequest& request) {
  std::shared_ptr<GroupStoreHost> store;
  {
    std::lock_guard lock(mutex_);
    if (group_store_ && request.job() == group_store_job_ && request.stage() == group_store_stage_) {
      store = group_store_;
    }
  }
  if (!store) {
    throw WorkerError(ErrorCode::FailedPrecondition, "no stage group of job '" + request.job() + "' stage " +
                                                         std::to_string(request.stage()) + " meets here");
  }
  return store->call(request);
}

void WorkerNode::shutdown() {
  {
    std::lock_guard lock(lease_mutex_);
    lease_closing_ = true;
  }
  lease_changed_.notify_all();
  if (lease_thread_.joinable() && lease_thread_.get_id() != std::this_thread::get_id()) lease_thread_.join();
  {
    std::lock_guard lock(mutex_);
    if (runtime_ && state_ == State::Training) runtime_->requestStop();
  }
  joinTrainer();
  hub_.close();
}

}  // namespace stagecraft::worker
