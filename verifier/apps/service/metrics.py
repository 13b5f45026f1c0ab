"""Counters and a latency histogram, written in the Prometheus text exposition format (0.0.4).

One process, one event loop: plain dicts, no locks. ``GET /metrics`` returns :meth:`Metrics.render`.
"""
from __future__ import annotations

import math
from collections import defaultdict

#: latency histogram bucket bounds (seconds)
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, math.inf)

#: paths reported as themselves; anything else under a known prefix is folded into its template
_TEMPLATES = (("/v1/results/", "/v1/results/{id}"), ("/v1/jobs/", "/v1/jobs/{id}"), ("/r/", "/r/{id}"),
              ("/mcp", "/mcp"), ("/docs", "/docs"))
_PLAIN = {"/", "/prove", "/healthz", "/metrics", "/openapi.json", "/v1/prove", "/v1/analyze", "/v1/show", "/v1/check",
          "/v1/results"}


#: HTTP methods reported as themselves; any other is ``other`` (a label never holds client text)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT"})


def method_label(method: str) -> str:
    """The ``method`` label of an HTTP method: itself when standard, else ``other``."""
    return method if method in METHODS else "other"


def route_label(path: str) -> str:
    """The ``path`` label of a request path: the route (template) it matches, else ``other``."""
    if path in _PLAIN:
        return path
    for prefix, label in _TEMPLATES:
        if path.startswith(prefix):
            return label
    return "other"


def _labels(d: dict) -> str:
    if not d:
        return ""
    inner = ",".join(f'{k}="{str(v).replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
                     for k, v in sorted(d.items()))
    return "{" + inner + "}"


class Metrics:
    """The service's Prometheus counters: requests by route, method and status, latency
    histograms by route, store look-ups by kind and outcome, and events (timeouts, crashes ...)."""

    def __init__(self):
        self.requests: dict[tuple, int] = defaultdict(int)        # (path, method, status) -> count
        self.latency: dict[str, list[int]] = {}                   # path -> bucket counts
        self.latency_sum: dict[str, float] = defaultdict(float)
        self.latency_count: dict[str, int] = defaultdict(int)
        self.cache: dict[tuple, int] = defaultdict(int)           # (kind, hit|miss) -> count
        self.events: dict[str, int] = defaultdict(int)            # solver_timeout, worker_crash, ...

    def observe(self, path: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request and its latency (``seconds``) under its route's labels."""
        label = route_label(path)
        self.requests[(label, method_label(method), status)] += 1
        counts = self.latency.setdefault(label, [0] * len(BUCKETS))
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                counts[i] += 1
                break
        self.latency_sum[label] += seconds
        self.latency_count[label] += 1

    def cache_result(self, kind: str, hit: bool) -> None:
        """Count one store look-up of ``kind``: a hit or a miss."""
        self.cache[(kind, "hit" if hit else "miss")] += 1

    def event(self, name: str) -> None:
        """Count one event ``name`` (``worker_crashes``, ``solver_timeouts`` ...)."""
        self.events[name] += 1

    def render(self, gauges: dict | None = None, counters: dict | None = None) -> str:
        """The metrics in the Prometheus text format, with the extra ``gauges`` and ``counters`` given."""
        out = ["# HELP layoutverify_requests_total HTTP requests by route, method and status.",
               "# TYPE layoutverify_requests_total counter"]
        for (path, method, status), n in sorted(self.requests.items()):
            out.append(f"layoutverify_requests_total{_labels({'path': path, 'method': method, 'status': status})} {n}")
        out += ["# HELP layoutverify_request_seconds Request latency.",
                "# TYPE layoutverify_request_seconds histogram"]
        for path, counts in sorted(self.latency.items()):
            cum = 0
            for bound, n in zip(BUCKETS, counts):
                cum += n
                le = "+Inf" if math.isinf(bound) else repr(bound)
                out.append(f"layoutverify_request_seconds_bucket{_labels({'path': path, 'le': le})} {cum}")
            out.append(f"layoutverify_request_seconds_sum{_labels({'path': path})} {self.latency_sum[path]:.6f}")
            out.append(f"layoutverify_request_seconds_count{_labels({'path': path})} {self.latency_count[path]}")
        out += ["# HELP layoutverify_cache_total Store lookups by kind and outcome (hit: answered from the store).",
                "# TYPE layoutverify_cache_total counter"]
        for (kind, outcome), n in sorted(self.cache.items()):
            out.append(f"layoutverify_cache_total{_labels({'kind': kind, 'outcome': outcome})} {n}")
        out += ["# HELP layoutverify_cache_hits_total Requests answered from the store.",
                "# TYPE layoutverify_cache_hits_total counter",
                f"layoutverify_cache_hits_total {sum(n for (k, o), n in self.cache.items() if o == 'hit')}"]
        for name, help_ in (("solver_timeouts", "Proofs that ended 'unknown' (a solver time limit) or ran past "
                                                "their deadline."),
                            ("worker_crashes", "Worker processes that died while running a job."),
                            ("worker_timeouts", "Jobs stopped at their deadline (their worker was killed)."),
                            ("busy_rejections", "Requests refused with 503 because the queue was full.")):
            out += [f"# HELP layoutverify_{name}_total {help_}", f"# TYPE layoutverify_{name}_total counter",
                    f"layoutverify_{name}_total {self.events.get(name, 0)}"]
        for name, (help_, value) in sorted((counters or {}).items()):
            out += [f"# HELP layoutverify_{name}_total {help_}", f"# TYPE layoutverify_{name}_total counter",
                    f"layoutverify_{name}_total {value}"]
        for name, (help_, value) in sorted((gauges or {}).items()):
            out += [f"# HELP layoutverify_{name} {help_}", f"# TYPE layoutverify_{name} gauge",
                    f"layoutverify_{name} {value}"]
        return "\n".join(out) + "\n"
