"""Runs the guide's "same query in three engines" (docs/guide/query.md) in DuckDB, ClickHouse (chDB)
and Spark SQL (PySpark) over the tables of `fxt export parquet`, and fails
unless the three agree. Run by hand (PySpark needs a Java runtime):

    pip install duckdb==2.0.1 chdb pyspark
    python3 crates/fxt-cli/tests/python/engines.py DIR

The queries are read from docs/guide/query.md (its three ```sql blocks
under "The same query in three engines", in the order DuckDB, ClickHouse,
Spark SQL), with `/data/traces` replaced by DIR, so what the guide shows
is what runs.
"""

import csv
import io
import os
import re
import sys


def guide_queries():
    here = os.path.dirname(os.path.abspath(__file__))
    page = os.path.join(here, "..", "..", "..", "..", "docs", "guide", "query.md")
    text = open(page).read()
    section = text.split("## The same query in three engines", 1)[1]
    blocks = re.findall(r"```sql\n(.*?)```", section, re.S)[:3]
    return [[q.strip() for q in b.split(";") if q.strip()] for b in blocks]


def normalize(rows):
    out = []
    for row in rows:
        norm = []
        for v in row:
            if isinstance(v, str):
                try:
                    v = float(v) if ("." in v or "e" in v) else int(v)
                except ValueError:
                    pass
            if isinstance(v, float):
                v = float(f"{v:.9g}")
            norm.append(v)
        out.append(tuple(norm))
    return out


def duckdb_run(queries):
    import duckdb

    con = duckdb.connect()
    return [normalize(con.sql(q).fetchall()) for q in queries]


def clickhouse_run(queries):
    import chdb

    results = []
    for q in queries:
        text = str(chdb.query(q, "CSV"))
        results.append(normalize(list(csv.reader(io.StringIO(text)))))
    return results


def spark_run(queries):
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").appName("fxt").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        return [normalize([tuple(r) for r in spark.sql(q).collect()]) for q in queries]
    finally:
        spark.stop()


def main():
    folder = os.path.abspath(sys.argv[1])
    duck, click, spark = [
        [q.replace("/data/traces", folder) for q in block] for block in guide_queries()
    ]
    results = {
        "DuckDB": duckdb_run(duck),
        "ClickHouse": clickhouse_run(click),
        "Spark SQL": spark_run(spark),
    }
    first = results["DuckDB"]
    ok = True
    for engine, result in results.items():
        for i, rows in enumerate(result):
            print(f"{engine}, query {i + 1}: {len(rows)} rows, first {rows[:2]}")
            if rows != first[i]:
                ok = False
                print(f"  differs from DuckDB's: {first[i][:5]}")
    print("the engines agree" if ok else "the engines DISAGREE")
    sys.exit(0 if ok else 1)


main()
