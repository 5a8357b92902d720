"""Who listens on a TCP port, from /proc: the listening sockets of the port (/proc/net/tcp, tcp6) and
the processes that hold them (their file descriptors). A server this run started is checked with it
once it answers: the answer must come from a process of the server's own process group, not from
another run's server that took the port first (issue 28: two runs started together both used port
8000, and the second measured the first's server).

Linux only; where /proc/net/tcp cannot be read the owner is unknown (None), never guessed."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

LISTEN = "0A"           # the socket state column of /proc/net/tcp


@dataclass(frozen=True)
class Holder:
    pid: int
    command: str         # its command line, as ps shows it ('' when unreadable)

    def describe(self) -> str:
        return f"pid {self.pid}" + (f" ({self.command})" if self.command else "")


def listening_inodes(port: int, proc: str = "/proc") -> set[int] | None:
    """The inodes of the sockets listening on `port` (any address, IPv4 or IPv6); None when
    /proc/net/tcp cannot be read (not Linux)."""
    found, read_any = set(), False
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(proc, "net", table).read_text().splitlines()[1:]
        except OSError:
            continue
        read_any = True
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(fields[9]))
    return found if read_any else None


def group_pids(pgid: int, proc: str = "/proc") -> list[int]:
    """The processes of a process group."""
    pids = []
    for entry in os.listdir(proc):
        if entry.isdigit():
            try:
                fields = Path(proc, entry, "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if len(fields) > 2 and fields[2] == str(pgid):
                pids.append(int(entry))
    return pids


def _holds(pid: int, inodes: set[int], proc: str) -> bool:
    wanted = {f"socket:[{i}]" for i in inodes}
    try:
        fds = os.listdir(Path(proc, str(pid), "fd"))
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(Path(proc, str(pid), "fd", fd)) in wanted:
                return True
        except OSError:
            continue
    return False


def _command(pid: int, proc: str) -> str:
    try:
        return Path(proc, str(pid), "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    except OSError:
        return ""


def holders(port: int, proc: str = "/proc") -> list[Holder]:
    """The processes (readable by this user) that hold a socket listening on `port`."""
    inodes = listening_inodes(port, proc) or set()
    if not inodes:
        return []
    return [Holder(int(e), _command(int(e), proc)) for e in sorted(os.listdir(proc), key=lambda x: (len(x), x))
            if e.isdigit() and _holds(int(e), inodes, proc)]


def not_ours(port: int, pgid: int, proc: str = "/proc") -> str | None:
    """None when a process of group `pgid` listens on `port` (or /proc cannot tell); else what does
    listen there, in words."""
    inodes = listening_inodes(port, proc)
    if inodes is None:
        return None
    if inodes and any(_holds(pid, inodes, proc) for pid in group_pids(pgid, proc)):
        return None
    found = holders(port, proc)
    if found:
        return "held by " + ", ".join(h.describe() for h in found)
    return ("no process of the server's group listens there" if not inodes else
            "held by a process this user cannot see")


def parent(pid: int, proc: str = "/proc") -> int | None:
    try:
        return int(Path(proc, str(pid), "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def descends_from(pid: int, root: int, proc: str = "/proc") -> bool:
    """True when `root` is `pid` or one of its ancestors."""
    seen = set()
    while pid and pid not in seen:
        if pid == root:
            return True
        seen.add(pid)
        pid = parent(pid, proc) or 0
    return False


def not_under(port: int, root: int, proc: str = "/proc") -> str | None:
    """None when a process under `root` (itself or a descendant: a container's processes under its
    first one) listens on `port`, or /proc cannot tell; else what does listen there, in words."""
    inodes = listening_inodes(port, proc)
    if inodes is None:
        return None
    found = holders(port, proc)
    if any(descends_from(h.pid, root, proc) for h in found):
        return None
    if found:
        return "held by " + ", ".join(h.describe() for h in found)
    return ("no process of the container listens there" if not inodes else
            "held by a process this user cannot see")
