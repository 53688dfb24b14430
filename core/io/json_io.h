#pragma once

#include <string>
#include <string_view>

namespace google::protobuf {
class Message;
}

namespace stagecraft::io {

/// Parses protobuf's JSON mapping into `message`. Both snake_case and lowerCamelCase
/// field names are accepted; unknown fields are rejected. Throws Error prefixed by `what`
/// that names the line and column where the text stops being JSON (or of the field
/// protobuf refuses), never quoting the text itself.
void parseJson(std::string_view json, google::protobuf::Message& message, std::string_view what);
/// JSON nested deeper than this is refused before protobuf sees it.
constexpr int kMaxJsonDepth = 64;

/// Reads a JSON file into `message`; throws Error naming the path.
void readJsonFile(const std::string& path, google::protobuf::Message& message);

/// The JSON form of `message` with proto (snake_case) field names and defaults printed.
std::string toJson(const google::protobuf::Message& message, bool pretty = true);

/// Writes toJson(message) to `path`; throws Error naming the path.
void writeJsonFile(const std::string& path, const google::protobuf::Message& message);

/// The whole content of a text file; throws Error naming the path, also for one that is
/// not a regular file or is larger than kMaxTextFileBytes.
std::string readTextFile(const std::string& path);
/// readTextFile() refuses files larger than this.
constexpr long long kMaxTextFileBytes = 64LL << 20;

}  // namespace stagecraft::io
