"""How many threads torch (and numpy's BLAS) may use while trials run side by side.

A PPO trial's tensors are small: two 64x64 MLPs on minibatches of 64 in training, one
observation at a time in the walk-forward. Splitting them across threads costs more than it
saves (on 2 cores one thread trained ~1.3x faster than two), and a worker whose torch runs
several threads takes cores from the trials next to it, its idle OpenMP threads spinning on
them. So a PPO trial runs torch and numpy's BLAS (the numpy trainer's matrix products) on
:data:`TRIAL_THREADS` thread(s) (see :func:`trial_threads`), and a worker process caps torch
at its share of the cores when it starts (:func:`set_worker_threads`). The count never changes
a number: torch computes each output element of these matrix products on one thread either way
(the tests check it), and a trial's numpy runs on one thread wherever it runs.

torch and threadpoolctl are imported when a function here is called, not when the module is.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["TRIAL_THREADS", "set_worker_threads", "threads_per_worker", "trial_threads"]

TRIAL_THREADS = 1


def threads_per_worker(workers: int, cores: int | None = None) -> int:
    """Each of ``workers`` concurrent workers' share of ``cores`` (default: this machine's),
    at least one.

    Raises:
        ValueError: ``workers`` or ``cores`` below one.
    """
    available = (os.cpu_count() or 1) if cores is None else cores
    if workers < 1 or available < 1:
        raise ValueError(f"workers and cores must be >= 1, got {workers} and {available}")
    return max(1, available // workers)


def set_worker_threads(workers: int = 1, cores: int | None = None) -> int:
    """Caps torch's intra-op threads in this process at its share of the cores.

    Call it when a trial worker starts (one of ``workers`` running at once): whatever torch
    runs there outside a trial's own :func:`trial_threads` block stays within the share.

    Returns:
        The thread count set.
    """
    import torch

    threads = threads_per_worker(workers, cores)
    torch.set_num_threads(threads)
    return threads


@contextmanager
def trial_threads(n_threads: int = TRIAL_THREADS) -> Iterator[None]:
    """Torch's intra-op threads and numpy's BLAS threads set to ``n_threads`` for the block,
    restored after it (the numpy trainer's matrix products run on the BLAS)."""
    import torch
    from threadpoolctl import threadpool_limits

    previous = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        with threadpool_limits(n_threads, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(previous)
