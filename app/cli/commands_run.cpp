#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "control/checkpoint.h"
#include "control/model_import.h"
#include "control/coordinator.h"
#include "control/training_run.h"
#include "control/local_cluster.h"
#include "control/replan.h"
#include "control/timeline_events.h"
#include "io/error.h"
#include "io/json_io.h"
#include "live_cluster.h"
#include "run_support.h"
#include "model/zoo.h"
#include "plan/plan_io.h"
#include "plan/validation.h"
#include "sim/sim_report.h"
#include "sim/simulator.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft::cli {
namespace {

using Clock = std::chrono::steady_clock;

/// Local workers read the run's data files: their paths made absolute (the workers take a
/// relative one from their data folder), and the folder that holds them all, for the
/// workers' --data-dir; empty without data files. A data folder (imagefolder, CIFAR-10's
/// folder) is itself the folder the workers get. Throws Error for a file that is not there.
std::string localDataFolder(control::TrainingOptions& training) {
  namespace fs = std::filesystem;
  std::optional<fs::path> common;
  const bool folder_data = training.data == "imagefolder" || training.data == "cifar10";
  for (auto [file, flag] : {std::pair{&training.data_path, "--data-path"}, {&training.labels_path, "--labels-path"}}) {
    if (file->empty()) continue;
    std::error_code ec;
    const bool is_folder = folder_data && file == &training.data_path && fs::is_directory(*file, ec);
    if (training.data == "imagefolder" && file == &training.data_path && !is_folder) {
      throw Error(std::string(flag) + " '" + *file + "': no such folder (imagefolder takes a folder of class folders)");
    }
    if (!is_folder && !fs::is_regular_file(*file, ec)) throw Error(std::string(flag) + " '" + *file + "': no such file");
    const fs::path absolute = fs::absolute(*file).lexically_normal();
    *file = absolute.string();
    fs::path folder = is_folder ? absolute : absolute.parent_path();
    if (!common) {
      common = folder;
      continue;
    }
    // The deepest folder above both.
    fs::path shared;
    for (auto a = common->begin(), b = folder.begin(); a != common->end() && b != folder.end() && *a == *b; ++a, ++b) {
      shared /= *a;
    }
    common = shared;
  }
  return common ? common->string() : std::string();
}

}  // namespace

int runRun(std::span<const std::string> args) {
  ArgumentParser parser("run",
                        "Trains a model on a cluster's workers: profiles every worker, plans with the measured "
                        "profiles, deploys one stage assignment per device and trains with live progress.");
  parser.required("cluster", "C", "a cluster .json, or a shipped example such as cloud-edge-end");
  addModelOption(parser, false, " (not needed with --plan)");
  parser.option("planner", "P", "hybrid, dp, dp-weighted, gpipe, pipedream or exhaustive", "hybrid")
      .option("plan", "FILE", "deploy this plan (stagecraft.v1.Plan JSON, e.g. from `plan --out`) instead of planning")
      .required("steps", "N", "training steps (iterations of one global batch)");
  addRequestOptions(parser);
  addCostOptions(parser);
  parser.option("lr", "X", "learning rate (default: one per zoo model and optimizer that trains it 200 steps without diverging; 0.02 for sgd, 0.001 for adam otherwise)", "auto")
      .option("momentum", "X", "SGD momentum", "0.9")
      .option("weight-decay", "X", "weight decay", "0")
      .option("data", "synthetic|mnist|cifar10|imagefolder", "training data", "synthetic")
      .option("data-path", "PATH",
              "MNIST IDX images; a CIFAR-10 binary batch or the folder of data_batch_1.bin ... data_batch_5.bin; "
              "for imagefolder a folder with one sub-folder of PNG/JPEG images per class (class ids: the "
              "sub-folder names sorted; images of the model's input size, not resized); as the workers see it")
      .option("labels-path", "FILE", "MNIST IDX labels, as the workers see it")
      .option("seed", "S", "weight initialisation, sample order and the synthetic task", "1")
      .option("micro-batches", "N,N,...", "micro-batch sizes to profile (default: 1,4,16 and the batch)", "1,4,16")
      .flag("no-profile", "plan from FLOPs and device speeds instead of profiling the workers")
      .flag("local", "start local workers for this run (see `cluster up`) and stop them afterwards")
      .option("worker-binary", "PATH", "the stagecraft-worker --local starts")
      .option("step-timeout", "SECONDS",
              "give up on a worker that reports nothing for this long though it answers heartbeats (a slow "
              "device is waited for); one that stops answering is given up after about five step times "
              "(at least 3 s) once a step time is known",
              "120")
      .option("calibrate-after", "N",
              "from step N on, once three complete steps ran clear of backups, re-time every device from "
              "telemetry (the median over them), re-predict the plan and say on stderr when another plan is "
              "predicted faster (0: never)",
              "3")
      .option("suggested-plan", "FILE", "write that faster plan here (for `run --plan`)")
      .option("checkpoint-dir", "DIR",
              "write the run to DIR/checkpoint.pb (atomically) for `run --resume DIR` after a crash")
      .option("checkpoint-every", "N", "steps between checkpoints (with --checkpoint-dir)", "10")
      .option("export", "FILE.pt",
              "after training, write the trained TorchScript model (a --model FILE.pt) to FILE.pt, with its own "
              "parameter names, for torch.jit.load")
      .option("resume", "DIR",
              "go on from DIR/checkpoint.pb: its model, weights, optimizer state, data and plan (re-planned "
              "when its devices are not all in --cluster); --steps is then the step to reach; stale jobs on "
              "the workers are stopped first")
      .option("backup-every", "N|auto",
              "after every N-th step each stage keeps its weights and optimizer state and sends a copy to a "
              "neighbour device (beside training, not in its way): what a lost device's run replays from "
              "(0: none; the run then replays from the last checkpoint or its start). auto: as often as costs "
              "the busiest device at most 5% of a step (copies, serialising, its link), re-chosen as steps are "
              "timed; none for a plan of one device (no other device could hold them: --checkpoint-dir "
              "covers it)",
              "auto")
      .option("eval-every", "N",
              "every N steps and at the end, measure accuracy on held-out samples (a forward pass through the "
              "pipeline between steps; 0: never)",
              "0")
      .option("eval-samples", "N", "held-out samples each evaluation scores (default: one global batch)")
      .option("holdout", "F",
              "the share of a file data set (mnist, cifar10, imagefolder) kept out of training for --eval-every "
              "(synthetic data evaluates on samples never trained on)",
              "0.1")
      .flag("no-recover", "end the run when a device is lost instead of re-planning over the survivors")
      .flag("elastic",
            "every 5 s, ask the cluster's devices the plan does not use; when some answer (a worker started "
            "or back) and a plan with them is predicted at least 10% faster, re-plan onto them")
      .flag("auto-replan",
            "when a device has been slower than the plan expected (relative to the others, by more than 25%) "
            "for 5 steps and a re-plan is predicted at least 10% faster, re-plan at the next step boundary "
            "(without it, such a straggler is only reported on stderr)")
      .option("replan-every", "N", "re-plan every N steps over the devices that answer (0: never; SIGHUP re-plans once)",
              "0")
      .option("timeline", "FILE",
              "write every step's measured timeline after the predicted one as a Chrome trace (open in "
              "ui.perfetto.dev)")
      .flag("json", "print a stagecraft.v1.RunReport as JSON at the end")
      .epilog(
          "Progress goes to stderr. A device lost while training (its worker gone, or silent for a few step\n"
          "times) is dropped: its group's survivors take its samples, or the run re-plans over the devices\n"
          "left, and training replays from the last backup; each recovery is printed on stderr and listed in\n"
          "--json's recoveries. SIGHUP re-plans at the next step boundary.\n"
          "Exit status 1 when training diverged or was interrupted, 2 for bad input (a worker refusing the\n"
          "data or the plan included), 3 when no plan fits, 4 when a worker is lost and the run cannot go\n"
          "on (the reason names it), 5 when a worker failed inside or broke the protocol.");
  addTokenOption(parser);
  const ParsedArguments parsed = parser.parse(args);

  // Flags first, files and workers after.
  const std::int64_t steps = parsed.positiveInt("steps");
  const bool from_file = parsed.has("plan");
  const bool resuming = parsed.has("resume");
  if (resuming) {
    // --lr may change: a run that diverged goes on from its checkpoint at a lower rate.
    for (const char* flag : {"plan", "momentum", "weight-decay", "data", "data-path", "labels-path", "seed",
                             "optimizer", "batch", "microbatches", "schedule"}) {
      if (parsed.has(flag)) throw Error(std::string("run: --resume takes --") + flag + " from the checkpoint");
    }
  }
  if (from_file) {
    for (const char* flag : {"planner", "batch", "microbatches", "schedule", "optimizer"}) {
      if (parsed.has(flag)) throw Error(std::string("run: --plan fixes --") + flag + "; give one or the other");
    }
  }
  if (parsed.flag("no-profile") && parsed.has("profile"))
    throw Error("run: --no-profile and --profile exclude each other");
  if (parsed.has("worker-binary") && !parsed.flag("local")) throw Error("run: --worker-binary needs --local");
  if (!from_file && !resuming && !parsed.has("model")) {
    throw Error("run: missing required --model M (or --plan FILE, or --resume DIR)");
  }
  std::optional<v1::Checkpoint> checkpoint;
  if (resuming) {
    checkpoint = control::readCheckpoint(parsed.value("resume"));
    if (steps <= checkpoint->step()) {
      throw Error("run: the checkpoint is at step " + std::to_string(checkpoint->step()) +
                  "; --steps is the step to reach with --resume");
    }
  }
  const PlanRequest request = from_file ? PlanRequest{}
                              : resuming ? PlanRequest{checkpoint->plan().batch_size(), checkpoint->plan().microbatches(),
                                                       parseSchedule(checkpoint->plan().schedule())}
                                         : requestFromArguments(parsed);
  makePlanner(parsed.value("planner"));  // an unknown name fails before any worker is asked
  std::vector<int> profile_sizes = parsePositiveList("micro-batches", parsed.value("micro-batches"));
  if (request.microbatches > 0) profile_sizes.push_back(request.batch_size / request.microbatches);
  // A plan may give one device a whole micro-batch of up to the batch; past the largest
  // size timed, times are scaled in proportion, which misses how much faster large matrix
  // products run per sample (~25% between 32 and 256 samples of mlp here). Unless the user
  // chose the sizes, the batch itself is timed too.
  if (!parsed.has("micro-batches") && request.microbatches == 0 && request.batch_size > 0) {
    profile_sizes.push_back(request.batch_size);
  }

  control::TrainingOptions training;
  training.momentum = parseNumber("momentum", parsed.value("momentum"));
  training.weight_decay = parseNumber("weight-decay", parsed.value("weight-decay"));
  training.data = parsed.value("data");
  training.data_path = parsed.value("data-path");
  training.labels_path = parsed.value("labels-path");
  training.seed = parseSeed(parsed.value("seed"));
  const std::int64_t eval_every = parsed.nonNegativeInt("eval-every");
  // Files are split only when evaluated: without --eval-every every sample trains.
  if (eval_every > 0 && training.data != "synthetic") training.holdout = parseNumber("holdout", parsed.value("holdout"));
  control::CoordinatorOptions coordinator_options;
  coordinator_options.silence_limit = secondsFlag("step-timeout", parsed.value("step-timeout"));
  const bool json = parsed.flag("json");
  const std::int64_t calibrate_after = parsed.nonNegativeInt("calibrate-after");
  std::int64_t calibrated_at = 0;  // the step the calibration was taken at

  // The model and, with --plan, the plan file.
  v1::Plan plan_file;
  std::optional<ModelSpec> loaded;
  if (resuming) {
    loaded = ModelSpec::fromProto(checkpoint->model());
    if (parsed.has("model") && modelFromArguments(parsed).name() != loaded->name()) {
      throw Error("run: --model " + parsed.value("model") + " but the checkpoint trains " + loaded->name());
    }
  } else if (from_file) {
    io::readJsonFile(parsed.value("plan"), plan_file);
    loaded = modelOfPlan(plan_file);
    if (parsed.has("model") && modelFromArguments(parsed).name() != loaded->name()) {
      throw Error("run: --model " + parsed.value("model") + " but the plan trains " + loaded->name());
    }
  } else {
    loaded = modelFromArguments(parsed);
  }
  const ModelSpec& model = *loaded;
  const Optimizer optimizer =
      resuming    ? parseOptimizer(checkpoint->optimizer().kind())
      : from_file ? (plan_file.optimizer().empty() ? Optimizer::Sgd : parseOptimizer(plan_file.optimizer()))
                  : optimizerFromArguments(parsed);
  if (optimizer == Optimizer::Invalid) throw Error("plan: optimizer must be sgd or adam");
  training.lr = parsed.value("lr") == "auto" ? control::defaultLearningRate(model.name(), optimizer)
                                             : parseNumber("lr", parsed.value("lr"));
  if (resuming) {
    training = control::checkpointOptions(*checkpoint);
    if (parsed.has("lr")) training.lr = parseNumber("lr", parsed.value("lr"));
  }
  control::checkTrainingOptions(training);

  // The workers: running ones, or local ones for this run. From here on Ctrl-C ends the
  // run between phases (or between steps) with the workers stopped, not killed mid-way.
  InterruptGuard interrupts;
  const auto interrupted = [&](const char* phase) {
    if (!g_interrupted) return false;
    printFailure(std::string("interrupted ") + phase);
    return true;
  };
  LiveCluster live = openCluster(parsed.value("cluster"), parsed);
  LocalWorkersGuard local_guard;
  const std::string data_folder = parsed.flag("local") ? localDataFolder(training) : std::string();
  if (parsed.flag("local") && !live.local) {
    control::LocalClusterOptions local_options;
    local_options.worker_binary = control::findWorkerBinary(parsed.value("worker-binary"), executablePath());
    local_options.data_dir = data_folder;
    // Not left running when this process is killed (or dies of a closed pipe: `| head`).
    local_options.end_with_this_process = true;
    local_guard.adopt(control::LocalCluster::start(live.cluster, live.path, local_options));
    live = openCluster(live.path, parsed);
    if (!json) std::cout << "Started local workers for " << live.cluster.name() << "\n";
  } else if (parsed.flag("local") && !json) {
    std::cout << "Using the local workers already running for " << live.cluster.name() << "\n";
  }
  const Cluster& cluster = live.cluster;
  coordinator_options.token = live.token;
  control::RunSettings settings;
  settings.recover = !parsed.flag("no-recover");
  settings.elastic = parsed.flag("elastic");
  settings.auto_replan = parsed.flag("auto-replan");
  settings.backup_every = parsed.value("backup-every") == "auto" ? control::RunSettings::kAutoBackups
                                                                 : parsed.nonNegativeInt("backup-every");
  settings.eval_every = eval_every;
  if (parsed.has("eval-samples")) settings.eval_samples = parsed.positiveInt("eval-samples");
  if (!from_file) settings.planner = parsed.value("planner");
  if (parsed.has("checkpoint-dir") || resuming) {
    settings.checkpoint_dir = parsed.has("checkpoint-dir") ? parsed.value("checkpoint-dir") : parsed.value("resume");
    settings.checkpoint_every = parsed.positiveInt("checkpoint-every");
  }
  const std::unique_ptr<TemporaryFolder> export_folder =
      parsed.has("export") ? prepareExport(model, settings) : nullptr;
  const std::int64_t replan_every = parsed.nonNegativeInt("replan-every");
  control::TrainingRun run(cluster, model, optimizer, training, coordinator_options, settings);
  describeAll(run.coordinator(), clusterUpHint(parsed.value("cluster")) + " (or pass --local)");
  if (!json) std::cout << "Cluster " << cluster.name() << ": " << cluster.size() << " workers answer\n";
  if (resuming) {
    // The run that wrote the checkpoint may have left its job training (a killed CLI).
    for (const control::StopOutcome& o : run.coordinator().stopJobs()) {
      if (o.stopped) std::cerr << "stopped job " << o.job << " on " << o.device << " at step " << o.step << "\n";
    }
  }
  if (interrupted("before profiling")) return kExitFailed;

  // Plan under measured profiles.
  bool profiled = false;
  if (parsed.has("profile")) {
    v1::ProfileSet profiles;
    io::readJsonFile(parsed.value("profile"), profiles);
    try {
      run.setProfiles(profiles);
    } catch (const Error& e) {
      throw Error(parsed.value("profile") + ": " + e.what());
    }
  } else if (!parsed.flag("no-profile")) {
    std::sort(profile_sizes.begin(), profile_sizes.end());
    profile_sizes.erase(std::unique(profile_sizes.begin(), profile_sizes.end()), profile_sizes.end());
    const auto started = Clock::now();
    if (!json) std::cout << "Profiling " << model.name() << " on " << cluster.size() << " workers..." << std::endl;
    run.profile(profile_sizes, 3, [](const std::string& device, int done, int total) {
      std::cerr << "profiled " << device << " (" << done << "/" << total << ")\n";
    });
    profiled = true;
    if (!json) {
      std::cout << "Profiled " << model.name() << " on every worker in "
                << fixed(std::chrono::duration<double>(Clock::now() - started).count(), 1) << " s\n";
    }
  }
  const CostModel cost = run.costModel(run.cluster());

  Plan plan;
  std::optional<Plan> kept;  // the checkpoint's plan, when every device of it is here
  if (resuming) {
    try {
      kept = planFromProto(checkpoint->plan(), cluster);
      if (!validatePlan(*kept, cost).empty()) kept.reset();
    } catch (const Error&) {
      kept.reset();
    }
  }
  if (kept) {
    plan = *kept;
  } else if (from_file) {
    plan = planFromProto(plan_file, cluster);
    if (const auto problems = validatePlan(plan, cost); !problems.empty()) {
      printFailure(firstOfMany("invalid plan: " + problems.front(), problems.size()));
      return kExitBadInput;
    }
  } else {
    const PlanOutcome outcome = makePlan(*makePlanner(parsed.value("planner")), cost, request);
    if (!outcome.feasible) {
      printFailure(outcome.reason.empty() ? "planner '" + parsed.value("planner") + "' found no feasible plan"
                                          : outcome.reason);
      return kExitInfeasible;
    }
    plan = outcome.plan;
  }
  if (interrupted("before deploying")) return kExitFailed;
  const SimulationResult predicted = simulate(plan, cost);
  if (!json) {
    std::cout << "Plan by " << (plan.planner.empty() ? "a file" : plan.planner) << ": "
              << counted(plan.stageCount(), "stage") << ", batch " << plan.batch_size << " in "
              << counted(plan.microbatches, "micro-batch", "micro-batches") << " of " << plan.microBatchSize()
              << ", " << scheduleName(plan.schedule) << ", predicted "
              << fixed(predicted.samples_per_second, 1) << " samples/s\n";
    printStages(plan, model, cluster, std::cout);
  }
  for (const auto& note : profileCoverageNotes(plan, cost)) std::cerr << note << "\n";

  // Deploy and train.
  if (resuming) {
    run.deploy(plan, cluster, control::checkpointWeights(*checkpoint));
    if (!json) std::cout << "Resuming at step " << checkpoint->step() << " from " << parsed.value("resume") << "\n";
  } else {
    run.deploy(plan);
  }
  if (!json) {
    std::cout << "Deployed job " << run.deployment().job() << " to " << run.deployment().assignments().size()
              << " workers; training "
              << (resuming ? "to step " + std::to_string(steps) : std::to_string(steps) + " steps") << "\n"
              << std::flush;
  }
  if (interrupted("before training")) {
    run.deployment().stop();
    return kExitFailed;
  }
  control::RunResult result;
  std::set<std::int64_t> went_back;  // the steps whose verdict sent the run back
  std::map<std::int64_t, std::vector<TimelineEvent>> measured;  // per step, every member's events
  std::optional<Calibration> calibration;
  ReplanSignalGuard hangups;
  {
    ProgressPrinter progress(steps);
    control::RunEvents events;
    std::int64_t furthest = 0;  // the furthest step reached: a replayed step is not new
    events.on_step = [&](const control::StepResult& s) {
      progress.step(s);
      const bool fresh = s.step > furthest;
      furthest = std::max(furthest, s.step);
      if (takeReplanSignal() || (fresh && replan_every > 0 && s.step % replan_every == 0 && s.step < steps)) {
        run.requestReplan();
      }
      // From --calibrate-after on, once the run holds kCalibrationSteps complete steps that
      // no backup's copies slowed (they would pass for slow compute): the median of each
      // device's speed over them, so one step another process slowed does not decide it.
      const auto& recent = run.recentSteps().steps();
      if (calibrate_after > 0 && s.step >= calibrate_after && s.step < steps && !calibration &&
          recent.size() >= kCalibrationSteps) {
        calibrated_at = s.step;
        const PlanRequest again{run.plan().batch_size, 0, run.plan().schedule};
        progress.finish();
        try {
          calibration = calibrate(run.plan(), run.costModel(run.deployedCluster(), false), recent,
                                  *makePlanner(settings.planner), again);
        } catch (const std::exception& e) {
          // Advice only: a calibration that cannot be made never ends the run.
          std::cerr << "calibration at step " << s.step << " skipped: " << e.what() << "\n";
          return;
        }
        printCalibration(*calibration, s.step, run.predictedSamplesPerSecond(), model, run.deployedCluster(),
                         std::cerr);
        if (calibration->suggested && parsed.has("suggested-plan")) {
          io::writeJsonFile(parsed.value("suggested-plan"), calibration->suggested_proto);
          std::cerr << "  wrote it to " << parsed.value("suggested-plan") << " (stagecraft-cli run --plan "
                    << parsed.value("suggested-plan") << ")\n";
        }
      }
    };
    events.on_iteration = [&](int /*member*/, int device, const v1::IterationReport& r) {
      if (!parsed.has("timeline")) return;
      const int at = cluster.find(run.deployedCluster().device(device).name).value_or(-1);
      auto events_of_step = control::timelineEvents(r, at, cluster);
      auto& step = measured[r.step()];
      step.insert(step.end(), events_of_step.begin(), events_of_step.end());
    };
    events.on_failure = [&](const control::Recovery& r) {
      progress.finish();
      printFailureNotice(r, std::cerr);
    };
    events.on_recovery = [&](const control::Recovery& r) {
      progress.finish();
      printRecovery(r, run.plan(), model, run.deployedCluster(), std::cerr);
    };
    events.on_straggler = [&](const control::StragglerNotice& n) {
      progress.finish();
      printStraggler(n, std::cerr);
    };
    // Unattended, a re-plan that measures below both its promise and the plan before it is
    // undone (the way back is judged against what that plan measured).
    events.on_eval = [&](const control::EvalResult& e) {
      progress.finish();
      printEvaluation(e, model, std::cerr);
    };
    events.on_promise = [&](const control::PlanPromise& p) {
      if (!p.missed) return;
      const bool back = p.before_sps > 0 && p.measured_sps < p.before_sps;
      progress.finish();
      printMissedPromise(p, back, std::cerr);
      if (back) {
        run.requestReplan(control::ReplanRequest{p.previous, p.previous_cluster, control::RecoveryKind::Manual, "",
                                                 p.before_sps});
        went_back.insert(p.judged_step);
      }
    };
    result = run.train(steps, events, &g_interrupted);
  }
  if (parsed.has("timeline")) writeTimeline(parsed.value("timeline"), predicted, result.steps, measured, cluster);
  if (result.cancelled) {
    printFailure("interrupted after step " + std::to_string(result.steps.empty() ? 0 : result.steps.back().step) +
                 " of " + std::to_string(steps) + "; the workers were stopped");
    return kExitFailed;
  }

  v1::RunReport report;
  report.set_model(model.name());
  report.set_cluster(cluster.name());
  report.set_planner(plan.planner);
  report.set_job(run.deployment().job());
  report.set_steps(static_cast<int>(result.steps.size()));
  report.set_samples_per_second(measuredSamplesPerSecond(result.steps, plan.batch_size));
  report.set_predicted_samples_per_second(predicted.samples_per_second);
  report.set_final_loss(result.steps.empty() ? 0 : result.steps.back().loss);
  for (const auto& s : result.steps) {
    report.add_losses(s.loss);
    report.add_iteration_ms(s.iteration_ms);
  }
  report.set_profiled(profiled);
  *report.mutable_plan() = planToProto(plan, model, cluster);
  report.mutable_plan()->mutable_predicted()->set_samples_per_second(predicted.samples_per_second);
  report.mutable_plan()->mutable_predicted()->set_iteration_ms(predicted.iteration_ms);
  report.mutable_plan()->mutable_predicted()->set_bubble_fraction(predicted.bubble_fraction);
  report.set_wall_seconds(result.wall_seconds);
  if (calibration) {
    report.set_calibration_step(static_cast<int>(calibrated_at));
    for (size_t d = 0; d < calibration->devices.size(); ++d) {
      (*report.mutable_compute_factors())[calibration->devices[d]] = calibration->factors[d];
    }
    report.set_calibrated_samples_per_second(calibration->samples_per_second);
    if (calibration->suggested) {
      *report.mutable_suggested_plan() = calibration->suggested_proto;
      report.set_suggested_samples_per_second(calibration->suggested_samples_per_second);
    }
  }
  for (const control::Recovery& r : result.recoveries) *report.add_recoveries() = recoveryToProto(r);
  report.set_backup_ms(result.backup_ms);
  report.set_backup_share(result.backup_share);
  report.set_backup_measured_ms(result.backup_measured_ms);
  report.set_backup_every(run.backupEvery());
  report.set_telemetry_dropped(result.telemetry_dropped);
  if (result.diverged) {
    auto* d = report.mutable_diverged();
    d->set_step(result.diverged->step);
    d->set_loss(result.diverged->loss);
    d->set_level(result.diverged->level);
    d->set_reason(result.diverged->reason);
    d->set_kept_step(result.diverged->kept_step);
  }
  for (const control::PlanPromise& p : result.promises) {
    v1::RunPromise* out = report.add_promises();
    out->set_from_step(p.from_step);
    out->set_judged_step(p.judged_step);
    out->set_promised_samples_per_second(p.promised_sps);
    out->set_measured_samples_per_second(p.measured_sps);
    out->set_before_samples_per_second(p.before_sps);
    out->set_missed(p.missed);
    out->set_went_back(went_back.count(p.judged_step) > 0);
  }
  report.set_training_ms(result.training_ms);
  *report.mutable_final_plan() = planToProto(run.plan(), model, run.deployedCluster());
  if (result.diverged) printDivergence(*result.diverged, training.lr, settings.checkpoint_dir, steps, std::cerr);
  const int status = result.diverged ? kExitFailed : kExitOk;
  for (const control::EvalResult& e : result.evals) *report.add_evals() = evalToProto(e);
  if (parsed.has("export") && !result.diverged) {
    control::exportTorchScript(settings.checkpoint_dir, parsed.value("export"),
                               control::findWorkerBinary(parsed.value("worker-binary"), executablePath()));
    report.set_exported(parsed.value("export"));
  }
  if (json) {
    printJson(report);
    return status;
  }
  const double ratio = report.predicted_samples_per_second() > 0
                           ? report.samples_per_second() / report.predicted_samples_per_second()
                           : 0;
  if (result.diverged) {
    std::cout << "\nStopped training " << model.name() << " on " << cluster.name() << " at step " << report.steps()
              << " of " << steps << " (diverged at step " << result.diverged->step << ") after "
              << fixed(report.wall_seconds(), 1) << " s\n";
  } else {
    std::cout << "\nTrained " << model.name() << " on " << cluster.name() << " for " << report.steps() << " steps in "
              << fixed(report.wall_seconds(), 1) << " s\n";
  }
  std::cout << "  loss " << fixed(result.steps.empty() ? 0 : result.steps.front().loss, 4) << " -> "
            << fixed(report.final_loss(), 4) << "\n"
            << "  measured " << fixed(report.samples_per_second(), 1) << " samples/s, predicted "
            << fixed(report.predicted_samples_per_second(), 1) << " samples/s (" << percent(ratio)
            << " of predicted)\n";
  if (calibration && calibration->samples_per_second > 0) {
    std::cout << "  calibrated at step " << calibrated_at << ": predicted "
              << fixed(calibration->samples_per_second, 1) << " samples/s ("
              << percent(report.samples_per_second() / calibration->samples_per_second) << " of calibrated)\n";
  }
  printRunNotes(result, run.backupEvery(), std::cout);
  if (result.training_ms > 0 && result.backup_ms > 0) {
    std::cout << "  checkpoints took " << fixed(result.backup_ms / 1000.0, 1) << " s ("
              << percent(result.backup_ms / result.training_ms) << " of training time)\n";
  }
  if (result.checkpoint_step >= 0 && !export_folder) {
    std::cout << "  checkpoint of step " << result.checkpoint_step << " in " << settings.checkpoint_dir
              << " (stagecraft-cli run --resume " << settings.checkpoint_dir << " --steps N)\n";
  }
  if (!result.evals.empty()) {
    const control::EvalResult& e = result.evals.back();
    std::cout << "  held-out accuracy " << percent(e.accuracy) << " after step " << e.step << " (" << e.samples
              << (model.proto().task() == "language_model" ? " tokens" : " samples") << ", loss " << fixed(e.loss, 4)
              << "; " << result.evals.size() << (result.evals.size() == 1 ? " evaluation" : " evaluations") << ")\n";
  }
  if (!report.exported().empty()) {
    std::cout << "  exported the trained model to " << report.exported() << " (torch.jit.load it in PyTorch)\n";
  }
  if (parsed.has("timeline")) {
    std::cout << "  wrote the predicted and measured timelines to " << parsed.value("timeline")
              << " (open it in https://ui.perfetto.dev)\n";
  }
  return status;
}

}  // namespace stagecraft::cli
