#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "arguments.h"
#include "cluster/cluster.h"
#include "control/coordinator.h"
#include "control/local_cluster.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft::cli {

/// This executable's path (/proc/self/exe), for finding the worker next to it.
std::string executablePath();

/// A cluster file and the workers that serve it: the addresses of its local workers when
/// `cluster up` started them (and they still run), else the file's own addresses; and the
/// cluster token their calls carry.
struct LiveCluster {
  std::string argument;  ///< the --cluster value, for hints
  std::string path;      ///< the cluster file
  Cluster cluster;       ///< with the addresses to use
  std::optional<control::LocalCluster> local;
  std::string token;     ///< empty: none (workers started with --insecure)
};
/// `token_file` (a command's --token-file) names the token; without it $STAGECRAFT_TOKEN_FILE
/// does, else the token `cluster up` made for its local workers, else there is none. Throws
/// Error when the file named is missing or not private.
LiveCluster openCluster(const std::string& name_or_path, const std::string& token_file = {});

/// The token in `token_file` (a command's --token-file), else in $STAGECRAFT_TOKEN_FILE's
/// file, else none (empty). Throws Error when the file named is missing or not private.
std::string tokenFrom(const std::string& token_file);

/// Makes this process's calls to workers use the --tls-cert/--tls-key/--tls-ca (or their
/// environment variables) that addTokenOption() declared; nothing when none is given.
void useTlsOptions(const ParsedArguments& parsed);

/// openCluster() with the --token-file, and the --tls-cert/--tls-key/--tls-ca (or their
/// environment variables) that addTokenOption() declared: with TLS files, every channel
/// this process opens from now on uses mutual TLS.
LiveCluster openCluster(const std::string& name_or_path, const ParsedArguments& parsed);

/// Declares --token-file and --tls-cert, --tls-key, --tls-ca on a command that talks to
/// workers.
ArgumentParser& addTokenOption(ArgumentParser& parser);

/// "run `stagecraft-cli cluster up --cluster C` first"
std::string clusterUpHint(const std::string& cluster_argument);

/// Describe on every worker; a worker that does not answer, or a device without an
/// address, throws with `hint` appended to the message. Warns on stderr about workers whose
/// LibTorch runs on the reference BLAS.
std::vector<v1::WorkerInfo> describeAll(control::Coordinator& coordinator, const std::string& hint);

/// One warning line naming the workers that report the reference BLAS; nothing otherwise.
void warnAboutSlowBlas(const std::vector<v1::WorkerInfo>& infos, std::ostream& out);

/// The workers as `cluster up` / `cluster status` report them.
v1::ClusterStatusReport statusReport(const LiveCluster& live, const std::vector<control::WorkerProbe>& probes);
/// The human table of statusReport(), one line per worker.
std::vector<std::string> workerTable(const v1::ClusterStatusReport& report);

/// "1,4,16" as positive integers, ascending and distinct; throws Error naming `flag`.
std::vector<int> parsePositiveList(const std::string& flag, const std::string& text);

/// A positive number of seconds from `flag`, as milliseconds; throws Error naming it.
std::chrono::milliseconds secondsFlag(const std::string& flag, const std::string& text);

}  // namespace stagecraft::cli
