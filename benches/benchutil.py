"""Helpers shared by the benchmark suites (kept out of conftest.py so that test modules
can import them by a name no other conftest shadows)."""

from __future__ import annotations

import datetime as _dt
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import warnings
from typing import Any, Dict, List

import generate

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# An installed package (maturin develop, pip install) wins; else the source tree, for this
# process and for the children (`child_env`: pytest, the RSS measurements).
SRC_TREE = importlib.util.find_spec("llm_agent_session") is None
if SRC_TREE:
    sys.path.insert(0, os.path.join(ROOT, "python"))


def available_backends() -> List[str]:
    try:
        from llm_agent_session import _backend

        return list(_backend.available())
    except Exception:
        return []


def use_backend(name: str) -> None:
    from llm_agent_session import _backend

    _backend.use(name)


def rounds_for(size: int, cheap: bool = False) -> int:
    """Few rounds for big files so a 256 MB run stays within minutes."""
    budget = (64 << 20) * (20 if cheap else 5)
    return max(3, min(20, budget // max(size, 1)))


def warmup_for(size: int) -> int:
    return 1 if size <= (64 << 20) else 0


def fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fresh_copy(src: str, dst: str) -> None:
    """``dst`` as a flushed copy of ``src`` (so writeback of the copy does not land inside
    a timed round)."""
    for p in (dst, dst + ".repair"):
        if os.path.lexists(p):
            os.unlink(p)
    shutil.copyfile(src, dst)
    fsync_path(dst)




def tag(benchmark: Any, op: str, size: int, impl: str, nbytes: int, **extra: Any) -> None:
    """Group by operation and size; record what run.py needs to build the ratio table."""
    label = generate.size_label(size) if size else "-"
    benchmark.group = f"{op} {label}"
    benchmark.extra_info.update({"op": op, "size": size, "size_label": label, "impl": impl,
                                 "bytes": nbytes, **extra})


def replace_section(results: str, start: str, end: str, text: str) -> None:
    """Put `text` (which begins with `start` and ends with `end`) in place of that
    marked section of the file `results`, or at its end when it has none yet."""
    import re

    with open(results, encoding="utf-8") as fh:
        old = fh.read()
    if start in old:
        new = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda m: text, old, flags=re.S)
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    with open(results, "w", encoding="utf-8") as fh:
        fh.write(new)


# --------------------------------------------- the package under test, the machine, tables

def child_env() -> Dict[str, str]:
    """The environment for a child process that must import the same package as this one."""
    env = dict(os.environ)
    if SRC_TREE:
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.join(ROOT, "python")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def machine_info() -> Dict[str, str]:
    info: Dict[str, str] = {}
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info["CPU"] = cpu
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    info["Cores"] = f"{os.cpu_count()} logical ({usable} usable by this process)"
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    info["Memory"] = f"{int(line.split()[1]) / (1 << 20):.1f} GiB"
    except OSError:
        pass
    info["OS / kernel"] = f"{platform.system()} {platform.release()}"
    info["Python"] = f"{platform.python_implementation()} {platform.python_version()}"
    try:
        with open("/proc/mounts") as fh:
            mounts = [line.split() for line in fh]
        cache = os.path.realpath(generate.cache_dir())
        best = max((m for m in mounts if cache.startswith(m[1].rstrip("/") + "/") or cache == m[1]),
                   key=lambda m: len(m[1]), default=None)
        if best:
            info["Filesystem"] = f"{best[2]} ({best[0]} on {best[1]})"
    except OSError:
        pass
    try:
        info["Load average at start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        pass
    vers = []
    for mod in ("llm_agent_session", "orjson", "pytest_benchmark"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = __import__(mod)
            vers.append(f"{mod} {getattr(m, '__version__', '?')}")
        except ImportError:
            vers.append(f"{mod} (missing)")
    info["Packages"] = ", ".join(vers)
    try:
        from llm_agent_session import _backend

        info["Backends available"] = ", ".join(_backend.available()) + (
            " (native extension not built)" if "native" not in _backend.available() else "")
        nat = _backend._load_native()
        if nat is not None and getattr(nat, "__file__", None):
            st = os.stat(nat.__file__)
            built = _dt.datetime.fromtimestamp(st.st_mtime, _dt.timezone.utc)
            info["Native extension"] = (f"{os.path.basename(nat.__file__)}, "
                                        f"{st.st_size / (1 << 20):.1f} MiB, built "
                                        f"{built:%Y-%m-%d %H:%M} UTC (benchmark a release build)")
    except Exception as e:  # noqa: BLE001
        info["Backends available"] = f"none ({type(e).__name__}: {e})"
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "python", "rust"],
                               capture_output=True, text=True).stdout.strip()
        info["Commit"] = (rev or "(none)") + (" + uncommitted changes" if dirty else "")
    except OSError:
        pass
    info["Date"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return info


# ----------------------------------------------------------------------------- formatting


def shown_command(script: str, argv: List[str]) -> str:
    """The command line a RESULTS.md section names, as a reader would type it: a path of
    this machine outside the project (a corpus folder, a scratch file) is shown by its
    last component only, so no machine's layout gets into the results."""
    shown = []
    for arg in argv:
        flag, eq, value = arg.partition("=") if arg.startswith("--") and "=" in arg else ("", "", arg)
        if os.path.isabs(value) and not os.path.realpath(value).startswith(ROOT + os.sep):
            value = os.path.basename(value.rstrip(os.sep)) or value
        shown.append(flag + eq + value)
    return " ".join(["python", "benches/" + script] + shown)


def md_table(head: List[str], rows: List[List[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    def line(r: List[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"
    out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out)
