"""The executor a run uses, chosen by RATINGS_EXECUTOR.

In-process (default), one process per step, Celery workers, or a Kubernetes job per step. The last two are optional
dependencies (extras `celery`, `k8s`), imported only when chosen.
"""

from __future__ import annotations

import dagster as dg

from pipeline.settings import Settings, celery_config


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
