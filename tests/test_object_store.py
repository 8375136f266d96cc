"""A lake on object storage, against a real S3-compatible server on 127.0.0.1 (tests/s3_server.py),
and a warehouse copied elsewhere.

The code under test gets the credentials the way users give them (``AWS_*`` variables) and the
endpoint from ``[warehouse] endpoint_url``; every check from the test's side goes through boto3
or the lake's own views. The fake OpenAI-compatible server (tests/fakes.py) stands in for a paid API.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import pytest
import s3_server
from conftest import (
    REPO,
    fake_model_config,
    process_env,
    run_cli,
    run_cli_process,
    running_s3_server,
    sigkill_sweep_when,
    write_config,
)
from fakes import FakeProvider, FakeServer
from lake_fixtures import spooled_ok
from s3_full import FullStore

from tasks.config import Config, load_config
from tasks.errors import ConfigError, LakeError
from tasks.lake.lake import Lake
from tasks.lake.schemas import SCHEMAS
from tasks.lake.writes import write_rows
from tasks.records import now_utc

# The tests of the bucket are slow (the moto server, sweeps writing through it); the others are not.


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The module's S3 server, its credentials exported to this process for in-process reads."""
    with running_s3_server(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


def s3_config(tmp_path: Path, s3: s3_server.S3Server, api_base: str, prefix: str, **kwargs) -> Path:
    """fake_model_config with the lake in the bucket under ``prefix``; the catalog stays local."""
    cfg = fake_model_config(tmp_path, api_base, **kwargs)
    text = cfg.read_text(encoding="utf-8")
    extra = "".join(f'{k} = "{v}"\n' for k, v in s3.lake_config(prefix).items())
    cfg.write_text(text.replace("[warehouse]\n", "[warehouse]\n" + extra, 1), encoding="utf-8")
    return cfg


def cli(s3: s3_server.S3Server, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The CLI in this process, with the bucket's credentials (and ``env``) in its environment."""
    return run_cli(*args, env=s3.env(**env))


def json_rows(result: subprocess.CompletedProcess) -> list[dict]:
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def every_lake_row(lake: Lake) -> str:
    """Every row of every table of the lake, as text (Parquet pages are compressed: scan rows)."""
    return "\n".join(str(lake.read(f"SELECT * FROM lake.main.{table}")) for table in SCHEMAS)


def lake_of(cfg: Path, read_only: bool = False) -> Lake:
    """The lake of a configuration, with its catalog in the warehouse folder, as the CLI opens it."""
    return Lake.of(load_config(cfg), read_only)


# --- configuration: no server needed --------------------------------------------------------------

def test_endpoint_and_region_ride_on_the_lake_url_and_are_validated(tmp_path):
    cfg = write_config(tmp_path / "c.toml", {"warehouse": {
        "lake": "s3://b/p/lake", "endpoint_url": "http://127.0.0.1:9000/", "region": "eu-west-1"}})
    loaded = load_config(cfg)
    assert loaded.lake_path == "s3://b/p/lake?endpoint_override=http%3A%2F%2F127.0.0.1%3A9000&region=eu-west-1"
    assert Lake(loaded.lake_path).root == "s3://b/p/lake"
    # The stored configuration holds the endpoint, never a credential (there is no key for one).
    assert loaded.resolved()["warehouse"]["endpoint_url"] == "http://127.0.0.1:9000"
    for bad, message in [
        ({"lake": "s3://b/l", "endpoint_url": "127.0.0.1:9000"}, "warehouse.endpoint_url: '127.0.0.1:9000' is not an http"),
        ({"lake": "s3://b/l", "endpoint_url": "http://key:secret@host:9000"}, "without credentials"),
        ({"endpoint_url": "http://127.0.0.1:9000"}, "endpoint_url applies to an s3:// lake only"),
        ({"lake": "s3://b/l", "aws_secret_access_key": "x"}, "warehouse.aws_secret_access_key: unknown key"),
    ]:
        write_config(cfg, {"warehouse": bad})
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            load_config(cfg)


# --- the bucket -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_sweep_cached_sweep_sql_rescore_and_report_on_a_bucket(s3, tmp_path):
    secret_model_key = "sk-never-stored-" + "Z9" * 12
    with FakeServer() as fake:
        cfg = s3_config(tmp_path, s3, fake.api_base, "sweeps/lake", model_extra={"api_key_env": "FAKE_KEY"})
        lake = lake_of(cfg)
        first = cli(s3, "sweep", "--config", str(cfg), FAKE_KEY=secret_model_key)
        assert first.returncode == 0, first.stdout + first.stderr
        n = len(fake.state.seen)
        assert n == 5
        second = cli(s3, "sweep", "--config", str(cfg), FAKE_KEY=secret_model_key)
        assert second.returncode == 0, second.stdout + second.stderr
        assert len(fake.state.seen) == n  # answered from the ledger in the bucket
        assert "5 from the ledger" in second.stdout

    # The data goes to the bucket (these small commits are inlined in the catalog until a compaction
    # writes them out); locally there are the lake's DuckLake catalog and the views.
    compacted = cli(s3, "compact", "--config", str(cfg))
    assert compacted.returncode == 0, compacted.stdout + compacted.stderr
    assert not (tmp_path / "wh" / "lake").exists() and (tmp_path / "wh" / "invarbench.duckdb").exists()
    assert (tmp_path / "wh" / "lake-catalog.sqlite").exists()
    keys = s3.keys("sweeps/lake/")
    assert any(k.startswith("sweeps/lake/data/main/items/") for k in keys), keys
    assert all(k.endswith(".parquet") for k in keys), [k for k in keys if not k.endswith(".parquet")]
    # each sweep's commits carry its run id
    marked = lake.read("SELECT count(DISTINCT json_extract_string(commit_extra_info, '$.run_id')) AS n "
                       "FROM ducklake_snapshots('lake')")
    assert marked == [{"n": 2}]

    runs = lake.read("SELECT status, n_sent, n_cached FROM runs ORDER BY started_at")
    assert [(r["status"], r["n_sent"], r["n_cached"]) for r in runs] == [("completed", 5, 0), ("completed", 0, 5)]
    ok = json_rows(cli(s3, "sql", "--format", "json", "--config", str(cfg),
                       "SELECT count(*) AS n, count(DISTINCT request_id) AS d FROM responses WHERE status = 'ok'"))
    assert ok == [{"n": 5, "d": 5}]
    # DuckDB read the bucket through httpfs, loaded by path from its wheel like ducklake: none downloaded.
    loaded = json_rows(cli(s3, "sql", "--format", "json", "--config", str(cfg),
                           "SELECT extension_name FROM duckdb_extensions() WHERE loaded"))
    assert {"httpfs", "ducklake", "sqlite_scanner"} <= {r["extension_name"] for r in loaded}

    rescored = cli(s3, "rescore", "--config", str(cfg))
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert lake.read("SELECT count(*) AS n FROM runs WHERE kind = 'rescore' AND status = 'completed'") == [{"n": 1}]
    report = cli(s3, "report", "--config", str(cfg), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stdout + report.stderr
    assert (tmp_path / "report" / "report.html").exists()
    assert lake.read("SELECT count(*) > 0 AS written FROM raw_computed_bootstrap") == [{"written": True}]

    # Credentials never reach the lake or the output: the bucket's secret, the model's API key.
    everything = every_lake_row(lake)
    outputs = "".join(r.stdout + r.stderr for r in (first, second, rescored, report))
    for secret in (s3.secret, secret_model_key):
        assert secret not in everything and secret not in outputs
    assert s3.endpoint in everything  # the endpoint is stored with the run's configuration, as it should


@pytest.mark.slow
def test_sigkill_mid_sweep_then_resume_sends_only_what_was_not_stored(s3, tmp_path):
    state = FakeProvider(delay_s=0.3)
    with FakeServer(state) as fake:
        # answers written to the lake each second, so that the kill finds some there and some in the spool
        cfg = s3_config(tmp_path, s3, fake.api_base, "killed/lake", n_max=150, model_extra={"concurrency": 2},
                        sweep_extra={"batch_size": 4, "flush_s": 1.0})
        lake = lake_of(cfg)
        reader = lake_of(cfg, read_only=True)
        sigkill_sweep_when(
            cfg, process_env(s3.env()),
            lambda: reader.read("SELECT count(*) AS n FROM responses")[0]["n"] > 0 and len(state.seen) >= 8,
            "no responses were written in time")
        assert len(state.seen) < 30, "the kill came after the sweep was done"
        stored = lake.read("SELECT count(*) AS n FROM responses WHERE status = 'ok'")[0]["n"]
        assert stored >= 1
        # answers received but not yet in a file are in the spool: the rerun stores them, not sends them
        stored += sum(spooled_ok(lake).values())

        state.delay_s = 0.0  # the slow answers only had to keep the killed sweep busy
        again = cli(s3, "sweep", "--config", str(cfg))
        assert again.returncode == 0, again.stdout + again.stderr
    rows = lake.read("""
        SELECT r.request_id, count(s.response_id) FILTER (WHERE s.status = 'ok') AS ok
        FROM (SELECT DISTINCT request_id FROM run_requests) r LEFT JOIN responses s USING (request_id)
        GROUP BY r.request_id""")
    assert len(rows) == 30 and all(r["ok"] == 1 for r in rows), [r for r in rows if r["ok"] != 1]
    last = lake.read("SELECT n_sent, n_cached FROM runs WHERE status = 'completed'")
    assert last == [{"n_sent": 30 - stored, "n_cached": stored}]


_SLOW_WRITER = """
import os, sys
from tasks.lake.lake import Lake
from tasks.lake.writes import write_rows
from tasks.records import now_utc
# About 48 MB of incompressible text: several parts of a multipart upload.
rows = [{"response_id": f"big-{i}", "status": "ok", "text": os.urandom(24_000).hex()} for i in range(1000)]
print("writing", flush=True)
write_rows(Lake(sys.argv[1], catalog=sys.argv[2]), "responses", rows)
print("written", flush=True)
"""


@pytest.mark.slow
def test_a_writer_killed_mid_upload_leaves_nothing_a_reader_sees(s3, tmp_path):
    catalog = f"sqlite:{tmp_path / 'lake-catalog.sqlite'}"
    lake = Lake(s3.lake("upload/lake"), catalog=catalog)
    lake.ensure()
    client = s3.client()
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, lake.location, catalog], cwd=REPO, env=s3.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (client.list_multipart_uploads(Bucket=s3_server.BUCKET, Prefix="upload/lake/").get("Uploads")
                   or s3.keys("upload/lake/data/")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no upload started"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    # Killed while uploading, or between its upload and its commit: the chunk is all there or not at all.
    counted = lake.read("SELECT count(*) AS n, count(DISTINCT response_id) AS d FROM responses")
    assert counted in ([{"n": 0, "d": 0}], [{"n": 1000, "d": 1000}]), counted
    assert counted == [{"n": 1000, "d": 1000}] or b"written" not in out

    # Sixteen writers of one table at the same instant: sixteen commits, every row kept.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        paths = list(pool.map(lambda i: write_rows(lake, "responses", [{"response_id": f"r{i}", "status": "ok"}]),
                              range(16)))
    assert len(set(paths)) == 16
    # (beside the killed writer's thousand, when its commit came before the kill)
    assert lake.read("SELECT count(DISTINCT response_id) AS n FROM responses") == [{"n": 16 + counted[0]["d"]}]


@pytest.mark.slow
def test_a_compaction_on_the_bucket_merges_and_deletes_the_replaced_objects(s3, tmp_path):
    lake = Lake(s3.lake("compact/lake"), catalog=f"sqlite:{tmp_path / 'lake-catalog.sqlite'}")
    for i in range(4):  # above DuckLake's inlining limit: each write is an object
        write_rows(lake, "responses", [{"response_id": f"r{i}-{j}", "status": "ok"} for j in range(20)])
    assert len(s3.keys("compact/lake/data/main/responses/")) == 4
    assert lake.compact(expire_before=now_utc()) == 4
    assert len(s3.keys("compact/lake/data/main/responses/")) == 1
    assert lake.read("SELECT count(*) AS n, count(DISTINCT response_id) AS d FROM responses") == [{"n": 80, "d": 80}]


@pytest.mark.slow
def test_a_commit_to_the_bucket_is_one_upload_and_opening_the_lake_one_listing(s3, tmp_path, monkeypatch):
    with FullStore(s3.endpoint) as store:  # (room None: a proxy that only records the requests)
        location = Config.model_validate({"warehouse": {**s3.lake_config("requests/lake"),
                                                        "endpoint_url": store.url}}).lake_path
        catalog = f"sqlite:{tmp_path / 'lake-catalog.sqlite'}"
        Lake(location, catalog=catalog).ensure()
        # a new lake: the listing that checks the bucket answers, the one that looks for an old lake
        assert [unquote(r).split("prefix=", 1)[1] for r in store.requests] == ["requests/lake/data/.probe", "requests/lake/"]
        monkeypatch.setattr(Lake, "_OPEN", {})  # opened again, as by a process of its own
        store.requests.clear()
        lake = Lake(location, catalog=catalog)
        lake.ensure()
        assert [unquote(r).split("prefix=", 1)[1] for r in store.requests] == ["requests/lake/data/.probe"]
        for i in range(3):  # above DuckLake's inlining limit: each commit writes an object
            store.requests.clear()
            write_rows(lake, "responses", [{"response_id": f"r{i}-{j}", "status": "ok"} for j in range(20)])
            # its upload, whole (no multipart, no HEAD, no listing, no read back): the rest is the catalog's
            [put] = store.requests
            assert put.startswith("PUT /invarbench-lake/requests/lake/data/main/responses/") and "?" not in put


@pytest.mark.slow
def test_wrong_credentials_exit_2_and_write_nothing(s3, tmp_path):
    with FakeServer() as fake:
        cfg = s3_config(tmp_path, s3, fake.api_base, "denied/lake")
        wrong = "wrong-secret-" + "K" * 20
        # Processes of their own: this one holds the bucket's valid credentials and lakes it has checked.
        result = run_cli_process("sweep", "--config", str(cfg), env=s3.env(AWS_SECRET_ACCESS_KEY=wrong))
        assert result.returncode == 2, result.stdout + result.stderr
        assert "cannot use the lake s3://invarbench-lake/denied/lake" in result.stderr
        assert "403 Forbidden" in result.stderr and "AWS_SECRET_ACCESS_KEY" in result.stderr
        assert wrong not in result.stdout + result.stderr
        assert fake.state.seen == []
        sql = run_cli_process("sql", "--config", str(cfg), "SELECT 1", env=s3.env(AWS_SECRET_ACCESS_KEY=wrong))
        assert sql.returncode == 2 and "cannot use the lake" in sql.stderr, sql.stderr
    assert s3.keys("denied/") == []
    assert not (tmp_path / "wh").exists()
    with pytest.raises(LakeError, match="bucket exists"):
        Lake(s3.lake("denied/lake").replace(s3_server.BUCKET, "no-such-bucket"),
             catalog=f"sqlite:{tmp_path / 'nowhere.sqlite'}").ensure()


# --- a relocatable warehouse ----------------------------------------------------------------------

@pytest.mark.slow  # a whole sweep, import, rescore or report end to end, or an outside tool (seconds of CPU)
def test_a_copied_warehouse_reads_and_writes_its_own_lake(tmp_path):
    with FakeServer() as fake:
        cfg = fake_model_config(tmp_path, fake.api_base)
        assert run_cli("sweep", "--config", str(cfg)).returncode == 0
        copy_dir = tmp_path / "a copy with spaces" / "wh"
        shutil.copytree(tmp_path / "wh", copy_dir)
        copy_cfg = tmp_path / "copy.toml"
        copy_cfg.write_text(cfg.read_text(encoding="utf-8").replace(
            f'path = "{tmp_path / "wh"}"', f'path = "{copy_dir}"'), encoding="utf-8")
        assert load_config(copy_cfg).warehouse_path == copy_dir
        # The copy answers on its own: the original is gone.
        shutil.rmtree(tmp_path / "wh")
        counted = run_cli("sql", "--format", "json", "--config", str(copy_cfg), "SELECT count(*) AS n FROM responses")
        assert json_rows(counted) == [{"n": 5}]
        stamp = run_cli("sql", "--format", "json", "--config", str(copy_cfg), "SELECT lake FROM invarbench_catalog")
        assert json_rows(stamp) == [{"lake": str(copy_dir / "lake")}]

        report = run_cli("report", "--config", str(copy_cfg))
        assert report.returncode == 0, report.stdout + report.stderr
        assert Path(report.stdout.strip()).is_relative_to(copy_dir / "reports")
        # A sweep of the copy writes to the copy (its run row) and sends nothing: the copied ledger answers.
        sent = len(fake.state.seen)
        again = run_cli("sweep", "--config", str(copy_cfg))
        assert again.returncode == 0, again.stdout + again.stderr
        assert len(fake.state.seen) == sent
    runs = run_cli("sql", "--format", "json", "--config", str(copy_cfg), "SELECT count(*) AS n FROM runs")
    assert json_rows(runs) == [{"n": 2}]
    assert not (tmp_path / "wh").exists()  # nothing went back to the original location
