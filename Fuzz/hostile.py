#!/usr/bin/env python3
"""`make hostile`: peak memory and wall time of `containerkit preview` and `containerkit run --sink braze:`
against hostile HTTP servers on 127.0.0.1 (a gzip bomb, an endless body, a slow drip, a huge declared
length, a negative chunk size). Prints one line per case:

    hostile_<command>_<server>_peak_mb=<n> seconds=<s> exit=<code>

and fails when a case's peak resident memory reaches LIMIT_MB (64), it outlives its bound, or a signal ends
it (a crash: a negative chunk size used to trap the process).
Usage: Fuzz/hostile.py <path to the containerkit binary>
"""
import os
import socket
import subprocess
import sys
import threading
import time
import zlib

LIMIT_MB = int(os.environ.get("HOSTILE_LIMIT_MB", "64"))
BOUND_SECONDS = 75  # preview's fetch deadline is 30 s; delivery drains within its own bounds


def gzip_bomb(megabytes):
    """A gzip body that inflates to `megabytes` MiB of zeros (about 1/1000 of that on the wire)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    parts = [compressor.compress(chunk) for _ in range(megabytes)]
    parts.append(compressor.flush())
    return b"".join(parts)


BOMB = gzip_bomb(1024)


def serve(kind, stop):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)

    def answer(connection):
        connection.settimeout(1)
        try:
            request = b""
            while b"\r\n\r\n" not in request:
                data = connection.recv(65536)
                if not data:
                    return
                request += data
            head, _, body = request.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            while len(body) < length:
                data = connection.recv(65536)
                if not data:
                    break
                body += data
            connection.settimeout(None)
            if kind == "gzip-bomb":
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                    + b"Content-Length: %d\r\n\r\n" % len(BOMB)
                    + BOMB
                )
            elif kind == "endless":
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":\"")
                block = b"x" * 65536
                while not stop.is_set():
                    connection.sendall(block)
            elif kind == "slow-drip":
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
                while not stop.is_set():
                    connection.sendall(b" ")
                    time.sleep(1)
            elif kind == "negative-chunk":
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + b"-1\r\n{}\r\n0\r\n\r\n"
                )
                stop.wait(5)
            elif kind == "huge-length":
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{"
                )
                stop.wait(60)
        except OSError:
            pass
        finally:
            connection.close()

    def loop():
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except socket.timeout:
                continue
            threading.Thread(target=answer, args=(connection,), daemon=True).start()
        listener.close()

    threading.Thread(target=loop, daemon=True).start()
    return listener.getsockname()[1]


def main():
    binary = os.path.abspath(sys.argv[1])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    container = os.path.join(root, "Containers", "GTM-MUSIC01.json")
    push = '{"event":"login","user_id":"user-42"}\n{"event":"played song","title":"Blue","genre":"jazz","duration":300}\n'
    failed = False
    for command in ("preview", "braze"):
        for kind in ("gzip-bomb", "endless", "slow-drip", "huge-length", "negative-chunk"):
            stop = threading.Event()
            port = serve(kind, stop)
            environment = dict(os.environ, BRAZE_REST_API_KEY="hostile-test-key")
            if command == "preview":
                arguments = [
                    binary, "preview",
                    "tagmanager.c.com.example.music://preview/p?id=GTM-MUSIC01&gtm_auth=a&gtm_preview=1",
                    "--server", "http://127.0.0.1:%d" % port, "--events", "-",
                ]
            else:
                arguments = [
                    binary, "run", container, "--events", "-",
                    "--braze", "com.appboy.googletagmanager.BrazeGtmTagProvider",
                    "--context", "app_id=com.example.music",
                    "--sink", "braze:http://127.0.0.1:%d" % port,
                ]
            started = time.monotonic()
            process = subprocess.Popen(
                arguments, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment
            )
            try:
                process.stdin.write(push.encode())
                process.stdin.close()
            except OSError:
                pass
            timed_out = False
            while True:
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    break
                if not timed_out and time.monotonic() - started > BOUND_SECONDS + 30:
                    timed_out = True
                    process.kill()
                time.sleep(0.05)
            seconds = time.monotonic() - started
            stop.set()
            process.returncode = os.waitstatus_to_exitcode(status)
            peak_mb = usage.ru_maxrss / 1024.0  # ru_maxrss is in KiB on Linux
            crashed = process.returncode < 0 and not timed_out
            bad = timed_out or crashed or seconds > BOUND_SECONDS or peak_mb >= LIMIT_MB
            failed = failed or bad
            name = kind.replace("-", "_")
            print(
                "hostile_%s_%s_peak_mb=%.1f seconds=%.1f exit=%s%s"
                % (command, name, peak_mb, seconds, process.returncode, "  FAILED" if bad else ""),
                flush=True,
            )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
