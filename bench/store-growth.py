"""Prints, as JSON, what a host-server SQLite file holds: its size in bytes (pages in use, after
a WAL checkpoint) and its step records (rows, and the bytes of their frames). scripts/bench.sh
reads it before and after a load to give the growth per retained step."""

import json
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
page_size = db.execute("PRAGMA page_size").fetchone()[0]
pages = db.execute("PRAGMA page_count").fetchone()[0] - db.execute("PRAGMA freelist_count").fetchone()[0]
rows, frame_bytes = db.execute(
    "SELECT COUNT(*), COALESCE(SUM(LENGTH(frames)), 0) FROM step_records"
).fetchone()
print(json.dumps({"bytes": pages * page_size, "stepRecords": rows, "frameBytes": frame_bytes}))
