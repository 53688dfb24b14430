#include "stage_runtime.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <set>

#include "backup_store.h"
#include "control/backup_schedule.h"
#include "cost/cost_model.h"
#include "op_stretch.h"
#include "peer_inbox.h"
#include "peer_outbox.h"
#include "stage_group.h"
#include "telemetry_hub.h"
#include "torch_stage.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

double residentMb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

/// What a forward keeps for its backward.
struct Saved {
  torch::Tensor input;   ///< requires grad on every stage but the first
  torch::Tensor output;  ///< the stage's output, or the scaled loss on the last stage
};

}  // namespace

struct StageRuntime::Impl {
  v1::Model model;
  v1::OptimizerConfig optimizer_config;
  StageLayout layout;
  RuntimeEnv env;
  std::mutex module_mutex;  // held for a whole iteration, and by weights()/setWeights()
  StageModule module{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<DataSource> data;
  v1::DataConfig data_config;
  std::unique_ptr<DataSource> eval_data;  // the held-out split, made at the first Evaluate
  std::unique_ptr<StageGroup> group;
  // A group's gradients live in one buffer, every parameter's gradient a view of it, in
  // buckets of layers from the last (gradientBuckets): the backward accumulates into it, so
  // nothing is copied, and a bucket goes on the ring as soon as the last micro-batch's
  // backward has written it, beside the rest of that backward (as PyTorch DDP does).
  struct Bucket {
    std::int64_t begin = 0, numel = 0;
    int params = 0;
    int missing = 0;  // this step: parameters the last backward has not reached
  };
  torch::Tensor flat_grads;
  std::vector<Bucket> buckets;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;  // keep their hooks alive
  bool hooks_armed = false;  // during the step's last backward
  std::size_t next_bucket = 0;
  std::vector<std::shared_ptr<StageGroup::Pending>> in_flight;
  std::optional<Clock::time_point> allreduce_start;
  std::exception_ptr launch_error;
  std::atomic<std::int64_t> step{0};
  std::atomic<bool> stop{false};
  std::mutex outbox_mutex;
  PeerOutbox* outbox = nullptr;  // of the run in progress
  control::BackupSchedule backup;  // rank 0: keep and ship the state after the steps it names
  v1::Member backup_to;

  std::size_t non_finite_seen = 0;  // the inbox's count when last told
  // Every gradient defined and zero: the last update left them so. A step that was stopped
  // part way leaves them dirty, and the next one zeroes them first.
  bool grads_clean = false;

  // Rank 0: the copy of the last backup step's state, made beside the next step (declared
  // after what it reads, so it is waited for before they go).
  std::future<void> backup_copy;

  // Per iteration.
  Clock::time_point iteration_start;
  v1::IterationReport report;
  double compute_ms = 0;

  void event(int micro_batch, const char* kind, const std::string& peer, Clock::time_point start,
             Clock::time_point end) {
    auto* e = report.add_timeline();
    e->set_micro_batch(micro_batch);
    e->set_kind(kind);
    e->set_peer(peer);
    e->set_start_ms(msBetween(iteration_start, start));
    e->set_end_ms(msBetween(iteration_start, end));
  }

  /// --slowdown (op_stretch.h): on one thread, by the op's thread CPU time, never by more
  /// than the op's kind costs unhindered. Set from env.slowdown in the constructor.
  OpStretcher stretcher{1};
  void emulateSlowdown(const OpStart& start, StretchedOp kind) {
    stretcher.stretch(start, kind, at::get_num_threads() == 1);
  }

  void checkStop() const {
    if (stop) throw WorkerError(ErrorCode::Aborted, "job '" + layout.job + "' was stopped");
  }

  /// The slices of micro-batch `m` peers sent for this member's samples, joined.
  torch::Tensor receive(std::int64_t s, int m, bool gradient, bool eval = false) {
    const auto start = Clock::now();
    auto slices = env.inbox->take(s, m, gradient, layout.sample_begin, layout.samples, env.peer_timeout, eval);
    const auto end = Clock::now();
    // Values that are not finite are a diverging neighbour's: say so to the coordinator,
    // whose divergence guard sees the same in the loss.
    if (const std::size_t bad = env.inbox->nonFiniteSlices(); bad > non_finite_seen && env.telemetry) {
      env.telemetry->log(layout.job, "step " + std::to_string(s + 1) + ": " + std::to_string(bad - non_finite_seen) +
                                         " slice(s) from peers held NaN or infinite values");
      non_finite_seen = bad;
    }
    std::vector<torch::Tensor> parts;
    parts.reserve(slices.size());
    for (auto& slice : slices) {
      parts.push_back(fromProto(std::move(*slice.mutable_tensor())));
      event(m, "receive", slice.sender(), start, end);
    }
    return parts.size() == 1 ? parts[0] : torch::cat(parts, 0);
  }

  /// Sends the rows of `tensor` (this member's samples of micro-batch `m`) that each
  /// peer of `to` holds.
  void send(PeerOutbox& outbox, const std::vector<PeerSlice>& to, std::int64_t s, int m, bool gradient,
            const torch::Tensor& tensor, bool eval = false) {
    for (const auto& peer : to) {
      v1::PeerTensor message;
      message.set_eval(eval);
      message.set_job(layout.job);
      message.set_sender(env.worker);
      message.set_step(s);
      message.set_micro_batch(m);
      message.set_gradient(gradient);
      message.set_sample_begin(peer.sample_begin);
      message.set_samples(peer.samples);
      // Sent from the tensor's memory: outputs are kept for the backward and inputs'
      // gradients are not written again, and the step flushes before the optimizer writes.
      auto [header, payload] = toWire(tensor.narrow(0, peer.sample_begin - layout.sample_begin, peer.samples));
      *message.mutable_tensor() = std::move(header);
      outbox.send(peer.peer, peer.address, std::move(message), std::move(payload));
    }
  }

  /// The evaluation pass after `step` steps: micro-batches of the plan's size over the
  /// held-out split, forward only, in eval mode (norms use their running statistics); the
  /// last stage scores its samples.
  v1::EvaluateReply evaluate(int micro_batches, PeerOutbox& outbox) {
    std::lock_guard lock(module_mutex);
    const std::int64_t s = step;
    if ((layout.first() || layout.last()) && !eval_data) {
      eval_data = DataSource::create(data_config, model, DataSource::Split::Eval);
    }
    torch::NoGradGuard no_grad;
    module->eval();
    struct BackToTraining {
      StageModule& module;
      ~BackToTraining() { module->train(); }
    } back{module};
    v1::EvaluateReply reply;
    reply.set_step(s);
    double loss_sum = 0;
    std::int64_t correct = 0, scored = 0;
    for (int e = 0; e < micro_batches; ++e) {
      checkStop();
      const std::int64_t first = static_cast<std::int64_t>(e) * layout.micro_batch_size + layout.sample_begin;
      const torch::Tensor x = layout.first() ? eval_data->get(first, layout.samples).inputs : receive(s, e, false, true);
      const torch::Tensor out = module->forward(x);
      if (layout.last()) {
        const torch::Tensor labels = eval_data->labels(first, layout.samples);
        loss_sum += lossSum(out, labels, model).item<double>();
        correct += out.argmax(-1).eq(labels.to(torch::kInt64)).sum().item<std::int64_t>();
        scored += labels.numel();
      } else {
        send(outbox, layout.next, s, e, false, out, true);
      }
    }
    outbox.flush(env.peer_timeout);
    if (layout.last()) {
      reply.set_samples(scored);
      reply.set_correct(correct);
      reply.set_loss_sum(loss_sum);
    }
    return reply;
  }

  /// Parameters, buffers and (optionally) the optimizer's state at this step; the caller
  /// holds module_mutex.
  v1::StageWeights state(bool optimizer_state) {
    v1::StageWeights w = getWeights(module);
    if (optimizer_state) {
      for (auto& t : optimizerState(*optimizer, module)) *w.add_tensors() = std::move(t);
    }
    w.set_layer_begin(layout.layer_begin);
    w.set_layer_end(layout.layer_end);
    w.set_step(step);
    w.set_job(layout.job);
    return w;
  }

  /// After a step: on a backup step, the stage's state is kept here and offered to the
  /// neighbour. Buffers (BatchNorm's running statistics) change in the next forward, so they
  /// are copied now; the parameters and the optimizer's state change only at the next
  /// optimizer step, so they are copied beside the next step's forward and backward, off
  /// the critical path (finishBackupCopy() before anything changes them).
  void backUp() {
    if (layout.rank != 0 || !env.backups || !backup.due(step)) return;
    const auto start = Clock::now();
    finishBackupCopy();
    auto copy = std::make_shared<v1::StageWeights>();
    copy->set_layer_begin(layout.layer_begin);
    copy->set_layer_end(layout.layer_end);
    copy->set_step(step);
    copy->set_job(layout.job);
    std::vector<std::pair<std::string, torch::Tensor>> later;
    for (const auto& p : module->named_parameters()) later.emplace_back(p.key(), p.value());
    for (const auto& b : module->named_buffers()) *copy->add_tensors() = toProto(b.value(), b.key());
    for (auto& t : optimizerStateTensors(*optimizer, module)) later.push_back(std::move(t));
    backup_copy = std::async(std::launch::async, [this, copy, later = std::move(later)] {
      for (const auto& [name, tensor] : later) *copy->add_tensors() = toProto(tensor, name);
      StateCopy done = copy;
      env.backups->keep(done);
      if (env.backup_sender && !backup_to.address().empty()) {
        const bool must = env.backups->mustShip(done->job(), done->step());
        env.backup_sender->offer(std::move(done), backup_to.address(), must);
      }
    });
    event(-1, "backup", backup_to.name(), start, Clock::now());
  }

  /// Waits for the copy backUp() started (the step it was of is over only once it is made);
  /// its failure is this step's.
  void finishBackupCopy() {
    if (!backup_copy.valid()) return;
    const auto start = Clock::now();
    const bool waits = backup_copy.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
    backup_copy.get();
    if (waits) event(-1, "backup", backup_to.name(), start, Clock::now());
  }

  /// Makes every parameter's gradient a view of flat_grads, bucket by bucket, and hooks
  /// each parameter's gradient accumulator to count its bucket down.
  void setUpBuckets() {
    torch::NoGradGuard no_grad;
    const int n = module->layerCount();
    std::vector<std::vector<torch::Tensor>> per_layer(n);
    std::vector<double> bytes(n, 0.0);
    std::set<const void*> seen;
    auto take = [&](int l, const torch::Tensor& p) {
      if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) return;
      per_layer[l].push_back(p);
      bytes[l] += static_cast<double>(p.numel()) * 4.0;
    };
    for (int l = 0; l < n; ++l) {
      for (const auto& p : module->layerParameters(l)) take(l, p);
    }
    if (n > 0) {
      for (const auto& p : module->parameters()) take(0, p);  // any no layer lists
    }
    std::int64_t total = 0;
    for (const auto& layer : per_layer) {
      for (const auto& p : layer) total += p.numel();
    }
    if (total == 0) return;
    flat_grads = torch::zeros({total});
    std::int64_t at = 0;
    for (const auto& [b, e] : gradientBuckets(bytes)) {
      Bucket bucket;
      bucket.begin = at;
      const std::size_t index = buckets.size();
      for (int l = e - 1; l >= b; --l) {
        for (auto& p : per_layer[l]) {
          p.mutable_grad() = flat_grads.narrow(0, at, p.numel()).view_as(p);
          at += p.numel();
          ++bucket.params;
          auto accumulator = torch::autograd::impl::grad_accumulator(p);
          accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
              [this, index](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
                gradientReady(index);
                return outputs;
              }));
          accumulators.push_back(std::move(accumulator));
        }
      }
      bucket.numel = at - bucket.begin;
      buckets.push_back(bucket);
    }
  }

  /// A parameter of bucket `b` has its gradient: during the last backward, a bucket that
  /// is complete goes on the ring, in bucket order (every member starts the same
  /// collectives in the same order).
  void gradientReady(std::size_t b) {
    if (!hooks_armed) return;
    if (--buckets[b].missing == 0) startReadyBuckets();
  }

  void startReadyBuckets() {
    while (next_bucket < buckets.size() && buckets[next_bucket].missing <= 0) {
      const Bucket& bucket = buckets[next_bucket++];
      if (bucket.numel == 0 || launch_error) continue;
      if (!allreduce_start) allreduce_start = Clock::now();
      try {
        in_flight.push_back(group->startAllReduceSum(flat_grads.narrow(0, bucket.begin, bucket.numel), stop));
      } catch (...) {
        launch_error = std::current_exception();  // not thrown through the autograd engine
      }
    }
  }

  /// Starts what the last backward did not (all of it on a member with no samples) and
  /// waits for every bucket.
  void allReduceGradients() {
    if (buckets.empty()) return;
    for (auto& b : buckets) b.missing = 0;
    startReadyBuckets();
    if (launch_error) std::rethrow_exception(launch_error);
    for (auto& pending : in_flight) group->wait(*pending, stop);
    in_flight.clear();
    event(-1, "allreduce", "", allreduce_start.value_or(Clock::now()), Clock::now());
  }

  void iterate(PeerOutbox& outbox) {
    std::lock_guard lock(module_mutex);
    const std::int64_t s = step;
    iteration_start = Clock::now();
    report.Clear();
    compute_ms = 0;
    for (auto& b : buckets) b.missing = b.params;
    next_bucket = 0;
    allreduce_start.reset();
    launch_error = nullptr;
    // A step that fails with buckets on the ring leaves them to Gloo's timeout.
    struct Settle {
      Impl& d;
      ~Settle() {
        d.hooks_armed = false;
        if (!d.in_flight.empty()) {
          d.group->abandon();
          d.in_flight.clear();
        }
      }
    } settle{*this};
    // Every backward adds into gradients that exist (the profile times it so); the update
    // zeroes them, and its time (and the profile's) includes that.
    if (!grads_clean && flat_grads.defined()) {
      flat_grads.zero_();
    } else if (!grads_clean) {
      for (auto& p : module->parameters()) {
        if (p.grad().defined()) {
          p.mutable_grad().detach_();
          p.mutable_grad().zero_();
        } else {
          p.mutable_grad() = torch::zeros_like(p);
        }
      }
    }
    grads_clean = false;
    std::vector<std::optional<Saved>> saved(layout.microbatches);
    double loss_sum = 0;
    for (const ScheduledOp& op : layout.ops) {
      checkStop();
      const int m = op.micro_batch;
      if (op.kind == EventKind::Forward) {
        torch::Tensor x;
        if (layout.first()) {
          x = data->get(layout.firstSample(s, m), layout.samples).inputs;
        } else {
          x = receive(s, m, false).requires_grad_(true);
        }
        const OpStart op_start = opStart();
        const auto start = op_start.wall;
        torch::Tensor out = module->forward(x);
        if (layout.last()) {
          const torch::Tensor labels = data->labels(layout.firstSample(s, m), layout.samples);
          const torch::Tensor sum = lossSum(out, labels, model);
          loss_sum += sum.item<double>();
          out = sum / static_cast<double>(layout.batch_size);
        }
        emulateSlowdown(op_start, StretchedOp::Forward);
        const auto end = Clock::now();
        compute_ms += msBetween(start, end);
        event(m, "forward", "", start, end);
        if (!layout.last()) send(outbox, layout.next, s, m, false, out);
        saved[m] = Saved{x, out};
      } else {
        Saved& kept = saved[m].value();
        torch::Tensor grad;
        if (!layout.last()) grad = receive(s, m, true);
        const OpStart op_start = opStart();
        const auto start = op_start.wall;
        hooks_armed = env.allreduce_overlap && !buckets.empty() && &op == &layout.ops.back();
        if (layout.last()) {
          kept.output.backward();
        } else {
          kept.output.backward(grad);
        }
        const StretchedOp kind = hooks_armed ? StretchedOp::LastBackward : StretchedOp::Backward;
        hooks_armed = false;
        emulateSlowdown(op_start, kind);
        const auto end = Clock::now();
        compute_ms += msBetween(start, end);
        event(m, "backward", "", start, end);
        if (!layout.first()) send(outbox, layout.previous, s, m, true, kept.input.grad());
        saved[m].reset();
      }
    }
    checkStop();
    if (layout.group_size > 1) allReduceGradients();
    // Everything of this step reached the peers before the weights move on, so a stop
    // never leaves this stage a step ahead of its neighbours.
    outbox.flush(env.peer_timeout);
    finishBackupCopy();  // it reads what the update changes
    const OpStart update_start = opStart();
    optimizer->step();
    for (auto& p : module->parameters()) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    grads_clean = true;
    emulateSlowdown(update_start, StretchedOp::Update);
    event(-1, "update", "", update_start.wall, Clock::now());
    for (const auto& r : outbox.takeRecords()) {
      event(r.micro_batch, "send", r.peer, std::max(r.start, iteration_start), r.end);
    }
    step = s + 1;
    backUp();
    const auto end = Clock::now();

    const double iteration_ms = msBetween(iteration_start, end);
    const int samples = layout.samples * layout.microbatches;
    report.set_step(s + 1);
    if (layout.last() && samples > 0) {
      report.set_loss(loss_sum / samples);
      report.set_loss_samples(samples);
    }
    report.set_iteration_ms(iteration_ms);
    report.set_samples_per_second(iteration_ms > 0 ? samples * 1000.0 / iteration_ms : 0);
    report.set_busy_fraction(iteration_ms > 0 ? compute_ms / iteration_ms : 0);
    report.set_memory_mb(residentMb());
    v1::TelemetryEvent e;
    e.set_job(layout.job);
    *e.mutable_iteration() = report;
    env.telemetry->publish(std::move(e));
  }
};

StageRuntime::StageRuntime(const v1::StageAssignment& assignment, StageLayout layout, RuntimeEnv env)
    : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.model = assignment.model();
  d.optimizer_config = assignment.optimizer();
  if (d.optimizer_config.kind().empty()) d.optimizer_config.set_kind("sgd");
  d.layout = std::move(layout);
  d.env = std::move(env);
  d.stretcher = OpStretcher(d.env.slowdown);
  d.step = assignment.start_step();
  d.backup = {assignment.backup_every(), assignment.start_step()};
  d.backup_to = assignment.backup_to();
  // Weights given (a re-plan's, a recovery's) replace every tensor: no seeded pass first.
  d.module = StageModule(d.model, d.layout.layer_begin, d.layout.layer_end, assignment.seed(),
                         !assignment.has_weights());
  d.optimizer = makeOptimizer(d.module->parameters(), d.optimizer_config);
  if (assignment.has_weights()) setWeights(assignment.weights());
  d.step = assignment.start_step();
  if (d.layout.first() || d.layout.last()) {
    v1::DataConfig data = assignment.data();
    if (data.kind().empty()) data.set_kind("synthetic");
    d.data = DataSource::create(data, d.model);
    d.data_config = data;
  }
  if (d.layout.group_size > 1) {
    // Rank 0's worker keeps the store; the others reach it where the plan says rank 0 is.
    GroupRendezvous at{d.layout.rank == 0 ? d.env.group_store : nullptr, assignment.group(0).address(), d.env.token,
                       d.layout.job, d.layout.stage};
    d.group = std::make_unique<StageGroup>(std::move(at), d.env.own_host, d.layout.rank, d.layout.group_size,
                                           "stagecraft/" + d.layout.job + "/stage" + std::to_string(d.layout.stage),
                                           d.env.peer_timeout);
    d.setUpBuckets();
  }
}

StageRuntime::~StageRuntime() = default;

const StageLayout& StageRuntime::layout() const { return impl_->layout; }
std::int64_t StageRuntime::step() const { return impl_->step; }
void StageRuntime::arm() { impl_->stop = false; }
bool StageRuntime::stopRequested() const { return impl_->stop; }

void StageRuntime::run(std::int64_t iterations) {
  Impl& d = *impl_;
  PeerOutbox outbox(
      d.env.link,
      [inbox = d.env.inbox](const WorkerError& e) {
        inbox->abort(e);  // wakes this stage's waits with the send's error
      },
      d.env.token);
  outbox.setTensorChannel(d.env.tensor_channel);
  {
    std::lock_guard lock(d.outbox_mutex);
    d.outbox = &outbox;
  }
  struct Detach {
    Impl& d;
    PeerOutbox& outbox;
    ~Detach() {
      std::lock_guard lock(d.outbox_mutex);
      d.outbox = nullptr;
    }
  } detach{d, outbox};
  try {
    for (std::int64_t i = 0; iterations == 0 || i < iterations; ++i) d.iterate(outbox);
  } catch (...) {
    outbox.cancel();
    // Whatever a stop interrupted (a wait, a send, the all-reduce), it reads as the stop.
    if (d.stop) throw WorkerError(ErrorCode::Aborted, "job '" + d.layout.job + "' was stopped");
    throw;
  }
}

v1::EvaluateReply StageRuntime::evaluate(int micro_batches) {
  Impl& d = *impl_;
  PeerOutbox outbox(
      d.env.link, [inbox = d.env.inbox](const WorkerError& e) { inbox->abort(e); }, d.env.token);
  outbox.setTensorChannel(d.env.tensor_channel);
  {
    std::lock_guard lock(d.outbox_mutex);
    d.outbox = &outbox;
  }
  struct Detach {
    Impl& d;
    ~Detach() {
      std::lock_guard lock(d.outbox_mutex);
      d.outbox = nullptr;
    }
  } detach{d};
  try {
    return d.evaluate(micro_batches, outbox);
  } catch (...) {
    outbox.cancel();
    if (d.stop) throw WorkerError(ErrorCode::Aborted, "job '" + d.layout.job + "' was stopped");
    throw;
  }
}

void StageRuntime::requestStop() {
  Impl& d = *impl_;
  d.stop = true;
  d.env.inbox->abort(WorkerError(ErrorCode::Aborted, "job '" + d.layout.job + "' was stopped"));
  std::lock_guard lock(d.outbox_mutex);
  if (d.outbox) d.outbox->cancel();
}

v1::StageWeights StageRuntime::weights(bool optimizer_state) {
  std::lock_guard lock(impl_->module_mutex);
  return impl_->state(optimizer_state);
}

std::string StageRuntime::backupAddress() const {
  const Impl& d = *impl_;
  return d.backup.every > 0 && d.layout.rank == 0 ? d.backup_to.address() : std::string();
}

void StageRuntime::setBackupSchedule(std::int64_t every, std::int64_t after) {
  Impl& d = *impl_;
  if (every > 0 && d.backup.every > 0) d.backup = {every, after};
}

void StageRuntime::setWeights(const v1::StageWeights& weights) {
  Impl& d = *impl_;
  std::lock_guard lock(d.module_mutex);
  d.finishBackupCopy();
  std::vector<const v1::Tensor*> module_weights, optimizer_state;  // into `weights`: nothing copied twice
  for (const auto& t : weights.tensors()) (isOptimizerStateName(t.name()) ? optimizer_state : module_weights).push_back(&t);
  // The optimizer state is checked (on a fresh optimizer) before the module changes.
  auto optimizer = makeOptimizer(d.module->parameters(), d.optimizer_config);
  setOptimizerState(*optimizer, d.module, optimizer_state);
  stagecraft::worker::setWeights(d.module, weights.layer_begin(), weights.layer_end(), module_weights);
  d.optimizer = std::move(optimizer);
  d.step = weights.step();
}

}  // namespace stagecraft::worker
