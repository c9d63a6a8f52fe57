"""The machine a benchmark ran on, as the words its header line starts with: the CPU model
(as ``/proc/cpuinfo`` names it), the CPU count, the load average and, for a script that uses
torch, its version and threads.  (``platform.processor()`` is empty on Linux, so the scripts
printed only ``x86_64``.)  The one helper of ``benchmarks/*.py``:

    print(f"{machine_text(with_torch=True)}, device {args.device}, ...")
    # -> AMD EPYC 7B13, 2 CPUs, load average 3.1/2.8/2.5, torch 2.13.0, 1 torch thread(s), ...
"""
from __future__ import annotations

import os
import platform

#: The file that names the CPU model on Linux (elsewhere: ``platform``'s words).
CPUINFO = "/proc/cpuinfo"


def cpu_model(cpuinfo: str | None = None) -> str:
    """The first ``model name`` of ``cpuinfo`` (:data:`CPUINFO`), its spaces collapsed; without
    one (no such file, another platform's format), ``platform.processor()`` or else
    ``platform.machine()``."""
    try:
        with open(cpuinfo or CPUINFO, encoding="utf-8", errors="replace") as file:
            for line in file:
                key, colon, value = line.partition(":")
                if colon and key.strip() == "model name" and value.strip():
                    return " ".join(value.split())[:200]
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages as ``1.2/0.9/0.7`` (``?`` where the OS has none)."""
    try:
        return "/".join(f"{load:.1f}" for load in os.getloadavg())
    except (AttributeError, OSError):  # (Windows has no getloadavg)
        return "?"


def machine_text(with_torch: bool = False) -> str:
    """``<CPU model>, <n> CPUs, load average <1/5/15 min>``; ``with_torch`` adds ``, torch
    <version>, <t> torch thread(s)`` (torch's setting now: call it after the script set it)."""
    text = f"{cpu_model()}, {os.cpu_count()} CPUs, load average {load_average()}"
    if with_torch:
        import torch  # (a script that asks has imported it: no start-up cost)
        text += f", torch {torch.__version__}, {torch.get_num_threads()} torch thread(s)"
    return text


__all__ = ["CPUINFO", "cpu_model", "load_average", "machine_text"]
