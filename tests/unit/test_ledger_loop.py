"""The event-loop group commit: batches on the loop, answers after the commit, isolates a failing write."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.jobs import JobKind, JobRequest
from bot.ledger.sqlite import ops
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.ledger.sqlite.loop import LoopGroupCommit


def request(issue: int) -> JobRequest:
    return JobRequest(JobKind.FIX, 1, "octo/widgets", issue, "alice", f"delivery-{issue}")


def test_concurrent_submits_are_committed_when_they_resolve(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.db")

    async def main() -> list[bool]:
        results = await asyncio.gather(*(ledger.submit_async(request(n)) for n in range(200)))
        # Another connection (another process, after a crash) sees every answered row.
        with sqlite3.connect(tmp_path / "ledger.db") as other:
            rows = other.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
        return [r.created for r in results] + [rows == 200]

    assert all(asyncio.run(main()))
    assert asyncio.run(ledger.submit_async(request(7))).created is False  # a redelivery finds its job
    ledger.close()


def test_a_failing_write_does_not_sink_its_batch(tmp_path: Path) -> None:
    def connect() -> sqlite3.Connection:
        return sqlite3.connect(tmp_path / "w.db", isolation_level=None, check_same_thread=False)

    with connect() as conn:
        conn.execute("CREATE TABLE t (v INTEGER UNIQUE)")
    writer = LoopGroupCommit(connect)

    async def main() -> list[object]:
        futures = [
            writer.submit(lambda c, v=v: c.execute("INSERT INTO t VALUES (?)", (v,)).rowcount) for v in (1, 1, 2)
        ]
        return await asyncio.gather(*futures, return_exceptions=True)

    first, second, third = asyncio.run(main())
    assert first == 1 and third == 1 and isinstance(second, sqlite3.IntegrityError)
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(_submit_nothing(writer))
    assert [r[0] for r in connect().execute("SELECT v FROM t ORDER BY v")] == [1, 2]


def test_first_runs_bare_and_the_op_only_when_first_wrote_nothing(tmp_path: Path) -> None:
    def connect() -> sqlite3.Connection:
        return sqlite3.connect(tmp_path / "f.db", isolation_level=None, check_same_thread=False)

    with connect() as conn:
        conn.execute("CREATE TABLE t (v INTEGER UNIQUE, src TEXT)")
    writer = LoopGroupCommit(connect)

    def first(v: int) -> Callable[[sqlite3.Connection], object]:
        """One INSERT; a clash inserts nothing (None: the op runs)."""
        return lambda c: c.execute("INSERT INTO t VALUES (?, 'first') ON CONFLICT DO NOTHING", (v,)).rowcount or None

    def long_way(c: sqlite3.Connection, v: int) -> str:
        c.execute("UPDATE t SET src = 'op' WHERE v = ?", (v,))
        if v == 3:
            raise ValueError("the long way fails after writing")
        return "op"

    async def main() -> list[object]:
        futures = [writer.submit(lambda c, v=v: long_way(c, v), first=first(v)) for v in (1, 1, 2, 3, 3)]
        futures.append(writer.submit(lambda c: "op", first=lambda c: c.execute("INSERT INTO t VALUES (NULL + x, '')")))
        return await asyncio.gather(*futures, return_exceptions=True)

    results = asyncio.run(main())
    assert results[:4] == [1, "op", 1, 1]
    assert isinstance(results[4], ValueError)  # its savepoint undid its UPDATE
    assert isinstance(results[5], sqlite3.OperationalError)  # a failing first: only its statement is gone
    writer.close()
    rows = connect().execute("SELECT v, src FROM t ORDER BY v").fetchall()
    assert rows == [(1, "op"), (2, "first"), (3, "first")]


async def _submit_nothing(writer: LoopGroupCommit) -> None:
    await writer.submit(lambda c: None)


def test_loop_writes_and_the_writer_thread_share_the_file(tmp_path: Path) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.db")

    async def main() -> None:
        for n in range(20):
            job = (await ledger.submit_async(request(n))).job
            claimed = await asyncio.to_thread(ledger.claim, job.id, "w1", 60)  # the writer thread's connection
            assert claimed is not None and claimed.attempts == 1

    asyncio.run(main())
    assert len(ledger.list(limit=100)) == 20
    ledger.close()


def test_job_ids_follow_time_and_a_clash_draws_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = SqliteLedger(tmp_path / "ledger.db")
    first = asyncio.run(ledger.submit_async(request(1))).job.id
    later = asyncio.run(ledger.submit_async(request(2))).job.id
    assert len(first) == len(later) == 16 and first[:11] <= later[:11]
    drawn = iter([first, "0" * 16])  # the next id clashes with a row's; the long way draws another
    monkeypatch.setattr(ops, "new_job_id", lambda: next(drawn))
    result = asyncio.run(ledger.submit_async(request(3)))
    assert result.created and result.job.id == "0" * 16
    assert {j.id for j in ledger.list()} == {first, later, "0" * 16}
    ledger.close()
