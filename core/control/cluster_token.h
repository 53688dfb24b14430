#pragma once
// The cluster token: a shared secret every worker of a cluster and everyone who drives
// them (CLI, console, the workers' own peers) hold in a private file. A worker answers
// only calls that carry it (worker/README.md, "Who may call it").
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace stagecraft::control {

/// The gRPC metadata key the token travels under (lower case, as gRPC requires).
inline constexpr const char* kTokenMetadataKey = "stagecraft-token";
/// The environment variable the CLI and the console take a token file from.
inline constexpr const char* kTokenFileVariable = "STAGECRAFT_TOKEN_FILE";

/// The whole of `path`, a regular file of at most `max_bytes`, named `what` in errors
/// ("token file 'x'"). With `must_be_private`, a file its group or others may read is
/// refused. Never blocks on a FIFO. Throws Error with a one-line reason.
std::string readSmallFile(const std::string& path, const std::string& what, std::size_t max_bytes,
                          bool must_be_private);

/// The token in `path`. Throws Error with a one-line reason when the file is missing, is
/// not a regular file, can be read or written by its group or others (it must be 0600 or
/// 0400), is empty, larger than 4 KiB, or holds whitespace or control characters inside
/// (a trailing newline is dropped).
std::string readTokenFile(const std::string& path);

/// Writes a fresh token (64 hex digits from the system's random source) to `path` with
/// mode 0600, replacing what was there, and returns it. Throws Error when it cannot.
std::string makeTokenFile(const std::string& path);

/// Whether `given` equals `expected`, in time that depends only on their lengths (a caller
/// timing refusals learns nothing about the token's digits).
bool tokensMatch(std::string_view given, std::string_view expected);

/// Why a worker expecting `expected` (empty: an --insecure worker, which takes anyone)
/// refuses a call carrying `given` (nullopt: no token), or nullptr when it lets it in.
const char* tokenRefusal(std::optional<std::string_view> given, std::string_view expected);

}  // namespace stagecraft::control
