"""Start ``heron serve`` in the background, as a service manager would, and return once
it answers: the command remedy of test_serve.py. Usage: start_server.py PORT PID_FILE LOG"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

port, pid_file, log = sys.argv[1:4]
with open(log, "ab") as out:
    server = subprocess.Popen(
        [sys.executable, "-m", "heron", "serve", "--port", port],
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=out,
        start_new_session=True,  # outlives this script, as a unit's process would
    )
with open(pid_file, "w") as f:
    f.write(str(server.pid))
deadline = time.monotonic() + 60
while time.monotonic() < deadline and server.poll() is None:
    try:
        if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
            sys.exit(0)
    except httpx.TransportError:
        time.sleep(0.1)
sys.exit(f"heron serve did not answer on port {port} (exit status {server.poll()})")
