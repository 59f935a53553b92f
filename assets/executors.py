"""The executor a run uses, chosen by RATINGS_EXECUTOR: in-process (default), one process per step, Celery workers,
or a Kubernetes job per step. The last two are optional dependencies (extras `celery`, `k8s`), imported only when
chosen.
"""

from __future__ import annotations

import dagster as dg

from pipeline.settings import Settings

# A step on a Redis broker is redelivered to another worker when it runs longer than the visibility
# timeout (Celery's default is one hour); a 17-year chain of one scenario is one step.
CELERY_VISIBILITY_TIMEOUT_SECONDS = 12 * 3600


def celery_config(broker_env: str = "RATINGS_CELERY_BROKER", backend_env: str | None = None) -> dict:
    """The celery_executor's config: what the run and the workers (`dagster-celery worker start -y`) share.

    The broker and result-backend URLs are read from the environment when the executor starts (the
    backend defaults to the broker), so a broker password never lands in a job's config or in the UI.
    """
    return {
        "broker": {"env": broker_env},
        "backend": {"env": backend_env or broker_env},
        "config_source": {
            "broker_transport_options": {
                "max_retries": 3,
                "interval_start": 0,
                "interval_step": 0.2,
                "interval_max": 0.5,
                "visibility_timeout": CELERY_VISIBILITY_TIMEOUT_SECONDS,
            },
            "worker_prefetch_multiplier": 1,  # a worker takes one step at a time; the others wait on the queue
        },
    }


def executor_def(settings: Settings) -> dg.ExecutorDefinition:
    """The executor the settings name. Celery needs the `celery` extra (dagster-celery) and running workers."""
    if settings.executor == "multiprocess":
        return dg.multiprocess_executor
    if settings.executor == "celery":
        try:
            from dagster_celery import celery_executor
        except ImportError as error:  # an optional dependency: say how to get it
            raise ImportError(
                "RATINGS_EXECUTOR=celery needs dagster-celery: pip install 'chess-ratings[celery]'"
            ) from error
        backend_env = "RATINGS_CELERY_BACKEND" if settings.celery_backend else None
        return celery_executor.configured(celery_config(backend_env=backend_env), name="celery")
    if settings.executor == "k8s":
        try:
            from dagster_k8s import k8s_job_executor
        except ImportError as error:
            raise ImportError("RATINGS_EXECUTOR=k8s needs dagster-k8s: pip install 'chess-ratings[k8s]'") from error
        return k8s_job_executor
    return dg.in_process_executor
