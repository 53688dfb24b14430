#pragma once

#include <stdexcept>
#include <string>

namespace stagecraft {

/// Bad input from a user (a file, a flag, a plan). The message is one line that names
/// what is wrong and where, fit to be printed as is.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace stagecraft
