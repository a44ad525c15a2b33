// One executable for every Qt Test class of the studio: a link per test file is what made the 2-core
// build slow. Each *_test.cpp ends with TESSERA_QTEST(Class) where a plain Qt Test has QTEST_MAIN;
// ctest runs one class per process (tests/CMakeLists.txt), as it did with one executable per file:
//   studio_tests --list                    the registered classes, one per line
//   studio_tests DocumentTest [-v2] [fn]   one class, with Qt Test's own options and functions
#pragma once

#include <QObject>
#include <memory>

namespace tessera::test {

using QtTestFactory = std::unique_ptr<QObject> (*)();

// Registers a test class under its name (called by TESSERA_QTEST before main); returns true.
bool register_qtest(const char* name, QtTestFactory make);

}  // namespace tessera::test

#define TESSERA_QTEST(Class)                                                            \
  namespace {                                                                           \
  [[maybe_unused]] const bool Class##_registered = ::tessera::test::register_qtest(     \
      #Class, []() -> std::unique_ptr<QObject> { return std::make_unique<Class>(); }); \
  }
