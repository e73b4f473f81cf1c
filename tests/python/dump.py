"""Parse an FXT file with the PyPI `fxt` package and print its records as JSON.

Used by tests/python_reader.rs to check fxt's output against an independent
reader. Usage: python dump.py TRACE.fxt

Output: {"providers": {"<id>": {"name", "events", "records"}}, "eof_error"}
where each record is {"record": <model class name>, <its fields>...}. Values
are made exact and unambiguous for the comparison: floats become
{"f64": <IEEE bits>}, bytes {"hex": ...}, threads [process, thread], and
argument dicts lists of [name, value] pairs in record order.
"""

import dataclasses
import json
import struct
import sys

from fxt.models import Thread
from fxt.reader import parse_records


def plain(value):
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):  # also IntEnum
        return int(value)
    if isinstance(value, float):
        return {"f64": struct.unpack("<Q", struct.pack("<d", value))[0]}
    if isinstance(value, bytes):
        return {"hex": value.hex()}
    if isinstance(value, Thread):
        return [value.process_id, value.thread_id]
    if isinstance(value, dict):
        return [[k, plain(v)] for k, v in value.items()]
    raise TypeError(f"unexpected value {value!r}")


def record(rec):
    out = {"record": type(rec).__name__}
    for f in dataclasses.fields(rec):
        out[f.name] = plain(getattr(rec, f.name))
    return out


def main():
    with open(sys.argv[1], "rb") as f:
        result = parse_records(f)
    providers = {
        str(pid): {
            "name": state.name,
            "events": [int(e) for e in state.events],
            "records": [record(r) for r in state.records],
        }
        for pid, state in result.records_by_provider.items()
    }
    error = str(result.eof_error) if result.eof_error else None
    print(json.dumps({"providers": providers, "eof_error": error}, ensure_ascii=False))


if __name__ == "__main__":
    main()
