// The text forms of attribute values the inspector edits and the pass diff shows.
#include "studio/document/attribute_text.h"

#include <QStringList>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace tessera::studio {

namespace {

QString qstr(const std::string& s) {
  return QString::fromStdString(s);
}

Expected<int64_t> parse_int(const QString& item) {
  const std::string s = item.trimmed().toStdString();
  if (s.empty()) return make_error("expected an integer, got nothing");
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE) return make_error("'" + s + "' is out of the integer range");
  if (end != s.c_str() + s.size()) return make_error("'" + s + "' is not an integer");
  return static_cast<int64_t>(v);
}

Expected<double> parse_float(const QString& item) {
  const std::string s = item.trimmed().toStdString();
  if (s.empty()) return make_error("expected a number, got nothing");
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);  // takes "inf", "-inf", "nan" too
  if (end != s.c_str() + s.size()) return make_error("'" + s + "' is not a number");
  return v;
}

// "1, 2, 3" or "[1, 2, 3]" as items; "" and "[]" are no items.
QStringList list_items(QString text) {
  text = text.trimmed();
  if (text.startsWith('[') && text.endsWith(']')) text = text.mid(1, text.size() - 2).trimmed();
  if (text.isEmpty()) return {};
  return text.split(',');
}

QString format_double(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  return QString::number(v, 'g', 12);
}

}  // namespace

Expected<ir::Attribute> parse_attribute(ir::AttrKind kind, const QString& text) {
  switch (kind) {
    case ir::AttrKind::kInt: {
      TRY(int64_t v, parse_int(text));
      return ir::Attribute(v);
    }
    case ir::AttrKind::kFloat: {
      TRY(double v, parse_float(text));
      return ir::Attribute(v);
    }
    case ir::AttrKind::kString:
      return ir::Attribute(text.toStdString());
    case ir::AttrKind::kInts: {
      std::vector<int64_t> out;
      for (const QString& item : list_items(text)) {
        TRY(int64_t v, parse_int(item));
        out.push_back(v);
      }
      return ir::Attribute(std::move(out));
    }
    case ir::AttrKind::kFloats: {
      std::vector<double> out;
      for (const QString& item : list_items(text)) {
        TRY(double v, parse_float(item));
        out.push_back(v);
      }
      return ir::Attribute(std::move(out));
    }
    case ir::AttrKind::kStrings: {
      std::vector<std::string> out;
      for (const QString& item : list_items(text)) out.push_back(item.trimmed().toStdString());
      return ir::Attribute(std::move(out));
    }
    case ir::AttrKind::kTensor:
    case ir::AttrKind::kGraph:
      break;
  }
  return make_error(std::string(ir::attr_kind_name(kind)) + " attributes cannot be edited as text");
}

QString format_attribute(const ir::Attribute& value) {
  QStringList items;
  switch (value.kind()) {
    case ir::AttrKind::kInt:
      return QString::number(static_cast<qlonglong>(value.i()));
    case ir::AttrKind::kFloat:
      return format_double(value.f());
    case ir::AttrKind::kString:
      return qstr(value.s());
    case ir::AttrKind::kInts:
      for (int64_t v : value.ints()) items << QString::number(static_cast<qlonglong>(v));
      return items.join(QStringLiteral(", "));
    case ir::AttrKind::kFloats:
      for (double v : value.floats()) items << format_double(v);
      return items.join(QStringLiteral(", "));
    case ir::AttrKind::kStrings:
      for (const std::string& v : value.strings()) items << qstr(v);
      return items.join(QStringLiteral(", "));
    case ir::AttrKind::kTensor:
      return QStringLiteral("tensor %1%2")
          .arg(qstr(std::string(dtype_name(value.t().dtype()))),
               qstr(shape_to_string(value.t().shape())));
    case ir::AttrKind::kGraph:
      return QStringLiteral("graph, %1 nodes").arg(value.g().num_nodes());
  }
  return {};
}


}  // namespace tessera::studio
