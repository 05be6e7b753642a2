"""An MCP Apps example: a dice-rolling tool with an interactive bar chart.

``roll_dice`` links the interface ``ui://dice/chart.html``; a host with MCP Apps renders it
in a sandboxed iframe, and the chart's "roll again" button calls ``roll_dice`` through the
host. A host without the extension just gets the text content (and the structured result).

The interface's script is built from ``src/app.js`` with the official App SDK
(``@modelcontextprotocol/ext-apps``): ``npm ci && npm run build`` in this directory first
(``DICE_APP_JS`` names another built bundle).

    python examples/apps/server.py            # stdio
    python examples/apps/server.py http 8000  # Streamable HTTP on 127.0.0.1:8000/mcp
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from mcpgen import Server
from mcpgen.generated import CallToolResult, TextContent
from mcpgen.runtime.server.caching import CacheHint

HERE = Path(__file__).resolve().parent
CHART = "ui://dice/chart.html"

server = Server("dice", "1.0.0", instructions="Roll dice; hosts with MCP Apps show a chart.")


def chart_html() -> str:
    """The interface: the page with the bundled app inlined (hosts load nothing else:
    the default MCP Apps CSP allows inline scripts only)."""
    bundle = Path(os.environ.get("DICE_APP_JS", HERE / "dist" / "app.js"))
    if not bundle.is_file():
        raise FileNotFoundError(f"{bundle} is missing: run `npm ci && npm run build` in {HERE}")
    script = bundle.read_text(encoding="utf-8").replace("</script", "<\\/script")
    return (HERE / "app.html").read_text(encoding="utf-8").replace("/*APP_JS*/", script)


server.ui_resource(
    CHART,
    chart_html,
    title="Dice chart",
    prefers_border=True,
    cache=CacheHint(ttl_ms=60_000, scope="public"),  # the same page for every user
)


@server.tool(ui=CHART)
def roll_dice(count: int = 3, sides: int = 6) -> CallToolResult:
    """Roll `count` dice with `sides` sides each."""
    if not (1 <= count <= 20 and 2 <= sides <= 100):
        raise ValueError("count must be 1-20 and sides 2-100")
    rolls = [random.randint(1, sides) for _ in range(count)]
    # The text stands on its own for hosts without MCP Apps; the chart reads the structure.
    text = f"Rolled {count}d{sides}: {', '.join(map(str, rolls))} (total {sum(rolls)})"
    return CallToolResult(
        content=[TextContent(text=text)], structured_content={"rolls": rolls, "sides": sides, "total": sum(rolls)}
    )


@server.tool(ui=CHART, visibility=["app"])
def reset_seed(seed: int) -> str:
    """Make the next rolls repeatable (for the chart's own use, not the model's)."""
    random.seed(seed)
    return f"seeded with {seed}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("http", host="127.0.0.1", port=int(sys.argv[2]) if len(sys.argv) > 2 else 8000)
    else:
        server.run()
