"""The portal's production shape as processes on loopback, and what drives it (docs/operations.md, "Soak").

Not a Django app and no app imported at module level: the scale tests, the pipeline bench and the soak
(`python -m soak --minutes N`, `make soak`) start the same processes from here. Modules:

* `stack`: gunicorn, Celery workers, beat and the watchers as process groups; RSS read from /proc.
* `services`: the soak's own PostgreSQL database and Redis server (never the shared ones).
* `portal`: the portal's configuration for a run (backends, pools, node pools with quotas, teams, tokens).
* `load`: HTTP clients (submissions, cancels, reads, config and quota edits) with each request's latency.
* `faults`: the fault schedule (a worker SIGKILLed, the database's connections terminated, Redis restarted, a
  cluster's API down, a watcher replica killed).
* `checks` and `summary`: what must hold at the end, and the printed report.
"""
