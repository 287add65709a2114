"""PNG plots for reports: matplotlib on the file-only Agg backend, bytes out, and data URIs
so a plot can live inside Markdown metadata."""

from __future__ import annotations

import io


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no screen on these machines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


PLOT_DPI = 110


def png_bytes(fig) -> bytes:
    """The figure as PNG bytes; the figure is closed. A figure already laid out keeps its layout."""
    buf = io.BytesIO()
    if not fig.get_layout_engine():
        fig.tight_layout()
    fig.savefig(buf, format="png", dpi=PLOT_DPI)
    pyplot().close(fig)
    return buf.getvalue()
