#include "io/json_io.h"

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

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
    throw Error(std::string(what) + ": not a valid " + message.GetDescriptor()->name() +
                " (" + std::string(status.message()) + ")");
  }
}

std::string readTextFile(const std::string& path) {
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
