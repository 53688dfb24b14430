#include "run_support.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <cstdio>

#include "control/replan.h"
#include "control/step_window.h"
#include "io/error.h"
#include "io/json_io.h"
#include "plan/plan_io.h"
#include "sim/sim_report.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft::cli {

std::atomic<bool> g_interrupted{false};
namespace {
std::atomic<bool> g_hangup{false};
}  // namespace

extern "C" void onInterrupt(int signal) {
  g_interrupted = true;
  // A second Ctrl-C (or SIGTERM) ends the process at once.
  ::signal(signal, SIG_DFL);
  constexpr char kCtrlC[] = "\nstagecraft-cli: stopping the workers (Ctrl-C again to quit at once)\n";
  constexpr char kTerm[] = "\nstagecraft-cli: SIGTERM: stopping the workers (SIGTERM again to quit at once)\n";
  const bool term = signal == SIGTERM;
  [[maybe_unused]] const auto written =
      ::write(STDERR_FILENO, term ? kTerm : kCtrlC, term ? sizeof kTerm - 1 : sizeof kCtrlC - 1);
}

extern "C" void onHangup(int) {
  g_hangup = true;
  constexpr char kNote[] = "\nstagecraft-cli: SIGHUP: re-planning at the next step boundary\n";
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, kNote, sizeof kNote - 1);
}

ReplanSignalGuard::ReplanSignalGuard() {
  g_hangup = false;
  struct sigaction action {};
  action.sa_handler = onHangup;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGHUP, &action, &old_);
}

ReplanSignalGuard::~ReplanSignalGuard() { ::sigaction(SIGHUP, &old_, nullptr); }

bool takeReplanSignal() { return g_hangup.exchange(false); }

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
void writeTimeline(const std::string& path, const SimulationResult& predicted,
                   const std::vector<control::StepResult>& steps_done,
                   const std::map<std::int64_t, std::vector<TimelineEvent>>& measured, const Cluster& cluster) {
  constexpr int kMeasuredPids = 1000;
  v1::ChromeTrace trace;
  appendChromeTrace(trace, predicted.timeline, cluster, 0, " (predicted)");
  std::vector<TimelineEvent> steps;
  double offset = predicted.iteration_ms;
  for (const auto& s : steps_done) {
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


/// A plan must be predicted this much faster under the calibrated costs to be suggested:
/// less is within what a re-plan's own disruption and the calibration's noise eat up.
constexpr double kSuggestGain = 1.10;

Calibration calibrate(const Plan& plan, const CostModel& cost, std::span<const std::vector<v1::IterationReport>> steps,
                      const Planner& planner, const PlanRequest& request) {
  Calibration c;
  for (const Device& d : cost.cluster().devices()) c.devices.push_back(d.name);
  c.factors = control::medianFactors(plan, cost, steps);
  for (const auto& step : steps) c.steps.push_back(step.front().step());
  CostModel calibrated = cost;
  calibrated.setComputeFactors(c.factors);
  c.samples_per_second = simulate(plan, calibrated).samples_per_second;
  const PlanOutcome outcome = makePlan(planner, calibrated, request);
  if (outcome.feasible && outcome.simulated_ms > 0) {
    const double sps = plan.batch_size * 1000.0 / outcome.simulated_ms;
    if (sps > c.samples_per_second * kSuggestGain) {
      c.suggested = outcome.plan;
      c.suggested_proto = planToProto(outcome.plan, cost.model(), cost.cluster());
      c.suggested_samples_per_second = sps;
    }
  }
  return c;
}

void printCalibration(const Calibration& c, std::int64_t step, double predicted_sps, const ModelSpec& model,
                      const Cluster& cluster, std::ostream& out) {
  const auto [lo, hi] = std::minmax_element(c.factors.begin(), c.factors.end());
  std::string from;
  for (const std::int64_t s : c.steps) from += (from.empty() ? "" : ", ") + std::to_string(s);
  // One factor where they all round alike (a plan of one device: the others take its factor).
  const std::string range = fixed(*lo, 2) == fixed(*hi, 2) ? fixed(*lo, 2) : fixed(*lo, 2) + "-" + fixed(*hi, 2);
  out << "calibrated at step " << step << " (the median of steps " << from << "): devices compute at " << range
      << "x their profiled time; this plan is now predicted " << fixed(c.samples_per_second, 1)
      << " samples/s (was " << fixed(predicted_sps, 1) << ")\n";
  if (!c.suggested) return;
  const Plan& p = *c.suggested;
  out << "calibrated at step " << step << ": another plan is predicted " << fixed(c.suggested_samples_per_second, 1)
      << " samples/s (+" << fixed((c.suggested_samples_per_second / c.samples_per_second - 1) * 100, 0)
      << "%): " << counted(p.stageCount(), "stage") << ", "
      << counted(p.microbatches, "micro-batch", "micro-batches") << " of " << p.microBatchSize() << "\n";
  printStages(p, model, cluster, out);
}

void printStages(const Plan& plan, const ModelSpec& model, const Cluster& cluster, std::ostream& out) {
  for (int s = 0; s < plan.stageCount(); ++s) {
    const Stage& st = plan.stages[s];
    out << "  stage " << s << ": " << describeLayers(model, st.layer_begin, st.layer_end) << " on "
        << describeMembers(st, cluster, plan.microBatchSize()) << "\n";
  }
}

void printFailureNotice(const control::Recovery& r, std::ostream& out) {
  out << "after step " << r.failed_after << ": " << r.device << " " << control::recoveryKindName(r.kind)
      << " (noticed " << fixed(r.detected_ms / 1000.0, 2) << " s after the last step); "
      << (r.action == "group"   ? std::string("its group's survivors take its samples")
          : r.action == "retry" ? std::string("it answers again; the same plan goes on")
                                : "re-planning over the " + std::to_string(r.devices) + " devices left")
      << ", replaying from step " << r.step << "\n";
  if (!r.backup.empty()) out << "  state of step " << r.step << ": " << r.backup << "\n";
  if (!r.reason.empty()) out << "  (" << r.reason << ")\n";
}

void printStraggler(const control::StragglerNotice& n, std::ostream& out) {
  out << "after step " << n.step << ": " << n.device << " takes " << fixed(n.slower_by, 2)
      << "x as long as the plan expects, next to the other devices; ";
  if (n.gain <= 0) {
    out << "no other plan was found\n";
  } else if (n.applying) {
    out << "re-planning, predicted " << fixed(n.gain, 2) << "x faster\n";
  } else {
    out << "a re-plan is predicted " << fixed(n.gain, 2) << "x faster (--auto-replan applies such re-plans; SIGHUP "
        << "re-plans now)\n";
  }
}

void printMissedPromise(const control::PlanPromise& p, bool going_back, std::ostream& out) {
  out << "after step " << p.judged_step << ": the re-plan at step " << p.from_step << " promised "
      << fixed(p.promised_sps, 1) << " samples/s and measured " << fixed(p.measured_sps, 1) << " ("
      << fixed(100 * p.measured_sps / p.promised_sps, 0) << "% of it)";
  if (p.before_sps > 0) out << "; the plan before it measured " << fixed(p.before_sps, 1);
  out << (going_back ? "; going back to that plan\n" : "; keeping it, it is still the faster one\n");
}

void printDivergence(const control::Divergence& d, double lr, const std::string& checkpoint_dir, std::int64_t steps,
                     std::ostream& out) {
  char lower[32];
  std::snprintf(lower, sizeof lower, "%g", lr / 5);
  out << "stagecraft-cli: training diverged at step " << d.step << ": " << d.reason
      << "; stopped, and the workers went back to the weights of step " << d.kept_step << "\n"
      << "  lower the learning rate (now " << lr << "), e.g. ";
  if (checkpoint_dir.empty()) {
    out << "--lr " << lower << " (with --checkpoint-dir DIR a run can also go on from where it stopped)\n";
  } else {
    out << "stagecraft-cli run --resume " << checkpoint_dir << " --steps " << steps << " --lr " << lower << "\n";
  }
}

void printRecovery(const control::Recovery& r, const Plan& plan, const ModelSpec& model, const Cluster& cluster,
                   std::ostream& out) {
  if (r.kind == control::RecoveryKind::Straggler) {
    out << "re-planned around " << r.device << " at step " << r.step << " in " << fixed(r.recovered_ms / 1000.0, 2)
        << " s: ";
  } else if (r.kind == control::RecoveryKind::Manual) {
    out << "re-planned at step " << r.step << " in " << fixed(r.recovered_ms / 1000.0, 2) << " s: ";
  } else if (r.kind == control::RecoveryKind::Joined) {
    out << r.device << " joined at step " << r.step << ", re-planned in " << fixed(r.recovered_ms / 1000.0, 2)
        << " s: ";
  } else {
    out << "recovered from " << r.device << " " << control::recoveryKindName(r.kind) << " in "
        << fixed(r.recovered_ms / 1000.0, 2) << " s (" << r.replayed_steps
        << (r.replayed_steps == 1 ? " step" : " steps") << " replayed): ";
  }
  out << counted(plan.stageCount(), "stage") << " on " << counted(r.devices, "device") << ", "
      << counted(plan.microbatches, "micro-batch", "micro-batches") << " of " << plan.microBatchSize() << "\n";
  printStages(plan, model, cluster, out);
}

TemporaryFolder::TemporaryFolder(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw environmentError("cannot make a folder in " + pattern);
  path_ = pattern;
}

TemporaryFolder::~TemporaryFolder() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::unique_ptr<TemporaryFolder> prepareExport(const ModelSpec& model, control::RunSettings& settings) {
  if (!model.proto().has_script()) {
    throw Error("--export writes TorchScript models (--model FILE.pt); " + model.name() +
                " is not one (its weights are in --checkpoint-dir's checkpoint.pb)");
  }
  if (!settings.checkpoint_dir.empty()) return nullptr;
  auto folder = std::make_unique<TemporaryFolder>("stagecraft-export");
  settings.checkpoint_dir = folder->path();
  settings.checkpoint_every = std::numeric_limits<std::int64_t>::max();
  return folder;
}

void printEvaluation(const control::EvalResult& e, const ModelSpec& model, std::ostream& out) {
  out << "eval after step " << e.step << ": accuracy " << percent(e.accuracy) << " on " << e.samples << " held-out "
      << (model.proto().task() == "language_model" ? "tokens" : "samples") << ", loss " << fixed(e.loss, 4) << " ("
      << fixed(e.ms / 1000.0, 2) << " s)\n";
}

v1::RunEval evalToProto(const control::EvalResult& e) {
  v1::RunEval out;
  out.set_step(e.step);
  out.set_accuracy(e.accuracy);
  out.set_loss(e.loss);
  out.set_samples(e.samples);
  out.set_ms(e.ms);
  return out;
}

v1::RunRecovery recoveryToProto(const control::Recovery& r) {
  v1::RunRecovery out;
  out.set_device(r.device);
  out.set_kind(std::string(control::recoveryKindName(r.kind)));
  out.set_action(r.action);
  out.set_step(r.step);
  out.set_failed_after(r.failed_after);
  out.set_replayed_steps(r.replayed_steps);
  out.set_detected_ms(r.detected_ms);
  out.set_recovered_ms(r.recovered_ms);
  out.set_stages(r.stages);
  out.set_devices(r.devices);
  out.set_backup(r.backup);
  return out;
}

void printRunNotes(const control::RunResult& result, std::int64_t backup_every, std::ostream& out) {
  for (const control::Recovery& r : result.recoveries) {
    out << "  "
        << (r.kind == control::RecoveryKind::Manual      ? std::string("re-planned")
            : r.kind == control::RecoveryKind::Joined    ? r.device + " joined, re-planned"
            : r.kind == control::RecoveryKind::Straggler ? "re-planned around " + r.device + " (a straggler)"
                                                         : "recovered from " + r.device + " " +
                                                               std::string(control::recoveryKindName(r.kind)))
        << " after step " << r.failed_after << " in " << fixed(r.recovered_ms / 1000.0, 2) << " s, "
        << r.replayed_steps << (r.replayed_steps == 1 ? " step" : " steps") << " replayed\n";
  }
  if (result.backup_share > 0) {
    out << "  backups held up the stages that take them for " << percent(result.backup_share)
        << " of a step (every " << backup_every << (backup_every == 1 ? " step" : " steps")
        << ", sent to a neighbour beside training)\n";
  }
  if (result.backup_measured_ms > 0) {
    out << "  each backup cost the steps " << fixed(result.backup_measured_ms, 0)
        << " ms, as measured (the steps that carry it against those clear of it)\n";
  }
  if (result.telemetry_dropped > 0) {
    out << "  the workers dropped " << result.telemetry_dropped << " telemetry reports (read too slowly)\n";
  }
}

}  // namespace stagecraft::cli
