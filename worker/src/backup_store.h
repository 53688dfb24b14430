#pragma once
// Backups of stage state, kept off the pipeline's critical path. A stage's rank-0 member
// keeps its last few states (one per backup step) and hands the newest to a sender thread
// that ships it to a neighbour worker, which holds the last few it received. After a loss
// the coordinator finds a step every stage still has somewhere and replays from it.
// Torch-free.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cost/cost_model.h"
#include "stagecraft/v1/worker.pb.h"

namespace grpc {
class ClientContext;
}

namespace stagecraft::worker {

using StateCopy = std::shared_ptr<const v1::StageWeights>;

class BackupStore {
 public:
  /// States kept per stage (own) and held for a neighbour, as the cost model counts them.
  static constexpr std::size_t kOwnCopies = kOwnBackups;
  static constexpr std::size_t kHeldCopies = kHeldBackups;

  /// This worker's stage state (job, layer range and step set). Forgets other jobs.
  void keep(StateCopy state);
  /// A neighbour's stage state, from worker `sender`. Throws WorkerError(InvalidArgument)
  /// without a job or with an empty layer range.
  void hold(StateCopy state, const std::string& sender);
  /// What is held for `job` (every job when empty), own states first, newest first.
  std::vector<v1::BackupRef> list(const std::string& job) const;
  /// The state `ref` names (job, layer range, step), own or held; null when not held.
  StateCopy find(const v1::BackupRef& ref) const;
  /// Forgets every state of a job other than `job` (a new deployment).
  void keepOnly(const std::string& job);
  /// Keeps `job`'s states of steps `keep` and `ship` (0: none), own and held, among the
  /// newest few until other steps are pinned: the coordinator names a step every stage is
  /// known to hold twice and one on its way, so copies that lag on the wire cannot leave the
  /// stages without a common step (StartRequest).
  void pin(const std::string& job, std::int64_t keep, std::int64_t ship);
  /// Whether this worker's state of `step` must be shipped to its neighbour unskipped.
  bool mustShip(const std::string& job, std::int64_t step) const;
  /// This worker's own state of `job` at `step`; null when not kept.
  StateCopy own(const std::string& job, std::int64_t step) const;

 private:
  using Key = std::tuple<std::string, int, int>;  // job, layer_begin, layer_end
  /// The steps pinned for `job` (0: none), with mutex_ held.
  std::pair<std::int64_t, std::int64_t> pinnedFor(const std::string& job) const;
  struct Held {
    std::string sender;
    std::deque<StateCopy> states;  // oldest first
  };
  mutable std::mutex mutex_;
  std::map<Key, std::deque<StateCopy>> own_;
  std::map<Key, Held> held_;
  std::string pinned_job_;
  std::int64_t keep_step_ = 0, ship_step_ = 0;
};

/// The state `assignment` starts from when it names restore sources: each piece from
/// `store` (an empty address) or fetched from the worker holding it (GetBackup, with
/// `token`, within `deadline`), the pieces fetched in parallel and joined into the
/// assignment's layers at its start_step. Throws WorkerError naming what failed.
v1::StageWeights restoreState(const v1::StageAssignment& assignment, const BackupStore& store,
                              const std::string& token, std::chrono::milliseconds deadline);

/// Ships the newest state it is offered to a worker's StoreBackup on its own thread: a
/// state offered while another is on the wire replaces the one waiting, so a slow link
/// skips steps instead of queueing them or holding up training. A state that must arrive
/// (the step the coordinator asks to be shipped) is never replaced: it goes first, once.
class LinkPacer;

class BackupSender {
 public:
  /// `link` (may be null) paces what it sends: a state takes turns with the stage's
  /// activations on the worker's emulated NIC, a megabyte at a time. `on_failure` (on the
  /// sender's thread) hears the first failed send after a success, with the job and why.
  BackupSender(std::string sender_name, std::string token, LinkPacer* link,
               std::function<void(const std::string& job, const std::string& why)> on_failure = {});
  ~BackupSender();
  BackupSender(const BackupSender&) = delete;
  BackupSender& operator=(const BackupSender&) = delete;

  void offer(StateCopy state, const std::string& address, bool must_arrive = false);
  /// From now on only `job`'s copies are worth sending: the others waiting are dropped and
  /// one on the wire is abandoned at its next megabyte (a recovery's fetches need the link,
  /// and the copy may be bound for the device that was lost).
  void keepOnly(const std::string& job);

 private:
  void run();

  std::string sender_name_;
  std::string token_;  // the cluster token the neighbour asks for; empty: none
  LinkPacer* link_;
  std::function<void(const std::string& job, const std::string& why)> on_failure_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  StateCopy pending_;
  std::string pending_address_;
  StateCopy pending_must_;  // goes before pending_
  std::string pending_must_address_;
  std::pair<std::string, std::int64_t> in_flight_;  // job and step on the wire
  std::deque<std::pair<std::string, std::int64_t>> delivered_;  // the last few, oldest first
  std::string kept_job_;                    // empty: every job's copies
  grpc::ClientContext* sending_ = nullptr;  // the StoreBackup call on the wire, to cancel
  bool closing_ = false;
  bool failing_ = false;  // the last send failed (reported once until one succeeds)
  std::thread thread_;
};

}  // namespace stagecraft::worker
