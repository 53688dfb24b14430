#include "arguments.h"

#include <charconv>
#include <stdexcept>

#include "io/error.h"

namespace stagecraft::cli {

bool ParsedArguments::has(std::string_view name) const { return given_.find(name) != given_.end(); }

std::string ParsedArguments::value(std::string_view name) const {
  if (auto it = given_.find(name); it != given_.end()) return it->second;
  if (auto it = defaults_.find(name); it != defaults_.end()) return it->second;
  throw std::logic_error("flag --" + std::string(name) + " was never declared");
}

int ParsedArguments::positiveInt(std::string_view name) const { return boundedInt(name, 1, "a positive integer"); }

int ParsedArguments::nonNegativeInt(std::string_view name) const {
  return boundedInt(name, 0, "a non-negative integer");
}

int ParsedArguments::boundedInt(std::string_view name, int min, const char* what) const {
  const std::string text = value(name);
  int result = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), result);
  if (ec != std::errc() || end != text.data() + text.size() || result < min) {
    throw Error("--" + std::string(name) + " must be " + what + ", got '" + text + "'");
  }
  return result;
}

ArgumentParser::ArgumentParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

ArgumentParser& ArgumentParser::option(std::string name, std::string value_name, std::string help,
                                       std::string default_value) {
  options_.push_back({std::move(name), std::move(value_name), std::move(help), std::move(default_value), false});
  return *this;
}

ArgumentParser& ArgumentParser::required(std::string name, std::string value_name, std::string help) {
  options_.push_back({std::move(name), std::move(value_name), std::move(help), {}, true});
  return *this;
}

ArgumentParser& ArgumentParser::flag(std::string name, std::string help) {
  options_.push_back({std::move(name), {}, std::move(help), {}, false});
  return *this;
}

ArgumentParser& ArgumentParser::epilog(std::string text) {
  epilog_ = std::move(text);
  return *this;
}

const ArgumentParser::Option* ArgumentParser::find(std::string_view name) const {
  for (const auto& o : options_) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

ParsedArguments ArgumentParser::parse(std::span<const std::string> args) const {
  ParsedArguments parsed;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") throw HelpRequested(help());
  }
  for (const auto& o : options_) {
    if (!o.value_name.empty()) parsed.defaults_[o.name] = o.default_value;
  }
  const std::string& where = command_;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 3 || !arg.starts_with("--")) {
      throw Error(where + ": unexpected argument '" + arg + "' (see --help)");
    }
    const auto eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const Option* option = find(name);
    if (!option) throw Error(where + ": unknown flag '--" + name + "' (see --help)");
    if (parsed.has(name)) throw Error(where + ": --" + name + " given twice");
    if (option->value_name.empty()) {
      if (eq != std::string::npos) throw Error(where + ": --" + name + " takes no value");
      parsed.given_[name] = "";
    } else if (eq != std::string::npos) {
      parsed.given_[name] = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      parsed.given_[name] = args[++i];
    } else {
      throw Error(where + ": --" + name + " needs a value (" + option->value_name + ")");
    }
  }
  for (const auto& o : options_) {
    if (o.required && !parsed.has(o.name)) {
      throw Error(where + ": missing required --" + o.name + " " + o.value_name);
    }
  }
  return parsed;
}

std::string ArgumentParser::help() const {
  std::string usage = "Usage: stagecraft-cli " + command_;
  std::vector<std::string> left;
  size_t width = 0;
  for (const auto& o : options_) {
    std::string flag = "--" + o.name + (o.value_name.empty() ? "" : " " + o.value_name);
    usage += o.required ? " " + flag : " [" + flag + "]";
    width = std::max(width, flag.size());
    left.push_back(std::move(flag));
  }
  std::string out = usage + "\n\n" + summary_ + "\n\nOptions:\n";
  for (size_t i = 0; i < options_.size(); ++i) {
    const Option& o = options_[i];
    out += "  " + left[i] + std::string(width - left[i].size() + 2, ' ') + o.help;
    if (o.required) out += " (required)";
    if (!o.default_value.empty()) out += " (default: " + o.default_value + ")";
    out += "\n";
  }
  out += "  --help" + std::string(width > 4 ? width - 4 : 2, ' ') + "show this help\n";
  if (!epilog_.empty()) out += "\n" + epilog_ + "\n";
  return out;
}

}  // namespace stagecraft::cli
