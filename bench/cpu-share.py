#!/usr/bin/env python3
"""CPU share of each tier while a bench runs, from /proc: `python3 bench/cpu-share.py PID [SECONDS]`.

Every SECONDS (default 5) prints one line of percent of one core: the bench's service processes
(svc.mjs under PID; the load generator, the bare twin and the bench itself apart), the PostgreSQL backends of the bench's databases
(bench_*), and redis-server (shared, so it counts every client). Stops when PID exits.
"""
import os, sys, time

TICK = os.sysconf("SC_CLK_TCK")


def processes():
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        found[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]), cmdline)
    return found


def tier(pid, table, root):
    parent, _, cmdline = table[pid]
    if cmdline.startswith("postgres:") and " bench_" in cmdline:
        return "postgres"
    if "redis-server" in cmdline:
        return "redis"
    seen = pid
    while seen in table and seen > 1:
        if seen == root:
            if "svc.mjs" in cmdline:
                return "service"
            if "load.ts" in cmdline:
                return "loadgen"
            return "twin" if "twin.ts" in cmdline else "bench"
        seen = table[seen][0]
    return None


def main():
    root = int(sys.argv[1])
    period = float(sys.argv[2]) if len(sys.argv) > 2 else 5
    before = processes()
    print("time      service% postgres%   redis% loadgen%   twin%   bench%   idle%", flush=True)
    idle_before = open("/proc/stat").readline().split()
    last = time.monotonic()
    while os.path.exists(f"/proc/{root}"):
        time.sleep(period)
        now = processes()
        elapsed, last = time.monotonic() - last, time.monotonic()
        idle_now = open("/proc/stat").readline().split()
        totals = {}
        for pid, (_, ticks, _) in now.items():
            name = tier(pid, now, root)
            if name is None:
                continue
            spent = ticks - (before[pid][1] if pid in before else 0)
            totals[name] = totals.get(name, 0) + spent
        all_ticks = sum(map(int, idle_now[1:])) - sum(map(int, idle_before[1:]))
        idle = (int(idle_now[4]) - int(idle_before[4])) / max(all_ticks, 1) * 100
        pct = lambda k: totals.get(k, 0) / TICK / elapsed * 100
        print(time.strftime("%H:%M:%S"), *(f"{pct(k):8.0f}" for k in
              ("service", "postgres", "redis", "loadgen", "twin", "bench")), f"{idle:8.0f}", flush=True)
        before, idle_before = now, idle_now


main()
