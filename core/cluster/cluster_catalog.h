#pragma once

#include <string>
#include <vector>

#include "cluster/cluster.h"

namespace stagecraft {

/// The shipped example clusters (cloud-edge-end, jetson-edge, ...): the source tree's
/// resources/clusters for a build (unless STAGECRAFT_SOURCE_TREE_CLUSTERS is off, as for
/// packages), then the installed data folder. Sorted names.
std::vector<std::string> exampleClusterNames();

/// A cluster JSON path, or the name of a shipped example, as a path. Throws Error listing
/// the examples when it is neither.
std::string resolveClusterPath(const std::string& name_or_path);

/// Cluster::load(resolveClusterPath(name_or_path)).
Cluster loadCluster(const std::string& name_or_path);

}  // namespace stagecraft
