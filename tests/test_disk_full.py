"""A full disk (ENOSPC) on a real small filesystem: the sweep fails with a clear message, what was
stored stays whole and readable, and the next sweep, once there is space, loses nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest
from conftest import REPO, fake_model_config
from fakes import FakeProvider, FakeServer
from test_stopping import finish, lake_query, start_sweep

LEFT_BYTES = 300_000  # free space left for the second sweep: less than its 200 items' writes need


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def sweep(cfg) -> tuple[int, str]:
    proc = start_sweep(cfg)
    _, err = finish(proc)
    return proc.returncode, " ".join(err.split())


def test_a_full_disk_fails_the_sweep_clearly_and_the_next_one_loses_nothing(small_disk):
    state = FakeProvider()
    with FakeServer(state) as fake:
        code, err = sweep(fake_model_config(small_disk, fake.api_base, n_max=100))  # 20 items: room enough
        assert code == 0, err[-3000:]
        first = set(state.contents())
        stat = os.statvfs(small_disk)
        with open(small_disk / "filler", "wb") as filler:
            filler.write(b"\0" * (stat.f_bavail * stat.f_frsize - LEFT_BYTES))

        cfg = fake_model_config(small_disk, fake.api_base, n_max=1000)  # 200 items
        code, err = sweep(cfg)
        assert code == 1, err[-3000:]
        # the last line is the message (Prefect logs the flow's exception above it, as for any failed flow)
        assert err.split("error: ")[-1].startswith("run failed: a write found the disk full"), err[-3000:]

        (small_disk / "filler").unlink()
        checked = subprocess.run([sys.executable, "-m", "flows.cli", "check", "--config", str(cfg), "--json"],
                                 cwd=REPO, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout[-3000:]  # every file it lists reads; nothing twice
        code, err = sweep(cfg)
        assert code == 0, err[-3000:]
    paid = Counter(state.contents())
    assert len(paid) == 200 and all(paid[c] == 1 for c in first)  # the first sweep's answers were kept
    assert lake_query(small_disk, "SELECT count(*) AS n, count(DISTINCT request_id) AS d FROM ledger "
                                  "WHERE status = 'ok'") == [{"n": 200, "d": 200}]
