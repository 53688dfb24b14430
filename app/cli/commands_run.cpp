#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <iostream>
#include <algorithm>
#include <map>
#include <optional>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "control/coordinator.h"
#include "control/local_cluster.h"
#include "control/replan.h"
#include "control/timeline_events.h"
#include "io/error.h"
#include "io/json_io.h"
#include "live_cluster.h"
#include "model/zoo.h"
#include "plan/plan_io.h"
#include "plan/validation.h"
#include "sim/sim_report.h"
#include "sim/simulator.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_interrupted{false};

extern "C" void onInterrupt(int signal) {
  g_interrupted = true;
  // A second Ctrl-C ends the process at once.
  ::signal(signal, SIG_DFL);
  constexpr char kNote[] = "\nstagecraft-cli: stopping the workers (Ctrl-C again to quit at once)\n";
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, kNote, sizeof kNote - 1);
}

/// Ctrl-C and SIGTERM stop the workers and end the run, instead of killing the CLI
/// with the workers still training.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupted = false;
    struct sigaction action {};
    action.sa_handler = onInterrupt;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~InterruptGuard() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

/// Local workers started for this run only: stopped however the run ends.
class LocalWorkersGuard {
 public:
  void adopt(control::LocalCluster local) { local_ = std::move(local); }
  ~LocalWorkersGuard() {
    if (!local_) return;
    try {
      local_->stop();
    } catch (const std::exception&) {
    }
  }

 private:
  std::optional<control::LocalCluster> local_;
};

/// Step k/N, loss and samples/s on stderr: one line redrawn on a terminal, a line per
/// step otherwise (logs, CI).
class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::int64_t total) : total_(total), tty_(::isatty(STDERR_FILENO) == 1) {}
  ~ProgressPrinter() { finish(); }

  void step(const control::StepResult& s) {
    const std::string numbers = "loss " + fixed(s.loss, 4) + "  " + fixed(s.samples_per_second, 1) + " samples/s";
    if (!tty_) {
      std::cerr << "step " << s.step << "/" << total_ << "  " << numbers << "\n";
      return;
    }
    constexpr int kWidth = 24;
    const double fraction = total_ > 0 ? std::min(1.0, static_cast<double>(s.step) / total_) : 0;
    const int filled = static_cast<int>(std::lround(fraction * kWidth));
    std::cerr << "\r[" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] step " << s.step << "/"
              << total_ << "  " << numbers << "\033[K" << std::flush;
    drawn_ = true;
  }
  void finish() {
    if (drawn_) std::cerr << "\n";
    drawn_ = false;
  }

 private:
  std::int64_t total_;
  bool tty_;
  bool drawn_ = false;
};

double parseNumber(const std::string& flag, const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    throw Error("--" + flag + " must be a number, got '" + text + "'");
  }
  return value;
}

std::uint64_t parseSeed(const std::string& text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw Error("--seed must be a non-negative integer, got '" + text + "'");
  }
  return value;
}

/// Mean throughput after the first (warm-up) step: batch over the slowest member's time.
double measuredSamplesPerSecond(const std::vector<control::StepResult>& steps, int batch) {
  if (steps.empty()) return 0;
  const size_t first = steps.size() > 1 ? 1 : 0;
  double ms = 0;
  for (size_t i = first; i < steps.size(); ++i) ms += steps[i].iteration_ms;
  return ms > 0 ? batch * 1000.0 * static_cast<double>(steps.size() - first) / ms : 0;
}

/// The predicted iteration (processes 0..) and then every measured step (processes
/// 1000..), laid one after another from the predicted iteration's end. Each member's
/// events count from its own start of the step, and a step lasts its slowest member's time.
void writeTimeline(const std::string& path, const SimulationResult& predicted, const control::TrainingResult& result,
                   const std::map<std::int64_t, std::vector<TimelineEvent>>& measured, const Cluster& cluster) {
  constexpr int kMeasuredPids = 1000;
  v1::ChromeTrace trace;
  appendChromeTrace(trace, predicted.timeline, cluster, 0, " (predicted)");
  std::vector<TimelineEvent> steps;
  double offset = predicted.iteration_ms;
  for (const auto& s : result.steps) {
    if (const auto it = measured.find(s.step); it != measured.end()) {
      for (TimelineEvent e : it->second) {
        e.start_ms += offset;
        e.end_ms += offset;
        steps.push_back(e);
      }
    }
    offset += s.iteration_ms;
  }
  appendChromeTrace(trace, steps, cluster, kMeasuredPids, " (measured)");
  io::writeJsonFile(path, trace);
}

/// What telemetry says after a few steps: each device's compute factor, the deployed plan
/// re-simulated with them, and a faster plan under them when there is one.
struct Calibration {
  std::vector<double> factors;  ///< per cluster device
  double samples_per_second = 0;
  std::optional<Plan> suggested;
  double suggested_samples_per_second = 0;
};

/// A plan must be predicted this much faster under the calibrated costs to be suggested:
/// less is within what a re-plan's own disruption and the calibration's noise eat up.
constexpr double kSuggestGain = 1.10;

Calibration calibrate(const Plan& plan, const CostModel& cost, const std::vector<v1::IterationReport>& latest,
                      const Planner& planner, const PlanRequest& request) {
  Calibration c;
  c.factors = control::computeFactors(plan, cost, latest);
  CostModel calibrated = cost;
  calibrated.setComputeFactors(c.factors);
  c.samples_per_second = simulate(plan, calibrated).samples_per_second;
  const PlanOutcome outcome = makePlan(planner, calibrated, request);
  if (outcome.feasible && outcome.simulated_ms > 0) {
    const double sps = plan.batch_size * 1000.0 / outcome.simulated_ms;
    if (sps > c.samples_per_second * kSuggestGain) {
      c.suggested = outcome.plan;
      c.suggested_samples_per_second = sps;
    }
  }
  return c;
}

void printCalibration(const Calibration& c, std::int64_t step, double predicted_sps, const ModelSpec& model,
                      const Cluster& cluster, std::ostream& out) {
  const auto [lo, hi] = std::minmax_element(c.factors.begin(), c.factors.end());
  out << "calibrated at step " << step << ": devices compute at " << fixed(*lo, 2) << "-" << fixed(*hi, 2)
      << "x their profiled time; this plan is now predicted " << fixed(c.samples_per_second, 1)
      << " samples/s (was " << fixed(predicted_sps, 1) << ")\n";
  if (!c.suggested) return;
  const Plan& p = *c.suggested;
  out << "calibrated at step " << step << ": another plan is predicted " << fixed(c.suggested_samples_per_second, 1)
      << " samples/s (+" << fixed((c.suggested_samples_per_second / c.samples_per_second - 1) * 100, 0)
      << "%): " << p.stageCount() << " stages, " << p.microbatches << " micro-batches of " << p.microBatchSize()
      << "\n";
  for (int s = 0; s < p.stageCount(); ++s) {
    const Stage& st = p.stages[s];
    out << "  stage " << s << ": " << describeLayers(model, st.layer_begin, st.layer_end) << " on "
        << describeMembers(st, cluster, p.microBatchSize()) << "\n";
  }
}

}  // namespace

int runRun(std::span<const std::string> args) {
  ArgumentParser parser("run",
                        "Trains a model on a cluster's workers: profiles every worker, plans with the measured "
                        "profiles, deploys one stage assignment per device and trains with live progress.");
  parser.required("cluster", "C", "a cluster .json, or a shipped example such as cloud-edge-end")
      .option("model", "M", "a built-in model (see `models`) or a model .json (not needed with --plan)")
      .option("planner", "P", "hybrid, dp, dp-weighted, gpipe, pipedream or exhaustive", "hybrid")
      .option("plan", "FILE", "deploy this plan (stagecraft.v1.Plan JSON, e.g. from `plan --out`) instead of planning")
      .required("steps", "N", "training steps (iterations of one global batch)");
  addRequestOptions(parser);
  addCostOptions(parser);
  parser.option("lr", "X", "learning rate (default 0.05 for sgd, 0.001 for adam)", "auto")
      .option("momentum", "X", "SGD momentum", "0.9")
      .option("weight-decay", "X", "weight decay", "0")
      .option("data", "synthetic|mnist|cifar10", "training data", "synthetic")
      .option("data-path", "FILE", "MNIST IDX images or a CIFAR-10 binary batch, as the workers see it")
      .option("labels-path", "FILE", "MNIST IDX labels, as the workers see it")
      .option("seed", "S", "weight initialisation, sample order and the synthetic task", "1")
      .option("micro-batches", "N,N,...", "micro-batch sizes to profile", "1,4,16")
      .flag("no-profile", "plan from FLOPs and device speeds instead of profiling the workers")
      .flag("local", "start local workers for this run (see `cluster up`) and stop them afterwards")
      .option("worker-binary", "PATH", "the stagecraft-worker --local starts")
      .option("step-timeout", "SECONDS", "give up on a worker that reports nothing for this long", "120")
      .option("calibrate-after", "N",
              "after step N, re-time every device from telemetry, re-predict the plan and say on stderr when "
              "another plan is predicted faster (0: never)",
              "3")
      .option("suggested-plan", "FILE", "write that faster plan here (for `run --plan`)")
      .option("timeline", "FILE",
              "write every step's measured timeline after the predicted one as a Chrome trace (open in "
              "ui.perfetto.dev)")
      .flag("json", "print a stagecraft.v1.RunReport as JSON at the end")
      .epilog(
          "Progress goes to stderr. Exit status 1 when a worker fails or cannot be reached (the reason\n"
          "names it), 2 for bad input, 3 when no plan fits.");
  const ParsedArguments parsed = parser.parse(args);

  // Flags first, files and workers after.
  const std::int64_t steps = parsed.positiveInt("steps");
  const bool from_file = parsed.has("plan");
  if (from_file) {
    for (const char* flag : {"planner", "batch", "microbatches", "schedule", "optimizer"}) {
      if (parsed.has(flag)) throw Error(std::string("run: --plan fixes --") + flag + "; give one or the other");
    }
  }
  if (parsed.flag("no-profile") && parsed.has("profile"))
    throw Error("run: --no-profile and --profile exclude each other");
  if (parsed.has("worker-binary") && !parsed.flag("local")) throw Error("run: --worker-binary needs --local");
  if (!from_file && !parsed.has("model")) throw Error("run: missing required --model M (or --plan FILE)");
  const PlanRequest request = from_file ? PlanRequest{} : requestFromArguments(parsed);
  const auto planner = from_file ? nullptr : makePlanner(parsed.value("planner"));
  std::vector<int> profile_sizes = parsePositiveList("micro-batches", parsed.value("micro-batches"));
  if (request.microbatches > 0) profile_sizes.push_back(request.batch_size / request.microbatches);

  control::TrainingOptions training;
  training.momentum = parseNumber("momentum", parsed.value("momentum"));
  training.weight_decay = parseNumber("weight-decay", parsed.value("weight-decay"));
  training.data = parsed.value("data");
  training.data_path = parsed.value("data-path");
  training.labels_path = parsed.value("labels-path");
  training.seed = parseSeed(parsed.value("seed"));
  control::CoordinatorOptions coordinator_options;
  coordinator_options.silence_limit = secondsFlag("step-timeout", parsed.value("step-timeout"));
  const bool json = parsed.flag("json");
  const std::int64_t calibrate_after = parsed.nonNegativeInt("calibrate-after");

  // The model and, with --plan, the plan file.
  v1::Plan plan_file;
  std::optional<ModelSpec> loaded;
  if (from_file) {
    io::readJsonFile(parsed.value("plan"), plan_file);
    loaded = modelOfPlan(plan_file);
    if (parsed.has("model") && loadModel(parsed.value("model")).name() != loaded->name()) {
      throw Error("run: --model " + parsed.value("model") + " but the plan trains " + loaded->name());
    }
  } else {
    loaded = loadModel(parsed.value("model"));
  }
  const ModelSpec& model = *loaded;
  const Optimizer optimizer =
      from_file ? (plan_file.optimizer().empty() ? Optimizer::Sgd : parseOptimizer(plan_file.optimizer()))
                : optimizerFromArguments(parsed);
  if (optimizer == Optimizer::Invalid) throw Error("plan: optimizer must be sgd or adam");
  training.lr = parsed.value("lr") == "auto" ? (optimizer == Optimizer::Adam ? 0.001 : 0.05)
                                             : parseNumber("lr", parsed.value("lr"));
  control::checkTrainingOptions(training);

  // The workers: running ones, or local ones for this run. From here on Ctrl-C ends the
  // run between phases (or between steps) with the workers stopped, not killed mid-way.
  InterruptGuard interrupts;
  const auto interrupted = [&](const char* phase) {
    if (!g_interrupted) return false;
    printFailure(std::string("interrupted ") + phase);
    return true;
  };
  LiveCluster live = openCluster(parsed.value("cluster"));
  LocalWorkersGuard local_guard;
  if (parsed.flag("local") && !live.local) {
    control::LocalClusterOptions local_options;
    local_options.worker_binary = control::findWorkerBinary(parsed.value("worker-binary"), executablePath());
    local_guard.adopt(control::LocalCluster::start(live.cluster, live.path, local_options));
    live = openCluster(live.path);
    if (!json) std::cout << "Started local workers for " << live.cluster.name() << "\n";
  } else if (parsed.flag("local") && !json) {
    std::cout << "Using the local workers already running for " << live.cluster.name() << "\n";
  }
  const Cluster& cluster = live.cluster;
  control::Coordinator coordinator(cluster, coordinator_options);
  describeAll(coordinator, clusterUpHint(parsed.value("cluster")) + " (or pass --local)");
  if (!json) std::cout << "Cluster " << cluster.name() << ": " << cluster.size() << " workers answer\n";
  if (interrupted("before profiling")) return kExitInternal;

  // Plan under measured profiles.
  CostModel cost(model, cluster, optimizer);
  bool profiled = false;
  if (parsed.has("profile")) {
    applyProfile(parsed, cost);
  } else if (!parsed.flag("no-profile")) {
    std::sort(profile_sizes.begin(), profile_sizes.end());
    profile_sizes.erase(std::unique(profile_sizes.begin(), profile_sizes.end()), profile_sizes.end());
    const auto started = Clock::now();
    if (!json) std::cout << "Profiling " << model.name() << " on " << cluster.size() << " workers..." << std::endl;
    cost.setProfiles(coordinator.profile(model, profile_sizes, 3, [](const std::string& device, int done, int total) {
      std::cerr << "profiled " << device << " (" << done << "/" << total << ")\n";
    }));
    profiled = true;
    if (!json) {
      std::cout << "Profiled " << model.name() << " on every worker in "
                << fixed(std::chrono::duration<double>(Clock::now() - started).count(), 1) << " s\n";
    }
  }

  Plan plan;
  if (from_file) {
    plan = planFromProto(plan_file, cluster);
    if (const auto problems = validatePlan(plan, cost); !problems.empty()) {
      printFailure(firstOfMany("invalid plan: " + problems.front(), problems.size()));
      return kExitBadInput;
    }
  } else {
    const PlanOutcome outcome = makePlan(*planner, cost, request);
    if (!outcome.feasible) {
      printFailure(outcome.reason.empty() ? "planner '" + parsed.value("planner") + "' found no feasible plan"
                                          : outcome.reason);
      return kExitInfeasible;
    }
    plan = outcome.plan;
  }
  if (interrupted("before deploying")) return kExitInternal;
  const SimulationResult predicted = simulate(plan, cost);
  if (!json) {
    std::cout << "Plan by " << (plan.planner.empty() ? "a file" : plan.planner) << ": " << plan.stageCount()
              << " stages, batch " << plan.batch_size << " in " << plan.microbatches << " micro-batches of "
              << plan.microBatchSize() << ", " << scheduleName(plan.schedule) << ", predicted "
              << fixed(predicted.samples_per_second, 1) << " samples/s\n";
    for (int s = 0; s < plan.stageCount(); ++s) {
      const Stage& st = plan.stages[s];
      std::cout << "  stage " << s << ": " << describeLayers(model, st.layer_begin, st.layer_end) << " on "
                << describeMembers(st, cluster, plan.microBatchSize()) << "\n";
    }
  }

  // Deploy and train.
  coordinator.deploy(plan, model, training);
  if (!json) {
    std::cout << "Deployed job " << coordinator.job() << " to " << coordinator.assignments().size()
              << " workers; training " << steps << " steps\n"
              << std::flush;
  }
  if (interrupted("before training")) {
    coordinator.stop();
    return kExitInternal;
  }
  control::TrainingResult result;
  std::map<std::int64_t, std::vector<TimelineEvent>> measured;  // per step, every member's events
  std::vector<v1::IterationReport> latest(coordinator.assignments().size());
  std::optional<Calibration> calibration;
  {
    ProgressPrinter progress(steps);
    control::TrainingCallbacks callbacks;
    callbacks.on_step = [&](const control::StepResult& s) {
      progress.step(s);
      if (calibrate_after > 0 && s.step == calibrate_after && steps > calibrate_after && !calibration) {
        const PlanRequest again{plan.batch_size, 0, plan.schedule};
        progress.finish();
        try {
          calibration = calibrate(plan, cost, latest, planner ? *planner : *makePlanner("hybrid"), again);
        } catch (const std::exception& e) {
          // Advice only: a calibration that cannot be made never ends the run.
          std::cerr << "calibration at step " << s.step << " skipped: " << e.what() << "\n";
          return;
        }
        printCalibration(*calibration, s.step, predicted.samples_per_second, model, cluster, std::cerr);
        if (calibration->suggested && parsed.has("suggested-plan")) {
          io::writeJsonFile(parsed.value("suggested-plan"), planToProto(*calibration->suggested, model, cluster));
          std::cerr << "  wrote it to " << parsed.value("suggested-plan") << " (stagecraft-cli run --plan "
                    << parsed.value("suggested-plan") << ")\n";
        }
      }
    };
    callbacks.on_iteration = [&](int member, const v1::IterationReport& r) {
      if (member >= 0 && member < static_cast<int>(latest.size())) latest[member] = r;
      if (!parsed.has("timeline")) return;
      auto events = control::timelineEvents(r, coordinator.memberDevice(member), cluster);
      auto& step = measured[r.step()];
      step.insert(step.end(), events.begin(), events.end());
    };
    result = coordinator.train(steps, callbacks, &g_interrupted);
  }
  if (parsed.has("timeline")) writeTimeline(parsed.value("timeline"), predicted, result, measured, cluster);
  if (result.cancelled) {
    printFailure("interrupted after step " + std::to_string(result.steps.empty() ? 0 : result.steps.back().step) +
                 " of " + std::to_string(steps) + "; the workers were stopped");
    return kExitInternal;
  }

  v1::RunReport report;
  report.set_model(model.name());
  report.set_cluster(cluster.name());
  report.set_planner(plan.planner);
  report.set_job(coordinator.job());
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
    report.set_calibration_step(static_cast<int>(calibrate_after));
    for (int d = 0; d < cluster.size(); ++d) {
      (*report.mutable_compute_factors())[cluster.device(d).name] = calibration->factors[d];
    }
    report.set_calibrated_samples_per_second(calibration->samples_per_second);
    if (calibration->suggested) {
      *report.mutable_suggested_plan() = planToProto(*calibration->suggested, model, cluster);
      report.set_suggested_samples_per_second(calibration->suggested_samples_per_second);
    }
  }
  if (json) {
    printJson(report);
    return kExitOk;
  }
  const double ratio = report.predicted_samples_per_second() > 0
                           ? report.samples_per_second() / report.predicted_samples_per_second()
                           : 0;
  std::cout << "\nTrained " << model.name() << " on " << cluster.name() << " for " << report.steps() << " steps in "
            << fixed(report.wall_seconds(), 1) << " s\n"
            << "  loss " << fixed(result.steps.empty() ? 0 : result.steps.front().loss, 4) << " -> "
            << fixed(report.final_loss(), 4) << "\n"
            << "  measured " << fixed(report.samples_per_second(), 1) << " samples/s, predicted "
            << fixed(report.predicted_samples_per_second(), 1) << " samples/s (" << percent(ratio)
            << " of predicted)\n";
  if (calibration && calibration->samples_per_second > 0) {
    std::cout << "  calibrated at step " << calibrate_after << ": predicted "
              << fixed(calibration->samples_per_second, 1) << " samples/s ("
              << percent(report.samples_per_second() / calibration->samples_per_second) << " of calibrated)\n";
  }
  if (parsed.has("timeline")) {
    std::cout << "  wrote the predicted and measured timelines to " << parsed.value("timeline")
              << " (open it in https://ui.perfetto.dev)\n";
  }
  return kExitOk;
}

}  // namespace stagecraft::cli
