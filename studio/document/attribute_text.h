// Attribute values as the text a person types and reads: "3", "0.5", "inf", "1, 2, 3". The
// inspector's fields parse and show them; the pass stepper's diff shows them.
#pragma once

#include <QString>

#include "engine/core/status.h"
#include "engine/ir/graph.h"

namespace tessera::studio {

// Parses the text of an attribute field of kind `kind`: "3" (int), "0.5", "inf", "-inf", "nan"
// (float), any text (string), "1, 2, 3" or "[1, 2, 3]" (ints, floats; "" is the empty list). The
// error names the offending item. Tensor and graph kinds are refused (not editable as text).
Expected<ir::Attribute> parse_attribute(ir::AttrKind kind, const QString& text);
// The field text of an attribute, in the syntax parse_attribute() reads ("1, 2, 3").
QString format_attribute(const ir::Attribute& value);

}  // namespace tessera::studio
