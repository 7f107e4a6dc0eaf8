"""The worker pool runs planned cases ahead of pytest: a crash, an abort or a hang still costs exactly the
case it happened on, cases queued behind it are run by the replacement worker, and results do not depend on
the order or the prefetching."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from qdq_conformance.generators.cache import load_file_cached
from qdq_conformance.runner.execute import CaseResult, FileRef
from qdq_conformance.runner.outputs import RawResult
from qdq_conformance.runner.pool import CasePool

ROOT = Path(__file__).resolve().parents[1]
FAKE = "python:tests.fake_backends:make"
TIERS = ("default",)


def _refs(path: Path, keep) -> list[FileRef]:
    path = path.resolve()
    return [FileRef(str(path), TIERS, i, c.id) for i, c in enumerate(load_file_cached(path, TIERS))
            if keep(c.id)]


@pytest.fixture(scope="module")
def plan() -> list[tuple[FileRef, str]]:
    special = _refs(ROOT / "cases" / "quantize_special_values.yaml",
                    lambda i: "block-size" not in i and "basic" not in i and "saturation-inf" not in i)
    hang = _refs(ROOT / "cases" / "quantize_saturation.yaml",
                 lambda i: i == "quantizelinear-13-saturation-inf-float-uint8")
    segv = _refs(ROOT / "tests" / "data" / "runner_cases" / "small.yaml", lambda i: "ties-near-bounds" in i)
    abort = [r for r in special if r.case_id == "quantizelinear-13-signed-zero-float-uint8"]
    normal = [r for r in special if "signed-zero" not in r.case_id][:40]
    assert len(hang) == len(segv) == len(abort) == 1 and len(normal) == 40
    order = normal[:5] + segv + normal[5:15] + abort + normal[15:25] + hang + normal[25:]
    return [(r, "runtime") for r in order]


#: the per-case limit of the prefetch test: long enough for a good case on a loaded 2-core machine (a
#: worker's restart imports the kernel first: 3 s timed good cases out under CI-like load); the hanging case
#: still hangs past it
HANG_LIMIT = 10
LOST = {"quantizelinear-13-ties-near-bounds-float-int8": "crashed",
        "quantizelinear-13-signed-zero-float-uint8":
        "crashed", "quantizelinear-13-saturation-inf-float-uint8": "timeout"}


def _summary(got: CaseResult | RawResult) -> tuple[str, str | None]:
    if isinstance(got, RawResult):
        return got.kind, None
    rec = json.loads(got.record)
    rec.pop("duration")
    return got.status, json.dumps(rec, sort_keys=True)


@pytest.mark.parametrize("window, chunk", [(4, 2), (16, 8)])
def test_prefetched_run_loses_only_the_cases_that_crashed_or_hung(plan, window, chunk):
    """Workers answer a few cases per message, so a worker that dies mid-batch takes finished results with it:
    its beacon names the case it died on, and the others are run again by the replacement."""
    pool = CasePool(FAKE, {}, timeout=HANG_LIMIT, size=2, window=window, chunk=chunk)
    try:
        pool.start()
        pool.plan(plan)
        ahead = [_summary(pool.get(ref, form, position=k)) for k, (ref, form) in enumerate(plan)]
        restarts = pool.restarts
    finally:
        pool.close()
    for (ref, _), (status, _) in zip(plan, ahead, strict=True):
        assert status == LOST.get(ref.case_id, status), ref.case_id
        if ref.case_id not in LOST:
            assert status in ("passed", "implementation-defined", "unsupported"), (ref.case_id, status)
    assert restarts == 3

    # The same cases one at a time, in reverse order and without a plan: the same results, record for record.
    pool = CasePool(FAKE, {}, timeout=HANG_LIMIT, size=1)  # (the same limit: a timeout's record names it)
    try:
        pool.start()
        alone = [_summary(pool.get(ref, form)) for ref, form in reversed(plan)][::-1]
    finally:
        pool.close()
    assert alone == ahead


def test_out_of_plan_requests_are_served_in_any_order(plan):
    normal = [p for p in plan if p[0].case_id not in LOST][:12]
    pool = CasePool(FAKE, {}, timeout=30, size=2, window=4, chunk=2)
    try:
        pool.start()
        pool.plan(normal)
        first = pool.get(*normal[0], position=0)
        skipped_ahead = pool.get(*normal[7], position=7)  # asked for ahead of the plan
        stray = pool.get(*normal[3])  # not by position: run when asked
        again = pool.get(*normal[0], position=0)  # asked twice (a rerun): run again
        rest = [pool.get(*normal[k], position=k) for k in (1, 2, 8, 9, 10, 11)]
    finally:
        pool.close()
    for got, (ref, _) in zip([first, skipped_ahead, stray, again, *rest],
                             [normal[k] for k in (0, 7, 3, 0, 1, 2, 8, 9, 10, 11)], strict=True):
        assert isinstance(got, CaseResult) and json.loads(got.record)["id"] == ref.case_id
    assert _summary(first) == _summary(again)


def test_a_case_file_changed_since_collection_fails_that_case_only(tmp_path):
    src = ROOT / "tests" / "data" / "runner_cases" / "small.yaml"
    path = (tmp_path / "small.yaml")
    path.write_bytes(src.read_bytes())
    refs = _refs(path, lambda i: True)
    stale = FileRef(refs[0].path, TIERS, refs[0].index, "no-longer-this-case")
    pool = CasePool("oracle", {}, timeout=30, size=1)
    try:
        pool.start()
        bad = pool.get(stale, "runtime")
        good = pool.get(refs[1], "runtime")
    finally:
        pool.close()
    # (the tool could not run it, through no fault of the backend's: a harness error)
    assert bad.status == "harness-error" and "changed since collection" in bad.message
    assert good.status == "passed"


def test_a_new_workers_start_up_is_not_counted_against_its_first_case(monkeypatch):
    """Creating the backend and loading a case file take 2 s in each worker (``slow_to_start``), the case
    limit is 1 s: the first worker's first case crashes it, and the replacement's first case passes (neither
    is a timeout: a worker's start-up is timed by --backend-timeout, 10 s here, never by a case's limit)."""
    monkeypatch.setenv("QDQ_TEST_CREATE_SECONDS", "2")
    small = _refs(ROOT / "tests" / "data" / "runner_cases" / "small.yaml", lambda i: True)
    segv = [r for r in small if "ties-near-bounds" in r.case_id]
    normal = [r for r in small if r.case_id.endswith("-basic-float-uint8")]
    assert len(segv) == 1 and len(normal) == 2
    plan = [(r, "runtime") for r in segv + normal]
    pool = CasePool(FAKE.replace(":make", ":slow_to_start"), {}, timeout=1, size=1, create_timeout=10)
    try:
        pool.start()
        pool.plan(plan)
        got = [pool.get(ref, form, position=k) for k, (ref, form) in enumerate(plan)]
        restarts = pool.restarts
    finally:
        pool.close()
    assert [g.status for g in got] == ["crashed", "passed", "passed"], [(g.status, g.message) for g in got]
    assert restarts == 1


def test_a_worker_that_cannot_load_a_case_file_within_the_backend_timeout_costs_that_case(monkeypatch):
    """Start-up is not a case's time, but it has a limit: a case file that takes longer than --backend-timeout
    to load in the worker costs the case handed to it, as a timeout that says why."""
    monkeypatch.setenv("QDQ_TEST_CREATE_SECONDS", "0")
    monkeypatch.setenv("QDQ_TEST_LOAD_SECONDS", "600")
    ref = _refs(ROOT / "tests" / "data" / "runner_cases" / "small.yaml", lambda i: "nan-integer" in i)[0]
    pool = CasePool(FAKE.replace(":make", ":slow_to_start"), {}, timeout=1, size=1, create_timeout=2)
    try:
        pool.start()
        t0 = time.monotonic()
        got = pool.get(ref, "runtime")
        took = time.monotonic() - t0
    finally:
        pool.close()
    assert got.status == "timeout", got.message
    assert "not ready (loading a case file) within 2 s" in got.message, got.message
    assert took < 60, took  # (the load sleeps 600 s)


def test_a_replacement_that_cannot_be_created_in_time_costs_the_cases_handed_to_it(monkeypatch, tmp_path):
    """The first worker crashes on its first case, its replacement's factory never returns: after
    --backend-timeout (2 s) each case handed to it is recorded as crashed, with why; no case is a timeout."""
    monkeypatch.setenv("QDQ_TEST_CREATED", str(tmp_path / "created"))
    small = _refs(ROOT / "tests" / "data" / "runner_cases" / "small.yaml", lambda i: True)
    segv = [r for r in small if "ties-near-bounds" in r.case_id]
    normal = [r for r in small if r.case_id.endswith("-basic-float-uint8")]
    plan = [(r, "runtime") for r in segv + normal]
    pool = CasePool(FAKE.replace(":make", ":hangs_when_replaced"), {}, timeout=1, size=1, create_timeout=2)
    try:
        pool.start()
        pool.plan(plan)
        t0 = time.monotonic()
        got = [pool.get(ref, form, position=k) for k, (ref, form) in enumerate(plan)]
        took = time.monotonic() - t0
    finally:
        pool.close()
    assert [g.status for g in got] == ["crashed"] * 3, [(g.status, g.message) for g in got]
    for g in got[1:]:
        assert g.message.startswith("the backend's worker could not be started again: backend "), g.message
        assert "was not created within 2 s (--backend-timeout" in g.message, g.message
    assert took < 60, took  # (the factory sleeps an hour)
