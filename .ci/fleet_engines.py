"""Reads a fleet dataset with other engines and checks they answer as `diagwire query` does.

Usage: fleet_engines.py DATASET DIAGWIRE [ENGINE...]   (engines: duckdb, spark)

Each engine registers the dataset's tables from their Parquet folders (the partition columns
from the folder names), defines the shipped views from the same SQL files as `diagwire query`
(fleet/views/, in the order fleet/src/views.rs lists them) and runs `SELECT * FROM <view>`; the
rows, in any order, must equal the rows `diagwire query --format json` prints.
"""
import functools
import json
import math
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = ["runs", "nodes", "events", "snapshots", "finalize", "vastai", "quarantine"]


def views():
    text = open(os.path.join(ROOT, "fleet/src/views.rs"), encoding="utf-8").read()
    names = re.findall(r'view!\("([a-z_]+)"', text)
    out = []
    for name in names:
        sql = open(os.path.join(ROOT, "fleet/views", name + ".sql"), encoding="utf-8").read()
        out.append((name, sql))
    return out


def norm(v):
    """One spelling per value: integral numbers as ints, others as floats."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if hasattr(v, "__int__") and not isinstance(v, float) and not hasattr(v, "as_integer_ratio"):
        return int(v)
    f = float(v)
    if math.isfinite(f) and f == int(f):
        return int(f)
    return f


def canon(rows):
    rows = [{k: norm(v) for k, v in r.items()} for r in rows]
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


@functools.cache
def diagwire_rows_json(diagwire, dataset, view):
    """`diagwire query`'s rows of a view, as JSON text: once per view, whichever engines compare."""
    return subprocess.run(
        list(diagwire) + ["query", dataset, f"SELECT * FROM {view}", "--format", "json"],
        check=True, capture_output=True, text=True,
    ).stdout


def diagwire_rows(diagwire, dataset, view):
    rows = json.loads(diagwire_rows_json(tuple(diagwire), dataset, view))
    # arrow's JSON writer leaves null values out: put them back as the other engines have them.
    return rows


def fill(rows, columns):
    return [{c: r.get(c) for c in columns} for r in rows]


def duckdb_rows(dataset):
    import duckdb

    con = duckdb.connect()
    for t in TABLES:
        folder = os.path.join(dataset, t)
        if not os.path.isdir(folder):
            continue
        glob = os.path.join(folder, "**", "*.parquet")
        con.execute(
            f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{glob}', hive_partitioning = true, union_by_name = true)"
        )
    for name, sql in views():
        con.execute(f"CREATE VIEW {name} AS {sql}")

    def run(view):
        cur = con.execute(f"SELECT * FROM {view}")
        cols = [d[0] for d in cur.description]
        return cols, [dict(zip(cols, r)) for r in cur.fetchall()]

    return run


def spark_rows(dataset):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.ansi.enabled", "true")
        .config("spark.sql.ansi.doubleQuotedIdentifiers", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for t in TABLES:
        folder = os.path.join(dataset, t)
        if os.path.isdir(folder):
            spark.read.option("mergeSchema", "true").parquet(folder).createOrReplaceTempView(t)
    refused = {}
    for name, sql in views():
        try:
            spark.sql(f"CREATE TEMPORARY VIEW {name} AS {sql}")
        except Exception as e:  # a view Spark cannot define is that view's failure, not the run's
            refused[name] = str(e).strip().splitlines()[0]

    def run(view):
        if view in refused:
            raise RuntimeError(refused[view])
        df = spark.sql(f"SELECT * FROM {view}")
        cols = df.columns
        return cols, [r.asDict() for r in df.collect()]

    return run


def main():
    dataset, diagwire = sys.argv[1], sys.argv[2].split()
    engines = sys.argv[3:] or ["duckdb"]
    failed = passed = 0
    for engine in engines:
        start = time.time()
        run = {"duckdb": duckdb_rows, "spark": spark_rows}[engine](dataset)
        for name, _ in views():
            try:
                cols, theirs = run(name)
            except Exception as e:
                failed += 1
                print(f"FAIL {engine} {name}: {str(e).strip().splitlines()[0]}")
                continue
            ours = fill(diagwire_rows(diagwire, dataset, name), cols)
            if not theirs and not ours:
                print(f"{engine} {name}: no rows in either (nothing compared)")
            if canon(theirs) == canon(ours):
                passed += 1
                print(f"ok   {engine} {name}: {len(ours)} row(s) equal")
            else:
                failed += 1
                print(f"FAIL {engine} {name}")
                a, b = canon(ours), canon(theirs)
                for r in sorted(set(a) - set(b))[:5]:
                    print(f"  only diagwire: {r}")
                for r in sorted(set(b) - set(a))[:5]:
                    print(f"  only {engine}: {r}")
        print(f"{engine}: {time.time() - start:.1f} s")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
