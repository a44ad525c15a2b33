// Error formatting.
#include "engine/core/status.h"

namespace tessera {

std::string Error::to_string() const {
  std::string out;
  if (!where.empty()) out += where + ": ";
  if (node >= 0) out += "node #" + std::to_string(node) + ": ";
  out += message;
  return out;
}

Error Error::within(const std::string& outer) const {
  Error e = *this;
  e.where = where.empty() ? outer : outer + ": " + where;
  return e;
}

}  // namespace tessera
