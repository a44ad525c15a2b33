// main() of studio_tests: runs the one Qt Test class named on the command line in a QApplication
// set up as the studio's main() sets it up (qtest_main.h).
#include "tests/studio/qtest_main.h"

#include <QApplication>
#include <QTest>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "studio/insight/imgui_widget.h"

namespace tessera::test {
namespace {

std::map<std::string, QtTestFactory>& registry() {
  static std::map<std::string, QtTestFactory> tests;
  return tests;
}

}  // namespace

bool register_qtest(const char* name, QtTestFactory make) {
  registry().emplace(name, make);
  return true;
}

}  // namespace tessera::test

int main(int argc, char** argv) {
  const auto& tests = tessera::test::registry();
  if (argc >= 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const auto& [name, make] : tests) std::printf("%s\n", name.c_str());
    return 0;
  }
  const auto it = argc >= 2 ? tests.find(argv[1]) : tests.end();
  if (it == tests.end()) {
    std::fprintf(stderr, "usage: %s CLASS [Qt Test options] (--list names the classes)\n", argv[0]);
    if (argc >= 2) std::fprintf(stderr, "%s: no test class named '%s'\n", argv[0], argv[1]);
    return 2;
  }
  // The class name leaves argv; the rest goes to QApplication and Qt Test as QTEST_MAIN passes it.
  std::vector<char*> args{argv[0]};
  args.insert(args.end(), argv + 2, argv + argc);
  int count = static_cast<int>(args.size());
  args.push_back(nullptr);
  tessera::studio::ImGuiWidget::set_default_format();  // before the QApplication, as main() does
  QApplication app(count, args.data());
  app.setAttribute(Qt::AA_Use96Dpi, true);  // as QTEST_MAIN does
  const auto test = it->second();
  return QTest::qExec(test.get(), count, args.data());
}
