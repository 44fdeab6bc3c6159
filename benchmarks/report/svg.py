"""Inline SVG charts: no script, no font or asset from the network, so the page opens offline
and prints. Every chart has a <title> per mark, which browsers show as a tooltip."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from html import escape

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
FAULT_FILL = "#d62728"
WIDTH, HEIGHT = 760, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 14, 34


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if high <= low:
        high = low + 1
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        if value >= low - step * 1e-9:
            ticks.append(round(value, 10))
        value += step
    return ticks


def x_axis_label(left: float, right: float, height: float, text: str) -> str:
    """The x axis's title, centred under the plot area."""
    return f'<text x="{(left + right) / 2}" y="{height - 4}" text-anchor="middle" class="label">{escape(text)}</text>'


def _label(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


class Frame:
    """Maps data to pixels for one chart; x in seconds, y linear or log10."""

    def __init__(self, x_range: tuple[float, float], y_range: tuple[float, float], log: bool = False,
                 width: int = WIDTH, height: int = HEIGHT) -> None:
        self.x0, self.x1 = x_range
        if self.x1 <= self.x0:
            self.x1 = self.x0 + 1
        self.log = log
        low, high = y_range
        if log:
            low, high = math.log10(max(low, 1e-3)), math.log10(max(high, low * 10, 1e-2))
            low, high = math.floor(low), math.ceil(high)
        if high <= low:
            high = low + 1
        self.y0, self.y1 = low, high
        self.width, self.height = width, height

    def x(self, value: float) -> float:
        return LEFT + (value - self.x0) / (self.x1 - self.x0) * (self.width - LEFT - RIGHT)

    def y(self, value: float) -> float:
        v = math.log10(max(value, 10 ** self.y0)) if self.log else value
        return self.height - BOTTOM - (v - self.y0) / (self.y1 - self.y0) * (self.height - TOP - BOTTOM)

    def axes(self, x_label: str, y_label: str) -> list[str]:
        out = []
        y_ticks = [10 ** e for e in range(int(self.y0), int(self.y1) + 1)] if self.log else nice_ticks(self.y0, self.y1)
        for tick in y_ticks:
            y = self.y(tick)
            out.append(f'<line x1="{LEFT}" x2="{self.width - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
            out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(tick)}</text>')
        for tick in nice_ticks(self.x0, self.x1, 8):
            x = self.x(tick)
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.height - BOTTOM}" y2="{self.height - BOTTOM + 4}" '
                       'class="axis"/>')
            out.append(f'<text x="{x:.1f}" y="{self.height - BOTTOM + 16}" text-anchor="middle">{_label(tick)}</text>')
        out.append(f'<line x1="{LEFT}" x2="{self.width - RIGHT}" y1="{self.height - BOTTOM}" y2="{self.height - BOTTOM}" '
                   'class="axis"/>')
        out.append(x_axis_label(LEFT, self.width - RIGHT, self.height, x_label))
        out.append(f'<text x="12" y="{(TOP + self.height - BOTTOM) / 2}" text-anchor="middle" class="label" '
                   f'transform="rotate(-90 12 {(TOP + self.height - BOTTOM) / 2})">{escape(y_label)}</text>')
        return out

    def shade(self, windows: Iterable[tuple[float, float, str]]) -> list[str]:
        out = []
        for start, end, label in windows:
            a, b = self.x(max(start, self.x0)), self.x(min(end, self.x1))
            if b > a:
                out.append(f'<rect x="{a:.1f}" y="{TOP}" width="{b - a:.1f}" height="{self.height - TOP - BOTTOM}" '
                           f'fill="{FAULT_FILL}" fill-opacity="0.10"><title>{escape(label)}</title></rect>')
        return out


def _svg(frame: Frame, body: list[str], legend: Sequence[tuple[str, str]] = ()) -> str:
    items = []
    x = LEFT
    for label, fill in legend:
        items.append(f'<rect x="{x}" y="2" width="10" height="10" fill="{fill}"/>'
                     f'<text x="{x + 14}" y="11">{escape(label)}</text>')
        x += 24 + 7 * len(label)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {frame.width} {frame.height + 14}" class="chart" role="img">'
            f'<g transform="translate(0,14)">{"".join(body)}</g><g>{"".join(items)}</g></svg>')


def line_chart(series: Sequence[tuple[str, Sequence[tuple[float, float | None]]]], shade: Iterable[tuple[float, float, str]],
               x_label: str, y_label: str, log: bool = False, x_range: tuple[float, float] | None = None) -> str:
    """Lines (gaps where y is None) over shaded fault windows."""
    points = [(x, y) for _, values in series for x, y in values if y is not None]
    xs = [x for x, _ in points] or [0.0, 1.0]
    ys = [y for _, y in points] or [0.0, 1.0]
    frame = Frame(x_range or (min(xs), max(xs)), (min(ys) if log else 0.0, max(ys) * 1.05 or 1.0), log=log)
    body = frame.shade(shade) + frame.axes(x_label, y_label)
    for index, (label, values) in enumerate(series):
        path, pen_down = [], False
        for x, y in values:
            if y is None or (log and y <= 0):
                pen_down = False
                continue
            path.append(f"{'L' if pen_down else 'M'}{frame.x(x):.1f},{frame.y(y):.1f}")
            pen_down = True
        body.append(f'<path d="{" ".join(path)}" fill="none" stroke="{color(index)}" stroke-width="1.6">'
                    f'<title>{escape(label)}</title></path>')
    return _svg(frame, body, [(label, color(i)) for i, (label, _) in enumerate(series)])


def lanes(rows: Sequence[tuple[str, Sequence[tuple[float, float, str, str]]]], shade: Iterable[tuple[float, float, str]],
          x_range: tuple[float, float], x_label: str, legend: Sequence[tuple[str, str]] = ()) -> str:
    """One lane per row, each a sequence of (start, end, fill, tooltip) bars: the leader / ISR
    timeline of every partition."""
    lane = 18
    height = TOP + BOTTOM + lane * max(1, len(rows))
    frame = Frame(x_range, (0, 1), height=height)
    body = frame.shade(shade)
    for index, (label, bars) in enumerate(rows):
        y = TOP + index * lane
        body.append(f'<text x="{LEFT - 6}" y="{y + lane - 5}" text-anchor="end">{escape(label)}</text>')
        for start, end, fill, tip in bars:
            a, b = frame.x(max(start, frame.x0)), frame.x(min(end, frame.x1))
            body.append(f'<rect x="{a:.1f}" y="{y + 2}" width="{max(b - a, 1.0):.1f}" height="{lane - 4}" fill="{fill}">'
                        f'<title>{escape(tip)}</title></rect>')
    for tick in nice_ticks(frame.x0, frame.x1, 8):
        x = frame.x(tick)
        body.append(f'<text x="{x:.1f}" y="{height - BOTTOM + 16}" text-anchor="middle">{_label(tick)}</text>')
    body.append(x_axis_label(LEFT, frame.width - RIGHT, height, x_label))
    return _svg(frame, body, legend)


def bars(items: Sequence[tuple[str, Sequence[tuple[str, float]]]], title: str) -> str:
    """Grouped horizontal bars: one group per item (a run), one bar per (measure, value)."""
    measures = list(dict.fromkeys(name for _, values in items for name, _ in values))
    bar, gap = 10, 8
    group = bar * len(measures) + gap
    height = TOP + BOTTOM + group * max(1, len(items))
    top = max((v for _, values in items for _, v in values), default=0) or 1
    frame = Frame((0, top * 1.1), (0, 1), height=height, width=WIDTH)
    body = [f'<text x="{LEFT}" y="{TOP - 2}" class="label">{escape(title)}</text>']
    left = 240
    scale = (frame.width - left - RIGHT - 60) / (top * 1.1)
    for index, (label, values) in enumerate(items):
        y = TOP + index * group
        body.append(f'<text x="{left - 6}" y="{y + group / 2 + 2}" text-anchor="end">{escape(label[:38])}</text>')
        for m, (name, value) in enumerate(values):
            w = value * scale
            body.append(f'<rect x="{left}" y="{y + m * bar}" width="{max(w, 0.5 if value else 0):.1f}" height="{bar - 1}" '
                        f'fill="{color(measures.index(name))}">'
                        f'<title>{escape(label)}: {value:,.0f} {escape(name)}</title></rect>')
            if value:
                body.append(f'<text x="{left + w + 4:.1f}" y="{y + m * bar + bar - 2}">{value:,.0f}</text>')
    return _svg(frame, body, [(name, color(i)) for i, name in enumerate(measures)])
