"""Runs SQL queries with DuckDB (from PyPI) and prints their rows as JSON.

Usage: python duckdb_query.py DIR QUERY...
Each query may name a table as {slices}, {threads}, ...: replaced by
read_parquet('DIR/<table>/*.parquet'). Prints a JSON list with one list of
rows (each a list of values) per query.
"""

import json
import sys

import duckdb

TABLES = ["slices", "instants", "counters", "flows", "threads", "processes", "sched", "wakeups", "samples", "tasks", "polls", "allocations"]


def main():
    folder = sys.argv[1]
    con = duckdb.connect()
    names = {t: f"read_parquet('{folder}/{t}/*.parquet')" for t in TABLES}
    out = []
    for query in sys.argv[2:]:
        rows = con.sql(query.format(**names)).fetchall()
        out.append([list(r) for r in rows])
    json.dump(out, sys.stdout, default=str)


main()
