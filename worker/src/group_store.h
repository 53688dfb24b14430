#pragma once
// A stage group's rendezvous store, kept by its rank-0 member's worker and reached over
// the GroupStore gRPC service (authenticated like every call) instead of a c10d TCPStore
// listening on all interfaces. Torch-free; the c10d side is in stage_group.cpp.

#include <chrono>
#include <memory>
#include <string>

#include "stagecraft/v1/group_store.pb.h"

namespace stagecraft::worker {

/// The store of one stage group, as the GroupStore service serves it.
class GroupStoreHost {
 public:
  virtual ~GroupStoreHost() = default;
  /// One operation. Throws WorkerError: InvalidArgument for a malformed request (no key,
  /// a key or value over its limit, too many keys), DeadlineExceeded when a GET or WAIT
  /// finds no key within its timeout (at most `max_wait`).
  virtual v1::GroupStoreReply call(const v1::GroupStoreRequest& request) = 0;
};

/// An empty store whose waits last at most `max_wait`.
std::shared_ptr<GroupStoreHost> makeGroupStoreHost(std::chrono::milliseconds max_wait);

/// Where a member meets its group: rank 0 keeps `local` (its own worker's); the others
/// call the GroupStore service of `rank0_address` with `token`, for `job` and `stage`.
struct GroupRendezvous {
  std::shared_ptr<GroupStoreHost> local;
  std::string rank0_address;
  std::string token;
  std::string job;
  int stage = 0;
};

}  // namespace stagecraft::worker
