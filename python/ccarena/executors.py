"""Where the runs of a sweep are simulated: in this process, in a local pool of
processes, or on a Ray cluster.

Every executor runs the same two steps per run: ``runner.simulate`` (the
scenario's normalized JSON in, the core's tables out) and
``runner.store_run`` (the atomic run directory, its tables written by the
core as Parquet). Local workers do both (the writing is spread over the
pool too); Ray workers only simulate and return the tables as Parquet
files' bytes, and the driver writes them, so a cluster needs no shared
file system. Since a run depends only on its scenario, the files are the
same bits whichever executor and however many workers produced them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .runner import simulate_portable, simulated, store_portable, store_run

__all__ = [
    "EXECUTORS",
    "Job",
    "default_jobs",
    "run_job",
    "run_linux",
    "run_local",
    "run_ray",
]

EXECUTORS = ("local", "ray", "linux")

#: ``on_done(job, error)``: called in the driver once per job, ``error`` None on success.
OnDone = Callable[["Job", BaseException | None], None]


@dataclass(frozen=True)
class Job:
    """One run to simulate and where to write it."""

    index: int
    core_json: str
    hash: str
    target: str


class RunError(RuntimeError):
    """A run failed in a worker; the message names the original error."""


def default_jobs() -> int:
    """All the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def run_job(job: Job) -> int:
    """Simulate one job and write its run directory (a local worker's task)."""
    try:
        with simulated(job.core_json, job.target) as run:
            store_run(job.core_json, job.hash, run, dict(run.stats), list(run.captures), job.target)
    except Exception as e:
        raise RunError(f"{type(e).__name__}: {e}") from None
    except BaseException as e:  # a Rust panic arrives as pyo3's PanicException (a BaseException)
        if isinstance(e, KeyboardInterrupt | SystemExit):
            raise
        raise RunError(f"{type(e).__name__}: {e}") from None
    return job.index


def _watch_parent(parent: int) -> None:
    """Exit when the driver is gone (killed with SIGKILL, say), instead of
    lingering as an orphan. A run in progress is dropped: nothing of it is
    published, since run directories appear only when complete."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(1)


def _worker_init(parent: int) -> None:
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def run_local(jobs: Sequence[Job], workers: int, on_done: OnDone) -> None:
    """Run ``jobs`` on ``workers`` processes (spawned, so no state leaks from
    the driver); ``workers == 1`` runs them in this process."""
    if not jobs:
        return
    if workers <= 1:
        for job in jobs:
            try:
                run_job(job)
            except RunError as e:
                on_done(job, e)
            else:
                on_done(job, None)
        return
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(jobs)), mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),)
    )
    pending = {}
    try:
        for job in jobs:
            pending[pool.submit(run_job, job)] = job
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                job = pending.pop(fut)
                err = fut.exception()
                if isinstance(err, BrokenProcessPool):
                    err = RunError(f"a worker process died ({err})")
                on_done(job, err)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def run_ray(jobs: Sequence[Job], address: str | None, workers: int | None, on_done: OnDone) -> None:
    """Simulate ``jobs`` as Ray tasks and write each result here, as it
    arrives. Uses the Ray instance this process is connected to, else
    connects to ``address`` (``"auto"``, ``"ray://host:10001"``, ...), else
    starts a local one with ``workers`` CPUs. Needs ``pip install
    'ccarena[ray]'`` here and ccarena installed on the cluster's nodes."""
    try:
        import ray
    except ImportError:
        raise RuntimeError(
            "the ray executor needs Ray: pip install 'ccarena[ray]' (or pip install ray)"
        ) from None
    if not jobs:
        return
    started = False
    if not ray.is_initialized():
        kwargs: dict = {"include_dashboard": False, "log_to_driver": False}
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=workers or default_jobs(), **kwargs)
        started = True
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(simulate_portable)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        window = max(4, 2 * cpus)  # tasks in flight: enough to keep every CPU busy
        queue = list(jobs)
        inflight: dict = {}
        while queue or inflight:
            while queue and len(inflight) < window:
                job = queue.pop(0)
                inflight[remote.remote(job.core_json)] = job
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                job = inflight.pop(ref)
                try:
                    store_portable(job.core_json, job.hash, ray.get(ref), job.target)
                except Exception as e:
                    on_done(job, RunError(f"{type(e).__name__}: {e}"))
                else:
                    on_done(job, None)
    finally:
        if started:
            ray.shutdown()


def run_linux(jobs: Sequence[Job], scenarios: Mapping[int, object], on_done: OnDone) -> None:
    """Run ``jobs`` on the Linux backend, one at a time (each owns the
    machine's timing while it runs); a run directory is a kernel run, kept."""
    from .backends import linux

    kernel = linux()
    for job in jobs:
        try:
            kernel.run(scenarios[job.index], job.target)  # type: ignore[arg-type]
        except Exception as e:
            on_done(job, RunError(f"{type(e).__name__}: {e}"))
        else:
            on_done(job, None)
