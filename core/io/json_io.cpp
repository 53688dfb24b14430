#include "io/json_io.h"

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "io/error.h"

namespace stagecraft::io {

void parseJson(std::string_view json, google::protobuf::Message& message, std::string_view what) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  message.Clear();
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &message, options);
  if (!status.ok()) {
    // The parser's first line only: the lines after it quote the input, which may be a
    // file that was never meant to be shown (`--cluster /etc/shadow`).
    std::string reason(status.message());
    reason = reason.substr(0, reason.find('\n'));
    if (reason.size() > 200) reason = reason.substr(0, 200) + "...";
    throw Error(std::string(what) + ": not a valid " + message.GetDescriptor()->name() + " (" + reason + ")");
  }
}

std::string readTextFile(const std::string& path) {
  // Only regular files of a sensible size: /dev/zero would grow without end, a FIFO would
  // wait for a writer.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(path + ": cannot open (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  if (st.st_size > kMaxTextFileBytes) throw Error(path + ": larger than 64 MiB, not a file this tool reads");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(path + ": read failed");
  return text.str();
}

void readJsonFile(const std::string& path, google::protobuf::Message& message) {
  parseJson(readTextFile(path), message, path);
}

std::string toJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  const auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) throw Error("cannot write JSON: " + std::string(status.message()));
  return out;
}

void writeJsonFile(const std::string& path, const google::protobuf::Message& message) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path + ": cannot write (" + std::strerror(errno) + ")");
  out << toJson(message);
  if (!out) throw Error(path + ": write failed");
}

}  // namespace stagecraft::io
