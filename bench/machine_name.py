"""The CPU model name and core count of this machine, as the bench scripts label their results."""
import os
import platform


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine():
    """"<cpu model>, <n> cores"."""
    return f"{cpu_model()}, {os.cpu_count()} cores"
