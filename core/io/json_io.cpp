#include "io/json_io.h"

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "io/error.h"

namespace stagecraft::io {

namespace {

/// Finds the first place where `json` is not JSON (or nests deeper than kMaxJsonDepth):
/// its byte offset and a few words on what was expected. A small recursive-descent reader
/// that only checks the syntax, so an error can name a line and column, which protobuf's
/// parser does not.
class JsonSyntax {
 public:
  explicit JsonSyntax(std::string_view text) : t_(text) {}

  /// nullopt when the text is one well-formed JSON value.
  std::optional<std::pair<size_t, std::string>> firstError() {
    try {
      space();
      value(0);
      space();
      if (i_ != t_.size()) fail("nothing after the top-level value");
      return std::nullopt;
    } catch (const std::pair<size_t, std::string>& e) {
      return e;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw std::pair<size_t, std::string>(i_, why); }
  void space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c, const char* what) {
    if (!eat(c)) fail(std::string("expected ") + what);
  }
  void value(int depth) {
    if (depth >= kMaxJsonDepth) fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (i_ >= t_.size()) fail("unexpected end of the file");
    const char c = t_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return string();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    for (const std::string_view word : {"true", "false", "null"}) {
      if (t_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return;
      }
    }
    fail("expected a value");
  }
  void object(int depth) {
    ++i_;
    space();
    if (eat('}')) return;
    for (;;) {
      space();
      if (i_ >= t_.size() || t_[i_] != '"') fail("expected a quoted field name");
      string();
      space();
      expect(':', "':' after a field name");
      space();
      value(depth + 1);
      space();
      if (eat('}')) return;
      expect(',', "',' or '}'");
    }
  }
  void array(int depth) {
    ++i_;
    space();
    if (eat(']')) return;
    for (;;) {
      space();
      value(depth + 1);
      space();
      if (eat(']')) return;
      expect(',', "',' or ']'");
    }
  }
  void string() {
    ++i_;
    while (i_ < t_.size() && t_[i_] != '"') {
      if (static_cast<unsigned char>(t_[i_]) < 0x20) fail("a control character inside a string");
      if (t_[i_] == '\\') ++i_;
      ++i_;
    }
    if (i_ >= t_.size()) fail("a string that never ends");
    ++i_;
  }
  bool digit() const { return i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9'; }
  void digits(const char* what) {
    if (!digit()) fail(what);
    while (digit()) ++i_;
  }
  // -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
  void number() {
    eat('-');
    if (!eat('0')) digits("expected a number");
    if (eat('.')) digits("expected digits after '.'");
    if (eat('e') || eat('E')) {
      if (!eat('+')) eat('-');
      digits("expected digits in the exponent");
    }
  }

  std::string_view t_;
  size_t i_ = 0;
};

/// "line L, column C" of byte `offset` (1-based; columns count bytes).
std::string where(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t k = 0; k < offset && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

/// Where the field protobuf's error names ("colour: Cannot find field.", "devices[0].gflops:
/// ...") first appears as a key, or empty.
std::string whereField(std::string_view json, const std::string& reason) {
  const size_t colon = reason.find(": ");
  if (colon == std::string::npos || colon == 0) return {};
  // The last name of the path before the colon.
  size_t end = colon;
  while (end > 0 && reason[end - 1] == ']') {
    const size_t open = reason.rfind('[', end - 1);
    if (open == std::string::npos) return {};
    end = open;
  }
  size_t begin = end;
  while (begin > 0 && (std::isalnum(static_cast<unsigned char>(reason[begin - 1])) || reason[begin - 1] == '_')) --begin;
  if (begin == end) return {};
  const std::string field = reason.substr(begin, end - begin);
  const std::string quoted = "\"" + field + "\"";
  const size_t key = json.find(quoted);
  if (key == std::string_view::npos) return {};
  // A name that stands more than once (an element of a list) is not placed: the first one
  // may not be the one refused.
  if (json.find(quoted, key + quoted.size()) != std::string_view::npos) return {};
  return where(json, key);
}

}  // namespace

void parseJson(std::string_view json, google::protobuf::Message& message, std::string_view what) {
  // Syntax first, with a position; then protobuf's own checks (types, unknown fields).
  if (const auto error = JsonSyntax(json).firstError()) {
    message.Clear();
    throw Error(std::string(what) + ": not a valid " + message.GetDescriptor()->name() + " (not JSON at " +
                where(json, error->first) + ": " + error->second + ")");
  }
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
    const std::string at = whereField(json, reason);
    throw Error(std::string(what) + ": not a valid " + message.GetDescriptor()->name() + (at.empty() ? "" : " at " + at) +
                " (" + reason + ")");
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
  if (!status.ok()) throw Error("cannot write JSON: " + std::string(status.message()), ErrorKind::Internal);
  return out;
}

void writeJsonFile(const std::string& path, const google::protobuf::Message& message) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw environmentError(path + ": cannot write (" + std::strerror(errno) + ")");
  out << toJson(message);
  if (!out) throw environmentError(path + ": write failed");
}

}  // namespace stagecraft::io
