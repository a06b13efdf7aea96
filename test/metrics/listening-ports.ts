import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const LISTEN = "0A";

/** The TCP ports a process listens on, read from /proc (Linux): its sockets in LISTEN state. */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match?.[1] !== undefined) inodes.add(match[1]);
    } catch {
      // Closed between listing and reading.
    }
  }
  const ports = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [, local, , state] = fields;
      const inode = fields[9];
      if (state !== LISTEN || inode === undefined || !inodes.has(inode)) continue;
      ports.add(Number.parseInt(local?.split(":")[1] ?? "", 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}
