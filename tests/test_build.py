"""The embedded models' native library is built for a portable x86-64 target, never for this CPU.

A build with -march=native turns on llama.cpp's AVX-512 and AMX kernels wherever the build
machine has them: the AMX kernel crashes on current Xeons, and such a build dies with an illegal
instruction on any older CPU that shares the environment. These tests read what the installed
library says it was compiled with, so they catch a native build on any machine, with or without
AMX, and check that the one place that sets the flags (the Makefile) keeps them portable.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess

import pytest

from conftest import REPO

# CPU features the portable target keeps (x86-64-v3: every x86 server since about 2015)...
REQUIRED = ("AVX", "AVX2", "FMA", "F16C", "BMI2")
# ...and the families it must leave out: they exist only on some CPUs, and AMX is the one that crashed.
FORBIDDEN = re.compile(r"^(AMX|AVX512|AVX_VNNI)")


def compiled_features(system_info: str) -> dict[str, str]:
    """``NAME = value`` pairs of llama.cpp's system info (``CPU : SSE3 = 1 | AVX = 1 | ...``)."""
    return {name.upper(): value for name, value in re.findall(r"([A-Za-z0-9_]+)\s*=\s*([^|\s]+)", system_info)}


def on(features: dict[str, str]) -> set[str]:
    """The features switched on (llama.cpp lists compiled-in ones as ``= 1``)."""
    return {name for name, value in features.items() if value not in ("0", "")}


@pytest.fixture(scope="module")
def system_info() -> str:
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    return info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)


def test_system_info_is_parsed():
    # The parser against the shape llama.cpp prints (one backend or several, spacing varies).
    sample = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512_VNNI = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 |REPACK=0 |"
    features = compiled_features(sample)
    assert features["AVX512_VNNI"] == "1" and features["REPACK"] == "0"
    assert {f for f in on(features) if FORBIDDEN.match(f)} == {"AVX512_VNNI", "AMX_INT8"}


def test_installed_library_has_no_native_only_features(system_info):
    features = compiled_features(system_info)
    assert "AVX2" in features, f"unexpected system info from llama.cpp: {system_info!r}"
    forbidden = sorted(f for f in on(features) if FORBIDDEN.match(f))
    assert forbidden == [], (f"llama-cpp-python was built with {forbidden} (a native build?); "
                             f"run `make install` to rebuild it portably. System info: {system_info}")


def test_installed_library_keeps_the_portable_baseline(system_info):
    missing = [f for f in REQUIRED if f not in on(compiled_features(system_info))]
    assert missing == [], f"llama-cpp-python was built without {missing}: {system_info}"


def test_makefile_builds_portably():
    # Comments may explain why -march=native is not used; the rules themselves must not use it.
    text = "\n".join(line.split("#", 1)[0] for line in (REPO / "Makefile").read_text(encoding="utf-8").splitlines())
    assert "-march=native" not in text and "-mcpu=native" not in text
    match = re.search(r"^LLAMA_CMAKE_ARGS\s*:?=\s*((?:.*\\\n)*.*)$", text, re.MULTILINE)
    assert match, "the Makefile must define LLAMA_CMAKE_ARGS, the one place of llama.cpp's build flags"
    args = dict(re.findall(r"-D(\w+)=(\w+)", match.group(1)))
    assert args.get("GGML_NATIVE") == "OFF"
    assert all(args.get(f"GGML_{f}") == "ON" for f in ("AVX2", "FMA", "F16C", "BMI2")), args
    switched_on = [name for name, value in args.items() if FORBIDDEN.match(name.removeprefix("GGML_")) and value != "OFF"]
    assert switched_on == [], switched_on
    # The flags reach the build, and only through this variable.
    assert 'CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)"' in text
    assert text.count("CMAKE_ARGS=") == text.count('CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)"')


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_sweep_takes_a_configuration_whose_path_has_a_space():
    """`make sweep CONFIG=...` passes the path as one argument (users' folders have spaces)."""
    out = subprocess.run(["make", "-n", "sweep", "CONFIG=/a b/c.toml"], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    line = next(line for line in out.splitlines() if "invarbench sweep" in line)
    args = shlex.split(line)
    assert args[args.index("--config") + 1] == "/a b/c.toml", line
