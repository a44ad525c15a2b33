// Tests of studio/runs_lineage.cpp on hand-made lineages: a chain of resumes nests run under
// checkpoint under run; a derived graph says where it comes from; runs without a graph are grouped;
// a cycle (a run resumed from its own checkpoint) neither loops nor loses the run; the same
// lineage again keeps what the user folded; a click on a run emits run_activated.
#include <QSignalSpy>
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "studio/insight/runs_lineage.h"

using tessera::insight::LineageGraph;
using tessera::studio::RunsLineageView;

namespace {

LineageGraph chain() {
  LineageGraph g;
  g.graphs = {{"aaaaaaaa11", "lenet", 1}, {"bbbbbbbb22", "lenet", 2}};
  g.runs = {{1, "first", "finished", "aaaaaaaa11"},
            {2, "second", "finished", "aaaaaaaa11"},
            {3, "third", "crashed", "aaaaaaaa11"},
            {4, "nograph", "failed", ""}};
  g.checkpoints = {{10, 1, 100, 0, "/ck/a.tsr", "x"}, {11, 2, 200, 0, "/ck/b.tsr", "y"}};
  LineageGraph::Edge e1;
  e1.kind = "resumed_from";
  e1.from_run = 2;
  e1.checkpoint = 10;
  LineageGraph::Edge e2;
  e2.kind = "fine_tuned_from";
  e2.from_run = 3;
  e2.checkpoint = 11;
  LineageGraph::Edge d;
  d.kind = "derived_from";
  d.from_graph = "aaaaaaaa11";
  d.to_graph = "bbbbbbbb22";
  g.edges = {e1, e2, d};
  return g;
}

}  // namespace

class RunsLineageTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void chainsNestRunUnderCheckpointUnderRun() {
    RunsLineageView v;
    v.set_lineage(chain());
    QCOMPARE(v.topLevelItemCount(), 3);  // two graphs, "no recorded graph"
    QCOMPARE(v.topLevelItem(0)->text(0), QStringLiteral("graph lenet aaaaaaaa"));
    QCOMPARE(v.topLevelItem(1)->text(1), QStringLiteral("derived from aaaaaaaa"));
    QCOMPARE(v.topLevelItem(2)->text(0), QStringLiteral("no recorded graph"));
    QTreeWidgetItem* r1 = v.item_for_run(1);
    QTreeWidgetItem* r2 = v.item_for_run(2);
    QTreeWidgetItem* r3 = v.item_for_run(3);
    QCOMPARE(r1->parent(), v.topLevelItem(0));
    QCOMPARE(r2->parent()->parent(), r1);
    QCOMPARE(r2->parent()->text(0), QStringLiteral("checkpoint step 100"));
    QCOMPARE(r3->parent()->parent(), r2);
    QVERIFY(r3->text(1).startsWith(QStringLiteral("fine-tuned")));
    QCOMPARE(v.item_for_run(4)->parent(), v.topLevelItem(2));
  }

  void aCycleNeitherLoopsNorLosesARun() {
    LineageGraph g;
    g.graphs = {{"aaaaaaaa11", "lenet", 1}};
    g.runs = {{1, "self", "finished", "aaaaaaaa11"}};
    g.checkpoints = {{10, 1, 100, 0, "/ck/a.tsr", "x"}};
    LineageGraph::Edge e;
    e.kind = "resumed_from";
    e.from_run = 1;
    e.checkpoint = 10;
    g.edges = {e};
    RunsLineageView v;
    v.set_lineage(g);
    QVERIFY(v.item_for_run(1));
  }

  void sameLineageKeepsFoldsAndClicksSelect() {
    RunsLineageView v;
    v.set_lineage(chain());
    v.item_for_run(1)->setExpanded(false);
    v.set_lineage(chain());
    QVERIFY(!v.item_for_run(1)->isExpanded());
    auto changed = chain();
    changed.runs[0].status = "crashed";
    v.set_lineage(changed);
    QVERIFY(v.item_for_run(1)->isExpanded());  // rebuilt
    QSignalSpy spy(&v, &RunsLineageView::run_activated);
    Q_EMIT v.itemClicked(v.item_for_run(2), 0);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toLongLong(), qint64{2});
    Q_EMIT v.itemClicked(v.topLevelItem(0), 0);  // a graph: no signal
    QCOMPARE(spy.count(), 1);
  }
};

TESSERA_QTEST(RunsLineageTest)
#include "runs_lineage_test.moc"
