"""What every README block bench/report.py writes shares: the provenance of a figure, a verdict."""
from __future__ import annotations

NOT_MEASURED = "not measured"


def when(result: dict | None) -> str:
    if not result:
        return "—"
    dirty = " + uncommitted changes" if result.get("dirty") else ""
    return f"{result.get('date', '?')[:10]}, `{str(result.get('commit', '?'))[:7]}`{dirty}"


def command(result: dict | None, default: str) -> str:
    return f"`{result['command']}`" if result and result.get("command") else f"`{default}`"


def verdict(ok: bool, how: str = "") -> str:
    return "met" if ok else f"**missed**{' (' + how + ')' if how else ''}"
