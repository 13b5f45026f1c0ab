"""The plot of a measured suite: ns per conversion per pair, coloured by the mechanism in the PTX,
with the shared-memory bound for the useful bytes (2 x tile) drawn as a black tick. Needs
matplotlib (the ``plot`` or ``gpu`` extra)."""
from __future__ import annotations

COLORS = {"registers": "#4c9a2a", "shuffle": "#e0a100", "shared": "#3b6fb6", "distributed_shared": "#8e44ad"}


def plot(results: list[dict], path: str, device: dict) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in results if "timing" in r]
    fig, ax = plt.subplots(figsize=(max(8, 0.22 * len(rows) + 2), 5.5))
    xs = range(len(rows))
    floor = 0.5  # register-only conversions take no measurable time; drawn at the floor
    ax.bar(xs, [max(r["timing"]["ns_per_conversion"], floor) for r in rows],
           color=[COLORS.get(r["ptx_class"], "grey") for r in rows])
    for i, r in enumerate(rows):
        if r.get("bound_ns_useful"):
            ax.plot([i - 0.4, i + 0.4], [r["bound_ns_useful"]] * 2, color="black", lw=1.5)
        if r.get("predicted_ns") is not None:
            ax.plot(i, r["predicted_ns"], marker="o", ms=3, color="red")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r["pair"]["name"] for r in rows], rotation=90, fontsize=6)
    ax.set_ylabel("ns per conversion per CTA (SM time, with one xor per element)")
    ax.set_yscale("log")
    ax.set_title(f"Layout conversions on {device['name']} ({device['sms']} SMs, {device.get('clock_mhz')} MHz), "
                 f"Triton {device['triton']}")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles = [Patch(color=c, label=k) for k, c in COLORS.items() if any(r["ptx_class"] == k for r in rows)]
    handles.append(Line2D([0], [0], color="black", label="shared-memory bound, 2 x tile"))
    handles.append(Line2D([0], [0], color="red", marker="o", lw=0, label="cost model"))
    ax.legend(handles=handles, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
