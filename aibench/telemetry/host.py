"""Host probe: a fixed shell loop on the node prints /proc and /sys readings every interval.

The script (run as ``sh -c SCRIPT sh INTERVAL``; no inventory value enters it) prints a
block per interval::

    @@ <epoch seconds>
    cpu  <user> <nice> <system> <idle> <iowait> <irq> <softirq> <steal> ...   (/proc/stat)
    <load1> <load5> <load15> <running/total> <last pid>                       (/proc/loadavg)
    f <kHz>            one per CPU (cpufreq scaling_cur_freq), when present
    z <millidegrees>   one per thermal zone, when present
    s <chip>/<label> <value>   temperatures of ``sensors -u``, when lm-sensors is installed

:func:`parse` turns complete blocks into samples: ``cpu_busy`` (%, from the /proc/stat
deltas), ``load1``, ``cpu_mhz`` (mean over CPUs), ``temp`` (C, per thermal zone and
sensors chip). A block still being written (no following ``@@``) is kept for later.
"""

from __future__ import annotations

from aibench.telemetry.store import Sample

SCRIPT = r"""
i=$1
while :; do
  echo "@@ $(date +%s.%N)"
  read -r l < /proc/stat; echo "$l"
  cat /proc/loadavg
  for f in /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq; do
    [ -r "$f" ] && read -r v < "$f" && echo "f $v"
  done
  for z in /sys/class/thermal/thermal_zone[0-9]*/temp; do
    [ -r "$z" ] && read -r v < "$z" && echo "z ${z%/temp} $v"
  done
  if command -v sensors >/dev/null 2>&1; then
    sensors -u 2>/dev/null | awk '/^[^ ].*-/{c=$1} /^[^ ].*:$/{l=$0; sub(":$","",l)}
      /^  temp[0-9]+_input:/{print "s " c "/" l " " $2}'
  fi
  sleep "$i"
done
"""


def argv(interval: float) -> tuple[str, ...]:
    return ("sh", "-c", SCRIPT, "sh", f"{interval:g}")


class HostParser:
    """Stateful: keeps the previous /proc/stat totals and an incomplete last block."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.prev: tuple[int, int] | None = None
        self.rest = ""

    def feed(self, text: str) -> list[Sample]:
        data = self.rest + text
        blocks = data.split("@@ ")
        self.rest = "@@ " + blocks[-1] if len(blocks) > 1 else blocks[-1]
        out: list[Sample] = []
        for b in blocks[1:-1]:
            out += self._block(b)
        return out

    def _block(self, block: str) -> list[Sample]:
        lines = block.strip().splitlines()
        try:
            t = float(lines[0].strip())
        except (IndexError, ValueError):
            return []
        out: list[Sample] = []
        freqs: list[float] = []

        def add(metric: str, key: str, unit: str, v: float) -> None:
            out.append(Sample(t, self.node, "host", metric, key, unit, v))

        for line in lines[1:]:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "cpu":
                nums = [int(x) for x in parts[1:9] if x.isdigit()]
                if len(nums) >= 4:
                    idle = nums[3] + (nums[4] if len(nums) > 4 else 0)
                    total = sum(nums)
                    if self.prev is not None and total > self.prev[0]:
                        dt, di = total - self.prev[0], idle - self.prev[1]
                        add("cpu_busy", "cpu", "%", 100.0 * (dt - di) / dt)
                    self.prev = (total, idle)
            elif parts[0] == "f" and len(parts) == 2 and parts[1].isdigit():
                freqs.append(int(parts[1]) / 1000.0)
            elif parts[0] == "z" and len(parts) == 3 and parts[2].lstrip("-").isdigit():
                add("temp", parts[1].rsplit("/", 1)[-1], "C", int(parts[2]) / 1000.0)
            elif parts[0] == "s" and len(parts) >= 3:
                try:
                    add("temp", " ".join(parts[1:-1]), "C", float(parts[-1]))
                except ValueError:
                    continue
            elif len(parts) == 5 and "/" in parts[3]:
                try:
                    add("load1", "load", "count", float(parts[0]))
                except ValueError:
                    continue
        if freqs:
            add("cpu_mhz", "cpu", "MHz", sum(freqs) / len(freqs))
        return out
