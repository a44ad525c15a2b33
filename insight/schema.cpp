// The insight schema, version by version.
//
// Times: *_ns columns of runs, metrics, checkpoints and lineage are wall-clock nanoseconds since
// the epoch; spans, memory events are steady-clock nanoseconds of the recording process (add
// runs.steady_offset_ns for wall time). Hashes of text are XXH3-64 in 16 hex digits.
#include "insight/schema.h"

#include "insight/database.h"

namespace tessera::insight {

const std::vector<const char*>& schema_migrations() {
  static const std::vector<const char*> kMigrations = {
      // v0 -> v1: the foundation.
      R"sql(
      CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        command TEXT NOT NULL,
        graph_name TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'crashed')),
        started_ns INTEGER NOT NULL,
        ended_ns INTEGER
      );
      )sql",
      // v1 -> v2: run details, lineage, traces and snapshots.
      R"sql(
      ALTER TABLE runs ADD COLUMN name TEXT NOT NULL DEFAULT '';
      ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT '';        -- train | run | bench | passes
      ALTER TABLE runs ADD COLUMN engine_version TEXT NOT NULL DEFAULT '';
      ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';
      ALTER TABLE runs ADD COLUMN pid INTEGER;
      ALTER TABLE runs ADD COLUMN seed INTEGER;
      ALTER TABLE runs ADD COLUMN heartbeat_ns INTEGER;
      ALTER TABLE runs ADD COLUMN steady_offset_ns INTEGER NOT NULL DEFAULT 0;  -- wall - steady
      ALTER TABLE runs ADD COLUMN max_span_ns INTEGER NOT NULL DEFAULT 0;       -- longest span
      ALTER TABLE runs ADD COLUMN error TEXT;
      CREATE INDEX runs_by_status ON runs(status);
      CREATE INDEX runs_by_name ON runs(name);

      CREATE TABLE hyperparams (
        run INTEGER NOT NULL REFERENCES runs(id),
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run, key)
      ) WITHOUT ROWID;

      CREATE TABLE graphs (
        hash TEXT PRIMARY KEY,            -- XXH3 of body
        name TEXT NOT NULL,
        format TEXT NOT NULL,             -- tir | json
        body TEXT NOT NULL,
        created_ns INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE run_graphs (
        run INTEGER NOT NULL REFERENCES runs(id),
        graph TEXT NOT NULL REFERENCES graphs(hash),
        role TEXT NOT NULL,               -- input | trained
        PRIMARY KEY (run, role, graph)
      ) WITHOUT ROWID;

      CREATE TABLE datasets (
        fingerprint TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        examples INTEGER
      ) WITHOUT ROWID;
      CREATE TABLE run_datasets (
        run INTEGER NOT NULL REFERENCES runs(id),
        split TEXT NOT NULL,              -- train | test
        fingerprint TEXT NOT NULL REFERENCES datasets(fingerprint),
        PRIMARY KEY (run, split)
      ) WITHOUT ROWID;

      CREATE TABLE metrics (
        run INTEGER NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        step INTEGER NOT NULL,
        epoch INTEGER NOT NULL,
        value REAL NOT NULL,
        wall_ns INTEGER NOT NULL
      );
      CREATE INDEX metrics_by_run ON metrics(run, name, step);

      CREATE TABLE checkpoints (
        id INTEGER PRIMARY KEY,
        run INTEGER NOT NULL REFERENCES runs(id),
        path TEXT NOT NULL,
        step INTEGER NOT NULL,
        checksum TEXT NOT NULL,           -- XXH3 of the file
        wall_ns INTEGER NOT NULL
      );
      CREATE INDEX checkpoints_by_run ON checkpoints(run);
      CREATE INDEX checkpoints_by_path ON checkpoints(path);

      -- from --kind--> to. resumed_from / fine_tuned_from: run -> checkpoint (to_id = checkpoints.id,
      -- or the path when no recorded run wrote it); derived_from: graph -> graph (hashes).
      CREATE TABLE lineage (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('resumed_from', 'fine_tuned_from', 'derived_from')),
        from_type TEXT NOT NULL,          -- run | graph
        from_id TEXT NOT NULL,
        to_type TEXT NOT NULL,            -- checkpoint | checkpoint_path | graph | run
        to_id TEXT NOT NULL,
        note TEXT NOT NULL DEFAULT '',
        wall_ns INTEGER NOT NULL
      );
      CREATE INDEX lineage_from ON lineage(from_type, from_id);
      CREATE INDEX lineage_to ON lineage(to_type, to_id);

      -- Strings of spans (names, ops, devices, details), each stored once: a span row is numbers.
      CREATE TABLE strings (
        id INTEGER PRIMARY KEY,
        text TEXT NOT NULL UNIQUE
      );
      CREATE TABLE spans (
        run INTEGER NOT NULL REFERENCES runs(id),
        kind INTEGER NOT NULL,            -- 0 stage, 1 pass, 2 kernel, 3 copy, 4 step
        name INTEGER NOT NULL REFERENCES strings(id),
        op INTEGER NOT NULL REFERENCES strings(id),
        device INTEGER NOT NULL REFERENCES strings(id),
        detail INTEGER NOT NULL REFERENCES strings(id),
        node INTEGER NOT NULL,
        thread INTEGER NOT NULL,
        start_ns INTEGER NOT NULL,
        end_ns INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        flops REAL NOT NULL
      );
      -- The spans of a time window: start_ns in [t0 - runs.max_span_ns, t1), then end_ns > t0.
      CREATE INDEX spans_by_time ON spans(run, start_ns);
      -- Statistics by op, kept by the writer as it inserts (one upsert per op and batch), so that
      -- they cost O(ops) to read and no second index on spans slows the writes.
      CREATE TABLE span_stats (
        run INTEGER NOT NULL REFERENCES runs(id),
        kind INTEGER NOT NULL,
        op INTEGER NOT NULL REFERENCES strings(id),
        count INTEGER NOT NULL,
        total_ns INTEGER NOT NULL,
        min_ns INTEGER NOT NULL,
        max_ns INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        flops REAL NOT NULL,
        PRIMARY KEY (run, kind, op)
      ) WITHOUT ROWID;

      CREATE TABLE memory_events (
        run INTEGER NOT NULL REFERENCES runs(id),
        device TEXT NOT NULL,
        what TEXT NOT NULL,
        time_ns INTEGER NOT NULL,
        bytes INTEGER NOT NULL
      );
      CREATE INDEX memory_by_time ON memory_events(run, time_ns);

      CREATE TABLE ir_texts (
        hash TEXT PRIMARY KEY,            -- XXH3 of text: each distinct IR stored once
        text TEXT NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE snapshots (
        id INTEGER PRIMARY KEY,
        run INTEGER NOT NULL REFERENCES runs(id),
        stage TEXT NOT NULL,
        pass TEXT NOT NULL,
        idx INTEGER NOT NULL,
        ir TEXT NOT NULL REFERENCES ir_texts(hash),
        graph_hash TEXT NOT NULL,         -- the engine's structural hash, 16 hex digits
        duration_ns INTEGER NOT NULL,
        changed INTEGER NOT NULL,
        nodes_before INTEGER NOT NULL,
        nodes_after INTEGER NOT NULL,
        diagnostics TEXT NOT NULL         -- one per line
      );
      CREATE INDEX snapshots_by_run ON snapshots(run, idx);
      CREATE TABLE snapshot_provenance (
        snapshot INTEGER NOT NULL REFERENCES snapshots(id),
        node INTEGER NOT NULL,
        from_node INTEGER NOT NULL,
        PRIMARY KEY (snapshot, node, from_node)
      ) WITHOUT ROWID;
      )sql",
      // v2 -> v3: runs may be "stopped" (ended early by the user, cleanly). SQLite cannot change a
      // CHECK constraint in place: the table is rebuilt (its id column keeps every reference of
      // the other tables valid; foreign keys are not enforced on these connections).
      R"sql(
      CREATE TABLE runs_v3 (
        id INTEGER PRIMARY KEY,
        command TEXT NOT NULL,
        graph_name TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'crashed', 'stopped')),
        started_ns INTEGER NOT NULL,
        ended_ns INTEGER,
        name TEXT NOT NULL DEFAULT '',
        kind TEXT NOT NULL DEFAULT '',
        engine_version TEXT NOT NULL DEFAULT '',
        host TEXT NOT NULL DEFAULT '',
        pid INTEGER,
        seed INTEGER,
        heartbeat_ns INTEGER,
        steady_offset_ns INTEGER NOT NULL DEFAULT 0,
        max_span_ns INTEGER NOT NULL DEFAULT 0,
        error TEXT
      );
      INSERT INTO runs_v3 (id, command, graph_name, status, started_ns, ended_ns, name, kind,
                           engine_version, host, pid, seed, heartbeat_ns, steady_offset_ns,
                           max_span_ns, error)
        SELECT id, command, graph_name, status, started_ns, ended_ns, name, kind, engine_version,
               host, pid, seed, heartbeat_ns, steady_offset_ns, max_span_ns, error FROM runs;
      DROP TABLE runs;
      ALTER TABLE runs_v3 RENAME TO runs;
      CREATE INDEX runs_by_status ON runs(status);
      CREATE INDEX runs_by_name ON runs(name);
      )sql",
      // v3 -> v4: a metric may be NaN (a diverging loss is a fact to keep). SQLite stores a NaN
      // REAL as NULL, which NOT NULL refused, losing the whole batch: value is nullable now and
      // NULL reads as NaN. Rows keep their rowids (ties of a step are ordered by rowid). And a
      // run's process is known by its pid and its start time (clock ticks after boot, /proc): a pid
      // alone is reused, and a reused one kept a killed run "running".
      R"sql(
      ALTER TABLE runs ADD COLUMN pid_start INTEGER;
      CREATE TABLE metrics_v4 (
        run INTEGER NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        step INTEGER NOT NULL,
        epoch INTEGER NOT NULL,
        value REAL,                       -- NULL: NaN
        wall_ns INTEGER NOT NULL
      );
      INSERT INTO metrics_v4 (rowid, run, name, step, epoch, value, wall_ns)
        SELECT rowid, run, name, step, epoch, value, wall_ns FROM metrics;
      DROP TABLE metrics;
      ALTER TABLE metrics_v4 RENAME TO metrics;
      CREATE INDEX metrics_by_run ON metrics(run, name, step);
      )sql",
  };
  return kMigrations;
}

}  // namespace tessera::insight
