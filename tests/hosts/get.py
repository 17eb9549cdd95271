#!/usr/bin/env python3
"""One HTTP/1.0 GET to 127.0.0.1:PORT, for tests/run-hosts.sh.

usage: get.py PORT OUT

Connects (retrying for up to 20 s while the server starts), sends the
request, and writes everything the server sends until it closes (at most
120 s) to OUT.  Exit 0 if a connection was made, 1 if not."""
import socket
import sys
import time


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    deadline = time.monotonic() + 20
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            break
        except OSError:
            if time.monotonic() > deadline:
                print("get.py: no server on 127.0.0.1:%d" % port, file=sys.stderr)
                return 1
            time.sleep(0.05)
    s.settimeout(120)
    s.sendall(b"GET /luacore HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except OSError:
        pass
    with open(out, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
