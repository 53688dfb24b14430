#include "cluster/cluster_catalog.h"

#include <algorithm>
#include <filesystem>

#include "io/error.h"

namespace stagecraft {
namespace {

std::vector<std::filesystem::path> clusterDirectories() {
#ifdef STAGECRAFT_SOURCE_CLUSTERS
  return {STAGECRAFT_SOURCE_CLUSTERS, STAGECRAFT_INSTALLED_CLUSTERS};
#else
  return {STAGECRAFT_INSTALLED_CLUSTERS};  // a package: only what it installed
#endif
}

bool isFile(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

std::vector<std::string> exampleClusterNames() {
  std::vector<std::string> names;
  for (const auto& dir : clusterDirectories()) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string resolveClusterPath(const std::string& name_or_path) {
  if (isFile(name_or_path)) return name_or_path;
  const bool looks_like_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  if (looks_like_path) return name_or_path;  // Cluster::load names the path it cannot open
  for (const auto& dir : clusterDirectories()) {
    const auto candidate = dir / (name_or_path + ".json");
    if (isFile(candidate)) return candidate.string();
  }
  std::string known;
  for (const auto& name : exampleClusterNames()) known += (known.empty() ? "" : ", ") + name;
  throw Error("unknown cluster '" + name_or_path + "' (examples: " + (known.empty() ? "none installed" : known) +
              "; or a path to a cluster .json)");
}

Cluster loadCluster(const std::string& name_or_path) { return Cluster::load(resolveClusterPath(name_or_path)); }

}  // namespace stagecraft
