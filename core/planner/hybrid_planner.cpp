// The hybrid planner: Asteroid's dynamic programme over (layers x devices x stages)
// with per-device memory limits, run over several device orderings (by speed, by
// memory, by network domain as SpanTrain groups devices), each result refined by local
// search on the full cost model.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <numeric>
#include <queue>
#include <thread>

#include "planner/device_orderings.h"
#include "planner/plan_draft.h"
#include "planner/planners.h"

namespace stagecraft {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// More stages than this rarely pays on edge clusters and multiplies the DP's cost.
constexpr int kMaxStages = 16;
constexpr double kRefineBudgetMs = 2500;
/// The best DP results that local search starts from.
constexpr size_t kRefineStarts = 4;
/// Plans the simulator judges at the end: the refined ones, then the next-best DP results.
constexpr size_t kFinalists = 24;
/// The finalists, best by simulation first, that climb on the simulator, and the bounds of
/// the time they and the finalists' simulation may take (see plan()).
constexpr size_t kSimulatedClimbs = 12;
constexpr double kSimulatedBudgetMs = 1000;
constexpr double kMinSimulatedBudgetMs = 200;
/// Clusters of up to HybridOptions::whole_orderings_up_to devices get the DP over whole
/// orderings with groups of any size. Larger ones would cost the DP the square of the device
/// count per ordering: there each ordering is cut to its first kLargeDpDevices devices, and
/// a group has at most as many members as a micro-batch has samples (more would leave
/// members without work, which materialize() drops anyway).
constexpr int kLargeDpDevices = 128;
/// The DP keeps two tables: one scores the estimated iteration time, the other the
/// pipeline period first (PipeDream's objective); local search then judges both.
constexpr int kObjectives = 2;

/// A sub-pipeline's summary: its steady-state period, its fill (one micro-batch's trip
/// through it both ways) and its slowest all-reduce.
struct DpValue {
  double period = kInf;
  double fill = kInf;
  double allreduce = 0;
  double first_work = 0;  // forward + backward of the sub-pipeline's first stage
  int next_cut = -1;     // index into the cut candidates where the next stage starts
  int next_device = -1;  // index into the ordering where the next stage's group starts
  int group_end = -1;    // this stage's group is ordering[device, group_end)
};

/// The DP over one device ordering.
class StageDp {
 public:
  /// `max_group`: the most members a stage's group may have (0: any number).
  StageDp(const CostModel& cost, const Plan& skeleton, std::vector<int> order, std::vector<int> cuts,
          int max_group = 0)
      : cost_(cost), skeleton_(skeleton), order_(std::move(order)), cuts_(std::move(cuts)),
        D_(static_cast<int>(order_.size())),
        n_(static_cast<int>(cuts_.size()) - 1), micro_(skeleton.microBatchSize()),
        M_(skeleton.microbatches), gpipe_(skeleton.schedule == Schedule::GPipe),
        max_group_(max_group > 0 ? std::min(max_group, D_) : D_) {
    profiled_ = false;
    for (int d = 0; d < cost.deviceCount(); ++d) profiled_ = profiled_ || cost.hasProfile(d);
    prepareGroups();
  }

  /// The best draft for every stage count, under each of the two objectives.
  std::vector<PlanDraft> solve() {
    const int max_stages = std::min({kMaxStages, D_, n_});
    // table_[v][k][i][j]: layers from cut i on, devices from ordering position j on, in
    // k stages, best under objective v (0: estimated iteration time, 1: period first).
    for (auto& t : table_) t.assign(max_stages + 1, std::vector<DpValue>(static_cast<size_t>(n_ + 1) * (D_ + 1)));
    // A cell (k, i, j) reads only cells of later cuts (i2 > i), so every stage count of a
    // cell is filled in turn: the stage times of its first stage, which every count asks
    // for again, are then split once (splits_).
    splits_.assign(static_cast<size_t>(max_group_) * (n_ + 1), {});
    for (int i = n_ - 1; i >= 0; --i) {
      for (int j = D_ - 1; j >= 0; --j) {
        ++cell_;
        for (int k = 1; k <= max_stages; ++k) {
          fill(k, i, j, skeleton_.schedule == Schedule::GPipe ? M_ : std::min(k, M_));
        }
      }
    }
    std::vector<PlanDraft> drafts;
    for (int k = 1; k <= max_stages; ++k) {
      for (int v = 0; v < kObjectives; ++v) {
        if (auto d = extract(v, k)) drafts.push_back(std::move(*d));
      }
    }
    return drafts;
  }

 private:
  struct Group {
    std::vector<int> devices;
    std::vector<int> shares;  // speed-proportional split, no memory caps
    double fwd_per_flop = 0;  // ms per forward FLOP of one sample's worth for the group
    double bwd_per_flop = 0;
    double send_latency = 0;  // to the first device of the next group
    double send_per_byte = 0;
    double ar_latency = 0;
    double ar_per_byte = 0;
    double min_limit = 0;
    double max_limit = 0;
    int max_share = 0;
  };

  /// What group `g`'s all-reduce of layers [b, e) adds after its last backward (`bwd`), in
  /// closed form for the DP's inner loop (CostModel::allReduceSpan walks every bucket; the
  /// final choice is by simulation): the ring starts once the backward has passed the last
  /// layers' bucket (in proportion to FLOPs) and then runs back to back, or at least the
  /// first layers' bucket (what is left over whole buckets) follows the backward.
  double exposedAllReduce(const Group& g, int b, int e, double bwd) const {
    if (g.devices.size() <= 1) return 0;
    const ModelSpec& model = cost_.model();
    const double bytes = 4.0 * model.parameters(b, e);
    if (bytes <= 0) return 0;
    const int first_end = gradientBucketBegin(model, b, e);
    const double flops = model.backwardFlops(b, e);
    const double ready = flops > 0 ? bwd * model.backwardFlops(first_end, e) / flops : bwd;
    const double buckets = std::max(1.0, std::floor(bytes / kGradientBucketBytes));
    const double last = bytes - (buckets - 1) * kGradientBucketBytes;
    const double ring = buckets * g.ar_latency + g.ar_per_byte * bytes;
    return std::max({0.0, ready + ring - bwd, g.ar_latency + g.ar_per_byte * last});
  }

  Group& group(int j, int j2) { return groups_[j * (D_ + 1) + j2]; }
  DpValue& at(int v, int k, int i, int j) { return table_[v][k][i * (D_ + 1) + j]; }

  void prepareGroups() {
    groups_.assign(static_cast<size_t>(D_ + 1) * (D_ + 1), {});
    const Cluster& cluster = cost_.cluster();
    for (int j = 0; j < D_; ++j) {
      for (int j2 = j + 1; j2 <= std::min(D_, j + max_group_); ++j2) {
        Group& g = group(j, j2);
        g.devices.assign(order_.begin() + j, order_.begin() + j2);
        const size_t size = g.devices.size();
        // Give each sample to the member that would finish it first (time is linear in
        // samples here, so this is the speed-proportional split, rounded well).
        g.shares.assign(size, 0);
        using Entry = std::pair<double, size_t>;
        std::priority_queue<Entry, std::vector<Entry>, std::greater<>> next;
        for (size_t k = 0; k < size; ++k) next.push({1.0 / cluster.device(g.devices[k]).gflops, k});
        for (int s = 0; s < micro_; ++s) {
          auto [t, k] = next.top();
          next.pop();
          ++g.shares[k];
          next.push({(g.shares[k] + 1) / cluster.device(g.devices[k]).gflops, k});
        }
        g.min_limit = kInf;
        double ring_bw = kInf, ring_lat = 0;
        for (size_t k = 0; k < size; ++k) {
          const int dev = g.devices[k];
          g.fwd_per_flop = std::max(g.fwd_per_flop, g.shares[k] / (cluster.device(dev).gflops * 1e6));
          // Members without samples are dropped from the plan, so their memory is moot.
          if (g.shares[k] > 0) g.min_limit = std::min(g.min_limit, cost_.memoryLimitBytes(dev));
          g.max_limit = std::max(g.max_limit, cost_.memoryLimitBytes(dev));
          g.max_share = std::max(g.max_share, g.shares[k]);
          const int nxt = g.devices[(k + 1) % size];
          if (size > 1) {
            ring_bw = std::min(ring_bw, cluster.bandwidthMbps(dev, nxt));
            ring_lat = std::max(ring_lat, cluster.latencyMs(dev, nxt));
          }
          if (j2 < D_ && g.shares[k] > 0) {
            const int to = order_[j2];
            g.send_latency = std::max(g.send_latency, cluster.latencyMs(dev, to));
            g.send_per_byte = std::max(g.send_per_byte, g.shares[k] * 8.0 / (cluster.bandwidthMbps(dev, to) * 1e3));
          }
        }
        g.bwd_per_flop = g.fwd_per_flop;
        if (size > 1) {
          g.ar_per_byte = 2.0 * (size - 1) / size * 8.0 / (ring_bw * 1e3);
          g.ar_latency = 2.0 * (size - 1) * ring_lat;
        }
      }
    }
  }

  /// Forward and backward ms of one micro-batch of layers [b, e) = [cuts_[i], cuts_[i2]) on
  /// group [j, j2), or false when the group cannot hold it. (i, j) is the cell being filled
  /// (cell_), whose splits splits_ holds.
  bool stageTimes(int i, int j, int j2, int i2, int in_flight, double& fwd, double& bwd) {
    const int b = cuts_[i], e = cuts_[i2];
    Group& g = group(j, j2);
    const ModelSpec& model = cost_.model();
    const double state = cost_.stateBytes(b, e);
    const double per_sample = model.savedBytes(b, e) * in_flight;
    if (state + per_sample > g.max_limit) return false;
    bool fits = !profiled_ && g.min_limit >= state + per_sample * g.max_share;
    if (!fits && !profiled_) {
      fits = true;
      for (size_t k = 0; k < g.devices.size() && fits; ++k) {
        fits = g.shares[k] == 0 || cost_.memoryLimitBytes(g.devices[k]) >= state + per_sample * g.shares[k];
      }
    }
    if (fits) {
      fwd = model.forwardFlops(b, e) * g.fwd_per_flop;
      bwd = model.backwardFlops(b, e) * g.bwd_per_flop;
      return true;
    }
    // Memory binds (or times are measured, not linear): take the exact capped split. The
    // split with one micro-batch in flight has the loosest caps; while it gives no member
    // more than its cap at `in_flight`, the split there is the same one (the members that
    // reach a cap were never given another sample), so it is computed once per cell.
    Split& split = splits_[static_cast<size_t>(j2 - j - 1) * (n_ + 1) + i2];
    if (split.cell != cell_) {
      split = Split{};
      split.cell = cell_;
      if (const auto loosest = cost_.splitMicroBatch(g.devices, b, e, micro_, 1)) {
        split.feasible = true;
        split.fits_up_to = std::numeric_limits<int>::max();
        for (size_t k = 0; k < g.devices.size(); ++k) {
          const int samples = (*loosest)[k];
          split.fwd = std::max(split.fwd, cost_.forwardMs(g.devices[k], b, e, samples));
          split.bwd = std::max(split.bwd, cost_.backwardMs(g.devices[k], b, e, samples));
          if (samples > 0) split.fits_up_to = std::min(split.fits_up_to, inFlightHolding(g.devices[k], b, e, samples));
        }
      }
    }
    // Caps only fall as more micro-batches are in flight: no room at one, none at any.
    if (!split.feasible) return false;
    if (in_flight <= split.fits_up_to) {
      fwd = split.fwd;
      bwd = split.bwd;
      return true;
    }
    const auto shares = cost_.splitMicroBatch(g.devices, b, e, micro_, in_flight);
    if (!shares) return false;
    fwd = bwd = 0;
    for (size_t k = 0; k < g.devices.size(); ++k) {
      fwd = std::max(fwd, cost_.forwardMs(g.devices[k], b, e, (*shares)[k]));
      bwd = std::max(bwd, cost_.backwardMs(g.devices[k], b, e, (*shares)[k]));
    }
    return true;
  }

  /// The most micro-batches in flight, up to M_ (no stage holds more), with which device
  /// `d` still holds `samples` of each for layers [b, e); `samples` fit with one. Binary
  /// search, since CostModel::maxSamples only falls as more are in flight.
  int inFlightHolding(int d, int b, int e, int samples) const {
    int lo = 1, hi = std::max(1, M_);
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (cost_.maxSamples(d, b, e, mid) >= samples) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  double score(int objective, const DpValue& v) const {
    if (objective == 1) return v.period + 1e-6 * (v.fill + v.allreduce);
    return v.fill + (M_ - 1) * v.period + v.allreduce;
  }

  void fill(int k, int i, int j, int in_flight) {
    DpValue best[kObjectives];
    double best_score[kObjectives];
    std::fill(std::begin(best_score), std::end(best_score), kInf);
    // k stages need k layer blocks and k devices; the rest (k - 1 stages) starts at
    // (i2, j2), so it needs as many blocks and devices after those.
    if (n_ - i < k || D_ - j < k) return;  // the cell stays infeasible
    const ModelSpec& model = cost_.model();
    const int b = cuts_[i];
    const int first_i2 = k == 1 ? n_ : i + 1;
    const int last_i2 = k == 1 ? n_ : n_ - (k - 1);
    const int last_j2 = std::min(k == 1 ? D_ : D_ - (k - 1), j + max_group_);
    for (int j2 = j + 1; j2 <= last_j2; ++j2) {
      const Group& g = group(j, j2);
      // More layers only need more memory, so the first range that does not fit this
      // group ends the scan over longer ones. They also take longer: once this stage's own
      // work alone scores no better than the best under both objectives (a score is at least
      // M times the first stage's work, a period at least that work), no longer range can win.
      for (int i2 = first_i2; i2 <= last_i2; ++i2) {
        const int e = cuts_[i2];
        double fwd, bwd;
        if (!stageTimes(i, j, j2, i2, in_flight, fwd, bwd)) break;
        if ((fwd + bwd) * M_ >= best_score[0] && fwd + bwd >= best_score[1]) break;
        const double boundary = i2 < n_ ? model.outputBytes(e - 1) : 0;
        const double wire = k > 1 ? g.send_per_byte * boundary : 0;
        const double send = k > 1 ? g.send_latency + wire : 0;
        const double ar = exposedAllReduce(g, b, e, bwd);
        for (int o = 0; o < kObjectives; ++o) {
          DpValue rest;
          if (k > 1) {
            rest = at(o, k - 1, i2, j2);
            if (rest.period == kInf) continue;
          } else {
            rest.period = rest.fill = 0;
          }
          DpValue v;
          v.period = std::max({fwd + bwd, wire, rest.period});
          // 1F1B keeps neighbours one micro-batch apart (see estimatePlan).
          if (k > 1 && !gpipe_) v.period = std::max(v.period, (fwd + bwd + rest.first_work + 2 * send) / 2);
          v.first_work = fwd + bwd;
          v.fill = fwd + bwd + 2 * send + rest.fill;
          v.allreduce = std::max(ar, rest.allreduce);
          v.next_cut = i2;
          v.next_device = j2;
          v.group_end = j2;
          const double sc = score(o, v);
          if (sc < best_score[o]) {
            best_score[o] = sc;
            best[o] = v;
          }
        }
      }
    }
    for (int o = 0; o < kObjectives; ++o) at(o, k, i, j) = best[o];
  }

  std::optional<PlanDraft> extract(int objective, int k) {
    if (at(objective, k, 0, 0).period == kInf) return std::nullopt;
    PlanDraft d;
    int i = 0, j = 0;
    d.cuts.push_back(0);
    for (int level = k; level >= 1; --level) {
      const DpValue& v = at(objective, level, i, j);
      d.groups.emplace_back(order_.begin() + j, order_.begin() + v.group_end);
      i = v.next_cut;
      j = v.next_device;
      d.cuts.push_back(cuts_[i]);
    }
    return d;
  }

  const CostModel& cost_;
  const Plan& skeleton_;
  std::vector<int> order_;
  std::vector<int> cuts_;
  int D_, n_, micro_, M_;
  bool gpipe_;
  int max_group_;
  bool profiled_ = false;
  std::vector<Group> groups_;
  /// The first stage's split for the cell (i, j) being filled, per group end j2 and cut i2.
  struct Split {
    std::int64_t cell = -1;
    bool feasible = false;  // the group holds the micro-batch with one in flight
    double fwd = 0, bwd = 0;
    int fits_up_to = 0;  // the most micro-batches in flight that split holds
  };
  std::vector<Split> splits_;
  std::int64_t cell_ = 0;
  std::vector<std::vector<DpValue>> table_[kObjectives];
};

/// Runs `job(0) .. job(count - 1)` on up to `threads` threads (0: one per core); the first
/// exception any job threw is rethrown once all have finished.
template <typename Job>
void runEach(size_t count, unsigned threads, const Job& job) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, count));
  std::vector<std::exception_ptr> errors(count);
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        job(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

class HybridPlanner final : public Planner {
 public:
  explicit HybridPlanner(HybridOptions options) : options_(options) {}
  std::string_view name() const override { return "hybrid"; }
  std::string_view description() const override {
    return "hybrid pipeline: DP over layers x devices x stages with memory limits, several "
           "device orderings, refined by local search";
  }

  PlanOutcome plan(const CostModel& cost, const PlanRequest& request) const override {
    const Plan skeleton = emptyPlan(cost, request, name());
    const auto cuts = cutCandidates(cost.model());
    struct Candidate {
      double ms;
      PlanDraft draft;
    };
    std::vector<Candidate> candidates;
    const auto dp_started = std::chrono::steady_clock::now();
    std::vector<std::vector<int>> orders = deviceOrderings(cost.cluster());
    int max_group = 0;  // any
    if (cost.cluster().size() > options_.whole_orderings_up_to) {
      // A large cluster: the DP over each ordering's first devices, groups no wider than a
      // micro-batch has samples; local search below may still move any device in.
      max_group = std::max(1, skeleton.microBatchSize());
      for (auto& order : orders) {
        if (static_cast<int>(order.size()) > kLargeDpDevices) order.resize(kLargeDpDevices);
      }
      std::sort(orders.begin(), orders.end());
      orders.erase(std::unique(orders.begin(), orders.end()), orders.end());
    }
    // The orderings are independent: each on a thread of its own, the results gathered in
    // ordering order so the plan does not depend on the thread count.
    std::vector<std::vector<Candidate>> per_order(orders.size());
    runEach(orders.size(), options_.threads, [&](size_t o) {
      StageDp dp(cost, skeleton, orders[o], cuts, max_group);
      for (auto& draft : dp.solve()) {
        const double ms = draftIterationMs(draft, cost, skeleton);
        if (ms < kInf) per_order[o].push_back({ms, std::move(draft)});
      }
    });
    for (auto& found : per_order) {
      for (auto& c : found) candidates.push_back(std::move(c));
    }
    const double dp_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - dp_started).count();
    if (candidates.empty()) {
      PlanOutcome none;
      none.reason = explainNoFit(cost, request);
      return none;
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.ms < b.ms; });
    // Refine the few best starting points; the climb is cheap next to the DP. The refined
    // drafts and the next-best DP results are the finalists, and the simulator, not the
    // closed-form estimate the search ran on, picks among them.
    std::vector<PlanDraft> finalists;
    const auto add = [&](PlanDraft draft) {
      if (std::find(finalists.begin(), finalists.end(), draft) == finalists.end()) finalists.push_back(std::move(draft));
    };
    const size_t starts = std::min(kRefineStarts, candidates.size());
    for (size_t c = 0; c < starts; ++c) {
      add(refineDraft(candidates[c].draft, cost, skeleton, kRefineBudgetMs / static_cast<double>(kRefineStarts)));
    }
    // The best of each stage count too: the estimate's error differs between a single
    // data-parallel stage and a pipeline, so the pool should hold both kinds.
    std::vector<bool> seen_stages(kMaxStages + 1, false);
    for (const auto& c : candidates) {
      const int k = c.draft.stageCount();
      if (seen_stages[k]) continue;
      seen_stages[k] = true;
      add(c.draft);
    }
    for (size_t c = 0; c < candidates.size() && finalists.size() < kFinalists; ++c) add(candidates[c].draft);
    // The estimate can rank near-equal plans the wrong way round and hide a better
    // neighbour: the simulator judges the finalists (the refined ones first), and the best
    // of them climb once more on it, within half the DP's wall time (at least
    // kMinSimulatedBudgetMs, at most kSimulatedBudgetMs: large clusters' simulations are
    // slow; the first few finalists are judged whatever it costs). It was a twentieth of a
    // DP that ran on one thread without pruning, then a quarter of one that split every
    // profiled stage once per stage count; a faster DP must not climb less.
    const double budget_ms = std::clamp(dp_ms / 2, kMinSimulatedBudgetMs, kSimulatedBudgetMs);
    const auto started = std::chrono::steady_clock::now();
    const auto spent_ms = [&] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    };
    std::vector<std::pair<double, size_t>> simulated;
    for (size_t f = 0; f < finalists.size(); ++f) {
      if (f > starts && spent_ms() > budget_ms / 2) break;
      simulated.emplace_back(draftIterationMs(finalists[f], cost, skeleton, DraftObjective::Simulated), f);
    }
    std::sort(simulated.begin(), simulated.end());
    std::pair<double, PlanDraft> best{simulated.front().first, finalists[simulated.front().second]};
    const size_t climbs = std::min(kSimulatedClimbs, simulated.size());
    for (size_t c = 0; c < climbs && simulated[c].first < kInf; ++c) {
      const double left_ms = budget_ms - spent_ms();
      if (left_ms <= 0) break;
      PlanDraft climbed = refineDraft(finalists[simulated[c].second], cost, skeleton,
                                      left_ms / static_cast<double>(climbs - c), DraftObjective::Simulated);
      const double ms = draftIterationMs(climbed, cost, skeleton, DraftObjective::Simulated);
      if (ms < best.first) best = {ms, std::move(climbed)};
    }
    return finishOutcome(*materialize(best.second, cost, skeleton), cost);
  }

 private:
  HybridOptions options_;
};

}  // namespace

std::unique_ptr<Planner> makeHybridPlanner(HybridOptions options) { return std::make_unique<HybridPlanner>(options); }

}  // namespace stagecraft
