// Recovery from a lost device against restarting from a checkpoint, measured side by side
// on local stagecraft-worker processes (loopback, one LibTorch thread each).
//
//   build/bench/bench_recovery [--model mlp] [--batch 32] [--steps 12] [--backup-every N]
//                              [--overhead-only]
//
// For each role a device can have (first, middle or last stage alone, a member of a
// group) one run is SIGKILLed at a fixed step:
// - recovery: kill -> the first step completed afterwards (TrainingRun recovers by itself),
//   and "caught up": kill -> the step after the kill completed, once the replay is done;
//   when the run resumed first on the devices holding the state (RunSettings::resume_first)
//   and took a spare in at the next step boundary, "all in": kill -> the first step of that
//   plan;
// - restart: what a run without recovery does, in the same session: write the last backup
//   to disk, stop every worker, start the survivors' workers again, read the checkpoint,
//   plan over the survivors, deploy, and train to the first completed step;
// - after/fresh: the recovered run's steps per second on its last plan against a fresh
//   plan over the survivors (the restart's, trained for the same steps);
// - backup overhead, side by side on the same workers and plan: the step time with backups
//   every K steps (default 1; each stage keeps its state and sends it to a neighbour) over
//   the step time without, in alternating rounds; and the share of a step the copies held
//   the backing-up stages up (from their timelines).
// Goals: recovery under 3 s, restart/recovery >= 15, after/fresh >= 0.9, overhead <= 5%.
// --overhead-only measures the overhead alone.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "control/backups.h"
#include "control/local_cluster.h"
#include "control/replan.h"
#include "control/training_run.h"
#include "io/json_io.h"
#include "model/zoo.h"
#include "planner/planner.h"

using namespace stagecraft;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Role {
  const char* name;
  std::vector<Stage> stages;  // over d0..d3
  int victim;
};

Cluster fourDevices(const std::string& name) {
  v1::Cluster c;
  c.set_name(name);
  for (int i = 0; i < 4; ++i) {
    auto* d = c.add_devices();
    d->set_name("d" + std::to_string(i));
    d->set_tier("edge");
    d->set_gflops(50);
    d->set_memory_mb(8000);
    d->set_bandwidth_mbps(1000);
  }
  return Cluster::fromProto(c);
}

std::string writeCluster(const Cluster& cluster, const std::filesystem::path& dir) {
  const auto path = dir / (cluster.name() + ".json");
  std::ofstream(path) << io::toJson(cluster.toProto());
  return path.string();
}

/// Mean milliseconds per step of `steps` after the first `skip`.
double meanStepMs(const std::vector<control::StepResult>& steps, size_t skip) {
  double ms = 0;
  int n = 0;
  for (size_t i = skip; i < steps.size(); ++i, ++n) ms += steps[i].iteration_ms;
  return n > 0 ? ms / n : 0;
}

struct Outcome {
  double recovery_ms = 0;  // kill -> the first step completed afterwards
  double caught_up_ms = 0;  // kill -> the step after the kill completed (the replay done)
  double all_in_ms = 0;     // kill -> the first step with the devices taken in after (0: none)
  double restart_ms = 0;
  double after_ms = 0;  // per step, recovered plan
  double fresh_ms = 0;  // per step, fresh plan over the survivors
  double backup_share = 0;
  std::int64_t replayed = 0;
  std::string action;
  control::Recovery phases;  // where the recovery's time went
  control::Recovery joined;  // the re-plan that took the devices left out in (resume_first)
  std::int64_t every = 0;    // steps between backups when the device was killed
};

/// Local workers stopped however measure() ends (an exception, a failed goal).
struct StopOnExit {
  std::optional<control::LocalCluster>& local;
  ~StopOnExit() {
    if (!local) return;
    try {
      local->stop();
    } catch (const std::exception&) {
    }
  }
};

Outcome measure(const Role& role, const ModelSpec& model, int batch, std::int64_t steps, std::int64_t backup_every,
                const control::LocalClusterOptions& local_options, const std::filesystem::path& dir) {
  Outcome out;
  const Cluster plain = fourDevices(std::string("bench-recovery-") + role.name);
  const std::string path = writeCluster(plain, dir);
  std::optional<control::LocalCluster> started = control::LocalCluster::start(plain, path, local_options);
  StopOnExit stop_first{started};
  control::LocalCluster& local = *started;
  const Cluster cluster = local.apply(plain);
  control::TrainingOptions training;
  training.seed = 3;
  control::CoordinatorOptions coordinator;
  coordinator.token = local.token();
  control::RunSettings settings;
  settings.backup_every = backup_every;
  control::TrainingRun run(cluster, model, Optimizer::Sgd, training, coordinator, settings);
  Plan plan;
  plan.model = model.name();
  plan.cluster = cluster.name();
  plan.batch_size = batch;
  plan.microbatches = 4;
  plan.stages = role.stages;
  run.deploy(plan);

  const std::int64_t kill_after = steps / 2;
  Clock::time_point killed{};
  control::RunEvents events;
  const bool verbose = std::getenv("STAGECRAFT_BENCH_VERBOSE") != nullptr;
  if (verbose) {
    events.on_log = [&](const std::string& worker, const std::string& text) {
      if (killed == Clock::time_point{} && text.find("recovery options") == std::string::npos) return;
      std::fprintf(stderr, "%.0f ms after the kill, %s: %s\n", msSince(killed), worker.c_str(), text.c_str());
    };
  }
  events.on_step = [&](const control::StepResult& s) {
    if (verbose && killed == Clock::time_point{}) {
      std::fprintf(stderr, "step %lld: backups every %lld, step held twice %lld, to ship %lld\n",
                   static_cast<long long>(s.step), static_cast<long long>(run.backupEvery()),
                   static_cast<long long>(run.deployment().keepBackupStep()),
                   static_cast<long long>(run.deployment().shipBackupStep()));
    }
    if (s.step == kill_after && killed == Clock::time_point{}) {
      out.every = run.backupEvery();
      if (verbose) {
        const auto held = control::listBackups(run.deployment(), nullptr, std::chrono::milliseconds(2000));
        for (size_t d = 0; d < held.size(); ++d) {
          std::fprintf(stderr, "at the kill, d%zu holds:", d);
          for (const auto& r : held[d]) {
            std::fprintf(stderr, " [%d,%d) after step %lld%s", r.layer_begin(), r.layer_end(),
                         static_cast<long long>(r.step()), r.held_for().empty() ? "" : " (a copy)");
          }
          std::fprintf(stderr, "\n");
        }
      }
      ::kill(static_cast<pid_t>(local.state().workers(role.victim).pid()), SIGKILL);
      killed = Clock::now();
    }
    if (s.step == kill_after + 1 && out.caught_up_ms == 0 && killed != Clock::time_point{}) {
      out.caught_up_ms = msSince(killed);
    }
  };
  std::int64_t last_plan_from = 0;  // the step the last deployment started at
  events.on_recovery = [&](const control::Recovery& r) {
    last_plan_from = r.step;
    // The recovery, then the re-plan it put off (a Joined one when it takes devices in).
    if (r.kind == control::RecoveryKind::Joined || out.recovery_ms > 0) {
      out.all_in_ms = msSince(killed);
      out.joined = r;
      return;
    }
    out.recovery_ms = msSince(killed);
    out.action = r.action;
    out.replayed = r.replayed_steps;
    out.phases = r;
  };
  const control::RunResult result = run.train(steps, events);
  if (verbose) {
    // Where each deployment's time went, from the workers' logs.
    for (const auto& w : local.state().workers()) {
      std::ifstream log(w.log_path());
      for (std::string line; std::getline(log, line);) {
        if (line.find("deployed job") != std::string::npos) std::fprintf(stderr, "%s\n", line.c_str());
      }
    }
  }
  out.backup_share = result.backup_share;
  // Steps of the last plan after its first (which warms the new stages up).
  std::vector<control::StepResult> after;
  for (const auto& s : result.steps) {
    if (s.step > last_plan_from + 1) after.push_back(s);
  }
  out.after_ms = meanStepMs(after, 0);
  if (std::getenv("STAGECRAFT_BENCH_VERBOSE")) {
    const auto show = [&](const char* what, const Plan& p, const Cluster& c) {
      std::fprintf(stderr, "%s: %d micro-batches;", what, p.microbatches);
      for (const Stage& st : p.stages) {
        std::fprintf(stderr, " [%d,%d)", st.layer_begin, st.layer_end);
        for (const auto& m : st.members) std::fprintf(stderr, " %s:%d", c.device(m.device).name.c_str(), m.samples);
      }
      std::fprintf(stderr, "\n");
    };
    show("recovered", run.plan(), run.deployedCluster());
    for (const auto& r : result.recoveries) {
      std::fprintf(stderr, "recovery: from step %lld (failed after %lld), state from %s\n", static_cast<long long>(r.step),
                   static_cast<long long>(r.failed_after), r.backup.c_str());
    }
    for (const auto& s : result.steps) std::fprintf(stderr, "step %lld %.0f ms\n", static_cast<long long>(s.step), s.iteration_ms);
    for (const auto& [name, f] : run.computeFactors()) std::fprintf(stderr, "factor %s %.2f\n", name.c_str(), f);
  }

  // Restart from a checkpoint on disk, as a run without recovery would.
  const control::ModelWeights backup = run.deployment().collectWeights(true);
  const auto restart_began = Clock::now();
  {
    const v1::StageWeights all = control::sliceWeights(backup, 0, model.layerCount());
    std::ofstream file(dir / "checkpoint.bin", std::ios::binary);
    all.SerializeToOstream(&file);
  }
  local.stop();
  started.reset();
  std::vector<std::string> survivors;
  for (int d = 0; d < plain.size(); ++d) {
    if (d != role.victim) survivors.push_back(plain.device(d).name);
  }
  const Cluster rest = control::restrictCluster(plain, survivors);
  const std::string rest_path = writeCluster(rest, dir);
  std::optional<control::LocalCluster> restarted = control::LocalCluster::start(rest, rest_path, local_options);
  StopOnExit stop_again{restarted};
  const Cluster live = restarted->apply(rest);
  v1::StageWeights read;
  {
    std::ifstream file(dir / "checkpoint.bin", std::ios::binary);
    read.ParseFromIstream(&file);
  }
  const std::vector<v1::StageWeights> parts{read};
  const std::vector<std::string> names{"checkpoint"};
  const control::ModelWeights restored = control::mergeStageWeights(parts, names);
  coordinator.token = restarted->token();  // a cluster started again has a token of its own
  control::TrainingRun fresh(live, model, Optimizer::Sgd, training, coordinator, settings);
  const CostModel cost = fresh.costModel(fresh.cluster());
  const PlanOutcome replanned = makePlan(*makePlanner("hybrid"), cost, PlanRequest{batch, 0, Schedule::OneFOneB});
  fresh.deploy(replanned.plan, live, restored);
  bool first = true;
  control::RunEvents restart_events;
  restart_events.on_step = [&](const control::StepResult&) {
    if (first) out.restart_ms = msSince(restart_began);
    first = false;
  };
  const control::RunResult fresh_result = fresh.train(restored.step + static_cast<std::int64_t>(after.size()) + 1,
                                                      restart_events);
  out.fresh_ms = meanStepMs(fresh_result.steps, 1);
  if (std::getenv("STAGECRAFT_BENCH_VERBOSE")) {
    std::fprintf(stderr, "fresh: %d micro-batches, %d stages;", replanned.plan.microbatches, replanned.plan.stageCount());
    for (const auto& s : fresh_result.steps) std::fprintf(stderr, " %.0f", s.iteration_ms);
    std::fprintf(stderr, "\n");
  }
  return out;
}

/// Step time with backups every `backup_every` steps over the step time without, on one
/// plan and the same local workers, in alternating rounds (the median step of each).
struct Overhead {
  double with_ms = 0, without_ms = 0, copy_share = 0;
  double ratio = 1;        // the median over the rounds of with / without
  std::vector<double> ratios;  // each round's, in order
  std::int64_t every = 0;  // the stride the runs with backups ended on
  std::int64_t steps = 0;  // per run
};

/// Steps per run of the overhead's rounds: at least three strides (as the first deployment
/// chose it) and the deployment's early first backup, so that the steady pace of backups is
/// what is measured, within these bounds.
constexpr std::int64_t kOverheadSteps = 30, kMostOverheadSteps = 160;
/// Rounds of the two side by side: the rounds spread by several percent on this 2-core
/// machine, so the median of five rather than three.
constexpr int kOverheadRounds = 5;

Overhead measureOverhead(const std::vector<Stage>& stages, const ModelSpec& model, int batch, std::int64_t backup_every,
                         const control::LocalClusterOptions& local_options, const std::filesystem::path& dir) {
  const Cluster plain = fourDevices("bench-recovery-overhead");
  const std::string path = writeCluster(plain, dir);
  std::optional<control::LocalCluster> started = control::LocalCluster::start(plain, path, local_options);
  StopOnExit stop{started};
  const Cluster cluster = started->apply(plain);
  Plan plan;
  plan.model = model.name();
  plan.cluster = cluster.name();
  plan.batch_size = batch;
  plan.microbatches = 4;
  plan.stages = stages;
  control::TrainingOptions training;
  training.seed = 3;
  control::CoordinatorOptions coordinator;
  coordinator.token = started->token();
  std::vector<double> with, without, ratios;
  double copy_share = 0;
  std::int64_t stride = 0;
  std::int64_t steps = kOverheadSteps;
  // A run first that is not counted: the workers' first deployment grows their heaps and
  // warms their caches, which would count against whichever side ran first. Then the two
  // sides take turns at going first.
  for (int round = -1; round < kOverheadRounds; ++round) {
    const bool backups_first = round % 2 == 0 || round < 0;
    for (const std::int64_t every : {backups_first ? backup_every : 0, backups_first ? 0 : backup_every}) {
      control::RunSettings settings;
      settings.backup_every = every;
      control::TrainingRun run(cluster, model, Optimizer::Sgd, training, coordinator, settings);
      run.deploy(plan);
      if (round < 0) steps = std::clamp<std::int64_t>(3 * run.backupEvery() + 3, kOverheadSteps, kMostOverheadSteps);
      const control::RunResult result = run.train(steps);
      if (round < 0) break;
      // The mean, not the median: a copy that slows one step in ten is the cost.
      (every != 0 ? with : without).push_back(meanStepMs(result.steps, 1));
      if (every != 0) {
        copy_share = std::max(copy_share, result.backup_share);
        stride = run.backupEvery();
        if (std::getenv("STAGECRAFT_BENCH_VERBOSE")) {
          std::fprintf(stderr, "overhead round %d: %.1f ms a step with backups (every %lld at the end, a backup "
                       "measured at %.0f ms)\n", round, with.back(), static_cast<long long>(stride),
                       result.backup_measured_ms);
        }
      }
    }
    if (round >= 0) ratios.push_back(with.back() / without.back());  // the two runs of a round, side by side
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return Overhead{median(with), median(without), copy_share, median(ratios), ratios, stride, steps};
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_name = "mlp";
  int batch = 32;
  std::int64_t steps = 12;
  std::int64_t backup_every = control::RunSettings::kAutoBackups;
  bool overhead_only = false;
  for (int i = 1; i < argc; i += 2) {
    const bool valued = i + 1 < argc;  // the options below but --overhead-only take a value
    if (!std::strcmp(argv[i], "--overhead-only")) {
      overhead_only = true;
      --i;
    } else if (valued && !std::strcmp(argv[i], "--model")) model_name = argv[i + 1];
    else if (valued && !std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
    else if (valued && !std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
    else if (valued && !std::strcmp(argv[i], "--backup-every")) {
      backup_every = std::strcmp(argv[i + 1], "auto") ? std::atoll(argv[i + 1]) : control::RunSettings::kAutoBackups;
    }
    else {
      std::fprintf(stderr, "usage: %s [--model mlp] [--batch 32] [--steps 12] [--backup-every N|auto] [--overhead-only]\n",
                   argv[0]);
      return 2;
    }
  }
  const ModelSpec model = loadModel(model_name);
  if (batch % 8 != 0 || (backup_every < 1 && backup_every != control::RunSettings::kAutoBackups)) {
    std::fprintf(stderr, "--batch must be a multiple of 8, --backup-every at least 1 or auto\n");
    return 2;
  }
  const int L = model.layerCount();
  const int q = batch / 4;  // samples per micro-batch (4 micro-batches)
  const std::vector<Stage> alone = {{0, L / 3, {{0, q}}}, {L / 3, 2 * L / 3, {{1, q}}}, {2 * L / 3, L, {{2, q}}}};
  std::vector<Role> roles = {
      {"first stage", alone, 0},
      {"middle stage", alone, 1},
      {"last stage", alone, 2},
      {"group member", {{0, L / 3, {{0, q}}}, {L / 3, 2 * L / 3, {{1, q / 2}, {2, q / 2}}}, {2 * L / 3, L, {{3, q}}}}, 2},
  };

  const auto dir = std::filesystem::temp_directory_path() / ("stagecraft-bench-recovery-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  control::LocalClusterOptions local_options;
  local_options.worker_binary = control::findWorkerBinary({}, argv[0]);
  local_options.state_directory = (dir / "state").string();
  local_options.end_with_this_process = true;  // an interrupted bench leaves no workers behind

  const std::string every = backup_every == control::RunSettings::kAutoBackups
                                ? std::string("auto (within 5% of a step)")
                                : "every " + std::to_string(backup_every) + " steps";
  std::printf("Recovery, %s, batch %d, %lld steps, killed after step %lld, backups %s; 4 local workers, "
              "1 thread each\n\n",
              model.name().c_str(), batch, static_cast<long long>(steps), static_cast<long long>(steps / 2),
              every.c_str());
  bool ok = true;
  std::vector<std::string> goals;
  try {
    const Overhead o = measureOverhead(alone, model, batch, backup_every, local_options, dir);
    const double overhead = o.ratio - 1;
    std::string rounds;
    for (const double r : o.ratios) {
      char one[16];
      std::snprintf(one, sizeof one, "%+.1f%%", (r - 1) * 100);
      rounds += (rounds.empty() ? "" : ", ") + std::string(one);
    }
    std::printf("Backups %s (ended on every %lld), side by side on the first plan (mean step after the first, %d "
                "rounds of %lld steps after a warm-up run, the two sides taking turns at going first): %.1f ms with, "
                "%.1f ms without (medians); the rounds %s, the median %+.1f%%; the copies held the backing-up stages "
                "up for %.1f%% of a step\n\n",
                every.c_str(), static_cast<long long>(o.every), kOverheadRounds, static_cast<long long>(o.steps),
                o.with_ms, o.without_ms, rounds.c_str(), overhead * 100, o.copy_share * 100);
    const bool met = overhead <= 0.05;
    goals.push_back(std::string("goal backup overhead <= 5% of a step: ") + (met ? "met" : "MISSED"));
    ok = ok && met;
  } catch (const std::exception& e) {
    std::printf("Backup overhead: failed: %s\n\n", e.what());
    ok = false;
  }
  if (overhead_only) roles.clear();
  if (!roles.empty()) {
    std::printf("| role | action | backups every | replayed steps | recovery (s) | caught up (s) | all in (s) | restart (s) | restart / recovery | after / fresh | copies' share of a step | noticed + probe + state + plan + deploy + first step (ms) | taken in: state + deploy (ms) |\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
  }
  for (const Role& role : roles) {
    Outcome o;
    try {
      o = measure(role, model, batch, steps, backup_every, local_options, dir);
    } catch (const std::exception& e) {
      std::printf("| %s | failed: %s | | | | | | | | | | | |\n", role.name, e.what());
      ok = false;
      continue;
    }
    const double ratio = o.recovery_ms > 0 ? o.restart_ms / o.recovery_ms : 0;
    const double after = o.after_ms > 0 ? o.fresh_ms / o.after_ms : 0;  // speed ratio
    // Kill to noticing it, then the recovery's phases up to the first step completed.
    const control::Recovery& r = o.phases;
    const double before_step = r.probe_ms + r.state_ms + r.plan_ms + r.deploy_ms;
    char all_in[32] = "-", taken_in[64] = "-";
    if (o.all_in_ms > 0) {
      std::snprintf(all_in, sizeof all_in, "%.2f", o.all_in_ms / 1000);
      std::snprintf(taken_in, sizeof taken_in, "%s: %.0f + %.0f", o.joined.device.c_str(), o.joined.state_ms,
                    o.joined.deploy_ms);
    }
    std::printf("| %s | %s | %lld | %lld | %.2f | %.2f | %s | %.2f | %.1f | %.2f | %.1f%% | %.0f + %.0f + %.0f + %.0f + %.0f + %.0f | %s |\n",
                role.name, o.action.c_str(), static_cast<long long>(o.every), static_cast<long long>(o.replayed),
                o.recovery_ms / 1000, o.caught_up_ms / 1000, all_in, o.restart_ms / 1000, ratio, after,
                o.backup_share * 100, o.recovery_ms - r.recovered_ms, r.probe_ms, r.state_ms, r.plan_ms,
                r.deploy_ms, r.recovered_ms - before_step, taken_in);
    const bool met = o.recovery_ms < 3000 && ratio >= 15 && after >= 0.9;
    char line[200];
    std::snprintf(line, sizeof line, "goal %s: recovery < 3 s, >= 15x restart, >= 0.9 of fresh: %s", role.name,
                  met ? "met" : "MISSED");
    goals.push_back(line);
    ok = ok && met;
  }
  std::printf("\n");
  for (const auto& g : goals) std::printf("%s\n", g.c_str());
  std::filesystem::remove_all(dir);
  return ok ? 0 : 1;
}
