// Where a test finds the repository (samples, goldens, test data) and where it leaves files for a
// person to look at (screenshots). The values come from paths.cpp.in, which CMake fills in the build
// tree, so that no other test object depends on where the checkout is: ccache then reuses the test
// objects of an earlier build in another clone (scripts/build.sh sets its base directory).
//   load_graph_file(tessera::test::source_dir() + "/samples/lenet.json");
#pragma once

#include <string>

namespace tessera::test {

// The repository root, without a trailing slash.
std::string source_dir();

// The folder of this build where tests write files meant to be looked at (build/<preset>/tests).
std::string output_dir();

}  // namespace tessera::test
