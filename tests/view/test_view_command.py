"""``llm-agent-session view`` as a command: the URL first, Ctrl-C exits 0, and its exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytestmark = pytest.mark.slow  # whole processes

from llm_agent_session import Session, user_message
from tests.support.big_transcripts import build


def _run(*args: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llm_agent_session", *args], capture_output=True, text=True,
                          timeout=timeout, **kw)


def test_exit_codes_without_a_transcript_and_in_help(tmp_path):
    assert _run("view").returncode == 2
    assert _run("view", str(tmp_path / "missing.jsonl")).returncode == 3
    (tmp_path / "empty").mkdir()
    r = _run("view", str(tmp_path / "empty"))
    assert r.returncode == 3 and "no transcript under" in r.stderr
    (tmp_path / "x.jsonl").write_text('{"a": 1}\n')
    assert _run("view", str(tmp_path / "x.jsonl")).returncode == 3
    help_text = _run("view", "--help").stdout
    for code in ("0  ok: stopped with Ctrl-C", "1  failed: ", "2  usage error", "3  not a transcript: no transcript found"):
        assert code in help_text
    assert "130" not in help_text  # Ctrl-C is how it stops: 0


def test_without_the_view_extra_it_says_what_to_install(tmp_path):
    path = tmp_path / "run.jsonl"
    Session.create(path, {}).close()
    code = ("import sys; sys.modules['starlette'] = None\n"
            "from llm_agent_session.cli import main; sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, "view", str(path), "--no-browser"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "pip install 'llm-agent-session[view]'" in r.stderr and "starlette" in r.stderr


def test_the_url_is_the_first_line_and_ctrl_c_exits_0(tmp_path, backend_name):
    path = tmp_path / "run.jsonl"
    with Session.create(path, {"title": "t"}) as s:
        s.append_message(user_message("hello"))
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name)
    proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", str(path), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "/t/run.jsonl#token=" in url
        page, token = url.split("#token=")
        with urllib.request.urlopen(page, timeout=10) as r:  # the page: static, no data, no token
            assert r.status == 200 and b"/static/viewer.js" in r.read() and "set-cookie" not in r.headers
        api = page.split("/t/")[0] + "/api/transcript?t=run.jsonl"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(api, timeout=10)
        assert refused.value.code == 403
        with urllib.request.urlopen(urllib.request.Request(api, headers={"authorization": f"Bearer {token}"}),
                                    timeout=10) as r:
            assert r.status == 200 and json.loads(r.read())["name"] == "run.jsonl"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_transcript_with_a_leading_blank_line_opens_straight_into_it(tmp_path, backend_name):
    """It loads, checks and exports; `view FILE` said "not a transcript" (exit 3)."""
    plain = tmp_path / "plain.jsonl"
    with Session.create(plain, {"title": "t"}) as s:
        s.append_message(user_message("hello"))
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n" + plain.read_bytes())
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name)
    assert _run("check", str(path), env=env).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", str(path), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        assert "/t/run.jsonl" in url, proc.stderr.read() if not url else url
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_as_it_opens_stops_it_cleanly_every_time(tmp_path, backend_name):
    """Ctrl-C just after the URL, while the passes over the whole file run: the process
    aborted (SIGABRT: a daemon thread inside the native core ended by the interpreter's
    finalization) or, once the signal landed in asyncio's start-up, never stopped. The last
    try is a SIGTERM, which stops it as Ctrl-C does (it was killed by it, -15, its cleanup
    skipped)."""
    path = tmp_path / "run.jsonl"
    build(str(path), 4 << 20)
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name,
               LLM_AGENT_SESSION_CACHE=str(tmp_path / "cache"))
    for attempt in range(5):
        proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", str(path), "--no-browser"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout.readline().startswith("http://127.0.0.1:")
            if attempt % 2:  # and once the server answers
                time.sleep(0.3)
            proc.send_signal(signal.SIGTERM if attempt == 4 else signal.SIGINT)
            code = proc.wait(timeout=20)
            assert code == 0, (attempt, code, proc.stderr.read()[-2000:])
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_ctrl_c_returns_at_once_when_the_browser_was_opened_and_leaves_no_file(tmp_path, backend_name):
    """A plain 30-second timer (to delete the page that opens the browser) held the exit."""
    path = tmp_path / "run.jsonl"
    Session.create(path, {}).close()
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"  # a browser that notes what it was asked to open
    browser.write_text("import sys\nopen(sys.argv[2], 'w').write(sys.argv[1])\n")
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name, TMPDIR=str(tmp_path / "tmp"),
               BROWSER=f"{sys.executable} {browser} %s {opened}")
    proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read()
        for _ in range(600):
            if opened.exists() and opened.read_text():
                break
            time.sleep(0.05)
        page = opened.read_text()
        assert page.startswith("file://") and page.endswith("/open.html")
        page = page[len("file://"):]
        assert os.stat(page).st_mode & 0o777 == 0o600 and url in open(page).read() and "#token=" in url
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0  # a bound, far above a prompt exit, far below 30 s
        assert not os.path.exists(page) and not os.path.exists(os.path.dirname(page))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "0"])
def test_a_wildcard_host_is_refused_with_the_reason(tmp_path, host, backend_name):
    """It was accepted, and every browser on another machine got 403 (the Host check cannot
    know which of the machine's addresses a browser names)."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    path = tmp_path / "run.jsonl"
    Session.create(path, {}).close()
    r = _run("view", str(path), "--no-browser", "--host", host)
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    assert "is a wildcard (every interface)" in r.stderr and "Give that address" in r.stderr


@pytest.mark.parametrize("host,says", [("", "is empty"), ("http://127.0.0.1", "no URL, path or user"),
                                       ("127.0.0.1:8000", "a port goes in --port"), ("my host", "holds a space"),
                                       ("fe80::1%eth0", "interface scope"), ("host.", "ends with a dot")])
def test_a_host_no_browser_can_name_is_refused_with_the_reason(tmp_path, host, says, backend_name):
    """Each was bound (or served on 127.0.0.1, for the empty one) and every page got 403,
    or binding failed with exit 1 and the system's words."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    path = tmp_path / "run.jsonl"
    Session.create(path, {}).close()
    r = _run("view", str(path), "--no-browser", "--host", host, timeout=10)
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    assert says in r.stderr and "--host" in r.stderr


def _network_address():
    """This machine's address on a network (the one a route out would use), or None."""
    import ipaddress
    import socket

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if ipaddress.ip_address(address).is_loopback else address


def test_a_network_address_as_host_works_with_the_token(tmp_path, backend_name):
    """What a browser on another machine does: the URL names the address, the page comes,
    the data comes with the token, and a name of someone else's is refused (DNS rebinding)."""
    import http.client

    address = _network_address()
    if address is None:
        pytest.skip("this machine has no network address besides loopback")
    path = tmp_path / "run.jsonl"
    with Session.create(path, {"title": "t"}) as s:
        s.append_message(user_message("hello"))
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name)
    proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", str(path), "--no-browser",
                             "--host", address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith(f"http://{address}:") and "#token=" in url, proc.stderr.read() if not url else url
        port = int(url.split(":")[2].split("/")[0])
        token = url.split("#token=")[1]

        def get(target, host, token=None):
            conn = http.client.HTTPConnection(address, port, timeout=10)
            conn.request("GET", target, headers={"host": host, **({"authorization": f"Bearer {token}"} if token else {})})
            r = conn.getresponse()
            body = r.read()
            conn.close()
            return r.status, body

        assert get("/t/run.jsonl", f"{address}:{port}")[0] == 200
        status, body = get("/api/transcript?t=run.jsonl", f"{address}:{port}", token)
        assert status == 200 and json.loads(body)["title"] == "t"
        assert get("/api/transcript?t=run.jsonl", f"{address}:{port}")[0] == 403
        assert get("/api/transcript?t=run.jsonl", f"evil.example:{port}", token)[0] == 403
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
        assert "warning: listening on" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _start_with_the_usual_descriptor_limit(path, backend_name, errors):
    """The real command, allowed the open files many systems give a program (1,024), and
    not allowed more; its standard error to the file `errors`."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    usual = 1024 if hard == resource.RLIM_INFINITY else min(1024, hard)

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (usual, usual))

    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name)
    proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", str(path), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=open(errors, "w"), text=True, env=env, preexec_fn=limit)
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), open(errors).read()
    return proc, url, usual


def _stop(proc):
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_never_finished_requests_do_not_lock_the_user_out(tmp_path, backend_name):
    """About 1,020 requests that never send the end of their headers (no token needed) made
    the viewer unreachable while held: it waited for them for ever and ran out of file
    descriptors. Now the longest waiting is closed to make room, and the user's request,
    sent whole, is answered."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    import http.client
    import resource
    import socket

    path = tmp_path / "run.jsonl"
    with Session.create(path, {"title": "t"}) as s:
        s.append_message(user_message("hello"))
    errors = tmp_path / "stderr.txt"
    proc, url, usual = _start_with_the_usual_descriptor_limit(path, backend_name, errors)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    crowd = usual + 100
    if soft != resource.RLIM_INFINITY and soft < crowd + 200:  # this process holds the crowd
        wanted = crowd + 200 if hard == resource.RLIM_INFINITY else min(crowd + 200, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        if wanted < crowd + 200:
            pytest.skip(f"this process may open only {wanted} files")
    page, token = url.split("#token=")
    port = int(page.split(":")[2].split("/")[0])
    held = []
    try:
        for _ in range(crowd):
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                sock.sendall(f"GET /api/shelf HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Never: ".encode())
                held.append(sock)
            except OSError:
                break  # the server accepts no more: the request below says the rest
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/api/transcript?t=run.jsonl", headers={"authorization": f"Bearer {token}"})
        r = conn.getresponse()
        assert r.status == 200 and json.loads(r.read())["title"] == "t"
        conn.close()
        closed = 0
        for sock in held[:50]:  # the longest waiting were closed to make room
            sock.settimeout(60)
            try:
                closed += sock.recv(1) == b""
            except OSError:
                closed += 1
        assert closed == 50
    finally:
        for sock in held:
            sock.close()
        _stop(proc)
    assert "Too many open files" not in errors.read_text()  # it never ran out of descriptors


def test_a_request_whose_headers_never_end_is_closed(tmp_path, backend_name):
    """Bounded header time: a connection that never finishes its request's headers, or
    that goes quiet midway through the next one's, is closed (it was held for ever)."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    import socket

    path = tmp_path / "run.jsonl"
    Session.create(path, {}).close()
    proc, url, _ = _start_with_the_usual_descriptor_limit(path, backend_name, tmp_path / "stderr.txt")
    port = int(url.split(":")[2].split("/")[0])
    try:
        never = socket.create_connection(("127.0.0.1", port), timeout=60)
        never.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        kept = socket.create_connection(("127.0.0.1", port), timeout=60)
        kept.sendall(f"GET /static/favicon.svg HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        answer = b""
        while b"</svg>" not in answer:
            answer += kept.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200")
        kept.sendall(b"GET / HTTP/1.1\r\n")  # the next request, kept alive, begun and left
        for sock in (never, kept):
            while True:  # read until the server closes it: a recv that times out fails the test
                if sock.recv(65536) == b"":
                    break
            sock.close()
    finally:
        _stop(proc)
