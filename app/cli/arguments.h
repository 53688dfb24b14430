#pragma once

#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace stagecraft::cli {

/// Thrown by ArgumentParser::parse for --help / -h: not a failure. main() prints help()
/// to stdout and exits 0, so no command repeats that.
class HelpRequested : public std::runtime_error {
 public:
  explicit HelpRequested(std::string help) : std::runtime_error("help requested"), help_(std::move(help)) {}
  const std::string& help() const { return help_; }

 private:
  std::string help_;
};

/// The flags one command was given, after ArgumentParser checked them against its
/// declarations. Lookups of a flag the command never declared are programming errors.
class ParsedArguments {
 public:
  /// The flag was on the command line (a default does not count).
  bool has(std::string_view name) const;
  /// A boolean switch.
  bool flag(std::string_view name) const { return has(name); }
  /// The value given, else the declared default, else "".
  std::string value(std::string_view name) const;
  /// value() as an integer > 0; throws Error naming the flag otherwise.
  int positiveInt(std::string_view name) const;
  /// value() as an integer >= 0.
  int nonNegativeInt(std::string_view name) const;

 private:
  friend class ArgumentParser;
  int boundedInt(std::string_view name, int min, const char* what) const;
  std::map<std::string, std::string, std::less<>> given_;
  std::map<std::string, std::string, std::less<>> defaults_;
};

/// Declares the `--name value` options and `--name` switches of one command, parses a
/// command line against them and writes the command's --help.
///
/// Accepts `--name value` and `--name=value`. Unknown flags, positional arguments, a
/// flag given twice, a missing value and a missing required option throw Error with a
/// one-line reason; --help / -h anywhere wins over all of those.
class ArgumentParser {
 public:
  ArgumentParser(std::string command, std::string summary);

  /// An option taking a value; `default_value` is used (and shown) when it is absent.
  ArgumentParser& option(std::string name, std::string value_name, std::string help,
                         std::string default_value = {});
  /// An option that must be given.
  ArgumentParser& required(std::string name, std::string value_name, std::string help);
  /// A boolean switch.
  ArgumentParser& flag(std::string name, std::string help);
  /// A paragraph printed after the option list (examples, exit codes).
  ArgumentParser& epilog(std::string text);

  /// Checks `args` against the declarations; throws HelpRequested for --help or -h
  /// and Error naming the flag for anything else that is wrong.
  ParsedArguments parse(std::span<const std::string> args) const;
  std::string help() const;

 private:
  struct Option {
    std::string name;        ///< without the leading "--"
    std::string value_name;  ///< empty for a switch
    std::string help;
    std::string default_value;
    bool required = false;
  };
  const Option* find(std::string_view name) const;

  std::string command_;
  std::string summary_;
  std::string epilog_;
  std::vector<Option> options_;
};

}  // namespace stagecraft::cli
