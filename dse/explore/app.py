"""``dse explore CONFIG``: a local web page to move a study's knobs and watch the score, rooflines and ceilings.

Built on Dash (Flask + React + Plotly; ``pip install 'dse[explore]'``): every view is a plain HTML element or a
Plotly graph, so a test drives it in a real browser through ``data-testid`` attributes; each knob change is one
HTTP callback that re-predicts the mix with the vectorized predictor (``dse.explore.state.evaluate``), and
callbacks keep no per-user state on the server, so several tabs work at once. Why Dash over Panel/Bokeh or
Streamlit: docs/explore.md.
"""

from __future__ import annotations

import errno
import math
import socket
import threading
import webbrowser
from functools import lru_cache
from pathlib import Path
from typing import Any

from dse.errors import DseError
from dse.explore import figures
from dse.explore.state import RATIO, KnobSpec, View, bandwidth_at_ratio, evaluate, heatmap, knob_specs, ratio_of
from dse.hardware.fields import KNOB_TABLE
from dse.report.residency import pct_text

#: steps of a knob's slider over its range (log10 of the value for log knobs)
SLIDER_STEPS = 200
#: a row of figures sharing the width
ROW = {"display": "flex", "gap": "8px"}
#: heatmap points per axis (the config's ``output.heatmap_points`` when smaller)
HEATMAP_POINTS = 24


def need_dash() -> Any:
    """The dash module, or one line naming the extra to install."""
    try:
        import dash
    except ImportError:
        raise DseError("got no 'dash' package; accepted: pip install 'dse[explore]' (Dash, the explorer's web "
                       "framework)", field="dse explore") from None
    return dash


def check_port(host: str, port: int) -> None:
    """Refuse a port another process listens on (one line naming it) before the server starts."""
    if not 0 < port < 65536:
        raise DseError(f"got {port}; accepted: 1..65535", field="--port")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except (socket.gaierror, UnicodeError) as exc:  # an address that names no host is the host's fault, not the port's
        reason = getattr(exc, "strerror", None) or str(exc)
        raise DseError(f"got {host!r} ({reason}); accepted: a host name or an IP address of this machine, e.g. "
                       "127.0.0.1 or 0.0.0.0", field="--host") from None
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:  # a real address, but none of this machine's
                raise DseError(f"got {host!r} ({exc.strerror}); accepted: an IP address of this machine, e.g. "
                               "127.0.0.1 or 0.0.0.0", field="--host") from None
            raise DseError(f"got {port} on {host} ({exc.strerror}); accepted: a free port, e.g. --port {port + 1}",
                           field="--port") from None


def slider_of(spec: KnobSpec, value: float) -> float:
    """A knob value as its slider's position (log10 for a log knob)."""
    return math.log10(value) if spec.log else value


def value_of(spec: KnobSpec, pos: float) -> float:
    """A slider position as the knob's value (rounded to 4 significant digits; whole for an integer knob)."""
    v = 10.0**pos if spec.log else pos
    v = float(f"{v:.4g}")
    return float(round(v)) if spec.integer else v


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def knob_control(spec: KnobSpec) -> Any:
    """A knob: label, slider and number box in one element ``data-testid=knob-<name>`` (a dropdown for choices)."""
    from dash import dcc, html

    if spec.choices is not None:
        ctl = [dcc.Dropdown(id={"k": "input", "n": spec.name}, value=spec.base, clearable=False,
                            options=[{"label": spec.choice_labels[i] if spec.choice_labels else _fmt(c), "value": c}
                                     for i, c in enumerate(spec.choices)])]
    else:
        lo, hi = slider_of(spec, spec.low), slider_of(spec, spec.high)
        step = 1 if spec.integer and not spec.log else (hi - lo) / SLIDER_STEPS
        ctl = [dcc.Slider(id={"k": "slider", "n": spec.name}, min=lo, max=hi, step=step,
                          value=slider_of(spec, spec.base), updatemode="mouseup",
                          marks={lo: _fmt(spec.low), hi: _fmt(spec.high)}, allow_direct_input=False),
               dcc.Input(id={"k": "input", "n": spec.name}, type="number", value=spec.base, debounce=True,
                         step="any", style={"width": "9em"})]
    return html.Div([html.Label(spec.label, style={"fontSize": "12px"}), *ctl],
                    style={"marginBottom": "10px"}, **{"data-testid": f"knob-{spec.name}"})


def table(rows: list[tuple[str, str]], testid: str) -> Any:
    from dash import html

    return html.Table([html.Tbody([html.Tr([html.Td(k), html.Td(v, style={"textAlign": "right"})]) for k, v in rows])],
                      style={"fontSize": "12px"}, **{"data-testid": testid})


def frame_table(df: Any, testid: str) -> Any:
    from dash import html

    head = html.Thead(html.Tr([html.Th(c) for c in df.columns]))
    body = html.Tbody([html.Tr([html.Td(_cell(v)) for v in row]) for row in df.itertuples(index=False)])
    return html.Table([head, body], style={"fontSize": "12px"}, **{"data-testid": testid})


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return _fmt(v)
    return str(v)


def built_rows(view: View) -> list[tuple[str, str]]:
    """The design as built: cores x array x clock, the knobs as built, stacks and capacity, area, cost, power."""
    b, s = view.built, view.summary
    d = view.design
    sram = d.level_names[d.sram_level]
    on_chip = [(f"{n} SRAM, all {'cores' if d.base.memory[j].instances > 1 else 'shared'} (MiB)",
                _fmt(float(d.capacity[0, j]) / 2**20))
               for j, n in enumerate(d.level_names) if not d.offchip[j] and j != d.sram_level]  # the other levels
    return [("cores", f"{b['cores']:.0f}"), ("MAC array (rows x cols)", f"{b['array_rows']:.0f} x {b['array_cols']:.0f}"),
            ("clock (GHz)", _fmt(b["clock_ghz"])), ("peak compute as built (TFLOP/s)", _fmt(b["peak_tflops_built"])),
            ("DRAM bandwidth as built (TB/s)", _fmt(b["dram_bandwidth_tbps_built"])),
            ("DRAM stacks", f"{b['dram_stacks']:.0f}"), ("DRAM capacity (GB)", _fmt(b["dram_capacity_gb"])),
            (f"{sram} SRAM as built, searched (MiB)", _fmt(b["sram_mib_built"])), *on_chip,
            ("ridge (FLOP/byte)", _fmt(s["ridge_flop_per_byte"])), ("area (mm2)", _fmt(s["area_mm2"])),
            ("unit cost (USD)", _fmt(s["cost_usd"])),
            ("power: highest average over the mix's workloads (W; dse area's is an 8192^3 GEMM's)", _fmt(s["power_w"]))]


def compare_frame(candidates: Any, view: View) -> Any:
    """The config's compare candidates (``dse.comparison.compare_config``, no Monte Carlo) and the current design,
    side by side."""
    import pandas as pd

    rows = ["peak_tflops", "dram_bandwidth_tbps", "sram_mib", "cores", "array", "clock_ghz", "dram_stacks",
            "ridge_flop_per_byte", "score_vs_base", "area_mm2", "cost_usd", "power_w", "feasible"]
    t = candidates.set_index("candidate")[rows].T
    b, s = view.built, view.summary
    t["current"] = [b["peak_tflops_built"], b["dram_bandwidth_tbps_built"], b["sram_mib_built"], b["cores"],
                    f"{b['array_rows']:.0f}x{b['array_cols']:.0f}", b["clock_ghz"], b["dram_stacks"],
                    s["ridge_flop_per_byte"], view.score, s["area_mm2"], s["cost_usd"], s["power_w"], view.feasible]
    labels = {**{k.name: k.label for k in KNOB_TABLE}, "clock_ghz": "clock (GHz)",
              "ridge_flop_per_byte": "ridge (FLOP/byte)", "score_vs_base": "score (x vs base)",
              "area_mm2": "area (mm2)", "cost_usd": "unit cost (USD)", "power_w": "power (W)"}
    out = t.reset_index().rename(columns={"index": "quantity"})
    out["quantity"] = out["quantity"].map(lambda q: labels.get(q, q))
    return pd.DataFrame(out)


class Explorer:
    """The loaded config: its context, knobs, compare candidates and a cache of heatmaps (read-only after start,
    so concurrent callbacks share it safely)."""

    def __init__(self, config: str | Path, mix: str | None = None) -> None:
        from dse.comparison import compare_config
        from dse.study import load_context

        self.config = str(config)
        self.cfg, self.ctx = load_context(config, mix=mix, one_mix="dse explore without --mix NAME")
        self.specs = knob_specs(self.ctx)
        self.spec = {s.name: s for s in self.specs}
        self.base_values = {s.name: s.base for s in self.specs}
        try:
            self.candidates = compare_config(self.cfg, self.ctx, self.config, samples=0)[0].designs_table
        except DseError:
            self.candidates = None
        self.points = min(HEATMAP_POINTS, self.cfg.output.heatmap_points)
        self._heatmap = lru_cache(maxsize=64)(self._heatmap_at)

    def _heatmap_at(self, others: tuple[tuple[str, float], ...]) -> Any:
        vals = dict(others) | {k: self.base_values[k] for k in ("peak_tflops", "dram_bandwidth_tbps")
                                if k in self.base_values}
        return heatmap(self.ctx, vals, self.points)

    def heatmap_for(self, values: dict[str, float]) -> Any:
        """The heatmap at the knobs other than peak and bandwidth (cached: moving those two only moves the star)."""
        others = tuple(sorted((k, v) for k, v in values.items() if k not in ("peak_tflops", "dram_bandwidth_tbps", RATIO)))
        return self._heatmap(others)

    def synced(self, values: dict[str, Any], changed: str | None) -> dict[str, Any]:
        """The knob values after one change: the ratio moved sets the bandwidth (``B = P x x / R_base``, held inside
        the bandwidth knob's range, and the ratio then reads what that bandwidth gives: the ratio slider spans every
        peak's ratios, the bandwidth knob does not); peak or bandwidth moved sets the ratio, unless the value moved
        is out of its range (left for :func:`evaluate` to refuse, naming that knob; no other box changes). A value
        that is not a number is left for :func:`evaluate` to refuse."""
        v = dict(values)
        if RATIO not in self.spec:
            return v
        peak, band = self.spec["peak_tflops"], self.spec["dram_bandwidth_tbps"]
        try:
            if changed == RATIO:
                if not peak.low <= float(v["peak_tflops"]) <= peak.high:
                    return v
                bw = bandwidth_at_ratio(float(v["peak_tflops"]), float(v[RATIO]), self.ctx)
                v["dram_bandwidth_tbps"] = float(f"{min(max(bw, band.low), band.high):.4g}")
                v[RATIO] = float(f"{ratio_of(v, self.ctx):.4g}")
            elif (peak.low <= float(v["peak_tflops"]) <= peak.high
                  and band.low <= float(v["dram_bandwidth_tbps"]) <= band.high):
                v[RATIO] = float(f"{ratio_of(v, self.ctx):.4g}")
        except (TypeError, ValueError, ZeroDivisionError):
            pass
        return v

    def update(self, values: dict[str, Any], level: str | None = None) -> dict[str, Any]:
        """Everything the page shows for ``values``: the view, and the figures and tables built from it."""
        view = evaluate(self.ctx, self.specs, values)
        out: dict[str, Any] = {"view": view, "score": f"{view.score:.4f}",
                               "status": "feasible" if view.feasible else f"infeasible: {view.reason}",
                               "built": built_rows(view), "roofline": figures.roofline(view, level),
                               "histogram": figures.ai_histogram(view), "speedups": figures.speedups(view.workloads),
                               "ceilings": figures.bars(view.ceilings, "Binding ceilings (share of mix time)",
                                                        "fraction of time", horizontal=True),
                               "area": figures.bars(view.breakdown["area_mm2"], "Area by component", "mm2"),
                               "cost": figures.bars(view.breakdown["cost_usd"], "Unit cost by component", "USD"),
                               "power": figures.bars(view.breakdown["power_w"], "Average power over the mix by component",
                                                     "W")}
        h = self.heatmap_for(view.values)
        base = (self.base_values.get("peak_tflops", math.nan), self.base_values.get("dram_bandwidth_tbps", math.nan))
        out["heatmap"] = figures.heatmap(h, view, base) if h is not None else None
        wl = view.workloads.rename(columns={"mix_weight": "weight", "base_time_ms": "base time (ms)",
                                            "time_ms": "time (ms)", "speedup_x": "speedup (x)",
                                            "binding": "binding ceiling"})
        out["workloads"] = wl
        out["residency"] = residency_rows(view)
        out["compare"] = compare_frame(self.candidates, view) if self.candidates is not None else None
        return out


def residency_rows(view: Any) -> tuple[str, Any]:
    """What stays on chip on the current design: (the resident level's line, per workload the share of its operators'
    activations, of its weights and of its KV cache that stay, in %, blank where it has none, and what stays next from
    what SRAM size; ``dse.report.residency.residency_table``, as a study's summary.md says of its best design)."""
    df = view.residency.copy()
    for col in df.columns[1:4]:
        df[col] = [_pct(x) for x in df[col]]
    return f"What stays on chip; {view.residency_level}", df


def _pct(x: float) -> str:
    """A share in % for the on-chip table: whole percent, '< 1' for a sliver, blank for none of that kind (nan)."""
    return "" if x != x else pct_text(x)


def residency_box(rows: tuple[str, Any]) -> list:
    """The page's residency box (:func:`residency_rows`): the line, and the table where a level keeps tensors."""
    from dash import html

    line, df = rows
    return [html.Div(line, style={"fontSize": "13px", "margin": "6px 0"}),
            *([frame_table(df, "residency-table")] if len(df) else [])]


def graph(name: str, fig: dict | None, testid: str | None = None, height: str = "420px") -> Any:
    """A Plotly graph ``fig-<name>`` in a flexible box (``data-testid`` on the box)."""
    from dash import dcc, html

    g = dcc.Graph(id=f"fig-{name}", figure=fig or {}, config={"displaylogo": False}, style={"height": height})
    return html.Div(g, style={"flex": "1 1 0", "minWidth": "0"}, **({"data-testid": testid} if testid else {}))


def page(ex: Explorer, first: dict[str, Any]) -> Any:
    """The page at the base design: knobs on the left; score, design, tables and figures on the right."""
    from dash import dcc, html

    levels = ex.ctx.base.level_names
    knobs = [knob_control(s) for s in ex.specs]
    return html.Div([
        dcc.Store(id="values", data=ex.base_values),
        dcc.Download(id="download"),
        html.Div([
            html.H3(f"dse explore: {ex.cfg.name}", style={"margin": "4px 0"}),
            html.Div(f"base {ex.ctx.base_hw.name}; {len(ex.ctx.mix.workloads)} workloads; {ex.config}",
                     style={"fontSize": "12px"}),
            html.Hr(), *knobs,
            html.Button("save design as template YAML", id="save", **{"data-testid": "save-template"}),
            html.Div(id="error", style={"color": "crimson", "fontSize": "12px", "marginTop": "8px"},
                     **{"data-testid": "error"}),
        ], style={"width": "300px", "padding": "10px", "float": "left", "fontFamily": "sans-serif"}),
        html.Div([
            html.Div([html.Span("mix score (x vs base): ", style={"fontSize": "20px"}),
                      html.Span(first["score"], id="mix-score", style={"fontSize": "28px", "fontWeight": "bold"},
                                **{"data-testid": "mix-score"}),
                      html.Span(first["status"], id="status", style={"marginLeft": "16px", "fontSize": "13px"},
                                **{"data-testid": "status"})]),
            html.Div([html.Div(table(first["built"], "built"), id="built-box", style={"display": "inline-block",
                                                                                        "verticalAlign": "top"}),
                      html.Div(frame_table(first["workloads"], "workloads"), id="workloads-box",
                               style={"display": "inline-block", "marginLeft": "20px", "verticalAlign": "top"})]),
            html.Div(residency_box(first["residency"]), id="residency-box", **{"data-testid": "residency"}),
            html.Div([html.Label("roofline at level: "),
                      dcc.Dropdown(id="level", options=levels, value=ex.ctx.base.offchip_name, clearable=False,
                                   style={"width": "200px", "display": "inline-block"})]),
            graph("roofline", first["roofline"], "roofline", "520px"),
            html.Div([graph("speedups", first["speedups"], "speedups", "300px"),
                      graph("ceilings", first["ceilings"], "ceilings", "300px")], style=ROW),
            html.Div([graph("area", first["area"], height="260px"), graph("cost", first["cost"], height="260px"),
                      graph("power", first["power"], height="260px")], style=ROW, **{"data-testid": "breakdown"}),
            html.Div([graph("histogram", first["histogram"], "ai-histogram", "440px"),
                      graph("heatmap", first["heatmap"], "heatmap", "440px") if first["heatmap"] is not None
                      else html.Div("no heatmap: the space does not search both peak compute and DRAM bandwidth",
                                    **{"data-testid": "heatmap"})], style=ROW),
            html.H4("Compare candidates and the current design"),
            html.Div(frame_table(first["compare"], "compare") if first["compare"] is not None else "no candidates",
                     id="compare-box"),
        ], style={"marginLeft": "330px", "padding": "10px", "fontFamily": "sans-serif"}),
    ])


def build_app(ex: Explorer) -> Any:
    """The Dash app (:func:`page`); one callback syncs the knobs, one re-predicts, one saves the design."""
    dash = need_dash()
    from dash import ALL, Input, Output, State, ctx, no_update

    app = dash.Dash(__name__, title=f"dse explore: {ex.cfg.name}", update_title=None)
    first = ex.update(ex.base_values)
    app.layout = page(ex, first)

    slider_ids = [{"k": "slider", "n": s.name} for s in ex.specs if s.choices is None]
    input_ids = [{"k": "input", "n": s.name} for s in ex.specs]

    @app.callback(
        Output({"k": "slider", "n": ALL}, "value"), Output({"k": "input", "n": ALL}, "value"), Output("values", "data"),
        Input({"k": "slider", "n": ALL}, "value"), Input({"k": "input", "n": ALL}, "value"),
        prevent_initial_call=True)
    def sync(sliders: list, inputs: list) -> tuple:
        trig = ctx.triggered_id
        values = {i["n"]: v for i, v in zip(input_ids, inputs, strict=True)}
        if trig is not None and trig["k"] == "slider":
            n = trig["n"]
            pos = dict(zip([i["n"] for i in slider_ids], sliders, strict=True))[n]
            values[n] = value_of(ex.spec[n], pos)
        changed = trig["n"] if trig is not None else None
        values = ex.synced(values, changed)
        new_sliders = []
        for i, old in zip(slider_ids, sliders, strict=True):
            spec, v = ex.spec[i["n"]], values[i["n"]]
            try:
                pos = slider_of(spec, min(max(float(v), spec.low), spec.high))
            except (TypeError, ValueError):
                pos = old
            new_sliders.append(pos)
        return new_sliders, [values[i["n"]] for i in input_ids], values

    outputs = [Output("mix-score", "children"), Output("status", "children"), Output("built-box", "children"),
               Output("workloads-box", "children"), Output("residency-box", "children"), Output("fig-roofline", "figure"),
               Output("fig-speedups", "figure"), Output("fig-ceilings", "figure"), Output("fig-area", "figure"),
               Output("fig-cost", "figure"), Output("fig-power", "figure"), Output("fig-histogram", "figure"),
               Output("compare-box", "children"), Output("error", "children")]
    if first["heatmap"] is not None:
        outputs.insert(-1, Output("fig-heatmap", "figure"))

    @app.callback(*outputs, Input("values", "data"), Input("level", "value"), prevent_initial_call=True)
    def redraw(values: dict, level: str) -> tuple:
        try:
            out = ex.update(values, level)
        except DseError as exc:
            return (*([no_update] * (len(outputs) - 1)), f"error: {exc.lines()[0]}")
        res = [out["score"], out["status"], table(out["built"], "built"), frame_table(out["workloads"], "workloads"),
               residency_box(out["residency"]), out["roofline"], out["speedups"], out["ceilings"], out["area"],
               out["cost"], out["power"], out["histogram"],
               frame_table(out["compare"], "compare") if out["compare"] is not None else "no candidates"]
        if first["heatmap"] is not None:
            res.append(out["heatmap"])
        return (*res, "")

    @app.callback(Output("download", "data"), Output("error", "children", allow_duplicate=True),
                  Input("save", "n_clicks"), State("values", "data"), prevent_initial_call=True)
    def save(_: int, values: dict) -> Any:
        """The design as a template YAML download; with a knob out of range, nothing to save: the error line says
        so (it showed the knob's error already, and a click that did nothing said nothing)."""
        from dse.explore.state import template_yaml

        try:
            view = evaluate(ex.ctx, ex.specs, values)
        except DseError as exc:
            return no_update, f"error: not saved: {exc.lines()[0]}"
        name = f"{ex.cfg.name}-explored"
        return {"content": template_yaml(view, name), "filename": f"{name}.yaml"}, ""

    return app


#: the part of the update callback's output key that names it (Dash keys a callback by its outputs)
UPDATE_OUTPUT = "mix-score.children"


def update_request(key: str, values: dict[str, Any], level: str) -> dict[str, Any]:
    """The JSON body of the page's update request to ``/_dash-update-component`` (what a knob change posts), for
    scripts and tests that drive the server without a browser: ``key`` is the update callback's output key (the
    entry of ``app.callback_map`` or of ``/_dash-dependencies`` containing :data:`UPDATE_OUTPUT`)."""
    outputs = [{"id": o.split(".")[0], "property": o.split(".")[1]} for o in key.strip(".").split("...")]
    return {"output": key, "outputs": outputs, "changedPropIds": ["values.data"], "state": [],
            "inputs": [{"id": "values", "property": "data", "value": values},
                       {"id": "level", "property": "value", "value": level}]}


def serve(config: str | Path, host: str = "127.0.0.1", port: int = 8050, open_browser: bool = True,
          mix: str | None = None, check: bool = False) -> None:
    """Load ``config`` (its mix ``mix`` for a config with ``mixes:``), check the port, start the server (blocks
    until Ctrl-C). With ``check``: load the config and build the page at the base design, say so, and return
    without serving (a smoke test of a config for the explorer)."""
    need_dash()
    if not check:
        check_port(host, port)
    ex = Explorer(config, mix)
    app = build_app(ex)
    if check:
        print(f"dse explore: {ex.cfg.name} checked: the page builds at the base design (--check: not serving)")
        return
    url = f"http://{host}:{port}/"
    print(f"dse explore: {ex.cfg.name} at {url} (Ctrl-C stops)", flush=True)
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app.run(host=host, port=port, debug=False)
