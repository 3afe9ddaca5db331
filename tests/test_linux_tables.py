"""The Linux backend's table builder, without root: which TCP_INFO read a
samples row takes."""

from __future__ import annotations

from ccarena.linux.tables import info_at


def test_a_row_takes_the_close_read_where_the_socket_closed_before_the_sampler():
    """The sampler's read when there is one; the sender's read at the close
    when the flow completed in the interval or the run ended (every flow
    closes at the sampler's last instant and may close first); nothing in
    between (a sampler that missed a live socket)."""
    final = {"snd_cwnd": 40, "bbr_pacing_gain": 256}
    sampled = {"snd_cwnd": 41}
    bulk = {"final": final}
    assert info_at(3.0, sampled, bulk, 3.0) == sampled
    assert info_at(3.0, None, bulk, 3.0) == final
    assert info_at(2.9, None, bulk, 3.0) == {}
    sized = {"final": final, "done_s": 1.25}
    assert info_at(1.3, None, sized, 3.0) == final
    assert info_at(1.2, None, sized, 3.0) == {}
    # A flow that never got to read at its close (an error): nothing.
    assert info_at(3.0, None, {}, 3.0) == {}
