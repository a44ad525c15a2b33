// Internal to insight: the column lists and row readers shared by the query files (query.cpp,
// runs_query.cpp, trace_query.cpp), so a column added to runs or spans is read the same way
// everywhere.
#pragma once

#include "engine/observe/sinks.h"
#include "insight/query.h"
#include "insight/sql.h"

namespace tessera::insight::rows {

// SELECT list of a RunRecord, in read_run's order.
extern const char* const kRunColumns;
RunRecord read_run(const Stmt& st);

// SELECT list of a span with its interned strings: `FROM spans s` joined to strings n, o, d, t
// (name, op, device, detail); kSpanJoins is that FROM clause.
extern const char* const kSpanColumns;
extern const char* const kSpanJoins;
void read_span(const Stmt& st, observe::Span& s);

}  // namespace tessera::insight::rows
