// Not a test: the runs dashboard's times on a database of 500 runs x 3 metrics x 1,000 steps (1.5M
// metric values, written with SQL for speed, kept at the path given): database load (open and
// load_run_summaries), model build, a filter keystroke, a sort, the compare of 10 runs (series
// read, compare table and chart built) and the whole dashboard opening. Prints, never asserts.
//
//   QT_QPA_PLATFORM=offscreen build/s6/studio/studio_runs_dashboard_bench [DB]
#include <QApplication>
#include <QElapsedTimer>
#include <QDir>
#include <QFileInfo>
#include <QTableView>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "insight/database.h"
#include "insight/runs_query.h"
#include "studio/insight/runs_chart.h"
#include "studio/insight/runs_dashboard.h"
#include "studio/insight/runs_model.h"

using tessera::insight::Database;

namespace {

constexpr int kRuns = 500, kSteps = 1000;

// Median of `reps` timings of `body`, in ms.
double time_ms(int reps, const std::function<void()>& body) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    QElapsedTimer timer;
    timer.start();
    body();
    t.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

bool make_database(const std::string& path) {
  auto db = Database::open(path);
  if (!db) {
    std::fprintf(stderr, "%s\n", db.error().to_string().c_str());
    return false;
  }
  const std::string n = std::to_string(kRuns), s = std::to_string(kSteps);
  const std::string sql =
      "BEGIN;"
      "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < " + n + ") "
      "INSERT INTO runs(id, command, graph_name, status, started_ns, ended_ns, name, kind, heartbeat_ns) "
      "SELECT i, 'tessera train lenet.json', 'lenet', CASE WHEN i % 17 = 0 THEN 'crashed' ELSE 'finished' END, "
      "1700000000000000000 + i * 600000000000, 1700000000000000000 + i * 600000000000 + 300000000000, "
      "'lenet-' || (i % 25), 'train', 1700000000000000000 + i * 600000000000 + 300000000000 FROM r;"
      "INSERT INTO hyperparams(run, key, value) SELECT id, 'lr', CASE id % 4 WHEN 0 THEN '0.1' WHEN 1 THEN '0.01' "
      "WHEN 2 THEN '0.001' ELSE '0.05' END FROM runs;"
      "INSERT INTO hyperparams(run, key, value) SELECT id, 'batch', CAST(32 * (1 + id % 4) AS TEXT) FROM runs;"
      "INSERT INTO hyperparams(run, key, value) SELECT id, 'optimizer', CASE id % 3 WHEN 0 THEN 'sgd' "
      "WHEN 1 THEN 'momentum' ELSE 'adam' END FROM runs;"
      "INSERT INTO hyperparams(run, key, value) SELECT id, 'seed', CAST(id AS TEXT) FROM runs;"
      "WITH RECURSIVE st(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM st WHERE k < " + s + ") "
      "INSERT INTO metrics(run, name, step, epoch, value, wall_ns) "
      "SELECT r.id, m.name, st.k, st.k / 500, "
      "CASE m.name WHEN 'train/loss' THEN 2.3 / (1 + st.k * (r.id % 7 + 1) * 0.001) "
      "WHEN 'train/accuracy' THEN 0.9 - 0.8 / (1 + st.k * 0.01) ELSE 0.001 * (r.id % 4 + 1) END, "
      "r.started_ns + st.k * 300000000 "
      "FROM st, runs r, (SELECT 'train/loss' AS name UNION ALL SELECT 'train/accuracy' UNION ALL SELECT 'train/lr') m "
      "ORDER BY r.id, st.k;"  // runs one after another, as recorded
      "COMMIT;";
  const auto st = db->exec(sql);
  if (!st.is_ok()) std::fprintf(stderr, "%s\n", st.error().to_string().c_str());
  return st.is_ok();
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  // The database is made once and kept (in the temporary folder unless a path is given).
  const std::string path =
      argc > 1 ? argv[1] : QDir::temp().filePath(QStringLiteral("tessera_runs_dashboard_bench.db")).toStdString();
  if (!QFileInfo::exists(QString::fromStdString(path))) {
    QElapsedTimer t;
    t.start();
    if (!make_database(path)) return 1;
    std::printf("wrote %s: %d runs x 3 metrics x %d steps in %.1f s\n", path.c_str(), kRuns, kSteps,
                static_cast<double>(t.elapsed()) / 1e3);
  }
  std::vector<tessera::insight::RunSummary> runs;
  const double load = time_ms(5, [&] {
    auto db = Database::open(path);
    auto r = tessera::insight::load_run_summaries(*db);
    if (r) runs = std::move(*r);
  });
  std::printf("database load (open + load_run_summaries): %zu runs in %.1f ms\n", runs.size(), load);
  {
    auto db = Database::open(path);
    const double series = time_ms(3, [&] {
      std::vector<int64_t> ids;
      for (int64_t i = 1; i <= 10; ++i) ids.push_back(i * 7);
      (void)tessera::insight::load_metric_series(*db, ids);
    });
    std::printf("metric series of 10 runs (30,000 values): %.1f ms\n", series);
    const double lineage = time_ms(3, [&] { (void)tessera::insight::load_lineage(*db); });
    std::printf("lineage of the whole database: %.1f ms\n", lineage);
    const double version = time_ms(11, [&] { (void)tessera::insight::data_version(*db); });
    std::printf("change check (PRAGMA data_version): %.3f ms\n", version);
  }
  tessera::studio::RunsTableModel model;
  tessera::studio::RunsFilterProxy proxy;
  const double build = time_ms(5, [&] {
    tessera::studio::RunsTableModel m;
    tessera::studio::RunsFilterProxy p;
    p.setSourceModel(&m);
    p.sort(0, Qt::DescendingOrder);
    m.set_runs(runs, tessera::insight::wall_ns());
  });
  std::printf("model build (set_runs + sorted proxy): %.1f ms\n", build);
  model.set_runs(runs, tessera::insight::wall_ns());
  proxy.setSourceModel(&model);
  proxy.sort(0, Qt::DescendingOrder);
  for (const char* q : {"l", "le", "lenet-1", "lr=0.01", "status:crashed", "train/loss<0.5", "accuracy>0.8"}) {
    const double ms = time_ms(5, [&] { proxy.set_query(QString::fromLatin1(q)); });
    std::printf("filter keystroke '%s': %d rows in %.2f ms\n", q, proxy.rowCount(), ms);
  }
  proxy.set_query({});
  const int lr = model.hyperparam_column("lr"), loss = model.metric_column("train/loss");
  std::printf("sort by lr (numeric): %.2f ms\n", time_ms(5, [&] { proxy.sort(lr, Qt::AscendingOrder); proxy.sort(lr, Qt::DescendingOrder); }) / 2);
  std::printf("sort by train/loss: %.2f ms\n", time_ms(5, [&] { proxy.sort(loss, Qt::AscendingOrder); proxy.sort(loss, Qt::DescendingOrder); }) / 2);
  std::printf("sort by name (text): %.2f ms\n", time_ms(5, [&] { proxy.sort(1, Qt::AscendingOrder); proxy.sort(1, Qt::DescendingOrder); }) / 2);

  tessera::studio::RunsDashboard dash;
  dash.resize(1280, 800);
  dash.show();
  const double open = time_ms(3, [&] { (void)dash.open_database(QString::fromStdString(path)); });
  std::printf("dashboard open_database (load, model, lineage tree): %.1f ms\n", open);
  std::vector<int64_t> ten;
  for (int64_t i = 1; i <= 10; ++i) ten.push_back(i * 13);
  const double compare = time_ms(3, [&] {
    dash.select_runs({});
    dash.select_runs(ten);
  });
  std::printf("compare of 10 runs (series, compare table, chart of 10 x 1,000 points): %.1f ms\n", compare);
  const double smooth = time_ms(3, [&] { dash.chart()->set_smoothing(dash.chart()->smoothing() > 0.5 ? 0.3 : 0.6); });
  std::printf("smoothing change (10 x 2 curves rebuilt): %.1f ms\n", smooth);
  const double paint = time_ms(3, [&] { (void)dash.grab(); });
  std::printf("repaint of the dashboard (grab): %.1f ms\n", paint);
  const double refresh = time_ms(3, [&] { (void)dash.refresh(); });
  std::printf("live poll after a commit outside the 10 selected runs (a heartbeat): %.1f ms\n", refresh);
  // Another connection appends a point to a selected run: the poll re-reads and redraws them.
  auto writer = Database::open(path);
  int64_t step = kSteps;
  const double grow = time_ms(3, [&] {
    ++step;
    (void)writer->exec("INSERT INTO metrics(run, name, step, epoch, value, wall_ns) VALUES(13, 'train/loss', " +
                       std::to_string(step) + ", 2, 0.1, 1800000000000000000);");
    dash.poll();
  });
  std::printf("live poll after a new point in a selected run (rows, compare, 10 curves): %.1f ms\n", grow);
  (void)writer->exec("DELETE FROM metrics WHERE run = 13 AND step > " + std::to_string(kSteps) + ";");
  return 0;
}
