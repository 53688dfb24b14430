// Where the hybrid planner's DP may cut a model and in which orders it lines up the devices
// (by speed, by memory, by tier, by network domain as SpanTrain groups devices).
#include "planner/device_orderings.h"

#include <algorithm>
#include <numeric>

namespace stagecraft {
namespace {

/// The DP cuts between at most this many layer blocks; local search then moves cuts
/// layer by layer, so long models plan fast without losing the fine answer.
constexpr int kMaxCutBlocks = 48;
/// Up to this many devices the DP runs over every device ordering (5! = 120).
constexpr int kAllOrderingsUpTo = 5;
/// Up to this many devices the DP also tries ascending speed and memory orders.
constexpr int kExtraOrderingsUpTo = 16;
/// Up to this many devices every device (and every ordered pair of devices) leads an
/// ordering, and every device seeds a link clique; above, only the kLargeSeeds fastest.
constexpr int kPairOrderingsUpTo = 8;
constexpr int kLargeSeeds = 4;
/// Link speeds at which those clusters are also cut into network domains (see
/// linkDomainOrderings): this many up to kPairOrderingsUpTo devices, kLargeThresholds above.
constexpr int kDomainThresholds = 6;
constexpr int kLargeThresholds = 3;

/// Orderings by network domain at several link speeds: for a threshold t, devices joined
/// by links of at least t form domains; the domains come fastest first (total speed),
/// each one's devices fastest first. A group that must all-reduce, or a pipeline whose
/// neighbours must talk, is then a contiguous run even when its members are neither the
/// fastest devices nor neighbours of the fastest one.
std::vector<std::vector<int>> linkDomainOrderings(const Cluster& cluster) {
  const int n = cluster.size();
  std::vector<double> speeds;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) speeds.push_back(cluster.bandwidthMbps(a, b));
  }
  std::sort(speeds.begin(), speeds.end());
  speeds.erase(std::unique(speeds.begin(), speeds.end()), speeds.end());
  // A few thresholds, spread over the distinct link speeds.
  const bool small = n <= kPairOrderingsUpTo;
  const int count = small ? kDomainThresholds : kLargeThresholds;
  std::vector<double> thresholds;
  for (int k = 0; k < count && !speeds.empty(); ++k) {
    const size_t at = speeds.size() * static_cast<size_t>(k + 1) / (count + 1);
    thresholds.push_back(speeds[std::min(at, speeds.size() - 1)]);
  }
  thresholds.push_back(speeds.empty() ? 0 : speeds.back());
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  std::vector<std::vector<int>> out;
  for (double t : thresholds) {
    std::vector<int> domain(n, -1);
    std::vector<std::vector<int>> domains;
    for (int start = 0; start < n; ++start) {
      if (domain[start] >= 0) continue;
      std::vector<int> members{start};
      domain[start] = static_cast<int>(domains.size());
      for (size_t i = 0; i < members.size(); ++i) {
        for (int d = 0; d < n; ++d) {
          if (domain[d] < 0 && cluster.bandwidthMbps(members[i], d) >= t) {
            domain[d] = domain[start];
            members.push_back(d);
          }
        }
      }
      std::stable_sort(members.begin(), members.end(),
                       [&](int a, int b) { return cluster.device(a).gflops > cluster.device(b).gflops; });
      domains.push_back(std::move(members));
    }
    const auto total = [&](const std::vector<int>& ds) {
      double sum = 0;
      for (int d : ds) sum += cluster.device(d).gflops;
      return sum;
    };
    std::stable_sort(domains.begin(), domains.end(), [&](const auto& a, const auto& b) { return total(a) > total(b); });
    std::vector<int> order;
    for (const auto& ds : domains) order.insert(order.end(), ds.begin(), ds.end());
    out.push_back(std::move(order));
    // A ring all-reduce runs at its slowest link, so a group wants every pair joined at t,
    // not just a path: from each device, take the fastest devices linked at t to all those
    // taken, then the rest.
    std::vector<int> by_speed(n);
    std::iota(by_speed.begin(), by_speed.end(), 0);
    std::stable_sort(by_speed.begin(), by_speed.end(),
                     [&](int a, int b) { return cluster.device(a).gflops > cluster.device(b).gflops; });
    const std::vector<int> seeds(by_speed.begin(), by_speed.begin() + (small ? n : std::min(n, kLargeSeeds)));
    for (int seed : seeds) {
      if (t == thresholds.front()) {
        // Each device first, then the rest by speed: a lone device that beats every group
        // (memory for the whole batch, no all-reduce) is a plan the DP can then form.
        std::vector<int> first{seed};
        for (int d : by_speed) {
          if (d != seed) first.push_back(d);
        }
        out.push_back(first);
        if (small) {
          // And with each other device second: two-stage pipelines of single devices
          // joined by their own fast link.
          for (int second : by_speed) {
            if (second == seed) continue;
            std::vector<int> pair{seed, second};
            for (int d : by_speed) {
              if (d != seed && d != second) pair.push_back(d);
            }
            out.push_back(std::move(pair));
          }
        }
      }
      std::vector<int> clique{seed};
      for (int d : by_speed) {
        if (d == seed) continue;
        bool joined = true;
        for (int c : clique) joined = joined && cluster.bandwidthMbps(c, d) >= t;
        if (joined) clique.push_back(d);
      }
      if (clique.size() < 2) continue;
      std::stable_sort(clique.begin(), clique.end(),
                       [&](int a, int b) { return cluster.device(a).gflops > cluster.device(b).gflops; });
      std::vector<int> rest;
      for (int d : by_speed) {
        if (std::find(clique.begin(), clique.end(), d) == clique.end()) rest.push_back(d);
      }
      const size_t joined = clique.size();
      clique.insert(clique.end(), rest.begin(), rest.end());
      out.push_back(clique);
      // Slowest first too: a pipeline over the domain may need its roomy, slower devices
      // to hold the first layers.
      std::reverse(clique.begin(), clique.begin() + static_cast<std::ptrdiff_t>(joined));
      out.push_back(std::move(clique));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

/// Device orderings to run the DP over; each ordering's contiguous ranges are the
/// groups the DP can form.
std::vector<std::vector<int>> deviceOrderings(const Cluster& cluster) {
  const int n = cluster.size();
  std::vector<int> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<std::vector<int>> out;
  if (n <= kAllOrderingsUpTo) {
    // Few devices: every ordering, so every stage order and grouping is in reach.
    do {
      out.push_back(ids);
    } while (std::next_permutation(ids.begin(), ids.end()));
    return out;
  }
  auto by = [&](auto key) {
    std::vector<int> o = ids;
    std::stable_sort(o.begin(), o.end(), [&](int a, int b) { return key(a) > key(b); });
    out.push_back(std::move(o));
  };
  by([&](int d) { return cluster.device(d).gflops; });
  by([&](int d) { return cluster.device(d).memory_mb; });
  if (n <= kExtraOrderingsUpTo) {
    // Later 1F1B stages hold fewer micro-batches, so roomy devices may belong last.
    by([&](int d) { return -cluster.device(d).memory_mb; });
    by([&](int d) { return -cluster.device(d).gflops; });
  }
  by([&](int d) { return cluster.device(d).gflops * 1e-3 - 10.0 * static_cast<int>(cluster.device(d).tier); });
  // Network domains: from the fastest device, always take next the device with the
  // best link to the ones taken so far, so neighbours in the order share fast links.
  // Each device's best link to those taken is kept up to date as devices are taken, so a
  // thousand devices cost a million look-ups, not a billion.
  std::vector<int> order{out[0][0]};
  std::vector<bool> taken(n, false);
  std::vector<double> link_to_taken(n, 0);
  const auto take = [&](int d) {
    taken[d] = true;
    for (int o = 0; o < n; ++o) link_to_taken[o] = std::max(link_to_taken[o], cluster.bandwidthMbps(d, o));
  };
  take(order[0]);
  while (static_cast<int>(order.size()) < n) {
    int pick = -1;
    double best = -1, best_speed = -1;
    for (int d = 0; d < n; ++d) {
      if (taken[d]) continue;
      const double link = link_to_taken[d];
      if (link > best || (link == best && cluster.device(d).gflops > best_speed)) {
        best = link;
        best_speed = cluster.device(d).gflops;
        pick = d;
      }
    }
    take(pick);
    order.push_back(pick);
  }
  out.push_back(order);
  std::reverse(order.begin(), order.end());
  out.push_back(std::move(order));
  if (n <= kExtraOrderingsUpTo) {
    for (auto& o : linkDomainOrderings(cluster)) out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Cut candidates: every layer boundary for short models, else boundaries that split
/// the compute into kMaxCutBlocks nearly equal blocks.
std::vector<int> cutCandidates(const ModelSpec& model) {
  const int L = model.layerCount();
  std::vector<int> cuts;
  if (L <= kMaxCutBlocks) {
    for (int l = 0; l <= L; ++l) cuts.push_back(l);
    return cuts;
  }
  const double total = model.forwardFlops(0, L) + model.backwardFlops(0, L);
  cuts.push_back(0);
  for (int l = 1; l < L; ++l) {
    const double done = model.forwardFlops(0, l) + model.backwardFlops(0, l);
    const int block = static_cast<int>(done / total * kMaxCutBlocks);
    const int prev_block = static_cast<int>((model.forwardFlops(0, cuts.back()) +
                                             model.backwardFlops(0, cuts.back())) / total * kMaxCutBlocks);
    if (block > prev_block) cuts.push_back(l);
  }
  cuts.push_back(L);
  return cuts;
}

}  // namespace stagecraft
