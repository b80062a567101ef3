/**
 * Whether process `pid` exists. EPERM means it exists but belongs to someone else. A pid that is
 * not a positive integer is "not alive": `process.kill(0 or -n, 0)` would address a process group.
 * (Lock and registry files record the pid of their owner: control-registry, worker bundles, the
 * disk state backend's LOCK.)
 */
export function isPidAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
