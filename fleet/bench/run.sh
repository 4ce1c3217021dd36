#!/usr/bin/env bash
# The fleet benchmark, run by hand: `fleet/bench/run.sh BUNDLE.tar.gz...` (any bundles; for the
# targets use generated ones of 100 MB and 1 GB uncompressed). Prints, in one run: export time
# against `gzip -dc` of the same bundles, the dataset's bytes against the archives' bytes, each
# shipped view's time in `diagwire query` against DuckDB's on the same files, and the peak RSS of
# export and query. Builds the release binary with the feature `fleet`; DuckDB comes from .ci/venv
# (`.ci/fleet-engines` installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || { echo "usage: $0 BUNDLE.tar.gz..." >&2; exit 2; }
cargo build --quiet --release --locked -p diagwire-cli --features fleet
bin="${CARGO_TARGET_DIR:-target}/release/diagwire"
py=.ci/venv/bin/python
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }

t0=$(now); for b in "$@"; do gzip -dc "$b" > /dev/null; done; t1=$(now)
gz=$(secs "$t0" "$t1")
/usr/bin/time -f "%M" -o "$scratch/export.rss" "$bin" export "$@" --to "$scratch/ds" > /dev/null
t2=$(now)
export_s=$(secs "$t1" "$t2")
archive_bytes=$(cat "$@" | wc -c)
dataset_bytes=$(du -sb "$scratch/ds" | cut -f1)
echo "gzip -dc: ${gz} s; export: ${export_s} s; ratio $(echo "scale=2; $export_s / $gz" | bc)"
echo "export peak RSS: $(( $(cat "$scratch/export.rss") / 1024 )) MB"
echo "archives: $archive_bytes bytes; dataset: $dataset_bytes bytes; ratio $(echo "scale=3; $dataset_bytes / $archive_bytes" | bc)"
for view in dials swim_transitions probe_rtts kernel_drops; do
  q="SELECT COUNT(*) FROM $view"
  a=$(now)
  /usr/bin/time -f "%M" -o "$scratch/q.rss" "$bin" query "$scratch/ds" "$q" > /dev/null
  b=$(now)
  ours=$(secs "$a" "$b")
  theirs=$("$py" - "$scratch/ds" "$view" <<'PY'
import os, re, sys, time
import duckdb
ds, view = sys.argv[1], sys.argv[2]
start = time.time()
con = duckdb.connect()
for t in ["runs", "nodes", "events", "snapshots", "finalize", "vastai"]:
    if os.path.isdir(os.path.join(ds, t)):
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{ds}/{t}/**/*.parquet', hive_partitioning = true, union_by_name = true)")
text = open("fleet/src/views.rs").read()
for name in re.findall(r'views/([a-z_]+)\.sql', text):
    con.execute(f"CREATE VIEW {name} AS " + open(f"fleet/views/{name}.sql").read())
con.execute(f"SELECT COUNT(*) FROM {view}").fetchall()
print(f"{time.time() - start:.3f}")
PY
)
  echo "view $view: diagwire query ${ours} s (peak RSS $(( $(cat "$scratch/q.rss") / 1024 )) MB), DuckDB ${theirs} s, ratio $(echo "scale=2; $ours / $theirs" | bc)"
done
