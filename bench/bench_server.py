"""What the bench scripts that start servers share: a free local port, and
starting a server command and waiting for its /health."""
import socket
import subprocess
import time

import requests


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd, port, timeout=300):
    """Runs cmd (a server listening on port, output discarded) and waits
    until its /health answers: (process, base URL). Exits the bench if the
    server exits or does not answer within timeout seconds."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise SystemExit(f"{cmd[0]} exited: {' '.join(cmd)}")
        try:
            if requests.get(url + "/health", timeout=1).ok:
                return p, url
        except requests.RequestException:
            pass
        time.sleep(0.2)
    p.kill()
    raise SystemExit(f"{cmd[0]} did not start")
