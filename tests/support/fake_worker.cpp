#include "fake_worker.h"

#include <algorithm>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_context.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "control/cluster_token.h"
#include "model/model_spec.h"

namespace stagecraft::testing {

v1::TelemetryEvent defaultIteration(std::int64_t step, const v1::StageAssignment& assignment, double iteration_ms) {
  v1::TelemetryEvent event;
  event.set_worker(assignment.group_size() > assignment.rank() ? assignment.group(assignment.rank()).name() : "");
  event.set_job(assignment.job());
  auto* it = event.mutable_iteration();
  it->set_step(step);
  if (assignment.stage() + 1 == assignment.stages()) {
    const int samples = assignment.group(assignment.rank()).samples() * assignment.microbatches();
    it->set_loss(2.0 / (1.0 + 0.1 * static_cast<double>(step)));
    it->set_loss_samples(samples);
  }
  it->set_iteration_ms(iteration_ms);
  it->set_busy_fraction(0.5);
  // One compute block, so timelines have something measured to show.
  auto* forward = it->add_timeline();
  forward->set_micro_batch(0);
  forward->set_kind("forward");
  forward->set_start_ms(0);
  forward->set_end_ms(0.5 * iteration_ms);
  return event;
}

FakeWorker::FakeWorker(FakeWorkerScript script) : script_(std::move(script)) {}

FakeWorker::~FakeWorker() {
  stopping_ = true;
  if (trainer_.joinable()) trainer_.join();
}

grpc::Status FakeWorker::authorize(const grpc::ServerContext* context) const {
  // Tests call the service in process, without a server: no call, no metadata.
  if (!context) return script_.token.empty() ? grpc::Status::OK : grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no call");
  const auto& metadata = context->client_metadata();
  const auto found = metadata.find(control::kTokenMetadataKey);
  std::optional<std::string_view> given;
  if (found != metadata.end()) given = std::string_view(found->second.data(), found->second.size());
  if (const char* why = control::tokenRefusal(given, script_.token)) return {grpc::StatusCode::UNAUTHENTICATED, why};
  return grpc::Status::OK;
}

grpc::Status FakeWorker::Describe(grpc::ServerContext* context, const v1::DescribeRequest*, v1::WorkerInfo* info) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  if (script_.describe_delay.count() > 0) std::this_thread::sleep_for(script_.describe_delay);
  info->set_name(script_.name);
  info->set_tier(script_.tier);
  info->set_address(address_);
  info->set_cores(1);
  info->set_memory_mb(script_.memory_mb);
  info->set_measured_gflops(100.0 / script_.slowdown);
  info->set_version("fake");
  info->set_host_id(script_.host_id);
  info->mutable_emulation()->set_slowdown(script_.slowdown);
  info->mutable_emulation()->set_bandwidth_mbps(script_.bandwidth_mbps);
  info->mutable_emulation()->set_memory_mb(script_.memory_mb);
  std::lock_guard lock(mutex_);
  info->set_state(training_ && !stopping_ ? "training" : assignment_ ? "deployed" : "idle");
  info->set_job(assignment_ ? assignment_->job() : "");
  return grpc::Status::OK;
}

grpc::Status FakeWorker::Profile(grpc::ServerContext* context, const v1::ProfileRequest* request,
                                 v1::DeviceProfile* reply) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  std::optional<ModelSpec> parsed;
  try {
    parsed = ModelSpec::fromProto(request->model());
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, e.what());
  }
  const ModelSpec& model = *parsed;
  if (script_.on_profile) script_.on_profile();
  reply->set_device(script_.name);
  reply->set_model(model.name());
  // As if the machine did 100 GFLOP/s, slowed down as asked.
  for (int b : request->micro_batches()) {
    auto* batch = reply->add_batches();
    batch->set_micro_batch(b);
    for (int l = 0; l < model.layerCount(); ++l) {
      auto* t = batch->add_layers();
      t->set_layer(l);
      t->set_forward_ms(model.forwardFlops(l, l + 1) * b / 1e8 * script_.slowdown);
      t->set_backward_ms(model.backwardFlops(l, l + 1) * b / 1e8 * script_.slowdown);
      t->set_peak_memory_mb(model.savedBytes(l, l + 1) * b / (1024.0 * 1024.0));
    }
  }
  std::lock_guard lock(mutex_);
  ++profiles_;
  return grpc::Status::OK;
}

grpc::Status FakeWorker::Deploy(grpc::ServerContext* context, const v1::StageAssignment* assignment,
                                v1::DeployReply* reply) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  if (assignment->rank() < 0 || assignment->rank() >= assignment->group_size()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "rank out of range");
  }
  std::lock_guard lock(mutex_);
  if (assignment->has_weights() && assignment->weights().step() != assignment->start_step()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "weights of another step");
  }
  // A restore takes the pieces named as its own from what this worker holds (the others
  // it would fetch from their holders).
  if (script_.refuse_restore && assignment->restore_size() > 0) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "the state to restore is no longer held");
  }
  for (const auto& source : assignment->restore()) {
    if (source.ref().step() != assignment->start_step()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a restore source of another step");
    }
    if (source.address().empty() && !holds(source.ref())) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "the state to restore is not held here");
    }
  }
  assignment_ = *assignment;
  step_ = assignment->start_step();
  backup_ = {assignment->backup_every(), assignment->start_step()};
  own_backups_.clear();
  held_backups_.clear();
  backup_stub_.reset();
  reply->set_memory_mb(1);
  reply->set_parameters(1000);
  return grpc::Status::OK;
}

grpc::Status FakeWorker::Start(grpc::ServerContext* context, const v1::StartRequest* request, v1::StartReply*) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  std::unique_lock lock(mutex_);
  if (!assignment_) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not deployed");
  if (request->job() != assignment_->job()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "job '" + request->job() + "' is not deployed");
  }
  if (trainer_.joinable()) {
    stopping_ = true;
    std::thread previous = std::move(trainer_);
    lock.unlock();
    previous.join();
    lock.lock();
  }
  stopping_ = false;
  training_ = true;
  ++starts_;
  kept_backup_steps_.push_back(request->keep_backup_step());
  if (request->backup_every() > 0 && backup_.every > 0) {
    backup_ = {request->backup_every(), request->backup_after()};  // as a worker does from this Start on
  }
  // Each Start goes on from the step the last one reached, as a worker does.
  const std::int64_t first = step_ + 1;
  trainer_ = std::thread([this, first, last = step_ + request->iterations()] { train(first, last); });
  return grpc::Status::OK;
}

void FakeWorker::train(std::int64_t first, std::int64_t last) {
  v1::StageAssignment assignment;
  {
    std::lock_guard lock(mutex_);
    assignment = *assignment_;
  }
  for (std::int64_t step = first; step <= last && !stopping_; ++step) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(script_.iteration_ms));
    if (stopping_) return;
    if (step == script_.silent_from_step) return;
    if (step == script_.die_at_step) {
      // What it reported before is on the wire, as with a worker killed between steps.
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, std::chrono::seconds(2), [&] {
        return writing_ == 0 && std::ranges::all_of(subscribers_, [](const auto* q) { return q->empty(); });
      });
      std::_Exit(137);
    }
    if (step == script_.close_at_step) {
      std::lock_guard lock(mutex_);
      close_streams_ = true;
      changed_.notify_all();
      return;
    }
    if (step == script_.error_at_step) {
      v1::TelemetryEvent error;
      error.set_worker(script_.name);
      error.set_job(assignment.job());
      error.set_error("INTERNAL: stage " + std::to_string(assignment.stage()) + " diverged: loss is NaN at step " +
                      std::to_string(step));
      training_ = false;
      publish(error);
      return;
    }
    const auto events = script_.events
                            ? script_.events(step, assignment)
                            : std::vector<v1::TelemetryEvent>{defaultIteration(step, assignment, script_.iteration_ms)};
    for (const auto& e : events) publish(e);
    step_ = step;
    backUp(step, assignment);
  }
  training_ = false;
  v1::TelemetryEvent done;
  done.set_worker(script_.name);
  done.set_job(assignment.job());
  done.set_finished(true);
  publish(done);
}

void FakeWorker::publish(const v1::TelemetryEvent& event) {
  std::lock_guard lock(mutex_);
  for (auto* queue : subscribers_) queue->push_back(event);
  changed_.notify_all();
}

grpc::Status FakeWorker::Stop(grpc::ServerContext* context, const v1::StopRequest* request, v1::StopReply* reply) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  stopping_ = true;
  std::thread trainer;
  {
    std::lock_guard lock(mutex_);
    ++stops_;
    trainer = std::move(trainer_);
  }
  if (trainer.joinable()) trainer.join();
  reply->set_step(step_);
  std::lock_guard lock(mutex_);
  if (request->keep_state() && assignment_ &&
      std::find(own_backups_.begin(), own_backups_.end(), step_.load()) == own_backups_.end()) {
    own_backups_.push_back(step_);
    ++states_kept_;
    while (own_backups_.size() > 8) own_backups_.pop_front();
  }
  return grpc::Status::OK;
}

int FakeWorker::statesKept() const {
  std::lock_guard lock(mutex_);
  return states_kept_;
}

grpc::Status FakeWorker::Telemetry(grpc::ServerContext* context, const v1::TelemetryRequest*,
                                   grpc::ServerWriter<v1::TelemetryEvent>* writer) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  std::deque<v1::TelemetryEvent> queue;
  {
    std::lock_guard lock(mutex_);
    subscribers_.push_back(&queue);
  }
  writer->SendInitialMetadata();
  std::unique_lock lock(mutex_);
  while (!context->IsCancelled() && !shutdown_ && !close_streams_) {
    changed_.wait_for(lock, std::chrono::milliseconds(20),
                      [&] { return !queue.empty() || shutdown_ || close_streams_; });
    while (!queue.empty()) {
      v1::TelemetryEvent event = std::move(queue.front());
      queue.pop_front();
      ++writing_;
      lock.unlock();
      const bool ok = writer->Write(event);
      lock.lock();
      --writing_;
      changed_.notify_all();
      if (!ok) break;
    }
  }
  std::erase(subscribers_, &queue);
  return grpc::Status::OK;
}

grpc::Status FakeWorker::Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest*,
                                   v1::HeartbeatReply* reply) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  std::lock_guard lock(mutex_);
  reply->set_state(training_ && !stopping_ ? "training" : assignment_ ? "deployed" : "idle");
  reply->set_step(step_);
  reply->set_job(assignment_ ? assignment_->job() : "");
  return grpc::Status::OK;
}

grpc::Status FakeWorker::GetWeights(grpc::ServerContext* context, const v1::GetWeightsRequest* request,
                                    v1::StageWeights* reply) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  std::lock_guard lock(mutex_);
  if (!assignment_) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not deployed");
  if (training_ && !stopping_) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "training");
  ++weight_requests_;
  *reply = weightsAt(step_, request->optimizer_state());
  return grpc::Status::OK;
}

grpc::Status FakeWorker::Evaluate(grpc::ServerContext* context, const v1::EvaluateRequest* request,
                                  v1::EvaluateReply* reply) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  std::lock_guard lock(mutex_);
  if (!assignment_) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not deployed");
  if (training_ && !stopping_) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "training");
  ++evaluations_;
  const std::int64_t step = step_;
  reply->set_step(step);
  if (assignment_->stage() + 1 == assignment_->stages()) {
    const std::int64_t samples =
        static_cast<std::int64_t>(assignment_->group(assignment_->rank()).samples()) * request->micro_batches();
    reply->set_samples(samples);
    reply->set_correct(std::min(samples, step));
    reply->set_loss_sum(static_cast<double>(samples) / (1.0 + static_cast<double>(step)));
  }
  return grpc::Status::OK;
}

v1::StageWeights FakeWorker::weightsAt(std::int64_t step, bool optimizer_state) const {
  v1::StageWeights out;
  out.set_job(assignment_->job());
  out.set_layer_begin(assignment_->layer_begin());
  out.set_layer_end(assignment_->layer_end());
  out.set_step(step);
  const auto add = [&](const std::string& name, float value) {
    v1::Tensor* t = out.add_tensors();
    t->set_name(name);
    t->add_shape(1);
    t->set_dtype("float32");
    t->set_data(std::string(reinterpret_cast<const char*>(&value), sizeof value));
  };
  for (int l = assignment_->layer_begin(); l < assignment_->layer_end(); ++l) {
    const float value = static_cast<float>(1000 * step + l);
    add(std::to_string(l) + ".weight", value);
    if (optimizer_state) add(std::to_string(l) + ".weight#momentum_buffer", value);
  }
  return out;
}

void FakeWorker::backUp(std::int64_t step, const v1::StageAssignment& assignment) {
  if (assignment.rank() != 0 || !backup_.due(step)) return;  // backup_ changes only between trainings
  v1::StageWeights state;
  {
    std::lock_guard lock(mutex_);
    own_backups_.push_back(step);
    // A real stage cannot run more than a step ahead of its neighbours; fakes are not held
    // back by each other (nor by a coordinator that lags behind their telemetry), so they
    // keep more states than a worker (8 own and 8 held, not 3 and 2): the step the run
    // replays from is still somewhere however far a fake ran ahead.
    while (own_backups_.size() > 8) own_backups_.pop_front();
    if (assignment.backup_to().address().empty()) return;
    state = weightsAt(step, true);
    if (!backup_stub_) {
      backup_stub_ = v1::Worker::NewStub(
          grpc::CreateChannel(assignment.backup_to().address(), grpc::InsecureChannelCredentials()));
    }
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (!script_.token.empty()) context.AddMetadata(control::kTokenMetadataKey, script_.token);
  v1::StoreBackupReply reply;
  backup_stub_->StoreBackup(&context, state, &reply);  // a neighbour that is gone keeps nothing
}

grpc::Status FakeWorker::StoreBackup(grpc::ServerContext* context, const v1::StageWeights* state,
                                     v1::StoreBackupReply*) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  std::lock_guard lock(mutex_);
  if (!assignment_ || state->job() != assignment_->job()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "a backup for another job");
  }
  held_backups_.push_back(*state);
  while (held_backups_.size() > 8) held_backups_.pop_front();  // 2 on a worker; see backUp
  ++backups_held_;
  return grpc::Status::OK;
}

grpc::Status FakeWorker::ListBackups(grpc::ServerContext* context, const v1::ListBackupsRequest* request,
                                     v1::BackupList* reply) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  std::lock_guard lock(mutex_);
  if (!assignment_ || (!request->job().empty() && request->job() != assignment_->job())) return grpc::Status::OK;
  for (std::int64_t step : own_backups_) {
    v1::BackupRef* ref = reply->add_backups();
    ref->set_job(assignment_->job());
    ref->set_layer_begin(assignment_->layer_begin());
    ref->set_layer_end(assignment_->layer_end());
    ref->set_step(step);
  }
  for (const auto& held : held_backups_) {
    v1::BackupRef* ref = reply->add_backups();
    ref->set_job(held.job());
    ref->set_layer_begin(held.layer_begin());
    ref->set_layer_end(held.layer_end());
    ref->set_step(held.step());
    ref->set_held_for("neighbour");
  }
  return grpc::Status::OK;
}

grpc::Status FakeWorker::GetBackup(grpc::ServerContext* context, const v1::BackupRef* ref, v1::StageWeights* reply) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  std::lock_guard lock(mutex_);
  if (holdsOwn(*ref)) {
    *reply = weightsAt(ref->step(), true);
    return grpc::Status::OK;
  }
  if (const v1::StageWeights* held = heldCopy(*ref)) {
    *reply = *held;
    return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such backup");
}

bool FakeWorker::holdsOwn(const v1::BackupRef& ref) const {
  return assignment_ && ref.job() == assignment_->job() && ref.layer_begin() == assignment_->layer_begin() &&
         ref.layer_end() == assignment_->layer_end() &&
         std::find(own_backups_.begin(), own_backups_.end(), ref.step()) != own_backups_.end();
}

const v1::StageWeights* FakeWorker::heldCopy(const v1::BackupRef& ref) const {
  for (const auto& held : held_backups_) {
    if (held.job() == ref.job() && held.layer_begin() == ref.layer_begin() && held.layer_end() == ref.layer_end() &&
        held.step() == ref.step()) {
      return &held;
    }
  }
  return nullptr;
}

bool FakeWorker::holds(const v1::BackupRef& ref) const { return holdsOwn(ref) || heldCopy(ref) != nullptr; }

int FakeWorker::backupsHeld() const {
  std::lock_guard lock(mutex_);
  return backups_held_;
}

grpc::Status FakeWorker::SetWeights(grpc::ServerContext* context, const v1::StageWeights* weights,
                                    v1::SetWeightsReply*) {
  if (grpc::Status denied = authorize(context); !denied.ok()) return denied;
  std::lock_guard lock(mutex_);
  if (!assignment_) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not deployed");
  if (training_ && !stopping_) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "training");
  if (weights->step() < 0) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "negative step");
  step_ = weights->step();
  return grpc::Status::OK;
}

int FakeWorker::weightRequests() const {
  std::lock_guard lock(mutex_);
  return weight_requests_;
}

void FakeWorker::shutdown() {
  stopping_ = true;
  std::lock_guard lock(mutex_);
  shutdown_ = true;
  changed_.notify_all();
}

std::optional<v1::StageAssignment> FakeWorker::assignment() const {
  std::lock_guard lock(mutex_);
  return assignment_;
}

int FakeWorker::starts() const {
  std::lock_guard lock(mutex_);
  return starts_;
}

control::BackupSchedule FakeWorker::backupSchedule() const {
  std::lock_guard lock(mutex_);
  return backup_;
}

std::vector<std::int64_t> FakeWorker::keptBackupSteps() const {
  std::lock_guard lock(mutex_);
  return kept_backup_steps_;
}

int FakeWorker::stops() const {
  std::lock_guard lock(mutex_);
  return stops_;
}

int FakeWorker::profiles() const {
  std::lock_guard lock(mutex_);
  return profiles_;
}

FakeWorkerServer::FakeWorkerServer(FakeWorkerScript script, int port)
    : worker_(std::make_unique<FakeWorker>(std::move(script))) {
  grpc::ServerBuilder builder;
  int selected = 0;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // no other process may share the port
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials(), &selected);
  builder.SetMaxReceiveMessageSize(512 * 1024 * 1024);
  builder.SetMaxSendMessageSize(512 * 1024 * 1024);
  builder.RegisterService(worker_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || selected == 0)
    throw std::runtime_error("fake worker cannot listen on 127.0.0.1:" + std::to_string(port));
  address_ = "127.0.0.1:" + std::to_string(selected);
  worker_->setAddress(address_);
}

FakeWorkerServer::~FakeWorkerServer() { shutdown(); }

void FakeWorkerServer::shutdown() {
  if (down_) return;
  down_ = true;
  worker_->shutdown();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
}

}  // namespace stagecraft::testing
