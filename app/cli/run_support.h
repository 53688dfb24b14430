#pragma once
// The pieces of `stagecraft-cli run` around the training run itself: signals, local
// workers, progress and what is printed about plans, calibration and recoveries.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "command_support.h"
#include "control/local_cluster.h"
#include "control/training_run.h"
#include "planner/planner.h"
#include "sim/simulator.h"
#include "stagecraft/v1/plan.pb.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft::cli {

/// Set by Ctrl-C or SIGTERM while an InterruptGuard lives.
extern std::atomic<bool> g_interrupted;
extern "C" void onInterrupt(int signal);
extern "C" void onHangup(int signal);

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

/// SIGHUP asks a running `run` to re-plan at its next step boundary (takeReplanSignal()).
class ReplanSignalGuard {
 public:
  ReplanSignalGuard();
  ~ReplanSignalGuard();
  ReplanSignalGuard(const ReplanSignalGuard&) = delete;
  ReplanSignalGuard& operator=(const ReplanSignalGuard&) = delete;

 private:
  struct sigaction old_ {};
};

/// Whether a SIGHUP arrived since the last call.
bool takeReplanSignal();

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

double parseNumber(const std::string& flag, const std::string& text);
std::uint64_t parseSeed(const std::string& text);

/// Mean throughput after the first (warm-up) step: batch over the slowest member's time.
double measuredSamplesPerSecond(const std::vector<control::StepResult>& steps, int batch);

/// The predicted iteration (processes 0..) and then every measured step (processes
/// 1000..), laid one after another from the predicted iteration's end.
void writeTimeline(const std::string& path, const SimulationResult& predicted,
                   const std::vector<control::StepResult>& steps,
                   const std::map<std::int64_t, std::vector<TimelineEvent>>& measured, const Cluster& cluster);

/// What telemetry says after a few steps: each device's compute factor, the deployed plan
/// re-simulated with them, and a faster plan under them when there is one.
struct Calibration {
  std::vector<std::string> devices;  ///< the deployed cluster's, when calibrated
  std::vector<double> factors;       ///< per device
  std::vector<std::int64_t> steps;   ///< the steps they are the medians of
  double samples_per_second = 0;
  std::optional<Plan> suggested;
  v1::Plan suggested_proto;
  double suggested_samples_per_second = 0;
};

/// Complete steps a calibration from telemetry waits for (control::StepWindow): the median
/// of three is the first that one slow step does not move.
constexpr std::size_t kCalibrationSteps = 3;

/// `cost` has the profiles but no compute factors; `steps` are complete steps, one report
/// per member each (control::medianFactors).
Calibration calibrate(const Plan& plan, const CostModel& cost, std::span<const std::vector<v1::IterationReport>> steps,
                      const Planner& planner, const PlanRequest& request);
void printCalibration(const Calibration& c, std::int64_t step, double predicted_sps, const ModelSpec& model,
                      const Cluster& cluster, std::ostream& out);

/// "  stage 0: fc1..fc3 on edge-1 (32)" per stage.
void printStages(const Plan& plan, const ModelSpec& model, const Cluster& cluster, std::ostream& out);
/// A device was lost: what the run does about it.
void printFailureNotice(const control::Recovery& r, std::ostream& out);
/// "after step N: D takes 1.38x as long as the plan expects, next to the other devices; a
/// re-plan is predicted 1.30x faster (--auto-replan applies such re-plans; SIGHUP re-plans now)".
void printStraggler(const control::StragglerNotice& n, std::ostream& out);
/// A re-plan's verdict, when it missed its promise; `going_back` says the run returns to the
/// plan before it.
void printMissedPromise(const control::PlanPromise& p, bool going_back, std::ostream& out);
/// What the divergence guard did and how to go on: a lower learning rate, from the
/// checkpoint when the run writes one.
void printDivergence(const control::Divergence& d, double lr, const std::string& checkpoint_dir, std::int64_t steps,
                     std::ostream& out);
/// The run goes on after a recovery or a re-plan: how long it took and the plan now.
void printRecovery(const control::Recovery& r, const Plan& plan, const ModelSpec& model, const Cluster& cluster,
                   std::ostream& out);

/// A private folder under $TMPDIR, removed with everything in it when this goes.
class TemporaryFolder {
 public:
  /// Throws an environment error when it cannot be made.
  explicit TemporaryFolder(const std::string& prefix);
  ~TemporaryFolder();
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// `run --export`: refuses a model that is not TorchScript; without a --checkpoint-dir,
/// points `settings` at a temporary one (returned) written only at the end of the run,
/// which the export reads.
std::unique_ptr<TemporaryFolder> prepareExport(const ModelSpec& model, control::RunSettings& settings);

/// One evaluation on stderr: "eval after step N: accuracy X% on S held-out samples, loss L (T s)".
void printEvaluation(const control::EvalResult& e, const ModelSpec& model, std::ostream& out);
v1::RunEval evalToProto(const control::EvalResult& e);
/// A recovery or re-plan as `run --json` lists it in `recoveries`.
v1::RunRecovery recoveryToProto(const control::Recovery& r);
/// The summary's lines on what happened to the run: each recovery or re-plan, what the
/// backups (every `backup_every` steps at the end) cost, telemetry the workers dropped.
void printRunNotes(const control::RunResult& result, std::int64_t backup_every, std::ostream& out);

}  // namespace stagecraft::cli
