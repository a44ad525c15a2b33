// Tests of insight/runs_query.cpp (Qt Test, as the dashboard's other tests; the reads need no Qt)
// over a real database written through insight::Recorder: summaries (final value at the highest
// step, not the last inserted; runs without metrics; graph hashes), metric series by run and by
// name, a run's graph (input role first; the error without one), the lineage of the whole database
// (resumed from a recorded checkpoint, from an unrecorded path, graph derived from graph) and
// data_version changing only after another connection commits.
#include <QTemporaryDir>
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "insight/runs_query.h"
#include "tests/studio/runs_test_util.h"

using tessera::insight::Database;
using tessera::insight::LineageKind;
using tessera::insight::Recorder;

class RunsQueryTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  std::string db_path_, ck_;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_path_ = dir_.filePath(QStringLiteral("q.db")).toStdString();
    ck_ = dir_.filePath(QStringLiteral("ck.tsr")).toStdString();
    runs_test::RunSpec a;
    // Steps out of order: the final value is the one at step 3, recorded second.
    a.metrics = {{"loss", 1, 3.0}, {"loss", 3, 1.0}, {"loss", 2, 2.0}, {"acc", 1, 0.5}};
    a.graph_body = runs_test::mlp_body();
    a.checkpoints = {{ck_, 3}};
    QCOMPARE(runs_test::record_run(db_path_, a), 1);
    runs_test::RunSpec b;  // no metrics, no graph, resumed from run 1's checkpoint
    b.name = "resumed";
    b.resumed_from = ck_;
    QCOMPARE(runs_test::record_run(db_path_, b), 2);
    runs_test::RunSpec c;
    c.resumed_from = "/elsewhere/ck.tsr";
    c.metrics = {{"loss", 5, 0.25}};
    QCOMPARE(runs_test::record_run(db_path_, c), 3);
  }

  void summariesInOneGo() {
    auto db = Database::open(db_path_);
    QVERIFY(db);
    auto runs = tessera::insight::load_run_summaries(*db);
    QVERIFY(runs);
    QCOMPARE(runs->size(), size_t{3});
    const auto& a = (*runs)[0];
    QCOMPARE(a.metrics.size(), size_t{2});
    QCOMPARE(a.metrics[0].name, std::string("acc"));
    QCOMPARE(a.metrics[1].name, std::string("loss"));
    QCOMPARE(a.metrics[1].final_step, int64_t{3});
    QCOMPARE(a.metrics[1].final_value, 1.0);
    QCOMPARE(a.graph_hash, tessera::insight::content_hash(runs_test::mlp_body()));
    QVERIFY((*runs)[1].metrics.empty());
    QVERIFY((*runs)[1].graph_hash.empty());
    QCOMPARE((*runs)[1].run.name, std::string("resumed"));
    QCOMPARE((*runs)[2].metrics[0].final_value, 0.25);
  }

  void seriesByRunAndName() {
    auto db = Database::open(db_path_);
    auto all = tessera::insight::load_metric_series(*db, {1, 2, 3});
    QVERIFY(all);
    QCOMPARE(all->size(), size_t{2});  // run 2 has none
    const auto& p = all->at(1);
    QCOMPARE(p.size(), size_t{4});
    QCOMPARE(p[0].name, std::string("acc"));
    QCOMPARE(p[1].step, int64_t{1});  // loss in step order
    QCOMPARE(p[3].step, int64_t{3});
    QCOMPARE(p[3].value, 1.0);
    auto loss = tessera::insight::load_metric_series(*db, {1}, "loss");
    QVERIFY(loss);
    QCOMPARE(loss->at(1).size(), size_t{3});
    const auto s = tessera::insight::summarize_metrics(loss->at(1));
    QCOMPARE(s[0].best_value, 1.0);
  }

  void graphOfARun() {
    auto db = Database::open(db_path_);
    auto g = tessera::insight::run_graph(*db, 1);
    QVERIFY(g);
    QCOMPARE(g->body, runs_test::mlp_body());
    QCOMPARE(g->role, std::string("input"));
    QCOMPARE(g->format, std::string("tir"));
    auto none = tessera::insight::run_graph(*db, 2);
    QVERIFY(!none);
    QVERIFY(none.error().message.find("run 2 recorded no graph") != std::string::npos);
  }

  void lineageOfTheWholeDatabase() {
    {
      auto rec = Recorder::open(db_path_);
      QVERIFY(rec);
      tessera::insight::RunInfo info;
      info.name = "deriver";
      QVERIFY((*rec)->start_run(info));
      (*rec)->add_lineage(LineageKind::kDerivedFrom, "aaaa", "bbbb");
      QVERIFY((*rec)->finish_run(tessera::insight::RunStatus::kFinished).is_ok());
    }
    auto db = Database::open(db_path_);
    auto l = tessera::insight::load_lineage(*db);
    QVERIFY(l);
    QCOMPARE(l->graphs.size(), size_t{1});
    QCOMPARE(l->runs.size(), size_t{4});
    QCOMPARE(l->runs[0].graph_hash, l->graphs[0].hash);
    QCOMPARE(l->checkpoints.size(), size_t{1});
    QCOMPARE(l->checkpoints[0].run, int64_t{1});
    QCOMPARE(l->edges.size(), size_t{3});
    QCOMPARE(l->edges[0].kind, std::string("resumed_from"));
    QCOMPARE(l->edges[0].from_run, int64_t{2});
    QCOMPARE(l->edges[0].checkpoint, l->checkpoints[0].id);
    QCOMPARE(l->edges[1].from_run, int64_t{3});
    QCOMPARE(l->edges[1].checkpoint, int64_t{0});
    QCOMPARE(l->edges[1].checkpoint_path, std::string("/elsewhere/ck.tsr"));
    QCOMPARE(l->edges[2].kind, std::string("derived_from"));
    QCOMPARE(l->edges[2].from_graph, std::string("aaaa"));
    QCOMPARE(l->edges[2].to_graph, std::string("bbbb"));
  }

  void dataVersionChangesOnlyAfterAnotherCommit() {
    auto db = Database::open(db_path_);
    auto v0 = tessera::insight::data_version(*db);
    QVERIFY(v0);
    QCOMPARE(*tessera::insight::data_version(*db), *v0);
    (void)tessera::insight::load_run_summaries(*db);  // reading changes nothing
    QCOMPARE(*tessera::insight::data_version(*db), *v0);
    auto other = Database::open(db_path_);
    QVERIFY(other->exec("UPDATE runs SET name = 'renamed' WHERE id = 3;").is_ok());
    QVERIFY(*tessera::insight::data_version(*db) != *v0);
  }
};

TESSERA_QTEST(RunsQueryTest)
#include "runs_query_test.moc"
