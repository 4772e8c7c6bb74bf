"""CPU per workflow submission in one process: what a web worker spends, whatever the machine's load.

    python bench/submit_cpu.py        # with bench_workflows' environment (BENCH_DATABASE_NAME, DATABASE_URL)

Over HTTP (`make bench BENCH=workflows`) the rate follows whatever else the 2 cores run; the CPU time of one
process (`time.process_time`) barely does. In bench_workflows' throwaway database and set-up, this submits a
one-task workflow through Django's whole stack (the test client: middleware, DRF, the token, the service, the
database driver) and through the service alone, in `BLOCKS` blocks of `PER` (7 × 100), alternating, and
prints each block's milliseconds per submission and the medians. docs/workflows-api.md, "Throughput", quotes
it (medians of runs alternating two trees: run it from each checkout in turn).
"""

from __future__ import annotations

import json
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench import bench_workflows as bw  # noqa: E402

BLOCKS, PER, WARMUP = int(os.environ.get("BLOCKS", "7")), int(os.environ.get("PER", "100")), 40


def main() -> None:
    with bw.throwaway_database():
        token = bw._set_up()
        from django.contrib.auth import get_user_model
        from django.test import Client

        from workflows import tasks as jobs
        from workflows.services import SubmitRequest, submit

        jobs.create_pods.delay = lambda *args, **kwargs: None  # this process has no broker: do not enqueue
        client, body = Client(), json.dumps({"file": bw.spec("cpu", 1)})
        headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        user = get_user_model().objects.get(username="researcher")

        def request() -> None:
            response = client.post("/api/pool/bench/workflow", body, content_type="application/json", **headers)
            if response.status_code != 200:
                raise RuntimeError(f"submission failed with HTTP {response.status_code}: {response.content[:500]}")

        def service() -> None:
            submit(SubmitRequest(pool="bench", spec=bw.spec("service", 1), who=user))

        for _ in range(WARMUP):  # imports, connections and the per-process caches filled, as in a server
            request()
            service()
        blocks: dict[str, list[float]] = {"request": [], "service": []}
        for _ in range(BLOCKS):
            for name, action in (("request", request), ("service", service)):
                started = time.process_time()
                for _ in range(PER):
                    action()
                blocks[name].append(1000 * (time.process_time() - started) / PER)
        for name, values in blocks.items():
            print(
                f"{name}: {statistics.median(values):.2f} ms CPU per submission "
                f"(blocks: {', '.join(f'{v:.2f}' for v in values)})"
            )


if __name__ == "__main__":
    main()
