"""The soak's printed report: the load by request kind, the faults, the checks and each process's memory."""

from __future__ import annotations


def render(options, load_seconds, traffic, rows, done, results, rss_rows, creations, planned) -> str:
    lines = [
        "",
        f"soak summary: {load_seconds / 60:.1f} min of load, {len(traffic.submitted)} workflows submitted "
        f"({len(traffic.submitted) / load_seconds:.2f}/s, asked {options.rate:g}/s), "
        f"{len(traffic.cancelled)} cancelled, {sum(creations.values())} pods created; {len(done)} of {planned} faults",
        "",
        f"  {'request kind':<26}{'requests':>9}{'errors':>8}{'4xx':>6}{'p50 ms':>9}{'p99 ms':>9}",
    ]
    for kind, requests, errors, refused, p50, p99 in rows:
        lines.append(f"  {kind:<26}{requests:>9}{errors:>8}{refused:>6}{1000 * p50:>9.0f}{1000 * p99:>9.0f}")
    lines += ["", "  faults:"]
    lines += [f"    {f.at:6.0f} s  {f.kind:<9}{'' if f.ok else 'FAILED '}{f.detail} ({f.took:.1f} s)" for f in done]
    lines += ["", f"  {'process':<24}{'RSS start MiB':>14}{'end MiB':>9}"]
    for name, before, after, note in rss_rows:
        lines.append(f"  {name:<24}{before / 1024:>14.0f}{after / 1024:>9.0f}  {note}".rstrip())
    lines += ["", "  checks:"]
    lines += [f"    {'PASS' if c.ok else 'FAIL'}  {c.name}: {c.detail}" for c in results]
    verdict = "every check passed" if all(c.ok for c in results) else "SOME CHECKS FAILED"
    lines += ["", f"soak: {verdict}"]
    return "\n".join(lines)
