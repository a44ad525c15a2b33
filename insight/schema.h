// The insight schema as migrations: migration i takes a database from version i to i + 1
// (PRAGMA user_version). Never edit a released migration; add the next one.
#pragma once

#include <vector>

namespace tessera::insight {

// One SQL script per version step; size() == kSchemaVersion.
const std::vector<const char*>& schema_migrations();

}  // namespace tessera::insight
