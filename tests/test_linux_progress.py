"""The Linux backend's progress line, without root or a run: how far the
traffic is and the wall time the run has taken."""

from __future__ import annotations

from ccarena.linux.backend import traffic_progress

S = 1_000_000_000


def test_the_progress_line_shows_the_traffic_and_the_elapsed_wall_time():
    began, t0, duration = 100 * S, 103 * S, 15 * S  # namespaces and start-up: 3 s
    assert (
        traffic_progress(began + S, t0, duration, began)
        == "traffic starts in 2.0 s (for 15 s), 1.0 s elapsed"
    )
    line = traffic_progress(t0 + 3_200_000_000, t0, duration, began)
    assert line == "traffic: 3.2 of 15 s, 6.2 s elapsed"
    assert traffic_progress(t0 + duration + S // 2, t0, duration, began) == (
        "traffic: 15 of 15 s, collecting the results, 18.5 s elapsed"
    )
    # A clock read before the run began (it cannot, but never "-0.0 s").
    assert traffic_progress(began - S, t0, duration, began).endswith(", 0.0 s elapsed")
