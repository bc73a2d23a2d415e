"""Introspection as data: recompile events (the JSON-lines log's schema),
explain() (the text `shapeshift explain` prints), metrics() as a dict and as
Prometheus text, prove() as Z3's verdict with a witness."""

import json
import os
import subprocess

import pytest

import shapeshift
from conftest import TINY_BERT, bert_feed


@pytest.fixture()
def static_session(tmp_path, monkeypatch):
    log = tmp_path / "recompiles.jsonl"
    monkeypatch.setenv("SHAPESHIFT_RECOMPILE_LOG", str(log))
    session = shapeshift.InferenceSession(TINY_BERT, policy="static")
    session.run(None, bert_feed(1, 8))
    session.run(None, bert_feed(1, 9))
    session.run(None, bert_feed(1, 8))  # served by the first entry
    return session, log


def test_recompile_events_are_the_logs_objects(static_session):
    session, log = static_session
    events = session.recompile_events()
    assert [e["trigger"] for e in events] == ["initial", "miss"]
    assert [e["sequence"] for e in events] == [1, 2]
    logged = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert events == logged
    miss = events[1]
    assert {"name": "sequence", "value": 9} in miss["symbols"]
    assert miss["tried"] and miss["tried"][0]["failing"]  # the failing atom of entry 1, with provenance


def test_explain_is_what_the_cli_prints(static_session):
    session, log = static_session
    cli = os.environ.get("SHAPESHIFT_CLI")
    assert cli, "SHAPESHIFT_CLI must name the built shapeshift binary (ctest sets it)"
    for flags, summary in (([], False), (["--summary"], True)):
        printed = subprocess.run([cli, "explain", str(log), *flags], capture_output=True, text=True, check=True)
        assert session.explain(summary=summary) == printed.stdout
    assert "event 2: miss (policy static)" in session.explain()


def test_explain_without_events():
    session = shapeshift.InferenceSession(TINY_BERT, policy="static")
    assert session.explain() == "no recompile events\n"
    assert session.recompile_events() == []


def test_metrics_as_dict_text_and_prometheus(static_session):
    session, _ = static_session
    m = session.metrics()
    assert (m["requests"], m["compiles"], m["misses"], m["compiles_static"], m["hits"]) == (3, 2, 1, 2, 1)
    text = session.metrics(format="text")
    assert dict(line.split(" ", 1) for line in text.splitlines())["compiles"] == "2"
    prom = session.metrics(format="prometheus")
    assert 'shapeshift_compiles_total{tier="static"} 2' in prom
    assert "# TYPE shapeshift_requests_total counter" in prom
    with pytest.raises(ValueError, match=r"format 'yaml'"):
        session.metrics(format="yaml")


def test_prove_gives_a_witness_or_covered(static_session):
    session, _ = static_session
    report = session.prove()
    assert report["covered"] is False
    assert set(report["witness"]) == {"batch", "sequence"}
    assert report["policy"] == "static" and len(report["entries"]) == 2
    # The two static entries cover exactly their shapes.
    narrow = session.prove(dims={"batch": (1, 1), "sequence": (8, 9)})
    assert narrow["covered"] is True and narrow["witness"] is None
    assert narrow["domain"] == {"batch": "1..1", "sequence": "8..9"}
    wider = session.prove(dims={"batch": (1, 1), "sequence": (8, 10)})
    assert wider["covered"] is False and wider["witness"] == {"batch": 1, "sequence": 10}


def test_polymorphic_covers_the_declared_domain(tiny_bert):
    report = tiny_bert.prove()
    assert report["covered"] is True and report["witness"] is None
    assert [e["tier"] for e in report["entries"]] == ["polymorphic"]


def test_prove_refuses_ranges_outside_the_declared_domain(tiny_bert):
    with pytest.raises(ValueError, match=r"prove: dims batch=0\.\.3 is not inside the declared range"):
        tiny_bert.prove(dims={"batch": (0, 3)})
    with pytest.raises(ValueError, match=r"seq"):
        tiny_bert.prove(dims={"seq": (1, 3)})


def test_fuzz_report_is_the_clis(tmp_path):
    dims = {"batch": (1, 2), "sequence": (1, 16)}
    report = shapeshift.fuzz(TINY_BERT, dims=dims, cases=12, seed=3, policy="polymorphic")
    assert report.pop("failed") is False
    assert report["cases"] == 12 and report["sound_failures"] == 0 and report["failures"] == []
    assert report["dims"] == {"batch": "1..2", "sequence": "1..16"}
    assert report["served"] > 0 and report["rejected_as_expected"] > 0
    cli = os.environ.get("SHAPESHIFT_CLI")
    assert cli, "SHAPESHIFT_CLI must name the built shapeshift binary (ctest sets it)"
    printed = subprocess.run(
        [cli, "fuzz", TINY_BERT, "--dim", "batch=1..2", "--dim", "sequence=1..16", "--cases", "12", "--seed", "3",
         "--policy", "polymorphic", "--json"],
        capture_output=True, text=True, check=True,
    )
    assert report == json.loads(printed.stdout)


def test_fuzz_errors_name_what_is_wrong():
    with pytest.raises(FileNotFoundError, match=r"missing\.onnx"):
        shapeshift.fuzz("missing.onnx", cases=2)
    with pytest.raises(ValueError, match=r"cases must be >= 1"):
        shapeshift.fuzz(TINY_BERT, cases=0)
