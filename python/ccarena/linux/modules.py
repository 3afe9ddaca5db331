"""Which of ccarena's congestion controls the Linux backend can run, and
under the kernel module's name (light: ``ccarena list`` reads it without
loading the backend)."""

from __future__ import annotations

__all__ = ["KERNEL_CC"]

# ccarena's names for the kernel's modules (used when the running kernel
# has the module loaded: tcp_available_congestion_control).
KERNEL_CC = {
    "reno": "reno",
    "cubic": "cubic",
    "bbr1": "bbr",
    "vegas": "vegas",
    "westwood": "westwood",
    "htcp": "htcp",
    "illinois": "illinois",
    "bic": "bic",
    "scalable": "scalable",
    "hybla": "hybla",
    "yeah": "yeah",
    "prague": "prague",
}
